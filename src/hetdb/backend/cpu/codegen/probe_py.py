"""How a compiled CPU loop walks a probe's matches and reads its build columns (mixin of
pipeline_py._Gen): inner joins loop over the key's build rows (one for a unique key, the key's CSR
range otherwise), left joins go on with build row -1 when nothing matches, semi/anti joins with a
residual try the key's rows until one meets it.

A non-unique probe marked ``clustered`` reads its payload columns at the CSR position ``m<p>`` from
copies laid out in the table's key order (``clustered_payload``: made once per build before the
workers start), so a key's matches read consecutive entries instead of one random build row each:
TPC-H q09's partsupp probe finds ~7.5 lineitem rows per key among 3.26M build rows at SF 10, five
columns read at random per match (the loop's largest cost). Build rows themselves (``brow<p>``: what
a materializing loop outputs and a marking loop flags) stay the batch's.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numba import njit, prange

_LOCK = threading.Lock()
# a table whose CSR order already runs through consecutive build rows this often is read in order as
# it is (a build from a scan sorted by its key, as lineitem by l_orderkey): no copies
_IN_ORDER_SHARE = 0.5


@njit(cache=True, nogil=True, parallel=True)
def _runs(order, nchunks):
    n = order.shape[0]
    counts = np.zeros(nchunks, np.int64)
    for c in prange(nchunks):
        for i in range(max(1, c * n // nchunks), (c + 1) * n // nchunks):
            counts[c] += order[i] == order[i - 1] + 1
    return counts.sum()


def scattered(t: Any) -> bool:
    """Whether the join table's CSR order is far from its build rows' order (decided once per table:
    copies in key order then pay; see clustered_payload)."""
    got = getattr(t, "scattered", None)
    if got is None:
        n = int(t.order.shape[0])
        got = t.scattered = n > 1 and int(_runs(t.order, np.int64(64))) < _IN_ORDER_SHARE * (n - 1)
    return got


def clustered_payload(side: Any, cid: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(data, validity) of build column ``cid`` in the join table's CSR order (the batch row of CSR
    position m is ``order[m]``, through ``valid_idx`` when the build had NULL keys), made once per
    table and kept on it."""
    from hetdb.backend.cpu.backend import CpuBackend

    t = side.table
    made = getattr(t, "clustered", None)
    if made is None:
        with _LOCK:
            made = getattr(t, "clustered", None)
            if made is None:
                made = t.clustered = {}
    hit = made.get(cid)
    if hit is None:
        be = CpuBackend()
        idx = t.order if side.valid_idx is None else be.gather(side.valid_idx, t.order)
        col = side.batch.columns[cid]
        hit = (None if col.data is None else be.gather(col.data, idx),  # (a plain string: its rows only)
               None if col.validity is None else be.gather(col.validity, idx))
        with _LOCK:
            hit = made.setdefault(cid, hit)
    return hit


class ProbeEmitter:
    """The parts of pipeline_py._Gen after a probe's key lookup (``em``: its Emitter; ``payload``:
    build columns by cid; ``payload_row``: per clustered probe, the index its payload is read at)."""

    em: Any
    payload: dict
    payload_row: dict[int, str]
    inner_probes: list[int]
    outer: set[int]

    def _after_lookup(self, st: Any, p: int) -> None:
        em, f = self.em, f"f{p}"
        if st.residual is not None and st.kind in ("semi", "anti"):
            self._exists(st, p)
            return
        if st.kind == "anti":
            em.emit(f"if {f} >= 0:")
            em.emit("    continue")
            return
        if st.kind == "left":
            self._outer(st, p)
            return
        em.emit(f"if {f} < 0:")
        em.emit("    continue")
        if st.kind == "semi":
            return
        self.inner_probes.append(p)
        if st.unique:
            em.emit(f"brow{p} = p{p}_rep[{f}]")
        else:
            em.emit(f"for m{p} in range(p{p}_start[{f}], p{p}_start[{f} + 1]):")
            em.indent += 1
            em.emit(f"brow{p} = p{p}_order[m{p}]")
            if st.clustered:
                self.payload_row[p] = f"m{p}"
        if st.mapped:
            em.emit(f"brow{p} = p{p}_vidx[brow{p}]")
        for j, c in enumerate(st.payload):
            self.payload[c.cid] = (p, j, c)
        if st.residual is not None:
            r = em.value(st.residual)
            em.emit(f"if not (({r.valid}) and {r.value}):")
            em.emit("    continue")

    def _outer(self, st: Any, p: int) -> None:
        """A left join: each match, or one row with build row -1 (its payload NULL) without one."""
        em, f = self.em, f"f{p}"
        self.inner_probes.append(p)
        self.outer.add(p)
        if st.unique:
            em.emit(f"brow{p} = p{p}_rep[{f}] if {f} >= 0 else np.int64(-1)")
        else:
            em.emit(f"for m{p} in range(p{p}_start[{f}] if {f} >= 0 else 0, p{p}_start[{f} + 1] if {f} >= 0 else 1):")
            em.indent += 1
            em.emit(f"brow{p} = p{p}_order[m{p}] if {f} >= 0 else np.int64(-1)")
        if st.mapped:
            em.emit(f"if brow{p} >= 0:")
            em.emit(f"    brow{p} = p{p}_vidx[brow{p}]")
        for j, c in enumerate(st.payload):
            self.payload[c.cid] = (p, j, c)

    def _exists(self, st: Any, p: int) -> None:
        """A semi / anti join with a residual: the key's build rows are tried until one meets it
        (values computed in that loop are forgotten after it)."""
        em, f = self.em, f"f{p}"
        em.emit(f"hit{p} = False")
        em.emit(f"if {f} >= 0:")
        em.indent += 1
        if st.unique:
            em.emit(f"for m{p} in range({f}, {f} + 1):")
            em.emit(f"    brow{p} = p{p}_rep[m{p}]")
        else:
            em.emit(f"for m{p} in range(p{p}_start[{f}], p{p}_start[{f} + 1]):")
            em.emit(f"    brow{p} = p{p}_order[m{p}]")
        em.indent += 1
        if st.mapped:
            em.emit(f"brow{p} = p{p}_vidx[brow{p}]")
        saved = dict(em.env), dict(em.pending), dict(em.made)
        for j, c in enumerate(st.payload):
            self.payload[c.cid] = (p, j, c)
        r = em.value(st.residual)
        em.emit(f"if ({r.valid}) and {r.value}:")
        em.emit(f"    hit{p} = True")
        em.emit("    break")
        em.env, em.pending, em.made = saved
        for c in st.payload:
            self.payload.pop(c.cid)
        em.indent -= 2
        em.emit(f"if {'not ' if st.kind == 'semi' else ''}hit{p}:")
        em.emit("    continue")
