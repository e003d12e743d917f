"""Batches of row groups for the GPU: ``PageStreamer.batches()`` (mixed into ``stream.py``).

With ``batch_bytes`` > 0 (connection option ``gpu_batch_bytes``; pages decoded on arrival, i.e. not
``gpu_compressed_cache``) the streamer groups consecutive row groups into deliveries of about
``batch_bytes`` link bytes (``batch_plan.plan_groups``; at most a quarter of the GPU budget each) and
moves each run of consecutive row groups whose pages are all transient — none in the device cache,
none the cache admits — as ONE delivery: one device allocation, the host->device copies of every
section into its place, at most one launch of each batched kernel for all columns (``batch.py``).
The consumer gets one Batch spanning the run's row groups. A row group with a cached or admitted
page is delivered on its own, page by page as before (the cache keeps what it admits; its verdict
is asked for every page of a group, in page order, before any page of the group is moved); a run
also ends where a string column changes between dictionary and plain pages, or between plain pages
in codec "plain" and in a string codec (LZ4 chunks, encoded offsets: a delivery decodes such a
column's pages one by one and concatenates them, ``_coded_column``). Pages and bytes are counted per page in ``StreamStats`` and the
route counts either way; ``RouteCounts.deliveries`` counts the steps.

Ordering is that of the per-row-group pipeline: ``depth`` groups are scheduled ahead (their reads
into the group's ring slot, laid out column by column so back-to-back pages coalesce into one copy);
a group's memory is released when the consumer moves past it (the copy stream waits on an event of
the consumer's stream first).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.backend.gpu.batch_plan import (
    ColumnSpecLite,
    DeliveryPlan,
    PageSpec,
    delivery_bound,
    plan_delivery,
    plan_groups,
)
from hetdb.backend.gpu.stream_pages import _Page, _RowGroup
from hetdb.cache.pages import memoized, page_info
from hetdb.cache.router import Route
from hetdb.column import Batch, Column

DEFAULT_BATCH_BYTES = 64 << 20


@dataclass
class _Unit:
    """What the consumer gets at one step: a batch of row groups (``buffer`` set) or one row group
    delivered page by page (``rg`` set)."""

    row_groups: tuple[int, ...]
    batch: Batch
    rg: _RowGroup | None = None
    buffer: Any = None
    transient: int = 0


def _string_plain(spec: Any, page: _Page) -> bool:
    return spec.dtype.kind == "string" and page.encoding == "plain"


def _string_coded(spec: Any, page: _Page) -> bool:
    """A plain-string page in a string codec (hetdb.codec.strings: encoded offsets, LZ4 chunks): a
    delivery decodes its pages one by one (``_coded_column``) instead of through the plan."""
    return _string_plain(spec, page) and page.codec != "plain"


class BatchedDelivery:
    """The batched iteration of ``PageStreamer`` (see the module docstring)."""

    def batches(self) -> Iterator[tuple[tuple[int, ...], Batch]]:
        """Iterate ``(row groups, Batch)``: several consecutive row groups per Batch when batching
        is on (``batch_bytes``), else one. The arrays stay valid until the next step."""
        if self._gen is not None or self._closed:
            raise RuntimeError("a PageStreamer streams once; make a new one for another scan")
        if not self.batching:
            self._gen = self._iterate()
            return (((rg,), batch) for rg, batch in self._gen)
        self._gen = self._iterate_batches()
        return self._gen

    @property
    def batching(self) -> bool:
        return self.batch_bytes > 0 and not self.compressed and not self.keep

    # ---- planning --------------------------------------------------------------------------------
    def _rg_bounds(self, rg: int) -> tuple[int, int, int]:
        """(link bytes, device bytes bound in a delivery, padded bytes) of row group ``rg``."""
        reader, columns = self.reader, tuple(self.columns)

        def compute() -> tuple[int, int, int]:
            link = dev = padded = 0
            for c in columns:
                info = page_info(reader, c, rg, False)
                spec = reader.column(c)
                loc = info.location
                page = PageSpec(loc.length, info.num_rows, info.codec, info.sections)
                link += loc.length
                padded += loc.padded_length
                if spec.dtype.kind == "string" and info.encoding == "plain" and info.codec != "plain":
                    dev += 2 * info.device_bytes  # decoded page, then its part of the concatenation
                    continue
                dev += delivery_bound(page, np.dtype(spec.dtype.numpy_dtype).itemsize,
                                      spec.dtype.kind == "string" and info.encoding == "plain")
            return link, dev, padded

        return memoized(reader, ("batch bounds", columns, rg), compute)

    def _plan_groups(self) -> list[list[int]]:
        bounds = [self._rg_bounds(rg) for rg in self.row_groups]
        limit = getattr(self.budget, "limit_bytes", None)
        max_device = max(1, limit // 4) if limit else 1 << 62
        groups = plan_groups([b[0] for b in bounds], [b[1] for b in bounds], self.batch_bytes, max_device)
        # every ring slot holds the largest group (allocated once, never while a copy reads it)
        self._slot_bytes = max((sum(bounds[i][2] for i in g) for g in groups), default=0)
        return groups

    # ---- iteration -------------------------------------------------------------------------------
    def _iterate_batches(self) -> Iterator[tuple[tuple[int, ...], Batch]]:
        self._started = time.perf_counter()
        groups = self._plan_groups()
        pending: list[list[_RowGroup]] = []
        queue: list[_Unit] = []
        current: _Unit | None = None
        try:
            for gi in range(min(self.depth, len(groups))):
                pending.append(self._schedule_group(gi, groups[gi]))
            next_group = len(pending)
            while pending:
                queue.extend(self._deliver_group(pending[0]))
                pending.pop(0)
                if next_group < len(groups):
                    pending.append(self._schedule_group(next_group, groups[next_group]))
                    next_group += 1
                while queue:
                    unit = queue.pop(0)
                    if current is not None:
                        self._retire_unit(current)
                    current = unit
                    self.stats.seconds = time.perf_counter() - self._started
                    yield unit.row_groups, unit.batch
            if current is not None:
                self._retire_unit(current)
                current = None
        finally:
            for unit in ([current] if current is not None else []) + queue:
                self._retire_unit(unit)
            for rgs in pending:
                for rg in rgs:
                    self._abandon(rg)
            self._release_scan()

    def _retire_unit(self, unit: _Unit) -> None:
        if unit.rg is not None:
            self._retire(unit.rg)
            return
        cp = self._cupy
        done = cp.cuda.Event(disable_timing=True)
        done.record(self._consumer or cp.cuda.get_current_stream())
        self._copy_stream.wait_event(done)
        unit.buffer = None
        unit.batch = None
        if unit.transient:
            self.budget.release(unit.transient)
            unit.transient = 0

    # ---- delivery --------------------------------------------------------------------------------
    def _deliver_group(self, rgs: list[_RowGroup]) -> list[_Unit]:
        """Deliver a scheduled group: row groups holding a cached page, or a page the cache admits,
        go row group by row group (the cache keeps its own copy of such pages); each run of
        consecutive others whose string columns agree on dictionary or plain pages goes as one
        batch."""
        pages = [p for rg in rgs for p in rg.pages]
        special = [any(p.cached for p in rg.pages) for rg in rgs]
        if self.cache is not None and not all(special):
            # the cache's verdicts first: the admission the per-page path asks for each page, in page
            # order (asked when the group is delivered, so a group's pages see one access clock)
            first_reuse = self._first_reuse()
            for p in pages:
                if not p.cached:
                    p.admitted = self.cache.reserve(p.device_bytes, key=p.key, link_bytes=p.location.length,
                                                    first_reuse=first_reuse)
            special = [s or any(p.admitted for p in rg.pages) for s, rg in zip(special, rgs)]
        units: list[_Unit] = []
        i = 0
        try:
            while i < len(rgs):
                if special[i]:
                    units.append(_Unit((self.row_groups[rgs[i].index],), self._deliver(rgs[i]), rg=rgs[i]))
                    i += 1
                    continue
                j = i + 1
                while j < len(rgs) and not special[j] and self._same_strings(rgs[i], rgs[j]):
                    j += 1
                for rg in rgs[i:j]:
                    for p in rg.pages:
                        p.admitted = None  # refused: nothing reserved in the cache
                units.append(self._deliver_batch(rgs[i:j]))
                i = j
        except BaseException:
            for unit in units:
                self._retire_unit(unit)
            rgs[:] = rgs[i:]  # the caller abandons the rest (delivered ones are retired)
            raise
        return units

    def _same_strings(self, a: _RowGroup, b: _RowGroup) -> bool:
        """Whether every string column has dictionary pages in both row groups or plain in both."""
        for c, name in enumerate(self.columns):
            spec = self.reader.column(name)
            if spec.dtype.kind == "string" and (
                    _string_plain(spec, a.pages[c]) != _string_plain(spec, b.pages[c])
                    or _string_coded(spec, a.pages[c]) != _string_coded(spec, b.pages[c])):
                return False
        return True

    def _deliver_batch(self, rgs: list[_RowGroup]) -> _Unit:
        cp, stream, reader = self._cupy, self._copy_stream, self.reader
        self._unpin_host(wait=False)
        specs = [reader.column(name) for name in self.columns]
        strings = tuple(_string_plain(spec, rgs[0].pages[c]) for c, spec in enumerate(specs))
        coded = tuple(_string_coded(spec, rgs[0].pages[c]) for c, spec in enumerate(specs))
        planned = [c for c in range(len(self.columns)) if not coded[c]]
        sources: list[list[list[tuple[int, int]]]] = []
        raws: dict[int, list[Any]] = {}  # coded column -> per page: its bytes (ring slice or host-tier page)
        for c in range(len(self.columns)):
            col_sources = []
            for rg in rgs:
                p = rg.pages[c]
                got = p.future.result() if p.future is not None else None
                p.future = None
                if p.loading:
                    p.host, p.loading = got, False
                if coded[c]:
                    raws.setdefault(c, []).append(p.host if p.host is not None else got)
                    continue
                runs = p.host.runs if p.host is not None else [got]
                col_sources.append([(int(r.ctypes.data), int(r.shape[0])) for r in runs])
            if not coded[c]:
                sources.append(col_sources)
        ids = tuple(self.row_groups[rg.index] for rg in rgs)
        rows = sum(rg.pages[0].num_rows for rg in rgs)

        def make_plan() -> DeliveryPlan:
            lite = [ColumnSpecLite(self.columns[c], np.dtype(specs[c].dtype.numpy_dtype).itemsize, strings[c])
                    for c in planned]
            pages = [[PageSpec(p.location.length, p.num_rows, p.codec, p.sections, self._where(p))
                      for p in (rg.pages[c] for rg in rgs)] for c in planned]
            return plan_delivery(lite, pages)

        # a plan depends on the table version's manifest only: a repeated scan reuses it
        plan = memoized(reader, ("delivery plan", tuple(self.columns), ids, strings, coded), make_plan)
        first = ids[0]
        # coded string columns: each page's decoded arrays, then the column's concatenation
        extra = 2 * sum(rg.pages[c].device_bytes or 0 for c in raws for rg in rgs)
        self._reserve_bytes(plan.nbytes + extra, f"streaming row groups {first}..{self.row_groups[rgs[-1].index]} "
                                                 f"of table '{reader.name}'")
        from hetdb.backend.gpu.batch import run_delivery

        try:
            with stream:
                dtypes = [None if strings[c] else np.dtype(specs[c].dtype.numpy_dtype) for c in planned]
                buf, planned_arrays = run_delivery(plan, sources, dtypes, stream)
                arrays: list[Any] = [None] * len(self.columns)
                for c, a in zip(planned, planned_arrays):
                    arrays[c] = a
                columns = {}
                for c, (name, spec) in enumerate(zip(self.columns, specs)):
                    a = arrays[c]
                    if coded[c]:
                        col = self._coded_column([rg.pages[c] for rg in rgs], raws[c])
                    elif strings[c]:
                        col = Column(spec.dtype, validity=a.get("validity"), offsets=a["offsets"], chars=a["chars"])
                    elif rgs[0].pages[c].encoding == "dict":
                        col = Column(spec.dtype, data=a["data"], validity=a.get("validity"),
                                     dictionary=self._dictionary(name))
                    else:
                        col = Column(spec.dtype, data=a["data"], validity=a.get("validity"))
                    columns[name] = col
                event = cp.cuda.Event(disable_timing=True)
                event.record(stream)
        except BaseException:
            stream.synchronize()
            self.budget.release(plan.nbytes + extra)
            raise
        self._count_batch(rgs)
        hosts = [p.host for rg in rgs for p in rg.pages if p.host is not None]
        for rg in rgs:
            for p in rg.pages:
                p.host = None
        if hosts:
            self._host_pins.append((event, hosts))
        self._slot_events[rgs[0].slot] = event
        (self._consumer or cp.cuda.get_current_stream()).wait_event(event)
        self.routes.deliveries += 1
        self.stats.row_groups += len(rgs)
        self.stats.rows += rows
        return _Unit(ids, Batch(columns, rows), buffer=buf, transient=plan.nbytes + extra)

    def _coded_column(self, pages: list[_Page], raws: list[Any]) -> Column:
        """One string column of a delivery from pages in a string codec: each page copied as stored
        and decoded (``_decode``: nvCOMP for LZ4 chunks), the pages' arrays then concatenated."""
        from hetdb.backend.gpu.stream_io import _copy_runs
        from hetdb.backend.gpu.strings_codec import concat_strings

        cp, stream = self._cupy, self._copy_stream
        cols = []
        for p, got in zip(pages, raws):
            raw = cp.empty(p.location.length, dtype=cp.uint8)
            if isinstance(got, np.ndarray):
                raw.set(got[:p.location.length], stream=stream)
            else:  # a pinned host-tier page
                _copy_runs(raw, got.runs, p.location.length, stream)
            cols.append(self._decode(p, raw))
        return concat_strings(cols)

    def _count_batch(self, rgs: list[_RowGroup]) -> None:
        st = self.stats
        by_route: dict[Route, list[int]] = {}
        for rg in rgs:
            for p in rg.pages:
                loc = p.location
                if p.route is Route.HOST_TO_GPU:
                    st.pages_host += 1
                    st.bytes_host += loc.length
                else:
                    st.pages_read += 1
                    st.bytes_read += loc.padded_length
                    st.pages_loaded += p.route is Route.DISK_TO_HOST
                st.bytes_h2d += loc.length
                got = by_route.setdefault(p.route, [0, 0])
                got[0] += 1
                got[1] += loc.length
        for route, (pages, nbytes) in by_route.items():
            self.routes.add(route, nbytes, pages=pages)

    def _reserve_bytes(self, nbytes: int, what: str) -> None:
        if not self.budget.try_reserve(nbytes):
            if self._device_tier is not None:
                self._device_tier.evict(nbytes)
            self.budget.reserve(nbytes, what)
