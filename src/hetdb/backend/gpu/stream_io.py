"""Moving page bytes for the streamer: the I/O threads' reads into the ring or the host tier (with
the CRC check), the process's copy stream per device, and host->device copies out of pinned runs.

The pages a scheduled group reads go to the I/O threads as spans (io/spans.py): a column's pages
lying back to back in its file are one read, scattered into each page's host-tier blocks or ring
slice, each page verified and published (or failed) on its own. The router's ``load_host`` probe
only takes a page's blocks; ``submit_reads`` starts the group's reads once every page is routed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import numpy as np

from hetdb.backend.gpu.stream_pages import _Page
from hetdb.cache.base import PageKey
from hetdb.cache.pages import row_group_padded_bytes
from hetdb.errors import CorruptDataError
from hetdb.io import ALIGN, SpanPage, adjacent_spans, read_span_bytes, verify_span, will_need

_H2D = 1  # cudaMemcpyHostToDevice
# I/O threads of a streamer (``PageStreamer(io_workers=)`` unless given): each keeps one span read in
# flight (16 kept more in flight on the H100's disk, but read no faster: it is saturated at 8)
READ_THREADS = 8
# The CRC checks of a span's pages run on a process-wide pool of their own (CHECK_THREADS), so the I/O
# thread starts its next read at once instead of after them. Checked by the I/O threads, a group's
# spans (alike in size, started together) ended together and all 8 threads checked at once: the disk
# sat idle 1-2 ms every ~23 ms (H100, SSB SF 20 cold, early checkpoint: 18-37 ms idle per query
# against 9-11 ms with the checks apart, 7.8 reads in flight against 7.3). False: the I/O thread checks
# them (A/B).
CHECK_APART = True
CHECK_THREADS = 8

_checkers: list = []


def _checker() -> Any:
    """The process's pool checking spans' CRCs (made at first use)."""
    with _copy_streams_lock:
        if not _checkers:
            from concurrent.futures import ThreadPoolExecutor

            _checkers.append(ThreadPoolExecutor(max_workers=CHECK_THREADS, thread_name_prefix="hetdb-check"))
        return _checkers[0]


_copy_streams: dict[int, Any] = {}
_copy_streams_lock = threading.Lock()


def copy_stream(device_id: int) -> Any:
    """The process's host-to-device copy stream of a device (non-blocking; created on first use)."""
    with _copy_streams_lock:
        stream = _copy_streams.get(device_id)
        if stream is None:
            import cupy

            from hetdb.backend.gpu.memory import new_stream

            with cupy.cuda.Device(device_id):
                stream = _copy_streams[device_id] = new_stream()
        return stream


_decode_streams: dict[int, Any] = {}


def decode_stream(device_id: int) -> Any:
    """The process's stream for a batched delivery's decode kernels on a device (option
    gpu_delivery_overlap: apart from the copy stream, which then moves the next delivery meanwhile,
    and from the consumer's, which waits on a delivery only when it takes it)."""
    with _copy_streams_lock:
        stream = _decode_streams.get(device_id)
        if stream is None:
            import cupy

            from hetdb.backend.gpu.memory import new_stream

            with cupy.cuda.Device(device_id):
                stream = _decode_streams[device_id] = new_stream()
        return stream


_early_streams: dict[int, tuple[Any, Any]] = {}


def early_streams(device_id: int) -> tuple[Any, Any]:
    """The process's (copy, decode) streams of a device for a scan started before the pipelines that
    precede it (exec/early_scan.py): its deliveries are queued ahead while those pipelines move
    their own pages on the copy stream and decode them on the decode stream, which would otherwise
    wait behind the whole queue (both streams are FIFO)."""
    with _copy_streams_lock:
        got = _early_streams.get(device_id)
        if got is None:
            import cupy

            from hetdb.backend.gpu.memory import new_stream

            with cupy.cuda.Device(device_id):
                got = _early_streams[device_id] = (new_stream(), new_stream())
        return got


def _copy_runs(raw: Any, runs: list[np.ndarray], length: int, stream: Any) -> None:
    """Queue async copies of the first ``length`` bytes of the pinned ``runs`` into device ``raw``."""
    import cupy

    dst, done = int(raw.data.ptr), 0
    for run in runs:
        n = min(int(run.shape[0]), length - done)
        if n <= 0:
            break
        cupy.cuda.runtime.memcpyAsync(dst + done, run.ctypes.data, n, _H2D, stream.ptr)
        done += n


class PageReads:
    """The I/O side of ``PageStreamer`` (mixed into ``stream.py``): reads started ahead of the
    consumer, the router's probes of the tiers, ring slots, reads, CRC checks."""

    def read_ahead(self) -> Iterator | None:
        """``deliveries()`` with its first ``depth`` groups' reads started (its string columns'
        dictionary files asked of the page cache) and nothing copied or held on the device (a cold
        scan started with its query: exec/early_scan.py); batched only, else None."""
        if not self.batching or self._gen is not None or self._closed:
            return None
        for c in self.columns:  # (string dictionaries are read whole, buffered, when first needed)
            path = self.reader.dictionary_file(c) if self.reader.column(c).dtype.kind == "string" else None
            if path is not None:
                will_need(path)
        self._reading_ahead = True
        gen = self.deliveries()
        try:
            got = next(gen)
        finally:
            self._reading_ahead = False
        if got is not None:  # (the generator yields None once the reads are scheduled)
            raise AssertionError("a streamer reading ahead handed out a delivery")
        return gen

    # the router's probes (PageRouter.route_with)
    def on_gpu(self, page: _Page) -> bool:
        return self._probe_device(page)

    def in_host(self, page: _Page) -> bool:
        return self._probe_host(page)

    def load_host(self, page: _Page) -> bool:
        return self._start_host_load(page)

    def _probe_device(self, page: _Page) -> bool:
        """Router probe: a device-cache hit, pinned."""
        if self.cache is None:
            return False
        hit = self.cache.get(page.key, pin=True)
        if hit is None:
            return False
        page.value, page.cached = hit, True
        return True

    def _host_key(self, page: _Page) -> PageKey:
        # The host tier is process-wide: a table *path* (version directory) names the page, not the
        # table name, which another database may share.
        if page.host_key is not None:
            return page.host_key
        return PageKey(self.reader.path, self.reader.version, page.column, page.row_group)

    def _probe_host(self, page: _Page) -> bool:
        """Router probe: a host-tier hit, pinned."""
        if self.host_cache is None:
            return False
        page.host = self.host_cache.lookup(self._host_key(page), page.location, pin=True)
        return page.host is not None

    def _start_host_load(self, page: _Page) -> bool:
        """Router probe: blocks for the page in the host tier (if it admits it); its read starts with
        the group's others (``submit_reads``)."""
        if self.host_cache is None:
            return False
        loc = page.location
        blocks = self.host_cache.acquire(self._host_key(page), loc.length, loc.padded_length, loc.checksum)
        if blocks is None:
            return False
        page.loading = True
        page.future = Future()
        self._to_read.append((page, blocks.runs, blocks))
        return True

    def queue_ring_read(self, page: _Page, dest: np.ndarray) -> None:
        """Read ``page`` into ``dest`` (its slice of a ring slot) with the group's others."""
        page.future = Future()
        self._to_read.append((page, [dest], None))

    def submit_reads(self, wait_for: Any = None) -> None:
        """Start the reads queued since the last call (``_start_host_load``, ``queue_ring_read``), a
        span of adjacent pages per task; ``wait_for``: an event the ring reads wait for first (the
        copies out of their slot). Each page's future gives its host-tier entry or its ring slice."""
        items, self._to_read = self._to_read, []
        if not items:
            return
        ranges = [(p.location.path, p.location.offset, p.location.padded_length) for p, _, _ in items]
        for span in adjacent_spans(ranges):
            part = [items[i] for i in span]
            ring = part[0][2] is None
            try:
                self._pool.submit(self._read_span, part, wait_for if ring else None)
            except BaseException as e:  # (a pool shut down under us: the pages fail, never hang)
                self._fail_reads(part, e)

    def drop_reads(self, error: BaseException) -> None:
        """Fail the reads queued and not submitted (scheduling stopped half way)."""
        items, self._to_read = self._to_read, []
        self._fail_reads(items, error)

    def _fail_reads(self, items: list, error: BaseException) -> None:
        for page, _, blocks in items:
            if blocks is not None:
                self.host_cache.abort(blocks)
            page.future.set_exception(error)

    def _read_span(self, items: list, wait_for: Any) -> None:
        """I/O thread: read a span of adjacent pages (into host-tier blocks, or ring slices after
        ``wait_for``); its checks follow here or on the checking pool (CHECK_APART)."""
        try:
            if wait_for is not None:
                with self._cupy.cuda.Device(self._device_id):
                    wait_for.synchronize()
            pages = [SpanPage(p.location.offset, p.location.padded_length, p.location.length,
                              p.location.checksum, runs) for p, runs, _ in items]
            path = items[0][0].location.path
            got = read_span_bytes(path, pages, direct=self.direct)
        except BaseException as e:  # noqa: BLE001 - every page of the span fails with it
            self._finish_span(items, [e] * len(items))
            return
        if CHECK_APART:
            _checker().submit(self._check_span, items, pages, path, got)
        else:
            self._check_span(items, pages, path, got)

    def _check_span(self, items: list, pages: list[SpanPage], path: str, got: int) -> None:
        try:
            errors: list = verify_span(path, pages, got)
        except BaseException as e:  # noqa: BLE001 - every page of the span fails with it
            errors = [e] * len(items)
        self._finish_span(items, errors)

    def _finish_span(self, items: list, errors: list) -> None:
        """Publish each verified loaded page and resolve each page's future (its entry or ring slice,
        or its error)."""
        for (page, runs, blocks), error in zip(items, errors):
            if error is None:
                try:
                    page.future.set_result(runs[0] if blocks is None else self.host_cache.commit(blocks))
                    continue
                except BaseException as e:  # noqa: BLE001 - handed to the page's consumer
                    error = e
            if blocks is not None:
                self.host_cache.abort(blocks)
            page.future.set_exception(self._named(page, error))

    def _named(self, page: _Page, error: BaseException) -> BaseException:
        """``error`` of a page read, as the CorruptDataError naming the page where it is one."""
        if isinstance(error, CorruptDataError):
            return CorruptDataError(f"{self._where(page)}: {error}")
        if isinstance(error, FileNotFoundError):
            return CorruptDataError(f"{self._where(page)}: column file is missing (was this version removed "
                                    "by a later commit? reopen the table)")
        return error

    def _slot(self, slot: int, nbytes: int) -> np.ndarray:
        from hetdb.backend.gpu.memory import pinned_empty

        buf = self._slots[slot]
        if buf is None:
            if self._slot_bytes is None:
                # Every slot is sized for the largest row group (all pages missing the cache), so a
                # slot is allocated once and never reallocated while a copy may read it.
                columns = tuple(self.columns)
                self._slot_bytes = max((row_group_padded_bytes(self.reader, columns, rg)
                                        for rg in self.row_groups), default=0)
            size = max(self._slot_bytes, nbytes)
            # One extra ALIGN so the start can be rounded up: O_DIRECT needs aligned addresses.
            raw = pinned_empty(size + ALIGN, np.uint8)
            start = (-raw.ctypes.data) % ALIGN
            buf = raw[start:start + size]
            self._slots[slot] = buf
        return buf

    def _where(self, page: _Page) -> str:
        return (f"table '{self.reader.name}' column '{page.column}' file {page.location.path} "
                f"page {page.row_group} (row group {page.row_group})")
