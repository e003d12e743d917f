"""Cardinality estimates for join ordering and build-side choice.

A scan's row count is the table's; the selectivity of its pushed filters is measured on a sample (up
to SAMPLE_ROWS rows from the first row groups, evaluated by the executor's expression evaluator), and
distinct counts of join keys come from the same sample. Everything else uses textbook formulas:
|L join R| = |L| * |R| / max(ndv(l), ndv(r)). Estimates steer plan shape only, never results.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from hetdb.plan.expr import ColumnRef, Expr
from hetdb.plan.logical import Aggregate, Filter, Join, Limit, Node, Project, Scan, TopN, Union, Values

SAMPLE_ROWS = 10_000
DEFAULT_SELECTIVITY = 0.25
_CACHE_LIMIT = 256  # column samples
_cache: OrderedDict[tuple, object] = OrderedDict()
_cache_lock = threading.Lock()


def _sample(db, scan: Scan) -> tuple[object, int, int] | None:
    """(host Batch keyed by cid of the scan's fields, sample rows, table rows) or None."""
    if scan.source != "table" or db is None:
        return None
    try:
        reader = db.table(scan.table)
    except Exception:  # noqa: BLE001 - estimates must never fail a query
        return None
    table_key = (getattr(db, "path", id(db)), scan.table, getattr(reader, "version", 0))
    heads = {}
    for c in scan.column_names:
        head = _column_head(reader, table_key, c)
        if head is None:
            return None
        heads[c] = head
    if not heads:
        return None
    # Every column of the sample must have the same rows (a head may be shorter).
    m = min(len(h) for h in heads.values())
    from hetdb.column import Batch

    return (Batch({f.cid: _concat_head([heads[c]], m) for f, c in zip(scan.fields, scan.column_names)}, m),
            m, reader.num_rows)


def _column_head(reader, table_key: tuple, column: str):
    """Up to SAMPLE_ROWS leading rows of one column, cached per column: the queries of a session read
    overlapping column sets of the same tables, and each column's first pages are read once."""
    key = (*table_key, column)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        parts: list = []
        n = 0
        for rg in range(reader.num_row_groups):
            if n >= SAMPLE_ROWS:
                break
            b = reader.read_batch([column], rg)
            parts.append(b.columns[column])
            n += b.num_rows
        if n == 0:
            return None
        hit = _concat_head(parts, SAMPLE_ROWS)
    except Exception:  # noqa: BLE001
        return None
    with _cache_lock:
        _cache[key] = hit
        while len(_cache) > _CACHE_LIMIT:
            _cache.popitem(last=False)
    return hit


def _concat_head(parts: list, limit: int):
    import numpy as np

    from hetdb.column import Column

    first = parts[0]
    if len(parts) == 1:
        col = first
    elif first.data is not None and all(p.dictionary is first.dictionary for p in parts):
        valid = None
        if any(p.validity is not None for p in parts):
            valid = np.concatenate([p.validity if p.validity is not None else np.ones(len(p), bool)
                                    for p in parts])
        col = Column(first.dtype, np.concatenate([p.data for p in parts]), valid, first.dictionary)
    elif first.data is None and first.offsets is not None:
        col = _concat_plain_strings(parts)
    else:
        col = first  # differing dictionaries: the first page is sample enough (_sample trims)
    if len(col) <= limit:
        return col
    if col.data is None:
        return Column(col.dtype, None, None if col.validity is None else col.validity[:limit],
                      None, col.offsets[:limit + 1], col.chars)
    return Column(col.dtype, col.data[:limit], None if col.validity is None else col.validity[:limit],
                  col.dictionary)


def _concat_plain_strings(parts: list):
    import numpy as np

    from hetdb.column import Column

    offs, chars, valid, base = [np.zeros(1, np.int64)], [], [], 0
    for p in parts:
        o = np.asarray(p.offsets, dtype=np.int64)
        offs.append(o[1:] - o[0] + base)
        chars.append(np.asarray(p.chars)[o[0]:o[-1]])
        base += int(o[-1] - o[0])
        valid.append(p.validity if p.validity is not None else np.ones(len(p), bool))
    validity = np.concatenate(valid) if any(p.validity is not None for p in parts) else None
    return Column(parts[0].dtype, None, validity, None, np.concatenate(offs), np.concatenate(chars))


def _value_span(db, scan: Scan, cid: str) -> float | None:
    """max - min + 1 of an integer (or date) scan column over the table's zone maps, or None."""
    try:
        name = dict(zip((f.cid for f in scan.fields), scan.column_names))[cid]
        field = next(f for f in scan.fields if f.cid == cid)
        if field.dtype.kind not in ("int32", "int64", "date"):
            return None
        reader = db.table(scan.table)
        key = (getattr(db, "path", id(db)), scan.table, getattr(reader, "version", 0), name, "span")
        with _cache_lock:
            hit = _cache.get(key)
        if hit is None:
            lo = hi = None
            for rg in range(reader.num_row_groups):
                z = reader.zone_map(name, rg)
                if z.min is not None:
                    lo = z.min if lo is None else min(lo, z.min)
                    hi = z.max if hi is None else max(hi, z.max)
            hit = (lo, hi)
            with _cache_lock:
                _cache[key] = hit
        lo, hi = hit
        return None if lo is None else float(int(hi) - int(lo) + 1)
    except Exception:  # noqa: BLE001 - estimates must never fail a query
        return None


def _ascending(data) -> bool:
    """Whether a sample column's values (integers, dates, dictionary codes) never decrease."""
    import numpy as np

    a = np.asarray(data)
    if a.dtype.kind not in "iu" or a.shape[0] < 2:
        return False
    return bool((a[1:] >= a[:-1]).all())


# False: the distinct counts as before (both refinements off; A/B runs, scripts/cpu_switches_ab.py)
REFINE_NDV = True


class Estimator:
    """Row-count and distinct-count estimates over one plan (results cached per node)."""

    def __init__(self, db, refined: bool = True) -> None:
        self.db = db
        # distinct counts of sorted sample columns scaled to the table and integer columns' capped
        # by their zone maps' span (False: as before both; GPU plans, tuned on those estimates)
        self.refined = refined and REFINE_NDV
        # Keyed by id(); the node is kept alive beside its estimate so an id is never reused.
        self._rows: dict[int, tuple[Node, float]] = {}
        self._origin: dict[str, tuple[Scan, str]] = {}

    def _note_origins(self, node: Node) -> None:
        if isinstance(node, Scan):
            for f in node.fields:
                self._origin[f.cid] = (node, f.cid)
        elif isinstance(node, Project):
            for f, e in node.exprs:
                if isinstance(e, ColumnRef) and e.cid in self._origin:
                    self._origin[f.cid] = self._origin[e.cid]
        elif isinstance(node, Aggregate):
            for f, e in node.keys:
                if isinstance(e, ColumnRef) and e.cid in self._origin:
                    self._origin[f.cid] = self._origin[e.cid]

    def rows(self, node: Node) -> float:
        key = id(node)
        if key not in self._rows:
            for k in node.inputs():
                self.rows(k)
            self._note_origins(node)
            self._rows[key] = (node, max(1.0, self._estimate(node)))
        return self._rows[key][1]

    def ndv(self, e: Expr, rows: float) -> float:
        """Distinct values of ``e`` among ``rows`` rows (sample-based for scan columns)."""
        if isinstance(e, ColumnRef) and e.cid in self._origin:
            scan, cid = self._origin[e.cid]
            s = _sample(self.db, scan)
            if s is not None:
                batch, n, total = s
                col = batch.columns[cid]
                try:
                    import numpy as np

                    data = col.data if col.data is not None else col.offsets[1:] - col.offsets[:-1]
                    _, counts = np.unique(data, return_counts=True)
                    d = float(len(counts))
                    f1 = float((counts == 1).sum())
                    f2 = float((counts == 2).sum())
                except Exception:  # noqa: BLE001
                    d, f1, f2 = n / 2, 0.0, 1.0
                full = d
                if self.refined and n < total and d < 0.9 * n and d > 1 and col.data is not None \
                        and _ascending(data):
                    # a sorted column (a table's clustering key: ps_partkey, l_orderkey) repeats each
                    # value in a run, so the head of the table holds few of its values: they go on
                    # past the sample at the same rate (partsupp's 10k first rows hold 2,500 of 2M
                    # part keys; unscaled, joins on it looked 800x less selective, TPC-H q09)
                    full = total * d / n
                elif n < total and d >= 0.9 * n:
                    # Nearly unique in the sample. A key has no repeats at all: scale to the table.
                    # A foreign key into a smaller table (l_suppkey: 100K values over 60M rows)
                    # repeats a little even in a small sample; Chao's estimator d + f1^2 / 2f2 then
                    # tells its domain, where scaling would claim 60M values and make joins on it
                    # look 600x more selective than they are (TPC-H q09 at SF 10).
                    full = total * d / n
                    if f2 > 0:
                        full = min(full, d + f1 * (f1 - 1) / (2 * (f2 + 1)))
                span = _value_span(self.db, scan, cid) if self.refined else None
                if span is not None:
                    # an integer column takes at most max - min + 1 values: a foreign key nearly
                    # unique in the sample (partsupp's ps_suppkey: 10k values in 10k rows) was
                    # scaled to the table's 8M rows, where it has 100k
                    full = min(full, span)
                return max(1.0, min(rows, full))
        return max(1.0, rows)

    def selectivity(self, scan: Scan, preds: tuple[Expr, ...]) -> float:
        if not preds:
            return 1.0
        s = _sample(self.db, scan)
        if s is None:
            return DEFAULT_SELECTIVITY ** len(preds)
        batch, n, _ = s
        try:
            from hetdb.backend.cpu import CpuBackend
            from hetdb.exec.expressions import ExprEvaluator

            ev = ExprEvaluator(CpuBackend())
            mask = None
            for p in preds:
                m = ev.predicate(p, batch)
                mask = m if mask is None else (mask & m)
            hits = float(mask.sum())
        except Exception:  # noqa: BLE001 - an op the evaluator lacks: fall back to a guess
            return DEFAULT_SELECTIVITY ** len(preds)
        return max(hits, 0.5) / n

    def _estimate(self, node: Node) -> float:
        if isinstance(node, Scan):
            total = self._table_rows(node)
            return total * self.selectivity(node, node.filters)
        if isinstance(node, Filter):
            from hetdb.plan.exprutil import conjuncts

            return self.rows(node.input) * (0.5 ** len(conjuncts(node.predicate)))
        if isinstance(node, Join):
            lr, rr = self.rows(node.left), self.rows(node.right)
            if node.kind in ("semi", "anti"):
                return lr * 0.5
            if node.kind in ("mark", "single"):
                return lr
            if node.kind == "cross" or not node.left_keys:
                inner = lr * rr * (0.5 if node.residual is not None else 1.0)
            else:
                div = max(max(self.ndv(a, lr), self.ndv(b, rr))
                          for a, b in zip(node.left_keys, node.right_keys))
                inner = lr * rr / div
            preserved = {"left": lr, "right": rr, "full": lr + rr}.get(node.kind, 0.0)
            return max(inner, preserved)
        if isinstance(node, Aggregate):
            r = self.rows(node.input)
            if not node.keys:
                return 1.0
            prod = 1.0
            for _, e in node.keys:
                prod *= self.ndv(e, r)
            return min(r, prod)
        if isinstance(node, (Limit, TopN)):
            r = self.rows(node.input)
            return min(r, node.limit) if node.limit is not None else r
        if isinstance(node, Values):
            return float(len(node.rows))
        if isinstance(node, Union):
            return sum(self.rows(k) for k in node.children)
        ins = node.inputs()
        return self.rows(ins[0]) if ins else 1.0

    def _table_rows(self, scan: Scan) -> float:
        try:
            if scan.source == "external":
                from hetdb.storage.external import lookup_source

                return lookup_source(scan.path).estimated_rows()
            return float(self.db.table(scan.table).num_rows)
        except Exception:  # noqa: BLE001
            return 1_000_000.0
