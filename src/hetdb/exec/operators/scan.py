"""Scan sources: stored tables (row group by row group, zone-map pruning, pushed filters evaluated
right after the read, only the needed columns); files read in place are in scan_external.py."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hetdb.cache.rates import shared_rates
from hetdb.column import Batch
from hetdb.exec.columns import column_nbytes, slice_batch, slice_column, take
from hetdb.exec.hostutil import column_to_device
from hetdb.exec.operators.base import ExecContext, Source, Timer
from hetdb.plan.expr import Call, Expr
from hetdb.plan.logical import Scan
from hetdb.types import BOOL

# After this many rows, a runtime join filter that passed more than this share of them is dropped.
_RUNTIME_FILTER_TRIAL_ROWS = 1 << 20
_RUNTIME_FILTER_MAX_PASS = 0.8


def conjunction(filters: tuple[Expr, ...]) -> Expr | None:
    if not filters:
        return None
    return filters[0] if len(filters) == 1 else Call(BOOL, "and", tuple(filters))


def split_batches(ctx: ExecContext, batch: Batch) -> list[Batch]:
    """Cut a batch into ``options.batch_rows`` pieces (the whole batch when unset)."""
    n = ctx.batch_rows
    if not n or batch.num_rows <= n:
        return [batch]
    return [slice_batch(ctx.backend, batch, i, i + n) for i in range(0, batch.num_rows, n)]


# Host scans cut row groups into row ranges when a table has fewer row groups than worker threads
# (a 1M-row row group is one morsel: a 1.5M-row table would keep 2 of 16 workers busy), but never
# into ranges under MIN_MORSEL_ROWS, where per-batch overhead would dominate. A table with a row
# group per worker or more keeps whole row groups except its last ``threads`` ones, cut in
# TAIL_PARTS ranges: the workers run out of work within a quarter row group of each other instead of
# a whole one (SSB SF 10 at 16 threads: 58 row groups made 4 rounds with the last 10 of 16 workers
# busy), while most morsels stay whole (each costs GIL-held Python: see compiled_cpu_morsel).
MORSELS_PER_THREAD = 1
MIN_MORSEL_ROWS = 1 << 17
TAIL_PARTS = 4


def host_morsels(reader: Any, threads: int) -> list:
    """Morsels of a host table scan: row group numbers, or (row group, start, stop) row ranges when
    the table has too few row groups to keep ``threads`` workers busy, and for its last ``threads``
    row groups otherwise."""
    n = reader.num_row_groups
    target = MORSELS_PER_THREAD * threads
    if threads <= 1:
        return list(range(n))
    if n >= target:
        whole = n - threads
        return list(range(whole)) + _ranges(reader, range(whole, n), TAIL_PARTS)
    return _ranges(reader, range(n), -(-target // max(n, 1)))


def _ranges(reader: Any, groups: range, per_rg: int) -> list:
    """Row groups ``groups`` cut into ``per_rg`` row ranges each (fewer where a range would be
    under MIN_MORSEL_ROWS; a row group left whole is its number)."""
    out: list = []
    for rg in groups:
        rows = reader.row_group_rows(rg)
        parts = max(1, min(per_rg, rows // MIN_MORSEL_ROWS))
        if parts == 1:
            out.append(rg)
            continue
        cuts = [rows * i // parts for i in range(parts + 1)]
        out.extend((rg, cuts[i], cuts[i + 1]) for i in range(parts))
    return out


def _prune_fn():
    try:
        from hetdb.plan.pruning import prune
    except ImportError:  # the optimizer's pruning module is not there: every page is "unknown"
        return None
    return prune


def _location_bytes(loc: Any) -> int | None:
    for attr in ("length", "nbytes", "size"):
        v = getattr(loc, attr, None)
        if isinstance(v, int):
            return v
    if isinstance(loc, tuple) and len(loc) >= 2 and isinstance(loc[1], int):
        return loc[1]
    return None


@dataclass(frozen=True)
class TableScan(Source):
    scan: Scan = None
    # columns only the pushed filters read (a projection right above drops them): not gathered
    skip: frozenset[str] = frozenset()
    # CPU runtime join filters: (key expressions over scanned columns, pipeline id of the hash build
    # of an inner/semi join above). Rows whose key the build cannot hold are dropped before the
    # other columns are gathered; the join itself still decides.
    runtime_filters: tuple[tuple[tuple[Expr, ...], int], ...] = ()

    def describe(self) -> str:
        cols = ", ".join(self.scan.column_names)
        f = f" filters=[{' AND '.join(map(str, self.scan.filters))}]" if self.scan.filters else ""
        rf = "".join(f" runtime_filter=[{', '.join(map(str, keys))} in pipeline {pid}]"
                     for keys, pid in self.runtime_filters)
        return f"TableScan {self.scan.table} [{cols}]{f}{rf}"

    def init_global(self, ctx: ExecContext) -> Any:
        reader = ctx.db.table(self.scan.table)
        if ctx.device is not None:
            from hetdb.exec.operators.scan_device import DeviceScanState

            state = DeviceScanState(reader)
            ctx.cleanup.append(state.close)
            return state
        return reader

    def morsels(self, ctx: ExecContext, reader: Any) -> list:
        if ctx.device is not None:
            from hetdb.exec.operators.scan_device import plan_device_scan

            return plan_device_scan(self, ctx, reader)
        # without the host page cache every range would decode its whole page again: no splitting
        threads = int(getattr(ctx.options, "threads", 1) or 1)
        return host_morsels(reader, threads if getattr(ctx, "host_cache", None) is not None else 1)

    def read(self, ctx: ExecContext, rg: int, reader: Any) -> list[Batch]:
        with Timer(ctx, self.op_id):
            if ctx.device is not None:
                from hetdb.exec.operators.scan_device import read_device_scan

                return read_device_scan(self, ctx, rg, reader)
            t0 = time.perf_counter()
            out = self._read(ctx, rg, reader)
            # the router's cost model: pages a CPU worker gets through per second in a scan
            shared_rates().cpu_rate("scan").observe(len(self.scan.fields), time.perf_counter() - t0)
            return out

    def verdict(self, ctx: ExecContext, reader: Any, rg: int) -> str:
        """Zone-map verdict of row group ``rg`` for the pushed filters: skip, all or unknown."""
        scan = self.scan
        if not scan.filters or not ctx.options.zone_maps:
            return "unknown"
        prune = _prune_fn()
        if prune is None:
            return "unknown"
        name_of = dict(zip((f.cid for f in scan.fields), scan.column_names))
        used = set().union(*(f.columns() for f in scan.filters))
        zms = {cid: reader.zone_map(name_of[cid], rg) for cid in used if cid in name_of}
        return prune(scan.filters, zms)

    def _read(self, ctx: ExecContext, morsel: int | tuple[int, int, int], reader: Any) -> list[Batch]:
        scan = self.scan
        rg, rows = (morsel, None) if isinstance(morsel, int) else (morsel[0], morsel[1:])
        name_of = dict(zip((f.cid for f in scan.fields), scan.column_names))
        pred = conjunction(scan.filters)
        verdict = self.verdict(ctx, reader, rg)
        if verdict == "skip":
            ctx.add(self.op_id, pages_skipped=len(scan.fields))
            return []
        # Filter columns first: when no row passes, the other columns are never read.
        filter_cids = [] if pred is None or verdict == "all" else sorted(pred.columns())
        runtime = self._runtime_sides(ctx)
        cols: dict = {}
        nread = 0
        for cid in filter_cids:
            cols[cid] = self._read_column(ctx, reader, name_of[cid], rg, rows)
        num_rows = reader.row_group_rows(rg) if rows is None else rows[1] - rows[0]
        idx = None
        if filter_cids or runtime:
            mask = None
            if filter_cids:
                mask = ctx.evaluator.predicate(pred, Batch(dict(cols), num_rows))
            for keys, side in runtime:
                for cid in sorted(set().union(*(k.columns() for k in keys)) - cols.keys()):
                    filter_cids.append(cid)
                    cols[cid] = self._read_column(ctx, reader, name_of[cid], rg, rows)
                hit = self._runtime_mask(ctx, keys, side, Batch(dict(cols), num_rows))
                mask = hit if mask is None else ctx.backend.xp.logical_and(mask, hit)
            idx = ctx.backend.nonzero(mask)
            nread = num_rows
            if int(idx.shape[0]) == num_rows:
                idx = None
            elif int(idx.shape[0]) == 0:
                ctx.add(self.op_id, rows_in=num_rows, pages_skipped=len(scan.fields) - len(filter_cids))
                return []
        for f, cname in zip(scan.fields, scan.column_names):
            if f.cid not in cols:
                cols[f.cid] = self._read_column(ctx, reader, cname, rg, rows)
        out_rows = num_rows
        if self.skip:
            cols = {k: c for k, c in cols.items() if k not in self.skip}
        if idx is not None:
            cols = {k: take(ctx.backend, c, idx) for k, c in cols.items()}
            out_rows = int(idx.shape[0])
        batch = Batch({f.cid: cols[f.cid] for f in scan.fields if f.cid in cols}, out_rows)
        ctx.add(self.op_id, rows_in=nread or num_rows, rows_out=out_rows)
        return split_batches(ctx, batch)

    def _runtime_sides(self, ctx: ExecContext) -> list:
        """(key expressions, finished build side) of each runtime filter the backend can test: not
        on the GPU path, not for a build that spilled to partitions."""
        if not self.runtime_filters or ctx.device is not None \
                or getattr(ctx.backend, "join_might_match", None) is None:
            return []
        out = []
        for keys, pid in self.runtime_filters:
            side = ctx.results.get(pid)
            if side is None or getattr(side, "partitions", True) is not None:
                continue
            # a filter that keeps nearly every row costs a pass and saves nothing: stop using it
            if side.filter_rows >= _RUNTIME_FILTER_TRIAL_ROWS \
                    and side.filter_hits > _RUNTIME_FILTER_MAX_PASS * side.filter_rows:
                continue
            out.append((keys, side))
        return out

    def _runtime_mask(self, ctx: ExecContext, keys: tuple[Expr, ...], side: Any, batch: Batch) -> Any:
        """False for rows whose join key no build row can have (NULL keys never match)."""
        from hetdb.exec.keys import key_arrays

        xp = ctx.backend.xp
        if side.table is None:  # no build row has a non-NULL key: an inner/semi join keeps nothing
            return xp.zeros(batch.num_rows, dtype=bool)
        ev = ctx.evaluator
        keycols = [ev.cast(ev.evaluate(k, batch), k.dtype) for k in keys]
        arrays, valid = key_arrays(ctx.backend, keycols, side.encoders, add=False)
        hit = ctx.backend.join_might_match(side.table, arrays)
        if valid is not None:
            hit = xp.logical_and(hit, valid)
        side.filter_rows += batch.num_rows
        side.filter_hits += int(xp.count_nonzero(hit))
        return hit

    def _read_column(self, ctx: ExecContext, reader: Any, name: str, rg: int,
                     rows: tuple[int, int] | None = None):
        """Column ``name`` of row group ``rg`` on the backend; ``rows``: only that (start, stop) slice
        of it (a morsel smaller than a row group: the page is decoded or cached whole)."""
        # a page split into several morsels counts once in the pages by path: with its first morsel
        col = self._read_column_whole(ctx, reader, name, rg, count_path=rows is None or rows[0] == 0)
        return col if rows is None else slice_column(ctx.backend, col, rows[0], rows[1])

    def _read_column_whole(self, ctx: ExecContext, reader: Any, name: str, rg: int, count_path: bool = True):
        """The page through the connection's host page cache (when the route lets scans use it),
        its path counted for EXPLAIN ANALYZE (``count_path``)."""
        return self.read_pages(ctx, reader, [name], rg, count_path)[0]

    def read_pages(self, ctx: ExecContext, reader: Any, names: list[str], rg: int, count_path: bool = True) -> list:
        """Pages ``names`` of row group ``rg`` as ``_read_column_whole`` reads each, their statistics
        added once for the lot (a compiled CPU worker reads a morsel's columns per call: the locks
        and counters per page were a good part of its GIL-held time)."""
        from hetdb.cache.router import PageRouter, Route, RouteCounts

        cache = getattr(ctx, "host_cache", None)
        route = getattr(ctx.options, "route", "auto")
        # "copy" forces GPU scans' path (a connection checks it is a GPU one); the CPU scans of a GPU
        # connection (its fallback to the CPU) then read as "auto" does
        if cache is not None and not PageRouter("auto" if route == "copy" else route, gpu=False).use_host_tier:
            cache = None
        if getattr(reader, "path", None) is None:  # rows received from an exchange (dist/): not cached
            cache = None
        counts = RouteCounts()
        out = []
        cached = pages = nread = 0
        for name in names:
            if cache is not None:
                col, route = cache.read(reader, name, rg, counts=counts)
                if not count_path:  # the placement decisions count, the page itself does not
                    counts.pages.clear()
                    counts.bytes.clear()
            else:
                col, route = reader.read(name, rg), Route.DISK_DIRECT
            out.append(column_to_device(ctx.backend, col, ctx.dict_cache))
            if route is Route.HOST_CPU:
                cached += 1
                continue
            nbytes = None
            if hasattr(reader, "page_location"):
                try:
                    nbytes = _location_bytes(reader.page_location(name, rg))
                except Exception:  # noqa: BLE001 - statistics only; a missing location must not fail a query
                    nbytes = None
            nbytes = nbytes if nbytes is not None else column_nbytes(col)
            pages += 1
            nread += nbytes
            if cache is None and count_path:
                counts.add(route, nbytes)
        if cached:
            ctx.add(self.op_id, pages_cached=cached)
        if pages:
            ctx.add(self.op_id, pages_read=pages, bytes_read=nread)
        ctx.add_routes(self.op_id, counts)
        return out
