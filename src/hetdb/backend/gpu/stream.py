"""PageStreamer: table pages into GPU memory, each routed by where copies of it already live.

Which path a page takes is the router's decision (``cache/router.py``); this module carries it out:

    GPU_RESIDENT   nothing moves: the cached device Column is used (pinned while in use)
    HOST_TO_GPU    one async H2D copy per contiguous run straight out of the pinned block(s) of the
                   ``HostPageCache`` (no CPU copy, no checksum: it was verified when loaded)
    DISK_TO_HOST   an I/O thread reads the page (O_DIRECT) into pinned blocks of the host tier (which
                   admitted it); the CRC is checked once there; then the H2D copy as above
    DISK_DIRECT    the same read into a slot of a ring of pinned buffers, then the copy

Pipeline per row group (``depth`` row groups scheduled ahead, triple-buffered by default):

    I/O threads   reads + CRC of the missing pages
    copy stream   the H2D copies (of the stored, i.e. compressed, bytes), then on-device decoding: plain
                  fixed-width pages are *viewed* as value arrays, encoded data sections are decoded by a
                  kernel (decode.cu) into the array the device cache keeps,
                  validity bits are unpacked on the GPU, dict-string codes are viewed and the column's
                  dictionary is moved once per scan, plain strings become device offsets + chars
    consumer      computes on row group i (on its own stream, which waits on an event of the copy
                  stream) while later row groups are read and copied

Host memory is ordered by events: the reads of row group i+depth into a ring slot wait (in the I/O
thread) for the copies out of that slot to finish, and a host-tier page stays pinned (never evicted or
reused) until the copies out of it have completed. Device memory is ordered the same way: before a row
group's arrays are released (or unpinned in the cache, hence evictable), the copy stream waits on an
event recorded on the consumer's stream, so a reallocation can never overwrite data a queued kernel
still reads. The copy stream is one per device and process: CuPy's pool reuses a freed block only on the
stream that allocated it, so one stream lets every scan (and every connection) reuse the same blocks.

Every device byte is a reservation against the ``DeviceMemoryBudget``: cached pages through the
``DevicePageCache`` (which admits and evicts by benefit, ``cache/policy.py``), pages it does not keep
as transient reservations released when the consumer moves on. Only the columns and
row groups asked for are read (the caller passes the row groups that survive zone-map pruning).

``deliveries()``/``batches()`` (stream_batch.py) deliver runs of transient row groups as one step each
(one allocation, batched decode kernels, or pages kept encoded with ``compressed``); iterating the
streamer itself goes row group by row group.
The rest of the streamer: stream_pages.py (page facts, statistics), stream_io.py (the I/O threads'
reads and CRC checks, the copy stream), stream_fill.py (``fill_cache``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hetdb.backend.gpu import stream_io
from hetdb.backend.gpu.stream_batch import BatchedDelivery
from hetdb.backend.gpu.stream_fill import FillCache
from hetdb.backend.gpu.stream_io import PageReads, _copy_runs, copy_stream
from hetdb.backend.gpu.stream_pages import (
    StreamStats,
    _column_nbytes,
    _delivered,
    _Page,
    _RowGroup,
    _view,
    device_page_bytes,
    keeps_compressed,
    page_codec,
    page_layout,
    release_batches,
)
from hetdb.backend.gpu.upload import note_copies
from hetdb.cache.base import PageCache, PageKey
from hetdb.cache.host_cache import HostPage, HostPageCache, page_ident
from hetdb.cache.pages import memoized, page_info, scan_device_bytes
from hetdb.cache.rates import shared_rates
from hetdb.cache.router import PageRouter, Route, RouteCounts
from hetdb.column import Batch, Column
from hetdb.errors import CorruptDataError

__all__ = ["PageStreamer", "StreamStats", "copy_stream", "device_page_bytes", "keeps_compressed",
           "page_codec", "page_layout", "_column_nbytes", "_delivered"]



# A scheduled group whose pages one host-tier look-up found (a warm scan's steady state) is delivered
# without a per-page object or step (stream_pages._RowGroup ``hosts``: the _Pages are made only when
# something asks for them; stream_batch._deliver_batch's ``warm``). False: each page gets its _Page and
# host-tier entry when scheduled, and the delivery reads them page by page (A/B: warm_timeline switch
# warmgroups=0).
WARM_GROUPS = True


class PageStreamer(FillCache, PageReads, BatchedDelivery):
    """Iterate ``(row_group, Batch of device Columns)`` over ``row_groups`` of ``columns``.

    The yielded arrays stay valid until the next iteration step (or ``close``); a consumer that keeps
    results longer copies them. Use as a context manager or exhaust the iterator, so pins and
    reservations are returned.

    ``router`` decides each page's path (default: automatic); a router that forbids the device or
    host tier makes the streamer ignore that tier (except that the device cache still gives memory
    back when a transient page needs it). ``keep``: cache every page on the device regardless of
    the placement policy (a user's pin loading a table; False pages are still transient when the
    budget refuses them). ``shared``: the scan's ``cache.coscan.SharedScan`` when CPU workers take
    row groups of it too (co-processing): the streamer delivers only those it claims first.
    ``streams``: (copy, decode) streams to use instead of the process's (``prime``). ``neighbours``
    (option gpu_copy_neighbours): batched deliveries copy a column's pages lying back to back in
    the host tier as one copy. ``decoded`` (with ``compressed``): columns whose encoded pages are
    decoded on arrival all the same (the device cache keeps them decoded: cache/placement.py).
    """

    decoded: frozenset[str] = frozenset()

    def __init__(self, reader: Any, columns: list[str], row_groups: list[int] | None = None, *,
                 budget: Any, cache: PageCache | None = None, host_cache: HostPageCache | None = None,
                 depth: int = 3, io_workers: int | None = None, consumer_stream: Any = None,
                 direct: bool = True, compressed: bool = False, router: PageRouter | None = None,
                 keep: bool = False, batch_bytes: int = 0, shared: Any = None, overlap: bool = False,
                 zero_copy: frozenset[str] = frozenset(), streams: tuple[Any, Any] | None = None,
                 neighbours: bool = True, decoded: frozenset[str] = frozenset()) -> None:
        import cupy

        if depth < 1:
            raise ValueError("depth must be >= 1")
        for c in columns:
            reader.column(c)  # CatalogError naming the column if it does not exist
        self.reader = reader
        self.columns = list(columns)
        self.row_groups = list(range(reader.num_row_groups) if row_groups is None else row_groups)
        self.budget = budget
        self.router = router or PageRouter()
        if self.router.cpu_workers:
            raise ValueError("PageStreamer delivers pages to the GPU only: route HOST_CPU pages elsewhere")
        self._device_tier = cache  # evicted from under memory pressure even when the route ignores it
        self.cache = cache if self.router.use_device_tier or keep else None
        self.host_cache = host_cache if self.router.use_host_tier else None
        self.keep = keep
        # batch_bytes > 0: batches() groups row groups into deliveries of about that many link bytes
        # (stream_batch.py); 0: one row group per step, page by page
        self.batch_bytes = max(0, int(batch_bytes))
        # overlap (option gpu_delivery_overlap): smaller first deliveries, decode kernels on the
        # consumer's stream (stream_batch.py)
        self.overlap = overlap
        # columns a paged delivery leaves in the pinned host tier for the consumer's kernel to read
        # in place (the router's zero_copy_columns; pages that allow it: stream_pages.zero_copy_address)
        self.zero_copy = frozenset(zero_copy)
        # a cache.coscan.SharedScan: CPU workers take row groups of this scan from its back; the
        # streamer claims each before scheduling it and stops where they began
        self.shared = shared
        self._held: Any = None  # stream_batch: the step the consumer finished with, not yet retired
        self.routes = RouteCounts()
        self._tier_stats0 = self._tier_stats()
        self.depth = depth
        # direct=False reads through the OS page cache (files known to be hot there); O_DIRECT is the
        # default so a scan larger than memory neither pollutes nor depends on the page cache.
        self.direct = direct
        # compressed=True (connection option gpu_compressed_cache): encoded pages stay encoded in
        # device memory as EncodedColumns (backend/gpu/encoded.py) that generated kernels read in place
        self.compressed = compressed
        self.decoded = frozenset(decoded) if compressed else frozenset()
        self.stats = StreamStats()
        self._cupy = cupy
        self._device_id = cupy.cuda.Device().id
        # ``streams``: (copy, decode) streams of the scan's own (stream_io.early_streams: a scan started
        # early queues its deliveries there, apart from the other scans' on the process's streams)
        self._copy_stream = copy_stream(self._device_id) if streams is None else streams[0]
        self._decode_on = None if streams is None else streams[1]
        self._consumer = consumer_stream
        self._io_workers = max(1, io_workers or stream_io.READ_THREADS)
        self._readers: ThreadPoolExecutor | None = None  # made at the first read (``_pool``): a warm scan reads nothing
        self._slots: list[np.ndarray | None] = [None] * depth
        self._to_read: list = []  # (page, runs, host-tier blocks or None) routed, read not started (stream_io)
        self._slot_events: list[Any] = [None] * depth
        self._dictionaries: dict[str, Column] = {}
        self._dict_pins: list[PageKey] = []
        self._dict_transient = 0
        self._closed = False
        self._started = 0.0
        self._gen: Iterator[tuple[int, Batch]] | None = None
        self._wrappers: list[Iterator] = []  # generators around _gen handed out (stream_batch._wrapper)
        self._host_pins: list[tuple[Any, list[HostPage]]] = []  # (copy event, pages it copies from)
        # (copy event, pinned staging arrays its copies read: kept until they have run)
        self._staged: list[tuple[Any, list[np.ndarray]]] = []
        self._slot_bytes: int | None = None  # computed when a ring slot is first needed (see _slot)
        self._transient_held = 0  # stream_batch: budget bytes its deliveries hold now
        self._ring_need = 0       # stream_batch: what they hold at most at once (``_plan_groups``)
        self._group_need = 0      # stream_batch: what one delivery holds at most
        self._first: int | None | bool = False  # see _first_reuse (False: not computed yet)
        self._prime_bytes = 0  # stream_batch.prime: while it runs, the bytes deliveries queued ahead may hold
        self._tail_ramp = 0  # stream_batch.prime: a primed scan's last deliveries halve down (TAIL_RAMP)
        self._consuming = False  # stream_batch: the consumer has asked for a delivery (priming is over)
        # a column's pages lying back to back in the host tier go as one copy (stream_batch: ``mirror``)
        self.neighbours = neighbours
        self._string_columns: list | None = None  # stream_batch._same_strings: (index, spec) of string columns

    # ---- public ----------------------------------------------------------------------------------
    def __enter__(self) -> PageStreamer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def wait_for_copies(self) -> None:
        """Block the calling thread (not holding the interpreter lock) until the copies queued so
        far have run: a co-processed scan's GPU side is through its share on the link."""
        self._copy_stream.synchronize()

    def __iter__(self) -> Iterator[tuple[int, Batch]]:
        if self._gen is not None or self._closed:
            raise RuntimeError("a PageStreamer streams once; make a new one for another scan")
        self._gen = self._iterate()
        return self._gen

    def _iterate(self) -> Iterator[tuple[int, Batch]]:
        self._started = time.perf_counter()
        pending: list[_RowGroup] = []
        current: _RowGroup | None = None
        # with CPU workers sharing the scan (``shared``), only the row groups none of them took
        end = len(self.row_groups)

        def claimed(i: int) -> bool:
            nonlocal end
            if self.shared is not None and not self.shared.take_front([i]):
                end = i
            return i < end

        try:
            next_index = 0
            while next_index < min(self.depth, end) and claimed(next_index):
                pending.append(self._schedule(next_index))
                next_index += 1
            while pending:
                rg = pending[0]
                batch = self._deliver(rg)
                pending.pop(0)
                if current is not None:
                    self._retire(current)
                current = rg
                if next_index < end and claimed(next_index):
                    pending.append(self._schedule(next_index))
                    next_index += 1
                self.stats.seconds = time.perf_counter() - self._started
                yield self.row_groups[rg.index], batch
            if current is not None:
                self._retire(current)
                current = None
        finally:
            if current is not None:  # stopped early: the step the consumer was on ends here
                release_batches([batch])
            for rg in ([current] if current is not None else []) + pending:
                self._abandon(rg)
            self._release_scan()

    def close(self) -> None:
        """Return every pin, reservation and device buffer this scan holds; idempotent. The
        iterators handed out end here (outermost first), and the Batches of the step the consumer
        was on are emptied (``release_batches``), so nothing that still references them — a
        consumer's suspended generator — keeps the delivery's device memory alive."""
        wrappers, self._wrappers = self._wrappers, []
        for gen in wrappers:
            gen.close()
        if self._gen is not None:
            self._gen.close()  # runs the generator's cleanup if it stopped at a yield
        self._release_scan()

    @property
    def _pool(self) -> ThreadPoolExecutor:
        """The I/O threads reading pages from storage (made at the first read)."""
        if self._readers is None:
            self._readers = ThreadPoolExecutor(max_workers=self._io_workers, thread_name_prefix="hetdb-stream")
        return self._readers

    def _tier_stats(self) -> tuple[int, int, int]:
        """(admitted, evicted, bypassed) of both tiers so far (a scan reports its deltas)."""
        out = [0, 0, 0]
        for tier in (self._device_tier, self.host_cache):
            if tier is not None:
                st = tier.stats
                out[0] += st.admitted
                out[1] += st.evictions
                out[2] += st.bypassed
        return tuple(out)

    def route_counts(self) -> RouteCounts:
        """Pages and bytes by path so far, with the tiers' placement decisions since the scan began
        (tiers shared with concurrent scans count theirs too)."""
        now = self._tier_stats()
        self.routes.admitted, self.routes.evicted, self.routes.bypassed = (
            a - b for a, b in zip(now, self._tier_stats0))
        return self.routes

    def _observe_rates(self) -> None:
        """Feed the scan's end-to-end rates to the cost model: the disk's when most bytes came from
        storage, the host→GPU link's when most were copies out of the host tier."""
        st, rates = self.stats, shared_rates()
        if st.seconds <= 0 or self.routes.pages.get(Route.HOST_ZERO_COPY.value):
            return  # (pages read in place moved no bytes the link's rate could be judged by)
        if st.bytes_read > st.bytes_host:
            rates.observe_disk(st.bytes_read, st.seconds)
        elif st.bytes_host:
            rates.observe_h2d(st.bytes_h2d, st.seconds)

    def _release_scan(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._readers is not None:
            self._readers.shutdown(wait=True)
        # host pages unpinned as their copies complete, before the stream is waited for (which waits for
        # the consumer's last kernels too: a scan closed once its last delivery is consumed unpins them
        # while the GPU works, exec/fusion_run.py)
        self._unpin_host(wait=True)
        self._copy_stream.synchronize()
        self._observe_rates()
        for key in self._dict_pins:
            self.cache.unpin(key)
        self._dict_pins.clear()
        self._dictionaries.clear()
        if self._dict_transient:
            self.budget.release(self._dict_transient)
            self._dict_transient = 0

    # ---- scheduling ------------------------------------------------------------------------------
    def _schedule(self, i: int) -> _RowGroup:
        """Route each page of the i-th row group: pin device-cache or host-tier hits, start loading
        the others (into the host tier when it has room, else into the row group's ring slot)."""
        return self._schedule_group(i, [i])[0]

    def _schedule_group(self, slot_index: int, positions: list[int]) -> list[_RowGroup]:
        """``_schedule`` for the row groups at ``positions``, sharing ring slot ``slot_index %
        depth``: their pages read into it lie column by column (a column's pages back to back)."""
        slot = slot_index % self.depth
        reader, compressed, columns, decoded = self.reader, self.compressed, self.columns, self.decoded
        ids = tuple(self.row_groups[i] for i in positions)
        # the pages' facts in order, with their host-tier keys and locations: once per table version
        infos, host_keys, locations, idents, protos, rows, links = memoized(
            reader, ("group pages", tuple(columns), ids, compressed, decoded),
            lambda: _group_pages(reader, columns, ids, compressed, decoded))
        router = self.router
        hosts = None
        if not router.use_device_tier and self.host_cache is not None and router.use_host_tier:
            # no device tier to ask first: every page's host-tier look-up at once (the steady state
            # of a scan streamed out of the host tier), page by page only when one is missing
            hosts = self.host_cache.lookup_many(host_keys, locations, stable=True, idents=idents)
        ncols = len(columns)
        if hosts is not None and WARM_GROUPS:  # (every page a host-tier hit: their _Pages made when asked for)
            route = router.host_path(0)  # (no CPU workers, see __init__: one route for all)
            return [_RowGroup(i, slot, protos=protos[r * ncols:(r + 1) * ncols], hosts=hosts[r * ncols:(r + 1) * ncols],
                              route=route, num_rows=rows[r], link_bytes=links[r]) for r, i in enumerate(positions)]
        rgs = [_RowGroup(i, slot, [_Page(*proto) for proto in protos[r * ncols:(r + 1) * ncols]], num_rows=rows[r],
                         link_bytes=links[r]) for r, i in enumerate(positions)]
        if hosts is not None:  # (WARM_GROUPS off: each page told its host-tier entry, as before)
            route = router.host_path(0)
            pages = [page for rg in rgs for page in rg.pages]
            for page, host in zip(pages, hosts):
                page.host = host
                page.route = route
            return rgs
        # column by column: the pages loaded into the host tier now take its blocks in this order,
        # so a column's pages of neighbouring row groups lie back to back there (a later delivery
        # copies them as one: batch_plan's ``mirror``)
        try:
            for c in range(len(columns)):
                for rg in rgs:
                    page = rg.pages[c]
                    page.route = router.route_with(self, page, page.location.length)
            # the host-tier loads first (their blocks are taken), then the ring's reads, which wait
            # for the copies out of their slot
            self.submit_reads()
            ring = [rg.pages[c] for c in range(len(columns)) for rg in rgs
                    if rg.pages[c].route is Route.DISK_DIRECT]
            if ring:
                offset = 0
                for p in ring:
                    p.slot_offset = offset
                    offset += p.location.padded_length
                buf = self._slot(slot, offset)
                for p in ring:
                    self.queue_ring_read(p, buf[p.slot_offset:p.slot_offset + p.location.padded_length])
                self.submit_reads(self._slot_events[slot])
        except BaseException as e:
            self.drop_reads(e)  # (no page is left waiting for a read that never starts)
            raise
        return rgs

    # ---- delivery --------------------------------------------------------------------------------
    def _deliver(self, rg: _RowGroup) -> Batch:
        cp = self._cupy
        stream = self._copy_stream
        self._unpin_host(wait=False)
        with stream:
            for page in rg.pages:
                if page.cached:
                    nbytes = _column_nbytes(page.value)
                    self.stats.pages_cached += 1
                    self.stats.bytes_cached += nbytes
                    self.routes.add(Route.GPU_RESIDENT, nbytes)
                    continue
                from_storage = page.future is not None
                host = page.future.result() if from_storage else None
                page.future = None
                if page.loading:
                    page.host, page.loading = host, False
                nbytes = page.device_bytes
                if nbytes is None:
                    nbytes = device_page_bytes(self.reader, page.column, page.row_group, page.location,
                                               page.sections, page.num_rows, page.codec,
                                               self.compressed and page.column not in self.decoded)
                if page.admitted is not None:  # asked already for a batch (stream_batch.py)
                    page.cached, page.admitted = page.admitted, None
                elif self.keep:
                    page.cached = self.cache.reserve(nbytes)
                else:
                    page.cached = self.cache is not None and self.cache.reserve(
                        nbytes, key=page.key, link_bytes=page.location.length, first_reuse=self._first_reuse())
                if not page.cached:
                    self._reserve_transient(nbytes, page)
                try:
                    raw = cp.empty(page.location.length, dtype=cp.uint8)
                    if page.host is not None:
                        _copy_runs(raw, page.host.runs, page.location.length, stream)
                        runs = page.host.runs
                    else:
                        raw.set(host[:page.location.length], stream=stream)
                        runs = [host]
                    page.value = self._decode(page, raw, runs)
                except BaseException:
                    if page.cached:  # the reservation never became an entry
                        self.cache.release(nbytes)
                        page.cached = False
                    raise
                if page.cached:
                    self.cache.put(page.key, page.value, nbytes, pin=True, reserved=True,
                                   link_bytes=page.location.length, first_reuse=self._first_reuse())
                self.routes.add(page.route, page.location.length)
                if from_storage:
                    self.stats.pages_read += 1
                    self.stats.bytes_read += page.location.padded_length
                    self.stats.pages_loaded += page.host is not None
                else:
                    self.stats.pages_host += 1
                    self.stats.bytes_host += page.location.length
                self.stats.bytes_h2d += page.location.length
            event = cp.cuda.Event(disable_timing=True)
            event.record(stream)
            note_copies(event)  # (small uploads go beside these copies until they are done)
        hosts = [p.host for p in rg.pages if p.host is not None]
        for p in rg.pages:
            p.host = None
        if hosts:
            self._host_pins.append((event, hosts))
        self._slot_events[rg.slot] = event
        consumer = self._consumer or cp.cuda.get_current_stream()
        consumer.wait_event(event)
        num_rows = self.reader.row_group_rows(self.row_groups[rg.index])
        self.routes.deliveries += 1
        self.stats.row_groups += 1
        self.stats.rows += num_rows
        return Batch({p.column: _delivered(p.value) for p in rg.pages}, num_rows)

    def _first_reuse(self) -> int | None:
        """The reuse distance a page read for the first time is judged with: the scan's length when
        all of it fits in the device cache (its query, run again, reads the page again after that
        many pages: the tier takes it in at once, as LRU would), else None (a first read displaces
        nothing: a scan larger than the tier passes through)."""
        if self._first is False:
            cache = self.cache
            fits = cache is not None and scan_device_bytes(self.reader, self.columns, self.compressed, self.decoded) \
                <= cache.capacity_bytes - cache.kept_bytes()
            self._first = len(self.row_groups) * len(self.columns) if fits else None
        return self._first

    def _unpin_host(self, wait: bool) -> None:
        """Unpin host-tier pages whose copies have completed (all of them with ``wait``), and drop
        the staging arrays of completed copies."""
        while self._staged and (wait or self._staged[0][0].done):
            event, _ = self._staged.pop(0)
            if wait:
                event.synchronize()
        while self._host_pins:
            event, pages = self._host_pins[0]
            if not wait and not event.done:
                break  # copies complete in stream order: later events are not done either
            if wait:
                event.synchronize()
            self._host_pins.pop(0)
            self.host_cache.unpin_pages(pages)

    def _evict_short(self, nbytes: int) -> None:
        """Evict cached pages worth what the budget lacks to grant ``nbytes`` (not all ``nbytes``:
        pages evicted beyond that were copied again by the next run)."""
        short = self.budget.used_bytes + nbytes - self.budget.limit_bytes
        if self._device_tier is not None and short > 0:
            self._device_tier.evict(short)

    def _reserve_transient(self, nbytes: int, page: _Page) -> None:
        if not self.budget.try_reserve(nbytes):
            self._evict_short(nbytes)
            self.budget.reserve(nbytes, f"streaming page {page.row_group} of column '{page.column}' "
                                        f"of table '{self.reader.name}'")
        page.transient_bytes = nbytes

    def _decode(self, page: _Page, raw: Any, host: list[np.ndarray] | None = None) -> Column:
        """A device Column viewing ``raw`` (validity unpacked on the device); ``host`` the page's
        bytes in host memory (the runs ``raw`` was copied from), where string pages' headers are read."""
        spec = self.reader.column(page.column)
        n = page.num_rows

        def section(name: str) -> Any:
            return self._section(page, raw, name)

        validity = self._validity(page, raw)
        if spec.dtype.kind == "string" and page.encoding == "plain" and page.codec != "plain":
            from hetdb.backend.gpu.strings_codec import decode_string_page

            offsets, chars = decode_string_page(raw, page.sections, n, page.codec, f"table '{self.reader.name}' "
                                                f"column '{page.column}' page {page.row_group}", host)
            return Column(spec.dtype, validity=validity, offsets=offsets, chars=chars)
        if spec.dtype.kind == "string" and page.encoding == "plain":
            offsets = _view(section("offsets"), np.int64, n + 1, page)
            return Column(spec.dtype, validity=validity, offsets=offsets, chars=section("chars"))
        if page.codec == "plain":
            data = _view(section("data"), spec.dtype.numpy_dtype, n, page)
        elif self.compressed and page.column not in self.decoded and keeps_compressed(page.codec, page.sections):
            from hetdb.backend.gpu.encoded import DevicePage, EncodedColumn

            dpage = DevicePage(section("data"), page.codec, n, np.dtype(spec.dtype.numpy_dtype))
            dictionary = self._dictionary(page.column) if page.encoding == "dict" else None
            return EncodedColumn(spec.dtype, validity=validity, dictionary=dictionary, device_page=dpage)
        else:
            from hetdb.backend.gpu.decode import decode_device

            data = decode_device(section("data"), page.codec, n, spec.dtype.numpy_dtype)
        if page.encoding == "dict":
            return Column(spec.dtype, data=data, validity=validity, dictionary=self._dictionary(page.column))
        return Column(spec.dtype, data=data, validity=validity)

    def _section(self, page: _Page, raw: Any, name: str) -> Any:
        """Section ``name`` of the page's device bytes ``raw`` (None when the page has none)."""
        s = page.sections.get(name)
        if s is None:
            return None
        off, ln = s
        if off + ln > raw.shape[0]:
            raise CorruptDataError(f"table '{self.reader.name}' column '{page.column}' page "
                                   f"{page.row_group}: section {name} lies outside the page")
        return raw[off:off + ln]

    def _validity(self, page: _Page, raw: Any) -> Any:
        """The page's validity unpacked on the device (one bool per row), None without NULLs."""
        cp = self._cupy
        bits = self._section(page, raw, "validity")
        if bits is None:
            return None
        idx = cp.arange(page.num_rows, dtype=cp.int64)
        return ((bits[idx >> 3] >> (idx & 7).astype(cp.uint8)) & 1).astype(cp.bool_)

    def _dictionary(self, column: str) -> Column:
        """The column's dictionary on the device: from the cache, else moved once for this scan."""
        d = self._dictionaries.get(column)
        if d is not None:
            return d
        key = PageKey.dictionary(self.reader.name, self.reader.version, column)
        if self.cache is not None:
            d = self.cache.get(key, pin=True)
            if d is not None:
                self._dict_pins.append(key)
        if d is None:
            host = self.reader.dictionary(column)
            nbytes = int(host.offsets.nbytes + host.chars.nbytes)
            cached = self.cache is not None and self.cache.reserve(nbytes)
            if not cached:
                if not self.budget.try_reserve(nbytes):
                    self._evict_short(nbytes)
                    self.budget.reserve(nbytes, f"dictionary of column '{column}' of table '{self.reader.name}'")
                self._dict_transient += nbytes
            cp = self._cupy
            d = Column(host.dtype, offsets=cp.asarray(host.offsets), chars=cp.asarray(host.chars))
            d.host_source = host  # (the host strings it came from: exec/host_lookups.py reads them)
            self.stats.bytes_h2d += nbytes
            if cached:
                self.cache.put(key, d, nbytes, pin=True, reserved=True)
                self._dict_pins.append(key)
        self._dictionaries[column] = d
        return d

    # ---- release ---------------------------------------------------------------------------------
    def _retire(self, rg: _RowGroup) -> None:
        """The consumer moved past ``rg``: once its queued work is done, the memory may be reused."""
        cp = self._cupy
        consumer = self._consumer or cp.cuda.get_current_stream()
        done = cp.cuda.Event(disable_timing=True)
        done.record(consumer)
        self._copy_stream.wait_event(done)
        for page in rg.pages:
            if page.cached:
                self.cache.unpin(page.key)
            if page.transient_bytes:
                self.budget.release(page.transient_bytes)
                page.transient_bytes = 0
            page.value = None

    def _abandon(self, rg: _RowGroup) -> None:
        """The scan stopped early (error or the consumer broke off): return what ``rg`` holds."""
        for page in rg.pages:
            if page.future is not None:
                try:
                    got = page.future.result()
                    if page.loading:
                        page.host = got
                except BaseException:  # noqa: BLE001 - the scan is being torn down anyway
                    pass
                page.future = None
        self._copy_stream.synchronize()
        for page in rg.pages:
            if page.host is not None:
                self.host_cache.unpin_page(page.host)
                page.host = None
            if page.admitted:  # a batch's cache reservation never used
                self.cache.release(page.device_bytes)
            page.admitted = None
        self._retire(rg)


def _group_pages(reader: Any, columns: list[str], ids: tuple[int, ...], compressed: bool,
                 decoded: frozenset[str] = frozenset()) -> tuple:
    """(PageInfo, host-tier key, location, ``page_ident``, ``_Page`` argument tuple) lists of the
    pages of row groups ``ids``, row group by row group, each in ``columns`` order
    (``_schedule_group``'s order), then each row group's rows and stored bytes."""
    infos = [page_info(reader, column, rg, compressed and column not in decoded) for rg in ids for column in columns]
    # (``_Page``'s fields in their order, through device_bytes: made with ``_Page(*proto)``)
    protos = [(i.key.column, i.key.row_group, i.key, i.location, i.encoding, i.sections, i.num_rows, None, 0, None,
               False, 0, None, False, i.codec, Route.DISK_DIRECT, i.host_key, i.device_bytes) for i in infos]
    n = len(columns)
    return (infos, [i.host_key for i in infos], [i.location for i in infos],
            [page_ident(i.location) for i in infos], protos,
            [reader.row_group_rows(rg) for rg in ids],
            [sum(i.location.length for i in infos[r * n:(r + 1) * n]) for r in range(len(ids))])
