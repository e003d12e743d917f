"""The grouped aggregation of a CPU pipeline function (pipeline_py): the group table's inline hash
probe and the accumulator updates, emitted into the loop body after the stages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hetdb.backend.cpu.codegen import runtime
from hetdb.backend.cpu.codegen.expr_py import ExprError, Val
from hetdb.types import BOOL

AGG_OPS = ("sum", "count", "count_star", "min", "max", "avg")


def bits_of(v: Val) -> str:
    """The int64 key bits of a value (a DOUBLE's IEEE bits, -0.0 and NaN canonical)."""
    return f"fbits({v.value})" if v.dtype.kind == "float64" else f"np.int64({v.value})"


@dataclass(frozen=True)
class Slot:
    """Where an accumulator lives: ``ints``/``floats`` row in the group table (-1: none)."""

    cnt: int = -1
    isum: int = -1
    fsum: int = -1
    ival: int = -1
    fval: int = -1


class AggregateEmitter:
    """The aggregation part of pipeline_py._Gen (``em``: its Emitter; ``key_signs`` set here)."""

    em: Any
    key_signs: list[int]

    def _find_group(self, keys: list[Val], kvals: list[tuple[str, str]]) -> None:
        """The group table's hash probe for the row's keys, inserting a new group (``g``)."""
        em = self.em
        em.emit(f"gh = np.uint64({int(runtime.SEED)})")
        for kb, _ in kvals:
            em.emit(f"gh = splitmix64(gh ^ np.uint64({kb}))")
        em.emit("gs = np.int64(gh & np.uint64(slots.shape[0] - 1))")
        em.emit("while True:")
        em.emit("    g = slots[gs] - 1")
        em.emit("    if g == -1:")
        em.emit("        g = ng")
        em.emit("        slots[gs] = g + 1")
        for j, (kb, kv) in enumerate(kvals):
            em.emit(f"        gk[{j}, g] = {kb}")
            em.emit(f"        gv[{j}, g] = {kv}")
            if self.key_signs[j] >= 0:
                em.emit(f"        ia[{self.key_signs[j]}, g] = np.int64(({kv}) and neg_zero({keys[j].value}))")
        em.emit("        ng += 1")
        em.emit("        break")
        same = " and ".join(f"gk[{j}, g] == {kb} and gv[{j}, g] == ({kv})" for j, (kb, kv) in enumerate(kvals))
        em.emit(f"    if {same}:")
        em.emit("        break")
        em.emit("    gs = (gs + 1) & (slots.shape[0] - 1)")

    def _direct_group(self, keys: list[Val], kvals: list[tuple[str, str]]) -> None:
        """The group of the row's keys when each is a build column of known range: the slot is
        their mixed-radix number (a NULL key the last value of its digit), ``slots`` sized to the
        product of the ranges by the executor; a new group is entered on its first row."""
        em = self.em
        em.emit("gs = np.int64(0)")
        for j, (kb, kv) in enumerate(kvals):
            em.emit(f"gs = gs * dsz[{j}] + (({kb}) - dlo[{j}] if {kv} else dsz[{j}] - 1)")
        em.emit("g = slots[gs] - 1")
        em.emit("if g == -1:")
        em.emit("    g = ng")
        em.emit("    slots[gs] = g + 1")
        for j, (kb, kv) in enumerate(kvals):
            em.emit(f"    gk[{j}, g] = {kb}")
            em.emit(f"    gv[{j}, g] = {kv}")
        em.emit("    ng += 1")

    def _last_group(self, sink: Any, keys: list[Val], kvals: list[tuple[str, str]], prologue: list[str]) -> None:
        """The row's group when its keys equal the last row's, else a new group of a key run (the
        morsel is sorted by its one key) or the group table's hash probe."""
        em = self.em
        for j in range(len(kvals)):
            prologue += [f"lk{j} = np.int64(0)", f"lv{j} = False"]
        prologue.append("lg = np.int64(-1)")
        if sink.runs:
            # resumed after the table grew: the last group goes on (its key may run on)
            prologue += ["if ng > 0:", "    lg = ng - 1"]
            for j in range(len(kvals)):
                prologue += [f"    lk{j} = gk[{j}, lg]", f"    lv{j} = gv[{j}, lg]"]
        same_last = " and ".join(f"{kb} == lk{j} and {kv} == lv{j}" for j, (kb, kv) in enumerate(kvals))
        em.emit(f"if lg >= 0 and {same_last}:")
        em.emit("    g = lg")
        em.emit("else:")
        em.indent += 1
        if sink.runs:
            em.emit("g = ng")
            for j, (kb, kv) in enumerate(kvals):
                em.emit(f"gk[{j}, g] = {kb}")
                em.emit(f"gv[{j}, g] = {kv}")
            em.emit("ng += 1")
        else:
            self._find_group(keys, kvals)
        em.emit("lg = g")
        for j, (kb, kv) in enumerate(kvals):
            em.emit(f"lk{j} = {kb}")
            em.emit(f"lv{j} = {kv}")
        em.indent -= 1

    def _aggregate(self, sink: Any, prologue: list[str], epilogue: list[str]) -> tuple[list[Slot], int, int]:
        """The group lookup and accumulator updates. Without keys the accumulators live in locals
        for the call (``prologue`` loads them, ``epilogue`` stores them: no store and reload of
        the same memory per row); with keys the last row's group is kept, so a run of rows of one
        group (data clustered by the key) skips the hash probe."""
        em = self.em
        vals = []
        for op, arg in sink.aggs:
            if op not in AGG_OPS:
                raise ExprError(f"aggregate {op} is not compiled for the CPU")
            vals.append(None if arg is None else em.value(arg))
        keys = [em.value(k) for k in sink.keys]
        if any(k.dtype.is_wide for k in keys):
            raise ExprError("a HUGEINT / DECIMAL(>18) group key is not compiled for the CPU")
        self.key_signs = [-1] * len(keys)
        ni = 0
        for j, k in enumerate(keys):
            if k.dtype.kind == "float64":
                self.key_signs[j] = ni
                ni += 1
        if keys:
            # the group table probe, inline (runtime.key_hash / find_group spelled out on locals)
            kvals = []
            for k in keys:
                kb = em.bind(f"{bits_of(k)} if ({k.valid}) else np.int64(0)", "True", k.dtype).value
                kv = em.bind(f"{k.valid}", "True", BOOL).value
                kvals.append((kb, kv))
            if sink.direct:
                # the slot costs a few multiply-adds: no last-group test before it
                if any(k.dtype.kind == "float64" for k in keys):
                    raise ExprError("a DOUBLE group key has no direct slot")
                self._direct_group(keys, kvals)
            else:
                self._last_group(sink, keys, kvals, prologue)

            def acc_i(r: int) -> str:
                return f"ia[{r}, g]"

            def acc_f(r: int) -> str:
                return f"fa[{r}, g]"
        else:
            em.emit("ng = 1")

            def acc_i(r: int) -> str:
                return f"ai{r}"

            def acc_f(r: int) -> str:
                return f"af{r}"
        nf = 0
        out = []
        # count(*) and every aggregate of a never-NULL argument count the same rows: one counter,
        # incremented after all the updates (min/max test it for a group's first row)
        rows = -1
        for (op, _), v in zip(sink.aggs, vals):
            if op == "count_star" or v.valid == "True":
                rows = ni
                ni += 1
                break
        for (op, _), v in zip(sink.aggs, vals):
            if op == "count_star" or v.valid == "True":
                s = Slot(cnt=rows)
            else:
                s = Slot(cnt=ni)
                ni += 1
            if op == "count_star":
                out.append(s)
                continue
            kind = v.dtype.kind
            if kind == "string" and op != "count":
                raise ExprError(f"{op} of a string is not compiled for the CPU")
            em.emit(f"if {v.valid}:")
            opened = len(em.lines)
            em.indent += 1
            if op in ("sum", "avg"):
                if kind == "float64":
                    s = Slot(cnt=s.cnt, fsum=nf)
                    nf += 1
                    em.emit(f"{acc_f(s.fsum)} += {v.value}")
                elif kind in ("int32", "int64", "decimal", "bool"):
                    # exact in int64 or not at all: a sum leaving int64 sets the error flag and
                    # the operators (which carry HUGEINT sums) run the pipeline instead
                    s = Slot(cnt=s.cnt, isum=ni)
                    ni += 1
                    r = em.fresh()
                    em.emit(f"{r}, {r}_of = add_ovf({acc_i(s.isum)}, np.int64({v.value}))")
                    em.error(f"{r}_of")
                    em.emit(f"{acc_i(s.isum)} = {r}")
                else:
                    raise ExprError(f"{op} of {v.dtype} is not compiled for the CPU")
            elif op in ("min", "max"):
                if kind == "float64":
                    s = Slot(cnt=s.cnt, fval=nf)
                    nf += 1
                    better = f"f_lt({v.value}, {acc_f(s.fval)})" if op == "min" else f"f_lt({acc_f(s.fval)}, {v.value})"
                    em.emit(f"if {acc_i(s.cnt)} == 0 or {better}:")
                    em.emit(f"    {acc_f(s.fval)} = {v.value}")
                else:
                    s = Slot(cnt=s.cnt, ival=ni)
                    ni += 1
                    cmp = "<" if op == "min" else ">"
                    em.emit(f"if {acc_i(s.cnt)} == 0 or np.int64({v.value}) {cmp} {acc_i(s.ival)}:")
                    em.emit(f"    {acc_i(s.ival)} = np.int64({v.value})")
            if s.cnt != rows:
                em.emit(f"{acc_i(s.cnt)} += 1")
            em.indent -= 1
            if len(em.lines) == opened:  # count of a never-NULL argument: the shared row counter
                em.lines.pop()
            out.append(s)
        if rows >= 0:
            em.emit(f"{acc_i(rows)} += 1")
        if not keys:
            prologue += [f"ai{r} = ia[{r}, 0]" for r in range(ni)] + [f"af{r} = fa[{r}, 0]" for r in range(nf)]
            epilogue += [f"ia[{r}, 0] = ai{r}" for r in range(ni)] + [f"fa[{r}, 0] = af{r}" for r in range(nf)]
        return out, ni, nf
