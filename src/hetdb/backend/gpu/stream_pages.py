"""What a GPU scan knows and counts about the pages it moves (used by ``stream.py``, the batched
delivery of ``stream_batch.py`` and ``cache/pages.py``): the per-scan statistics, one page in flight,
the layout facts of a page as the manifest records them, and the Column shapes a scan hands out."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.cache.base import PageKey
from hetdb.cache.host_cache import HostPage
from hetdb.cache.router import Route
from hetdb.column import Batch, Column
from hetdb.errors import CorruptDataError
from hetdb.storage.format import PageLocation


@dataclass
class StreamStats:
    """What one scan moved, by where each page came from."""

    row_groups: int = 0
    rows: int = 0
    pages_read: int = 0
    bytes_read: int = 0        # padded bytes read from storage
    pages_cached: int = 0
    bytes_cached: int = 0      # device bytes served from the device cache
    pages_host: int = 0        # pages served from the pinned host tier (no storage read)
    bytes_host: int = 0        # bytes copied to the device out of the host tier (hits)
    pages_loaded: int = 0      # of pages_read: read into the host tier (the others went through the ring)
    bytes_h2d: int = 0         # bytes copied host -> device
    seconds: float = 0.0       # wall time from the first request to the last row group handed out

    @property
    def bytes_delivered(self) -> int:
        return self.bytes_h2d + self.bytes_cached

    def as_dict(self) -> dict[str, float]:
        return {"row_groups": self.row_groups, "rows": self.rows, "pages_read": self.pages_read,
                "bytes_read": self.bytes_read, "pages_cached": self.pages_cached,
                "bytes_cached": self.bytes_cached, "pages_host": self.pages_host,
                "bytes_host": self.bytes_host, "pages_loaded": self.pages_loaded,
                "bytes_h2d": self.bytes_h2d, "seconds": self.seconds}


@dataclass(slots=True)
class _Page:
    """One (column, row group) page in flight."""

    column: str
    row_group: int
    key: PageKey
    location: PageLocation
    encoding: str
    sections: dict[str, list[int]]
    num_rows: int
    value: Column | None = None          # cache hit (pinned) or finished device Column
    slot_offset: int = 0                 # where its bytes go in the slot's pinned buffer
    future: Future | None = None
    cached: bool = False                 # value is a pinned cache entry
    transient_bytes: int = 0             # reserved against the budget outside the cache
    host: HostPage | None = None         # pinned host-tier page the bytes are copied from
    loading: bool = False                # ``future`` loads the page into the host tier (else the ring)
    codec: str = "plain"                 # encoding of the data section (hetdb.codec)
    route: Route = Route.DISK_DIRECT     # the router's decision
    host_key: PageKey | None = None      # its key in the host tier (default: made from the reader)
    device_bytes: int | None = None      # device bytes once delivered (default: computed)
    admitted: bool | None = None         # a batched delivery's cache verdict, reserved, not yet used
    zero_copy: bool = False              # left in the host tier: the kernel reads its rows in place


# codecs a kernel reads by random access, touching only the rows it needs (decode.cuh): the pages a
# scan may leave in pinned host memory for the kernel to read in place (gpu_zero_copy)
RANDOM_ACCESS_CODECS = ("for", "dict", "const")


def zero_copy_address(page: _Page) -> int | None:
    """The host address of the page's data section when a kernel may read it in place: a host-tier
    page (pinned) in a random-access codec, without NULLs, whose data section lies in one run,
    8-byte aligned; else None."""
    host = page.host
    if host is None or page.codec not in RANDOM_ACCESS_CODECS or "validity" in page.sections \
            or "offsets" in page.sections or not host.runs:
        return None
    data = page.sections.get("data")
    if data is None:
        return None
    off, ln = int(data[0]), int(data[1])
    run = host.runs[0]
    if off % 16 or off + ln > int(run.shape[0]):
        return None
    return int(run.ctypes.data) + off


class _RowGroup:
    """A scheduled row group: its pages in the scan's column order, ``num_rows`` and ``link_bytes``
    (its pages' stored bytes). A warm one (``hosts``: the pages' host-tier entries, pinned, when one
    look-up found them all; ``route`` theirs) makes its ``_Page`` objects only when something asks
    for ``pages``: a batched delivery of such row groups reads its sources from ``hosts`` and needs
    no per-page object (``_Page`` arguments: ``protos``)."""

    __slots__ = ("index", "slot", "_pages", "_protos", "hosts", "route", "num_rows", "link_bytes")

    def __init__(self, index: int, slot: int, pages: list[_Page] | None = None, *, protos: list[tuple] | None = None,
                 hosts: list[HostPage] | None = None, route: Route | None = None, num_rows: int = 0,
                 link_bytes: int = 0) -> None:
        self.index = index
        self.slot = slot
        self._pages = pages if pages is not None or protos is not None else []
        self._protos = protos
        self.hosts = hosts
        self.route = route
        self.num_rows = num_rows
        self.link_bytes = link_bytes

    @property
    def pages(self) -> list[_Page]:
        got = self._pages
        if got is None:
            got = self._pages = [_Page(*proto) for proto in self._protos]
            if self.route is not None:
                for page in got:
                    page.route = self.route
            if self.hosts is not None:
                for page, host in zip(got, self.hosts):
                    page.host = host
        return got

    def hand_over_hosts(self) -> None:
        """The pins of ``hosts`` now belong to the delivery that copies from them: no page holds one."""
        self.hosts = None
        if self._pages:
            for page in self._pages:
                page.host = None


def page_layout(reader: Any, column: str, rg: int) -> tuple[str, dict[str, list[int]]]:
    """(encoding, sections) of a page, as recorded in the manifest (see storage/pages.py)."""
    sections = reader.page_sections(column, rg)
    return reader.page_encoding(column, rg), {k: list(v) for k, v in sections.items()}


def page_codec(reader: Any, column: str, rg: int) -> str:
    """The codec of a page's data section ("plain" for readers that predate compression)."""
    get = getattr(reader, "page_codec", None)
    return "plain" if get is None else get(column, rg)


def device_page_bytes(reader: Any, column: str, rg: int, loc: PageLocation, sections: dict, n: int,
                      codec: str, compressed: bool = False) -> int:
    """Device bytes a page keeps once delivered: the raw page (plain: its arrays view it; an encoded
    page kept compressed, see ``keeps_compressed``) or the decoded values (an encoded data section),
    plus the unpacked validity."""
    validity = n if "validity" in sections else 0
    if codec == "plain" or (compressed and keeps_compressed(codec, sections)):
        return loc.length + validity
    if "offsets" in sections:  # a plain-string page in a string codec (hetdb.codec.strings)
        if codec == "offsets":  # decoded offsets; the chars are a view of the page as stored
            return loc.length + 8 * (n + 1) + validity
        return reader.decoded_bytes(column, rg) + validity  # lz4: decoded offsets and chars
    return n * np.dtype(reader.column(column).dtype.numpy_dtype).itemsize + validity


def keeps_compressed(codec: str, sections: dict) -> bool:
    """With ``gpu_compressed_cache`` on: whether a page stays compressed in device memory (a kernel
    decodes its data section in place) rather than being decoded on arrival."""
    from hetdb.backend.gpu.encoded import KERNEL_CODECS

    return codec in KERNEL_CODECS and "data" in sections and "offsets" not in sections



def _view(buf: Any, dtype: Any, count: int, page: _Page) -> Any:
    dtype = np.dtype(dtype)
    if buf is None or int(buf.shape[0]) != count * dtype.itemsize:
        raise CorruptDataError(f"column '{page.column}' page {page.row_group}: section size does not "
                               f"match {count} values of {dtype}")
    return buf.view(dtype)


def _delivered(col: Column) -> Column:
    """A page's Column as a scan hands it out: a compressed cache entry as a fresh EncodedColumn, so
    what a consumer decodes from it is not kept in the cache."""
    fresh = getattr(col, "fresh", None)
    return col if fresh is None else fresh()


def release_batches(batches: list[Batch]) -> None:
    """End delivered Batches when a scan stops early: each drops its columns (the device arrays
    viewing the delivery's buffer), so whoever still references the Batch objects — a consumer's
    suspended frame, a wrapper of the iterator — no longer keeps that memory alive. The consumer
    was told the arrays are valid until the next step or ``close``; its own Batches built from
    these columns are its own."""
    for batch in batches:
        batch.columns = {}


def _column_nbytes(col: Column) -> int:
    return col.held_nbytes()  # an EncodedColumn: its page as cached, never a decoded copy


def count_delivery(st: Any, routes: Any, rgs: list[_RowGroup], columns: int, warm: bool) -> None:
    """A delivery's pages and bytes by route, into its scan's statistics ``st`` and ``routes``
    (cache/router.RouteCounts). ``warm``: row groups whose pages were all host-tier hits of one
    look-up; counted per row group (no page object is made) when they share one host->GPU route."""
    route = rgs[0].route if warm else None  # (``_schedule_group`` gives such pages one route)
    if route is Route.HOST_TO_GPU and all(rg.route is route for rg in rgs):
        pages = len(rgs) * columns
        nbytes = sum(rg.link_bytes for rg in rgs)
        st.pages_host += pages
        st.bytes_host += nbytes
        st.bytes_h2d += nbytes
        routes.add(route, nbytes, pages=pages)
        return
    by_route: dict[Route, list[int]] = {}
    for rg in rgs:
        for p in rg.pages:
            loc = p.location
            if p.route is Route.GPU_RESIDENT:  # a paged delivery's device-cache hit
                nbytes = _column_nbytes(p.value)
                st.pages_cached += 1
                st.bytes_cached += nbytes
                routes.add(Route.GPU_RESIDENT, nbytes)
                continue
            if p.route is Route.HOST_ZERO_COPY:  # served by the host tier, nothing copied
                st.pages_host += 1
                routes.add(Route.HOST_ZERO_COPY, loc.length)
                continue
            if p.route is Route.HOST_TO_GPU:  # (the warm steady state: a host-tier hit)
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
        routes.add(route, nbytes, pages=pages)
