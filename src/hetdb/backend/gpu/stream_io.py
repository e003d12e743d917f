"""Moving page bytes for the streamer: the I/O threads' reads into the ring or the host tier (with
the CRC check), the process's copy stream per device, and host->device copies out of pinned runs."""

from __future__ import annotations

import os
import threading
import zlib
from typing import Any

import numpy as np

from hetdb.backend.gpu.stream_pages import _Page
from hetdb.cache.base import PageKey
from hetdb.cache.host_cache import HostPage
from hetdb.cache.pages import row_group_padded_bytes
from hetdb.errors import CorruptDataError
from hetdb.io import ALIGN, read_range

_H2D = 1  # cudaMemcpyHostToDevice


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


def _read_buffered(path: str, offset: int, dest: np.ndarray) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        view, done = memoryview(dest), 0
        while done < dest.shape[0]:
            got = os.preadv(fd, [view[done:]], offset + done)
            if got == 0:
                raise CorruptDataError(f"file {path} is truncated at offset {offset + done}")
            done += got
    finally:
        os.close(fd)




class PageReads:
    """The I/O side of ``PageStreamer`` (mixed into ``stream.py``): the router's probes of the tiers,
    ring slots, reads, CRC checks."""

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
        """Router probe: blocks for the page in the host tier (if it admits it) and its load started."""
        if self.host_cache is None:
            return False
        loc = page.location
        blocks = self.host_cache.acquire(self._host_key(page), loc.length, loc.padded_length, loc.checksum)
        if blocks is None:
            return False
        page.loading = True
        page.future = self._pool.submit(self._load_host, page, blocks)
        return True


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

    def _read_page(self, page: _Page, dest: np.ndarray, wait_for: Any) -> np.ndarray:
        """I/O thread: wait until the slot's previous copies are done, read, verify the checksum."""
        if wait_for is not None:
            with self._cupy.cuda.Device(self._device_id):
                wait_for.synchronize()
        self._read_verified(page, [dest])
        return dest

    def _load_host(self, page: _Page, blocks: HostPage) -> HostPage:
        """I/O thread: read a page into its host-tier blocks, verify it once, publish it."""
        try:
            self._read_verified(page, blocks.runs)
        except BaseException:
            self.host_cache.abort(blocks)
            raise
        return self.host_cache.commit(blocks)

    def _where(self, page: _Page) -> str:
        return (f"table '{self.reader.name}' column '{page.column}' file {page.location.path} "
                f"page {page.row_group} (row group {page.row_group})")

    def _read_verified(self, page: _Page, runs: list[np.ndarray]) -> None:
        """Read the page's padded bytes into ``runs`` (in order) and check its CRC."""
        loc = page.location
        try:
            done = 0
            for run in runs:
                if self.direct:
                    read_range(loc.path, loc.offset + done, run.shape[0], out=run)
                else:
                    _read_buffered(loc.path, loc.offset + done, run)
                done += run.shape[0]
        except CorruptDataError as e:
            raise CorruptDataError(f"{self._where(page)}: {e}") from None
        except FileNotFoundError:
            raise CorruptDataError(f"{self._where(page)}: column file is missing (was this version removed "
                                   "by a later commit? reopen the table)") from None
        crc, left = 0, loc.length
        for run in runs:
            if left <= 0:
                break
            n = min(left, run.shape[0])
            crc = zlib.crc32(memoryview(run[:n]), crc)
            left -= n
        if crc & 0xFFFFFFFF != loc.checksum:
            raise CorruptDataError(f"{self._where(page)}: checksum mismatch (data is damaged)")
