"""Warm scans into the device cache in one go: ``PageStreamer.fill_cache`` (mixed into ``stream.py``)."""

from __future__ import annotations

import numpy as np

from hetdb.backend.gpu.stream_io import _copy_runs
from hetdb.backend.gpu.stream_pages import _Page
from hetdb.cache.base import PageKey
from hetdb.cache.host_cache import HostPage
from hetdb.cache.pages import page_info, scan_device_bytes
from hetdb.cache.router import Route
from hetdb.column import Column
from hetdb.storage.format import PageLocation

_FILL_CHUNK = 32  # pages looked up in the host tier at once by fill_cache


class FillCache:
    """``fill_cache`` and its helpers (state and the rest of the streamer: ``stream.py``)."""

    def fill_cache(self) -> bool:
        """Warm path, instead of iterating: when every page of the scan that the device cache lacks
        is in the pinned host tier and they all fit in the cache together, queue their copies back to
        back on the copy stream (one look-up of the host tier for the whole scan, one async copy per
        contiguous run, no per-row-group step, no host wait), put the pages in the device cache and
        make the consumer's stream wait for the copies; True. False when some page is not in the host
        tier, the cache has no room for the scan, or the budget ran out midway (then iterate: what was
        filled is a device-cache hit, the rest streams). Host-tier pins are held until ``close`` (which waits for the copies): call it after
        the work reading the pages has been queued."""
        if self._gen is not None or self._closed or self.cache is None or self.host_cache is None:
            return False
        cp, cache, reader = self._cupy, self.cache, self.reader
        # Filling is only worth it (and only safe from evicting its own pages) when the whole scan fits
        # in what the cache may hold next to its pinned entries: bounded from the manifest without a
        # walk over the pages (every page of the columns, unpacked validity for nullable ones).
        if scan_device_bytes(reader, self.columns, self.compressed, self.decoded) \
                > cache.capacity_bytes - cache.pinned_bytes():
            return False
        stream = self._copy_stream
        pages = [(c, rg) for rg in self.row_groups for c in self.columns]
        complete = True
        # In chunks: the first copies start after one chunk's look-ups, not the whole scan's.
        for start in range(0, len(pages), _FILL_CHUNK):
            complete = self._fill_chunk(pages[start:start + _FILL_CHUNK])
            if not complete:
                break
        event = cp.cuda.Event(disable_timing=True)
        event.record(stream)
        # host-tier pins of the last chunks are returned at close, after this event (all copies)
        self._host_pins.append((event, []))
        (self._consumer or cp.cuda.get_current_stream()).wait_event(event)
        return complete

    def _fill_chunk(self, pages: list[tuple[str, int]]) -> bool:
        """fill_cache for some pages: False when one is not in the host tier or the cache is full."""
        cp, cache, reader = self._cupy, self.cache, self.reader
        todo = []
        for column, rg in pages:
            info = page_info(reader, column, rg, self.compressed and column not in self.decoded)
            if info.key not in cache:
                todo.append(info)
        if not todo:
            return True
        hosts = self.host_cache.lookup_many([t.host_key for t in todo], [t.location for t in todo])
        if hosts is None:
            return False
        stream = self._copy_stream
        complete = True
        try:
            with stream:
                for info, host in zip(todo, hosts):
                    key, column, rg, loc = info.key, info.key.column, info.key.row_group, info.location
                    enc, sections, n, codec = info.encoding, info.sections, info.num_rows, info.codec
                    nbytes = info.device_bytes
                    # the whole scan fits (fill_cache checked): a first read is judged as if its
                    # query ran again
                    first_reuse = len(self.row_groups) * len(self.columns)
                    if not cache.reserve(nbytes, key=key, link_bytes=loc.length, first_reuse=first_reuse):
                        complete = False  # no room (budget taken, or worth less than the cached pages)
                        break
                    # the policy sees this read like a streamed one (a page not filled is counted
                    # when it streams)
                    cache.record_access(key)
                    try:
                        value = self._fill_page(column, rg, loc, host, enc, sections, n, codec)
                    except BaseException:
                        cache.release(nbytes)
                        raise
                    cache.put(key, value, nbytes, reserved=True, link_bytes=loc.length, first_reuse=first_reuse)
                    self.routes.add(Route.HOST_TO_GPU, loc.length)
                    self.stats.pages_host += 1
                    self.stats.bytes_host += loc.length
                    self.stats.bytes_h2d += loc.length
                event = cp.cuda.Event(disable_timing=True)
                event.record(stream)
        except BaseException:
            stream.synchronize()
            for hp in hosts:
                self.host_cache.unpin_page(hp)
            raise
        self._host_pins.append((event, hosts))
        self._unpin_host(wait=False)  # earlier chunks' copies that are done
        return complete

    def _fill_page(self, column: str, rg: int, loc: PageLocation, host: HostPage, enc: str,
                   sections: dict[str, list[int]], n: int, codec: str) -> Column:
        """Queue the copy of one host-tier page into new device memory; its device Column."""
        cp = self._cupy
        spec = self.reader.column(column)
        data = sections.get("data")
        if (enc == "plain" and codec == "plain" and spec.dtype.kind != "string" and len(sections) == 1
                and data is not None
                and data[0] == 0 and data[1] == loc.length == n * np.dtype(spec.dtype.numpy_dtype).itemsize):
            # the common page: values only, copied straight into a typed array (no byte view to decode)
            arr = cp.empty(n, dtype=spec.dtype.numpy_dtype)
            _copy_runs(arr, host.runs, loc.length, self._copy_stream)
            return Column(spec.dtype, data=arr)
        raw = cp.empty(loc.length, dtype=cp.uint8)
        _copy_runs(raw, host.runs, loc.length, self._copy_stream)
        page = _Page(column, rg, PageKey(self.reader.name, self.reader.version, column, rg), loc, enc,
                     sections, n, codec=codec)
        return self._decode(page, raw, host.runs)
