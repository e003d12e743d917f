"""The aggregating sink of a generated pipeline kernel (pipeline_gen.py): the group key's slot in
the device hash table (or, without GROUP BY, the states folded in registers) and the accumulator
updates of a row, combined per warp where the lanes share a group."""

from __future__ import annotations

import dataclasses

from hetdb.backend.gpu.codegen.expr3 import ExprError
from hetdb.backend.gpu.codegen.expr_cuda import ctype
from hetdb.backend.gpu.codegen.pipeline_kernel import _KEY_KINDS, _ORDERED, MAX_KEYS, Accumulator, GroupKeyOut
from hetdb.backend.gpu.codegen.pipeline_spec import AGG_OPS
from hetdb.plan.expr import Call, ColumnRef


class AggregateGen:
    """pipeline_gen._Gen's aggregation (a mixin: ``self.em``, ``self.spec``, ``self.sub``,
    ``self.payload``, ``self.probe_rows`` are the generator's)."""

    def aggregate(self) -> tuple[list[Accumulator], list[GroupKeyOut]]:
        em, sink = self.em, self.spec.sink
        if len(sink.keys) > MAX_KEYS:
            raise ExprError(f"{len(sink.keys)} group keys are more than {MAX_KEYS}")
        nk = len(sink.keys)
        if nk or not sink.fold:
            em.emit("// aggregate: find or insert the group")
            em.emit(f"i64 kb[{max(nk, 1)}];")
            em.emit("i64 nb = 0;")
            em.emit("u64 h = HETDB_HASH_SEED;")
        else:
            em.emit("// aggregate: the one group's states in registers")
        keys = []
        for k, e in enumerate(sink.keys):
            e = self.sub(e)
            dict_cid = None
            if isinstance(e, ColumnRef) and e.cid in self.payload and self.payload[e.cid][2].build_row:
                brow = self.probe_rows[self.payload[e.cid][0]]  # no build row (left join): NULL
                em.emit(f"kb[{k}] = {brow} >= 0 ? {brow} : 0;")
                em.emit(f"if ({brow} < 0) nb |= {1 << k}LL;")
                em.emit(f"h = pipe::hash_step(h, kb[{k}]);")
                keys.append(GroupKeyOut(e.dtype, None, e.cid))
                continue
            expr = None
            if e.dtype.kind == "string" and not (isinstance(e, ColumnRef) and e.cid in em.dict_cids):
                # a string computed from one dictionary column (substring(c_phone, 1, 2)): group by
                # that column's codes; the executor computes the key per group and the aggregation
                # merges the groups whose keys are equal
                ref = _only_column(e)
                if ref is None or ref.cid not in em.dict_cids:
                    raise ExprError(f"group key {e} is a string that is not a dictionary column")
                expr, e = e, ref
            if e.dtype.kind == "string":
                dict_cid = e.cid
            elif e.dtype.kind not in _KEY_KINDS:
                raise ExprError(f"group key {e} of type {e.dtype} is not compiled")
            v = em.value(e)
            if e.dtype.kind == "float64":
                # the {-0.0, 0.0} group shows its first row's sign as DuckDB does (key_bits makes
                # both 0): the smallest (row << 1 | sign) of the group's zero keys, a hidden
                # accumulator that the runtime reads back (pipeline_runtime.Groups)
                pos = "(pl_row0 + pl_base + row)" if self.paged else "(pl_row0 + row)"
                em.emit(f"const double kf{k} = ({v.valid}) ? (double){v.value} : 0.0;")
                em.emit(f"const i64 kz{k} = (({v.valid}) && kf{k} == 0.0) ? "
                        f"(({pos} << 1) | (__double_as_longlong(kf{k}) < 0 ? 1LL : 0LL)) : HETDB_I64_MAX;")
                v = dataclasses.replace(v, value=f"kf{k}")
                self.zero_signs.append(k)
            bits = f"key_bits(({ctype(e.dtype)}){v.value})"
            if v.valid == "true":
                em.emit(f"kb[{k}] = {bits};")
            else:
                em.emit(f"kb[{k}] = ({v.valid}) ? {bits} : 0;")
                em.emit(f"if (!({v.valid})) nb |= {1 << k}LL;")
            em.emit(f"h = pipe::hash_step(h, kb[{k}]);")
            keys.append(GroupKeyOut(e.dtype if expr is None else expr.dtype, dict_cid, expr=expr))
        accs: list[Accumulator] = []
        # without GROUP BY every row updates the one group: its states fold in registers (kl{a}),
        # one group update per warp after the tile loop (finish), not contended atomics per row
        self.keyless = nk == 0 and sink.fold
        if self.keyless:
            em.emit("pl_any = true;")
        else:
            em.emit("h = pipe::hash_step(h, nb);")
            look = (f"pipe::group_slot<{max(nk, 1)}>(g_state, g_keys, g_mask, {nk}, kb, nb, h, g_used, g_max, "
                    "g_overflow)")
            if nk and sink.share:
                # the lanes of a warp with the row's key (same hash, then the same key bits as the
                # lowest of them) take that lane's slot: one table look-up per key and warp
                em.emit("const unsigned gs_peers = __match_any_sync(__activemask(), (unsigned long long)h);")
                em.emit("const int gs_lead = __ffs(gs_peers) - 1;")
                em.emit("bool gs_same = __shfl_sync(gs_peers, nb, gs_lead) == nb;")
                for k in range(nk):
                    em.emit(f"gs_same = (__shfl_sync(gs_peers, kb[{k}], gs_lead) == kb[{k}]) && gs_same;")
                em.emit("i64 g = -1;")
                em.emit(f"if (!gs_same || (int)(threadIdx.x & 31) == gs_lead) g = {look};")
                em.emit("const i64 gs_g = __shfl_sync(gs_peers, g, gs_lead);")
                em.emit("if (gs_same) g = gs_g;")
            else:
                em.emit(f"const i64 g = {look};")
            em.emit("if (g < 0) continue;")

        updates: list[tuple[int, str, str, str]] = []  # (accumulator, struct, value, condition)

        def acc(j: int, part: str, struct: str, kind: str, value: str, cond: str) -> None:
            a = len(accs)
            accs.append(Accumulator(j, part, struct, kind))
            if self.keyless:
                stmt = f"{struct}::fold(kl{a}, {value});"
                em.emit(stmt if cond == "true" else f"if ({cond}) {stmt}")
            else:
                updates.append((a, struct, value, cond))

        for j, (op, arg) in enumerate(sink.aggs):
            if op not in AGG_OPS:
                raise ExprError(f"aggregate {op} is not compiled")
            if op == "count_star":
                acc(j, "cnt", "fused::AccSumI64", "i64", "1LL", "true")
                continue
            if arg is None:
                raise ExprError(f"aggregate {op} needs an argument")
            arg = self.sub(arg)
            v = em.value(arg)
            kind = arg.dtype.kind
            if op == "count":
                acc(j, "cnt", "fused::AccSumI64", "i64", "1LL", v.valid)
                continue
            if kind not in _ORDERED:
                raise ExprError(f"{op} of {arg.dtype} is not compiled")
            f64 = kind == "float64"
            if op in ("sum", "avg"):
                if f64:
                    acc(j, "sum", "fused::AccSumF64", "f64", f"(double){v.value}", v.valid)
                else:
                    acc(j, "sum", "fused::AccSumI64", "i64", f"(long long){v.value}", v.valid)
                    if kind != "int32":
                        # BIGINT/DECIMAL sums are exact modulo 2^64 only; a DOUBLE sum of the same
                        # values tells which multiple of 2^64 they are off by (exec.wide.wide_sum)
                        acc(j, "fsum", "fused::AccSumF64", "f64", f"(double){v.value}", v.valid)
            else:
                name = "Min" if op == "min" else "Max"
                if f64:
                    acc(j, "val", f"fused::Acc{name}F64", "order_f64", f"(double){v.value}", v.valid)
                else:
                    acc(j, "val", f"fused::Acc{name}I64", "i64", f"(long long){v.value}", v.valid)
            acc(j, "cnt", "fused::AccSumI64", "i64", "1LL", v.valid)
        for k in self.zero_signs:
            acc(-1, f"zero_sign{k}", "fused::AccMinI64", "i64", f"kz{k}", f"kz{k} != HETDB_I64_MAX")
        if updates:
            self._group_updates(updates, sink.fold)
        return accs, keys

    def _group_updates(self, updates: list[tuple[int, str, str, str]], warp: bool) -> None:
        """The accumulator updates of a row in group slot ``g``; with ``warp`` the lanes of a warp in
        the same slot combine theirs first (fused_pipeline.cuh group_merge), a lane alone in its slot
        updates it directly."""
        em = self.em

        def direct() -> None:
            for a, struct, value, cond in updates:
                stmt = f"{struct}::add(acc{a} + g, {value});"
                em.emit(stmt if cond == "true" else f"if ({cond}) {stmt}")

        if not warp:
            direct()
            return
        em.emit("const unsigned wg_peers = fused::match_group(g);")
        em.open("if (wg_peers == (1u << (threadIdx.x & 31))) {")
        direct()
        em.close()
        em.open("else {")
        for a, struct, value, cond in updates:
            em.emit(f"i64 wg{a} = {struct}::identity();")
            stmt = f"{struct}::fold(wg{a}, {value});"
            em.emit(stmt if cond == "true" else f"if ({cond}) {stmt}")
        for a, struct, _, _ in updates:
            em.emit(f"fused::group_merge<{struct}>(wg_peers, wg{a}, acc{a} + g);")
        em.close()


def _only_column(e) -> ColumnRef | None:
    """The one column ``e`` reads (a ColumnRef node of it), None when it reads none or several or
    is not a function of it (random())."""
    refs: list[ColumnRef] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ColumnRef):
            refs.append(x)
        if isinstance(x, Call) and x.op == "random":
            return None
        stack.extend(x.children())
    return refs[0] if refs and len({r.cid for r in refs}) == 1 else None
