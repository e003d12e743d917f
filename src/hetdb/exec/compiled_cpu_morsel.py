"""A compiled CPU worker's per-morsel bookkeeping with as little GIL-held Python as it can: its
statistics gathered locally and added to the query's once when the worker ends, a morsel whose
pages are all in the host page cache read with one lock (their keys and stored bytes worked out once
per row group and pipeline run).

Measured on the 16-core machine (SSB SF 10, 16 threads, 51d242f): the workers spent 230-590 us of
thread CPU per morsel outside the compiled loops, most of it holding the GIL, against 80-200 us
with one thread; with 58 morsels the GIL was busy for 60-85% of the pipelines' worker phase (q3.4:
18 of 21.6 ms), so that Python, not the loops, set the phase's length.
"""

from __future__ import annotations

import time
from typing import Any

from hetdb.cache.router import Route, RouteCounts
from hetdb.column import Column
from hetdb.exec.operators.base import ExecContext

_HOST_CPU = Route.HOST_CPU


class LocalStats:
    """Operator statistics one worker adds up (``ExecContext.add`` takes a lock per call)."""

    def __init__(self) -> None:
        self.values: dict[int, dict[str, float]] = {}
        self.routes: dict[int, Any] = {}

    def add(self, op_id: int, **deltas: float) -> None:
        mine = self.values.get(op_id)
        if mine is None:
            mine = self.values[op_id] = {}
        for k, v in deltas.items():
            mine[k] = mine.get(k, 0) + v

    def add_route(self, op_id: int, route: Any, nbytes: int, pages: int) -> None:
        counts = self.routes.get(op_id)
        if counts is None:
            counts = self.routes[op_id] = RouteCounts()
        counts.add(route, nbytes, pages)

    def publish(self, ctx: ExecContext) -> None:
        """Add what was gathered to the query's statistics (once, when the worker ends)."""
        for op_id, deltas in self.values.items():
            ctx.add(op_id, **deltas)
        for op_id, counts in self.routes.items():
            ctx.add_routes(op_id, counts)
        self.values, self.routes = {}, {}


class ResidentPages:
    """Per pipeline run: the host page cache keys and stored bytes of a row group's pages the loop
    reads (the same list object each time, as ``DecodedPageCache.read_resident`` wants)."""

    def __init__(self, ctx: ExecContext, src: Any, names: list[str]) -> None:
        cache = getattr(ctx, "host_cache", None)
        if cache is not None and not hasattr(cache, "read_resident"):
            cache = None
        if cache is not None:
            from hetdb.cache.router import PageRouter

            route = getattr(ctx.options, "route", "auto")
            if not PageRouter("auto" if route == "copy" else route, gpu=False).use_host_tier:
                cache = None
        self.cache, self.src, self.names = cache, src, names
        self.groups: dict[int, tuple[list[tuple], int]] | None = None
        self.reader: Any = None

    def read(self, reader: Any, rg: int, count_path: bool, stats: LocalStats) -> list[Column] | None:
        """The pages when all are cached (statistics as ``TableScan.read_pages`` counts them), else
        None."""
        if self.cache is None:
            return None
        groups = self.groups
        if groups is None or reader is not self.reader:
            # (one pipeline's runs may read several sources: stored tables, rows a worker received
            # from an exchange, which have no path and no cached pages)
            path = getattr(reader, "path", None)
            self.reader, self.groups = reader, None
            if path is None:
                return None
            groups = self.groups = _groups_of(path, tuple(self.names))
        got = groups.get(rg)
        if got is None:
            keys = [(reader.path, name, rg) for name in self.names]
            if self.cache.read_resident(keys) is None:
                return None
            got = groups[rg] = (keys, sum(self.cache.stored_length(reader, name, rg) for name in self.names))
        keys, length = got
        pages = self.cache.read_resident(keys)
        if pages is None:
            return None
        op = self.src.op_id
        stats.add(op, pages_cached=len(pages))
        if count_path:
            stats.add_route(op, _HOST_CPU, length, len(pages))
        return pages


    def keys_of(self, reader: Any, rg: int) -> list[tuple] | None:
        """The page cache keys of row group ``rg``'s pages (in ``names`` order) in ``reader``'s table
        (None: a reader without a path, e.g. rows received from an exchange)."""
        got = None if self.groups is None or reader is not self.reader else self.groups.get(rg)
        if got is not None:
            return got[0]
        path = getattr(reader, "path", None)
        return None if path is None else [(path, name, rg) for name in self.names]


# per (table version directory, columns): row group -> (page cache keys, their stored bytes), kept
# across queries (the same list objects each time: see DecodedPageCache.read_resident)
_GROUPS: dict[tuple, dict[int, tuple[list[tuple], int]]] = {}
_MAX_GROUPS = 256


def _groups_of(path: str, names: tuple[str, ...]) -> dict[int, tuple[list[tuple], int]]:
    key = (path, names)
    got = _GROUPS.get(key)
    if got is None:
        if len(_GROUPS) >= _MAX_GROUPS:
            _GROUPS.clear()
        got = _GROUPS[key] = {}
    return got


class LocalTimer:
    """``Timer`` into a worker's ``LocalStats`` (the operator's seconds, added when the worker ends)."""

    __slots__ = ("stats", "op_id", "t0")

    def __init__(self, stats: LocalStats, op_id: int) -> None:
        self.stats, self.op_id = stats, op_id

    def __enter__(self) -> LocalTimer:
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stats.add(self.op_id, seconds=time.perf_counter() - self.t0)
