"""A CPU pipeline spec -> the source of one Numba ``nogil`` function over a morsel, compiled and cached.

The function runs every row of the morsel through the stages in one loop: filters (``continue``),
projections (locals), hash probes into the join build's CpuJoinTable (direct-indexed, hashed or
packed keys; unique builds read one build row, others loop over the key's rows in CSR order;
semi/anti test presence, after the build's runtime filter where that saves a probe) and the
grouped aggregation, which updates the calling worker's group table (probed inline; see
runtime.new_state). It returns the new group (or output row) count, a flag and the row it stopped at: 0 done; 1 a
value left its type (the executor re-runs the pipeline with the operators, which raise the error
exactly as they always do); 2 the outputs may not hold the next row's results (the executor grows
them and calls again from that row: no row is ever half done).

Functions are cached by their source text, which names no literal (each is an argument: see
expr_py), so queries that differ only in constants share one function: in memory, and on disk as a
module under ``$HETDB_KERNEL_CACHE/cpu`` whose Numba cache (``cache=True``) keeps the machine code
across processes; the source names a hash of ``runtime.py`` so a changed helper never reuses stale
code. ``compile_stats`` counts what this process compiled.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hetdb.backend.base import HASH_SEED
from hetdb.backend.cpu.codegen import runtime
from hetdb.backend.cpu.codegen.aggregate_py import AggregateEmitter, Slot, bits_of
from hetdb.backend.cpu.codegen.expr_py import Emitter, ExprError, Lookup, Val
from hetdb.backend.cpu.codegen.probe_prefetch import PrefetchEmitter
from hetdb.backend.cpu.codegen.probe_py import ProbeEmitter
from hetdb.plan.expr import Expr
from hetdb.types import DataType


@dataclass(frozen=True)
class Input:
    """A column the function reads: data array and (``nullable``) a validity array; ``dictionary``:
    a dictionary string column, read as int32 codes."""

    cid: str
    dtype: DataType
    nullable: bool
    dictionary: bool = False
    # a plain-string build column that is only a group key: read as the build row's number (the
    # executor turns the group's row back into its string; equal strings merge in the aggregation)
    rows: bool = False


@dataclass(frozen=True)
class Probe:
    """A hash probe into a finished CpuJoinTable: ``layout`` "direct" or "hash"; ``packed``: several
    keys packed into one code first; ``unique``: one build row per key; ``mapped``: build rows go
    through valid_idx (the build had NULL keys)."""

    kind: str
    keys: tuple[Expr, ...]
    layout: str
    table_keys: int
    packed: bool
    unique: bool
    mapped: bool
    payload: tuple[Input, ...] = ()
    # the table's runtime join filter (join_filter.KeyFilter) tested first: "bitmap", "bloom" or ""
    prefilter: str = ""
    # a condition over both sides a match must meet as well (inner, semi and anti joins)
    residual: Expr | None = None
    # the first probe, with no filter before it, expected to let through a middling share of rows:
    # the selection loop tests its table (branch-free) before the body (see _Gen._probe_test)
    select: bool = False
    # a build larger than the caches: looked up a block of rows at a time, with prefetches, before
    # the loop's body (see probe_prefetch.py)
    prefetch: bool = False
    # a non-unique inner probe whose payload is read from copies in the table's key order, at the
    # key's CSR positions (see probe_py.py)
    clustered: bool = False


@dataclass(frozen=True)
class Aggregate:
    keys: tuple[Expr, ...]
    aggs: tuple[tuple[str, Expr | None], ...]
    # the one group key's rows come in runs of equal keys and each key in one run (the morsel's key
    # column is sorted): a key other than the last row's starts a new group, with no hash table
    runs: bool = False
    # every key is a build column of known range (arguments ``dlo``/``dsz``: per key its lowest
    # value and its number of values plus one for NULL): the group's slot is the keys' mixed-radix
    # number, with no hashing and no key comparison (see aggregate_py._direct_group)
    direct: bool = False


@dataclass(frozen=True)
class Materialize:
    """The surviving rows: the input row and, per inner probe, the build row of each match, written
    to ``out_rows`` / ``out_b<probe>`` (the executor gathers the next sink's columns from them)."""


@dataclass(frozen=True)
class Mark:
    """The build row each match of the last (inner) probe finds is flagged in ``marked`` (right semi
    and right anti joins: the operator emits the flagged or the other build rows afterwards)."""


@dataclass(frozen=True)
class Spec:
    inputs: tuple[Input, ...]
    stages: tuple[Any, ...]      # ("filter", Expr) | ("project", ((cid, Expr), ...)) | Probe
    sink: Aggregate | Materialize | Mark


@dataclass
class Kernel:
    fn: Any
    args: list[tuple]            # what to pass, in order (see _Gen.args)
    lookups: list[Lookup]
    slots: list[Slot]            # per aggregate
    num_int: int
    num_float: int
    key_types: list[DataType]
    source: str
    inner_probes: list[int] = field(default_factory=list)   # probes whose build rows are output
    # per group key: the int accumulator row holding 1 where the group's first key was -0.0 (the
    # key bits are -0.0 -> 0.0; DuckDB shows the first value), -1 for keys that are not DOUBLE
    key_signs: list[int] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)          # the literals' values (args "param")


class _Gen(AggregateEmitter, PrefetchEmitter, ProbeEmitter):
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.inputs = {c.cid: (i, c) for i, c in enumerate(spec.inputs)}
        self.payload: dict[str, tuple[int, int, Input]] = {}
        self.payload_row: dict[int, str] = {}  # clustered probes: their payload's index (probe_py)
        self.args: list[tuple] = []
        dict_cids = {c.cid for c in spec.inputs if c.dictionary}
        for s in spec.stages:
            if isinstance(s, Probe):
                dict_cids |= {p.cid for p in s.payload if p.dictionary}
        self.em = Emitter(self._load, frozenset(dict_cids))
        self.probe_no = 0
        self.inner_probes: list[int] = []
        self.outer: set[int] = set()             # left join probes (a row without a match goes on)
        self.key_signs: list[int] = []
        self.fetched: set[int] = set()           # probes whose key ids the lookup passes found
        self.memo: set[int] = set()              # probes that keep their last key's lookup (mk/mh/mf<p>)

    def _seed(self) -> int:
        return _HASH_SEED

    def _load(self, cid: str) -> Val | None:
        if cid in self.inputs:
            i, c = self.inputs[cid]
            name, mask, row, p = f"c{i}", f"c{i}_m", "i", None
        elif cid in self.payload:
            p, j, c = self.payload[cid]
            name, mask, row = f"p{p}_b{j}", f"p{p}_b{j}_m", self.payload_row.get(p, f"brow{p}")
        else:
            return None
        if c.dtype.is_wide and c.dtype.kind != "decimal":
            raise ExprError(f"column {cid} of type {c.dtype} is not compiled for the CPU")
        # (a DECIMAL(19..38) column, a previous pipeline's SUM, is read while it is held in int64:
        # compiled_cpu_kernels refuses a morsel or build whose values are Python ints)
        if not c.rows and np.dtype(c.dtype.numpy_dtype).kind not in "biuf":
            # an INTERVAL's 16-byte container (complex128) or a LIST's objects: the loop reads values
            # as int64, float64 or bool only (the pipeline then runs operator at a time)
            raise ExprError(f"column {cid} of type {c.dtype} is not compiled for the CPU")
        if p in self.outer:
            # a left join's row without a match (build row -1) reads NULL (the array's first
            # entry stands in for the value: the build side is never empty here)
            kind = c.dtype.kind
            conv = "np.float64" if kind == "float64" else ("bool" if kind == "bool" else "np.int64")
            safe = f"max({row}, 0)"
            valid = f"{row} >= 0" + (f" and {mask}[{safe}]" if c.nullable else "")
            return self.em.bind(f"np.int64({safe})" if c.rows else f"{conv}({name}[{safe}])", valid, c.dtype)
        kind = c.dtype.kind
        conv = "np.float64" if kind == "float64" else ("bool" if kind == "bool" else "np.int64")
        if c.rows:  # (the build row's number even when the payload is read at CSR positions)
            return self.em.bind(f"np.int64(brow{p})", f"{mask}[{row}]" if c.nullable else "True", c.dtype)
        return self.em.bind(f"{conv}({name}[{row}])", f"{mask}[{row}]" if c.nullable else "True", c.dtype)

    def generate(self) -> tuple[str, list[tuple], list[Slot], int, int]:
        em = self.em
        stages = list(self.spec.stages)
        selected, taken = self._selection(stages)
        passes = self._prefetch_passes(stages, taken)
        if passes and not selected:
            selected = ["            sel[k] = i", "            k += 1"]
        base = em.indent = 3 if selected else 2
        for k, st in enumerate(stages):
            if isinstance(st, Probe):
                self._probe(st)
            elif st[0] == "filter":
                if k < taken:
                    continue  # tested by the selection loop: every row reaching the body passed it
                v = em.value(st[1])
                cond = v.value if v.valid == "True" else f"({v.valid}) and {v.value}"
                em.emit(f"if not ({cond}):")
                em.emit("    continue")
            else:
                for cid, e in st[1]:
                    em.project(cid, e)
        prologue: list[str] = []
        for p in sorted(self.memo):
            prologue += [f"mh{p} = False", f"mk{p} = np.int64(0)", f"mf{p} = np.int64(-1)"]
        epilogue: list[str] = []
        if isinstance(self.spec.sink, Mark):
            slots, ni, nf = [], 0, 0
            # read before written: every worker marks the same flags array, and a store to a line
            # other cores hold takes it from them even when the flag is set already
            em.emit(f"if not marked[brow{self.inner_probes[-1]}]:")
            em.emit(f"    marked[brow{self.inner_probes[-1]}] = True")
            em.emit("ng += 1")
            state, room = "marked, ng", ""
        elif isinstance(self.spec.sink, Materialize):
            slots, ni, nf = [], 0, 0
            outs = ["out_rows"] + [f"out_b{p}" for p in self.inner_probes]
            em.emit("out_rows[ng] = i")
            for p in self.inner_probes:
                em.emit(f"out_b{p}[ng] = brow{p}")
            em.emit("ng += 1")
            state = ", ".join(outs + ["ng"])
            room = "out_rows.shape[0]"
        else:
            slots, ni, nf = self._aggregate(self.spec.sink, prologue, epilogue)
            state = "slots, gk, gv, ia, fa, ng"
            room = "gk.shape[1]" if self.spec.sink.keys else ""
        # before a row: room for every output it can make (``per_row``: one, times the matches of
        # non-unique joins), else stop there and let the caller grow the outputs and resume at i
        pad = "    " * base
        check = (f"{pad}if ng + per_row > {room}:\n"
                 f"{pad}    return ng, np.int64(2), i\n") if room else ""
        args = self._arguments()
        body = "\n".join(em.lines)
        if selected:
            # the leading filters without branches over a block of rows into a selection vector
            # (an unpredictable branch per row costs more than the rest of a scan's filter), then
            # the rest of the pipeline over the selected rows
            loop = ("    sel = np.empty(_BLOCK, np.int64)\n"
                    + "".join(f"    fk{p} = np.empty(_BLOCK, np.int64)\n" for p in sorted(self.fetched))
                    + "    b = start\n"
                    "    while b < n:\n"
                    "        e = min(b + _BLOCK, n)\n"
                    "        k = 0\n"
                    "        for i in range(b, e):\n"
                    + "\n".join(selected) + "\n"
                    + "".join(line + "\n" for line in passes)
                    + "        for j in range(k):\n"
                    "            i = sel[j]\n"
                    f"{check}{body}\n"
                    "        b = e\n")
        else:
            loop = f"    for i in range(start, n):\n{check}{body}\n"
        src = (f"# runtime {_RUNTIME_HASH}\n"
               "import numpy as np\n"
               "from numba import njit\n"
               "from hetdb.backend.cpu.codegen.runtime import (add_ovf, civil, f_eq, f_le, f_lt, fbits,\n"
               "    mul_ovf, neg_zero, prefetch, round_div, sub_ovf)\n"
               "from hetdb.backend.cpu.join_filter import _bloom_mask as bloom_mask\n"
               "from hetdb.backend.cpu.keys import slot_of, splitmix64\n\n"
               f"_BLOCK = {_BLOCK}\n\n\n"
               "@njit(nogil=True, cache=True, error_model='numpy')\n"
               f"def pipeline({', '.join(['start', 'n', 'per_row'] + [a[0] for a in args] + [state])}):\n"
               + "".join(f"    {line}\n" for line in prologue)
               + loop
               + "".join(f"    {line}\n" for line in epilogue)
               + "    return ng, np.int64(0), n\n")
        return src, args, slots, ni, nf

    def _selection(self, stages: list[Any]) -> tuple[list[str], int]:
        """The statements of the selection loop (indented for it) and how many leading stages it
        tests: the filters before the first probe whose statements have no branch and cannot set
        the error flag (a comparison, IN, AND/OR, a lookup), evaluated for every row of a block
        and combined with ``&``, so the CPU predicts no branch on the data."""
        em = self.em
        saved = (em.lines, em.indent, dict(em.env), dict(em.pending), em.dict_cids, dict(em.dict_alias),
                 dict(em.made))
        em.lines, em.indent = [], 3
        conds: list[str] = []
        taken = 0
        for k, st in enumerate(stages):
            if isinstance(st, Probe):
                if not st.select or conds:
                    break
                mark, lookups, params = len(em.lines), len(em.lookups), len(em.params)
                cond = self._probe_test(st)
                if cond is None or any(line.lstrip().startswith(("if ", "elif ", "else", "return"))
                                       for line in em.lines[mark:]):
                    del em.lines[mark:]
                    del em.lookups[lookups:]
                    del em.params[params:]
                else:
                    conds.append(cond)
                break
            if st[0] == "project":
                for cid, e in st[1]:
                    em.project(cid, e)
                continue
            mark, lookups, params = len(em.lines), len(em.lookups), len(em.params)
            v = em.value(st[1])
            if any(line.lstrip().startswith(("if ", "elif ", "else", "return")) for line in em.lines[mark:]):
                del em.lines[mark:]
                del em.lookups[lookups:]
                del em.params[params:]
                break
            conds.append(f"({v.value})" if v.valid == "True" else f"({v.valid}) & ({v.value})")
            taken = k + 1
        lines = em.lines
        em.lines, em.indent, em.env, em.pending, em.dict_cids, em.dict_alias, em.made = saved
        if not conds:
            return [], 0
        lines += ["            sel[k] = i", f"            k += np.int64({' & '.join(conds)})"]
        return lines, taken

    def _probe_test(self, st: Probe) -> str | None:
        """For the selection loop, a branch-free test that the first probe may match (a direct
        table's slot, or the bitmap runtime filter of a hash table): rows a dimension join drops go
        no further than the selection, with no branch to mispredict on the share that passes (SSB
        q3.x/q4.x, TPC-H q05: 10-35% less CPU per morsel on 2 cores; with a filter before the probe,
        or a probe that keeps nearly all or nearly no rows, the branch costs less than testing every
        row, hence ``Probe.select``). The probe itself runs again on the rows that pass (its lines
        then hit the cache). None when the probe has no such test (an anti/left join, a residual,
        packed keys). The bitmap is preferred where there is one: exact for these keys, and 32 times
        smaller than a direct table's int32 slots (SSB SF 10's 300k customers: 37 KiB, not 1.2 MiB)."""
        if st.kind not in ("inner", "semi") or st.residual is not None or st.packed or len(st.keys) != 1:
            return None
        if st.layout != "direct" and st.prefilter != "bitmap":
            return None
        em = self.em
        key = em.value(st.keys[0])
        if key.dtype.kind == "string":
            return None
        d = em.fresh()
        valid = "" if key.valid == "True" else f"({key.valid}) & "
        if st.prefilter != "bitmap":  # a direct table small enough to need no filter (<= 64 KiB)
            em.emit(f"{d} = {bits_of(key)} - p0_lo")
            em.emit(f"{d}_in = ({d} >= 0) & ({d} < p0_direct.shape[0])")
            em.emit(f"{d}_f = p0_direct[{d} if {d}_in else 0]")
            return f"{valid}{d}_in & ({d}_f >= 0)"
        if not INT_BITMAP_TEST:
            em.emit(f"{d} = {bits_of(key)} - p0_flo")
            em.emit(f"{d}_in = ({d} >= 0) & ({d} < p0_fsize)")
            em.emit(f"{d}_w = p0_fbits[({d} if {d}_in else 0) >> 6]")
            return f"{valid}{d}_in & ((({d}_w >> np.uint64({d} & 63)) & np.uint64(1)) != np.uint64(0))"
        em.emit(f"{d} = np.uint64({bits_of(key)} - p0_flo)")
        em.emit(f"{d}_in = {d} < np.uint64(p0_fsize)")
        em.emit(f"{d}_u = {d} if {d}_in else np.uint64(0)")
        em.emit(f"{d}_t = np.int64((p0_fbits[{d}_u >> np.uint64(6)] >> ({d}_u & np.uint64(63))) & np.uint64(1)) "
                f"& np.int64({d}_in)")
        return f"{valid}{d}_t"

    def _arguments(self) -> list[tuple]:
        args: list[tuple] = []
        for i, c in enumerate(self.spec.inputs):
            args.append((f"c{i}", "input", c.cid, "data"))
            if c.nullable:
                args.append((f"c{i}_m", "input", c.cid, "validity"))
        if isinstance(self.spec.sink, Aggregate) and self.spec.sink.direct:
            args += [("dlo", "direct", "lo"), ("dsz", "direct", "size")]
        for lk in self.em.lookups:
            args.append((f"lut{lk.index}_v", "lut", lk.index, "values"))
            args.append((f"lut{lk.index}_ok", "lut", lk.index, "valid"))
        args += [(f"k{j}", "param", j) for j in range(len(self.em.params))]
        p = 0
        for st in self.spec.stages:
            if not isinstance(st, Probe):
                continue
            fields = ["rep"]
            fields += ["direct", "lo"] if st.layout == "direct" else ["slots", "shift", "tkeys"]
            if st.packed:
                fields += ["pmins", "psizes", "pstrides"]
            if not st.unique and (st.kind in ("inner", "left") or st.residual is not None):
                fields += ["start", "order"]
            if st.mapped:
                fields.append("vidx")
            fields += {"bitmap": ["fbits", "flo", "fsize"], "bloom": ["fbits", "fshift"], "": []}[st.prefilter]
            args += [(f"p{p}_{f}", "probe", p, f) for f in fields]
            kind = "cpayload" if st.clustered else "payload"
            for j, c in enumerate(st.payload):
                if not c.rows:
                    args.append((f"p{p}_b{j}", kind, p, c.cid, "data"))
                if c.nullable:
                    args.append((f"p{p}_b{j}_m", kind, p, c.cid, "validity"))
            p += 1
        return args

    def _probe(self, st: Probe) -> None:
        em, p = self.em, self.probe_no
        self.probe_no += 1
        if st.kind not in ("inner", "semi", "anti", "left"):
            raise ExprError(f"{st.kind} join is not compiled for the CPU")
        if st.kind == "left" and st.residual is not None:
            raise ExprError("a left join with a residual condition is not compiled for the CPU")
        if p in self.fetched:
            em.emit(f"f{p} = fk{p}[j]")  # looked up by the block's lookup pass (probe_prefetch.py)
        else:
            self._lookup(st, p)
        self._after_lookup(st, p)

    def _lookup(self, st: Probe, p: int) -> None:
        """The statements that set ``f<p>`` to the build key id the row's keys find (-1: none)."""
        em = self.em
        keys = [em.value(k) for k in st.keys]
        if any(k.dtype.kind == "string" for k in keys):
            raise ExprError("string join keys are not compiled for the CPU")
        f = f"f{p}"
        valid = " and ".join(f"({k.valid})" for k in keys if k.valid != "True") or "True"
        em.emit(f"{f} = np.int64(-1)")
        em.emit(f"if {valid}:")
        em.indent += 1
        bits = [bits_of(k) for k in keys]
        # a row whose key is the last looked-up row's finds the same key id: hash probes on a
        # clustered column (lineitem's l_orderkey, ~4 rows per order) skip the hash, the Bloom
        # filter's and the table's misses (a bitmap filter or a direct table costs a read as it is)
        memo = KEY_MEMO and len(bits) == 1 and not st.packed and st.layout != "direct" and st.prefilter != "bitmap"
        if memo:
            self.memo.add(p)
            em.emit(f"if mh{p} and {bits[0]} == mk{p}:")
            em.emit(f"    {f} = mf{p}")
            em.emit("else:")
            em.indent += 1
        if st.packed:
            em.emit(f"{f}_c = np.int64(0)")
            em.emit(f"{f}_in = True")
            for j, b in enumerate(bits):
                em.emit(f"{f}_x = {b} - p{p}_pmins[{j}]")
                em.emit(f"if {f}_x < 0 or {f}_x >= p{p}_psizes[{j}]:")
                em.emit(f"    {f}_in = False")
                em.emit(f"{f}_c += {f}_x * p{p}_pstrides[{j}]")
            em.emit(f"if {f}_in:")
            em.indent += 1
            bits = [f"{f}_c"]
        if st.prefilter:
            # the build's runtime filter first: a key no build row has is turned away by one bit
            # test in a small, cache-resident array instead of a hash-table probe
            if st.prefilter == "bitmap" and INT_BITMAP_BODY:  # (one branch, on the bit: as _probe_test's)
                em.emit(f"{f}_b = np.uint64({bits[0]} - p{p}_flo)")
                em.emit(f"{f}_in = {f}_b < np.uint64(p{p}_fsize)")
                em.emit(f"{f}_u = {f}_b if {f}_in else np.uint64(0)")
                em.emit(f"if (p{p}_fbits[{f}_u >> np.uint64(6)] >> ({f}_u & np.uint64(63))) & np.uint64(1) "
                        f"& np.uint64({f}_in) != np.uint64(0):")
            elif st.prefilter == "bitmap":
                em.emit(f"{f}_b = {bits[0]} - p{p}_flo")
                em.emit(f"if {f}_b >= 0 and {f}_b < p{p}_fsize and "
                        f"(p{p}_fbits[{f}_b >> 6] >> np.uint64({f}_b & 63)) & np.uint64(1) != np.uint64(0):")
            else:
                em.emit(f"{f}_h = np.uint64({_HASH_SEED})")
                for b in bits:
                    em.emit(f"{f}_h = splitmix64({f}_h ^ np.uint64({b}))")
                em.emit(f"{f}_m = bloom_mask({f}_h)")
                em.emit(f"if (p{p}_fbits[np.int64({f}_h >> p{p}_fshift)] & {f}_m) == {f}_m:")
            em.indent += 1
        if st.layout == "direct":
            em.emit(f"{f}_d = {bits[0]} - p{p}_lo")
            em.emit(f"if {f}_d >= 0 and {f}_d < p{p}_direct.shape[0]:")
            em.emit(f"    {f} = np.int64(p{p}_direct[{f}_d])")
        else:
            if st.prefilter != "bloom":
                em.emit(f"{f}_h = np.uint64({_HASH_SEED})")
                for b in bits:
                    em.emit(f"{f}_h = splitmix64({f}_h ^ np.uint64({b}))")
            em.emit(f"{f}_s = slot_of({f}_h, p{p}_shift)")
            em.emit("while True:")
            em.emit(f"    {f}_k = p{p}_slots[{f}_s, 1]")
            em.emit(f"    if {f}_k == -1:")
            em.emit("        break")
            same = " and ".join(f"p{p}_tkeys[{j}, p{p}_rep[{f}_k]] == {b}" for j, b in enumerate(bits))
            cond = f"p{p}_slots[{f}_s, 0] == np.int64({f}_h)" + ("" if len(bits) == 1 else f" and {same}")
            em.emit(f"    if {cond}:")
            em.emit(f"        {f} = {f}_k")
            em.emit("        break")
            em.emit(f"    {f}_s = ({f}_s + 1) & (p{p}_slots.shape[0] - 1)")
        em.indent -= (1 if st.packed else 0) + (1 if st.prefilter else 0)
        if memo:
            em.emit(f"mh{p} = True")
            em.emit(f"mk{p} = {bits[0]}")
            em.emit(f"mf{p} = {f}")
            em.indent -= 1
        em.indent -= 1


_HASH_SEED = int(HASH_SEED)
# rows per block of the selection loop (its selection vector stays in the L1 cache)
_BLOCK = 1024
# True: a probe keeps its last key's lookup for a repeated key. Off by default: on the H100's 16 cores
# (TPC-H SF 10, session 11, scripts/cpu_switches_ab.py in one process) the loops without it were 16%
# faster in geomean over the 11 queries measured (tests and A/B runs turn it on)
KEY_MEMO = False
_RUNTIME_HASH = hashlib.sha256(Path(runtime.__file__).read_bytes()).hexdigest()[:16]
_CACHE: dict[str, Any] = {}
_LOCK = threading.Lock()


def _cache_dir() -> Path:
    root = os.environ.get("HETDB_KERNEL_CACHE", str(Path.home() / ".cache" / "hetdb" / "kernels"))
    return Path(root) / "cpu"


# the selection loop's bitmap test of its first probe (``_probe_test``) in unsigned integer arithmetic:
# a key below the bitmap's range wraps past its size, the bit is an int64 (no boolean compare). One
# core of an AMD EPYC, a 10k-key bitmap in L1: 1.40 ms per 1M rows against 2.12 for the signed,
# boolean form; with a filter beside it 1.87 against 2.48 (session 24). False: the signed form.
INT_BITMAP_TEST = True
# a probe's bitmap test in the loop's body the same way, one branch on the bit (not three: the range's
# two bounds and the bit); False: the signed, short-circuit form
INT_BITMAP_BODY = True


def _load_function(src: str, prefix: str = "hetdb_cpu_pipeline", entry: str = "pipeline",
                   scope: dict[str, Any] | None = None, store: dict[str, Any] | None = None) -> Any:
    """``entry`` of ``src``, compiled once per source text (module file on disk when possible,
    so Numba's cache keeps the machine code across processes); ``scope``: names the source takes
    as given, which forces the in-memory form (no disk cache); ``store``: where it is kept (else
    with the pipelines, which ``compile_stats`` counts)."""
    key = hashlib.sha256(src.encode()).hexdigest()[:24]
    store = _CACHE if store is None else store
    with _LOCK:
        hit = store.get(key)
        if hit is not None:
            return hit
        name = f"{prefix}_{key}"
        module = None
        if scope is None:
            try:
                d = _cache_dir()
                d.mkdir(parents=True, exist_ok=True)
                path = d / f"{name}.py"
                if not path.exists() or path.read_text() != src:
                    tmp = d / f".{name}.{os.getpid()}.tmp"
                    tmp.write_text(src)
                    os.replace(tmp, path)
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
            except OSError:
                module = None
        if module is None:  # no writable cache directory: compile in memory (no disk cache)
            scope = dict(scope or {})
            exec(compile(src.replace("cache=True", "cache=False"), name, "exec"), scope)  # noqa: S102
            fn = scope[entry]
        else:
            fn = getattr(module, entry)
        store[key] = fn
        return fn


def compile_spec(spec: Spec) -> Kernel:
    """The compiled function of ``spec``; ExprError when a part of it is not compiled."""
    gen = _Gen(spec)
    src, args, slots, ni, nf = gen.generate()
    fn = _load_function(src)
    keys = [k.dtype for k in spec.sink.keys] if isinstance(spec.sink, Aggregate) else []
    return Kernel(fn, args, list(gen.em.lookups), slots, ni, nf, keys, src, list(gen.inner_probes),
                  gen.key_signs, list(gen.em.params))


def compile_stats() -> dict[str, int]:
    """This process's generated loops: ``sources`` loaded, ``compiled`` (Numba compilations) and
    ``loaded`` (machine code read from Numba's cache on disk) of their specializations."""
    fns = list(_CACHE.values())
    made = sum(len(fn.signatures) for fn in fns)
    loaded = sum(sum(fn.stats.cache_hits.values()) for fn in fns)
    return {"sources": len(fns), "compiled": made - loaded, "loaded": loaded}
