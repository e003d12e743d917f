"""The arguments of a compiled CPU loop, bound once per kernel and refreshed per morsel.

A loop's arguments are the morsel's input columns plus what stays the same for the whole pipeline
(the join tables, the build columns it gathers, literal parameters) and the lookup tables over string
dictionaries (the same as long as a column's dictionary is). Building the list anew per morsel cost
about 50-90 us of GIL-held Python per morsel; with 16 workers that queues them behind each other, so
the fixed part is resolved once per kernel and a morsel only places its own columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.backend.cpu.codegen.probe_py import clustered_payload
from hetdb.column import Batch, Column


class BoundArgs:
    """One kernel's argument list: fixed values in place, the per-morsel slots listed."""

    def __init__(self, ctx: Any, probes: list, kernel: Any, direct: tuple | None = None) -> None:
        self.ctx, self.kernel = ctx, kernel
        self.values: list[Any] = [None] * len(kernel.args)
        self.inputs: list[tuple[int, str, bool]] = []        # (position, input cid, data?)
        self.lut_args: list[tuple[int, int, bool]] = []      # (position, lookup number, values?)
        self.payload_dicts: dict[str, Column] = {}
        for _, side, pay in probes:
            for f in pay:
                d = side.batch.columns[f.cid].dictionary
                if d is not None:
                    self.payload_dicts[f.cid] = d
        # per lookup: (dictionary, values, valid) of the last dictionary it was computed for
        self.luts: list[tuple[Any, np.ndarray, np.ndarray] | None] = [None] * len(kernel.lookups)
        for pos, a in enumerate(kernel.args):
            what = a[1]
            if what == "input":
                self.inputs.append((pos, a[2], a[3] == "data"))
            elif what == "lut":
                self.lut_args.append((pos, a[2], a[3] == "values"))
            elif what == "param":
                self.values[pos] = kernel.params[a[2]]
            elif what == "direct":  # the group keys' ranges (compiled_cpu_kernels.direct_ranges)
                self.values[pos] = direct[0] if a[2] == "lo" else direct[1]
            elif what == "probe":
                self.values[pos] = probe_arg(probes[a[2]][1], a[3])
            elif what == "cpayload":  # a build column copied in the table's key order
                data, validity = clustered_payload(probes[a[2]][1], a[3])
                self.values[pos] = data if a[4] == "data" else validity
            else:
                col = probes[a[2]][1].batch.columns[a[3]]
                self.values[pos] = col.data if a[4] == "data" else col.validity

    def bind(self, cols: dict[str, Column]) -> list[Any]:
        """The argument list for a morsel of ``cols``."""
        out = list(self.values)
        for pos, cid, data in self.inputs:
            col = cols[cid]
            out[pos] = col.data if data else col.validity
        if self.lut_args:
            luts = [self._lut(i, lk, cols) for i, lk in enumerate(self.kernel.lookups)]
            for pos, i, values in self.lut_args:
                out[pos] = luts[i][1] if values else luts[i][2]
        return out

    def _lut(self, i: int, lk: Any, cols: dict[str, Column]) -> tuple[Any, np.ndarray, np.ndarray]:
        """(dictionary, values, valid) of lookup ``lk`` over the dictionary of its source column,
        plus one entry for a NULL string."""
        col = cols.get(lk.source)
        d = col.dictionary if col is not None and col.dictionary is not None else self.payload_dicts[lk.source]
        hit = self.luts[i]
        if hit is not None and hit[0] is d:
            return hit
        n = len(d)
        codes = np.zeros(n + 1, np.int32)
        codes[:n] = np.arange(n, dtype=np.int32)
        validity = np.ones(n + 1, bool)
        validity[n] = False
        ev = self.ctx.evaluator
        strings = Column(T.STRING, data=codes, validity=validity, dictionary=d)
        res = ev.cast(ev.evaluate(lk.expr, Batch({lk.cid: strings}, n + 1)), lk.expr.dtype)
        dt = lk.expr.dtype
        values = np.asarray(res.data)
        values = values.astype(bool if dt.kind == "bool" else np.float64 if dt.kind == "float64" else np.int64)
        valid = np.ones(n + 1, bool) if res.validity is None else np.asarray(res.validity, dtype=bool)
        self.luts[i] = (d, values, valid)
        return self.luts[i]


def probe_arg(side: Any, name: str) -> Any:
    """Argument ``name`` of a probe stage: a part of the build side's join table."""
    from hetdb.backend.cpu.join_filter import filter_of

    t = side.table
    if name in ("fbits", "flo", "fsize", "fshift"):
        f = filter_of(t)
        return {"fbits": lambda: f.bits, "flo": lambda: np.int64(f.lo), "fsize": lambda: np.int64(f.size),
                "fshift": lambda: np.uint64(64 - f.shift)}[name]()
    return {
        "rep": lambda: t.table.key_rep, "direct": lambda: t.direct, "lo": lambda: np.int64(t.direct_lo),
        "slots": lambda: t.table.slots, "shift": lambda: t.table.shift, "tkeys": lambda: t.keys,
        "pmins": lambda: t.pack[0], "psizes": lambda: t.pack[1], "pstrides": lambda: t.pack[2],
        "start": lambda: t.start, "order": lambda: t.order, "vidx": lambda: side.valid_idx,
    }[name]()
