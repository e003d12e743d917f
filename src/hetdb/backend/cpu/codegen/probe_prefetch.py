"""Lookup passes of a generated CPU pipeline loop for probes into large builds (``Probe.prefetch``).

Row at a time, a probe into a build larger than the caches waits for three dependent misses per row
(the table's slot or direct entry, the key's build row, the payload) and the loop's body is too long
for the CPU to overlap the next rows' misses with them. For a block of selected rows the loop
instead runs, before the body: a pass that computes each row's slot (or direct entry) and prefetches
it; a pass that looks the keys up (the slots are in the cache by then), keeps the key ids in
``fk<p>`` (and only the rows the first probe keeps) and prefetches each key's first build-row
entry; a pass that prefetches the payload
columns at those build rows. The body then reads ``fk<p>[j]`` instead of probing. (A synthetic
probe of 6M rows into 3M keys on one core: 348 -> 221 ms with the first two passes.)

Only probes before the first filter the selection does not test are taken (an earlier probe may
drop rows the passes then looked up for nothing), and only when their keys read the row's own
columns (not an earlier probe's payload) with no error exit (the passes have no ``continue``).
"""

from __future__ import annotations

from typing import Any

from hetdb.backend.cpu.codegen.aggregate_py import bits_of
from hetdb.backend.cpu.codegen.expr_py import ExprError


class PrefetchEmitter:
    """Mixin of the pipeline generator (pipeline_py._Gen): ``fetched`` holds the probes whose key
    ids the lookup pass computed."""

    em: Any
    fetched: set[int]

    def _state(self) -> tuple:
        em = self.em
        return (em.lines, len(em.lines), em.indent, dict(em.env), dict(em.pending), em.dict_cids,
                dict(em.dict_alias), dict(em.made), len(em.lookups), len(em.params))

    def _restore(self, saved: tuple, keep_args: bool) -> None:
        em = self.em
        lines, n, em.indent, env, pending, em.dict_cids, alias, made, lookups, params = saved
        del lines[n:]
        em.lines, em.env, em.pending, em.dict_alias, em.made = lines, dict(env), dict(pending), dict(alias), dict(made)
        if not keep_args:
            del em.lookups[lookups:]
            del em.params[params:]

    def _leading_probes(self, stages: list[Any], taken: int) -> list[tuple[int, Any, list]]:
        """(probe number, probe, the projections before it) of the leading probes to prefetch."""
        out = []
        p = -1
        projections: list = []
        for k, st in enumerate(stages):
            if not isinstance(st, tuple):
                p += 1
                if not st.prefetch or st.kind not in ("inner", "semi", "anti", "left"):
                    if st.kind == "left":
                        continue  # (drops no row: the probes after it see every row)
                    # a probe into a cache-sized build, probed in the body, may drop most rows
                    # first (TPC-H q08: lineitem's part probe keeps 1 in 150; looking its orders
                    # up for all of them made the loop 2x slower)
                    break
                out.append((p, st, list(projections)))
                continue
            if st[0] == "filter":
                if k < taken:
                    continue
                break
            projections.extend(st[1])
        return out

    def _pass(self, probes: list, emit_one: Any) -> tuple[list[str], list]:
        """One pass over the block's selected rows: ``emit_one(p, st)`` per probe (each in turn;
        a probe whose statements would leave the loop, or that cannot be compiled, is dropped)."""
        em = self.em
        base = self._state()
        em.lines, em.indent = [], 3
        kept = []
        for p, st, projections in probes:
            mark = self._state()
            for cid, e in projections:
                em.project(cid, e)
            try:
                emit_one(p, st)
            except ExprError:
                self._restore(mark, keep_args=False)
                continue
            if any(line.lstrip().startswith(("return", "continue")) for line in em.lines[mark[1]:]):
                self._restore(mark, keep_args=False)
                continue
            kept.append((p, st, projections))
        lines = em.lines
        self._restore(base, keep_args=True)
        if not kept:
            return [], []
        return ["        for j in range(k):", "            i = sel[j]"] + lines, kept

    def _slot_prefetch(self, p: int, st: Any) -> None:
        em = self.em
        bits = [bits_of(em.value(k)) for k in st.keys]
        f = f"pq{p}"
        if st.packed:  # out of range codes prefetch some entry: harmless, the lookup pass checks
            em.emit(f"{f}_c = np.int64(0)")
            for j, b in enumerate(bits):
                em.emit(f"{f}_c += ({b} - p{p}_pmins[{j}]) * p{p}_pstrides[{j}]")
            bits = [f"{f}_c"]
        if st.layout == "direct":
            at = f"p{p}_direct, min(max({bits[0]} - p{p}_lo, 0), p{p}_direct.shape[0] - 1)"
        else:
            em.emit(f"{f}_h = np.uint64({self._seed()})")
            for b in bits:
                em.emit(f"{f}_h = splitmix64({f}_h ^ np.uint64({b}))")
            at = f"p{p}_slots, 2 * slot_of({f}_h, p{p}_shift)"
        if st.prefilter:
            # the lookup pass tests the build's filter first: most rows it turns away never reach
            # the table, and a pass over every row only to prefetch the few others cost more than
            # it saved (TPC-H q08's part probe, 1 row in 150 kept)
            raise ExprError("a probe behind a runtime filter")
        em.emit(f"prefetch({at})")

    def _key_lookup(self, p: int, st: Any) -> None:
        em = self.em
        self._lookup(st, p)
        em.emit(f"if f{p} >= 0:")
        if st.unique or not (st.kind in ("inner", "left") or st.residual is not None):
            em.emit(f"    prefetch(p{p}_rep, f{p})")
        else:
            em.emit(f"    prefetch(p{p}_start, f{p})")

    def _payload_prefetch(self, p: int, st: Any) -> None:
        """The key's first build row (its CSR entry for a key of several rows) and the payload
        columns there."""
        em = self.em
        cols = [f"p{p}_b{j}" for j, c in enumerate(st.payload) if not c.rows]
        em.emit(f"if fk{p}[j] >= 0:")
        if st.unique or not (st.kind in ("inner", "left") or st.residual is not None):
            if not cols:
                raise ExprError("no payload to prefetch")
            em.emit(f"    pr{p} = p{p}_rep[fk{p}[j]]")
        else:
            em.emit(f"    pr{p} = p{p}_start[fk{p}[j]]")
            if not cols:
                em.emit(f"    prefetch(p{p}_order, pr{p})")
                return
            if st.clustered:  # the payload copies are in CSR order (probe_py.py)
                for c in cols:
                    em.emit(f"    prefetch({c}, pr{p})")
                return
            em.emit(f"    pr{p} = p{p}_order[pr{p}]")
        if st.mapped:
            em.emit(f"    pr{p} = p{p}_vidx[pr{p}]")
        for c in cols:
            em.emit(f"    prefetch({c}, pr{p})")

    def _prefetch_passes(self, stages: list[Any], taken: int) -> list[str]:
        """The block's lookup passes (statements at the selection loop's level), setting ``fetched``.

        Per probe in turn: prefetch the slots, look the keys up keeping in ``sel`` (and ``fk``) only
        the rows the probe lets through (an inner or semi join's key no build row has, an anti
        join's key one has, go no further: the body would drop them at this probe, and every stage
        before it is a probe these passes ran or a filter the selection tested; projections are
        computed where first used), then one pass prefetching every probe's payload."""
        out: list[str] = []
        fetched: list[int] = []
        for item in self._leading_probes(stages, taken):
            p, st = item[0], item[1]
            looked, kept = self._pass([item], self._key_lookup)
            if not kept:
                break
            slots, _ = self._pass([item], self._slot_prefetch)
            keep = "True"
            if st.kind in ("inner", "semi"):
                keep = f"f{p} >= 0"
            elif st.kind == "anti" and st.residual is None:
                keep = f"f{p} < 0"
            fetched.append(p)
            out += slots + ["        kept = 0"] + looked + ["            sel[kept] = i"]
            out += [f"            fk{q}[kept] = fk{q}[j]" for q in fetched[:-1]]
            out += [f"            fk{p}[kept] = f{p}", f"            kept += np.int64({keep})", "        k = kept"]
        if not fetched:
            return []
        self.fetched = set(fetched)
        chosen = [x for x in self._leading_probes(stages, taken) if x[0] in self.fetched]
        payload, _ = self._pass(chosen, self._payload_prefetch)
        return out + payload
