"""What a scan needs to know about each page before moving it, computed once per table version.

A GPU scan routes, reserves and copies page by page; for each one it needs the page's tier keys, its
location in the file, its sections and codec and the device bytes it will hold. All of that comes
from the manifest of an immutable table version, yet asking the reader builds it again each time
(path joins, dict copies, dtype look-ups: ~15 us a page on a 2-core box, for every page of every
query, on the one thread that issues the GPU's copies). ``page_info`` builds it once per (reader,
column, row group, compressed) and keeps it for as long as the reader lives (readers are shared by
every connection of the process and replaced when a commit makes a new version), so a hot or warm
scan reads it from a dict. ``column_device_bytes`` and ``row_group_padded_bytes`` do the same for
the per-scan sums (the device-cache fill's bound, the size of the ring's slots).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

from hetdb.cache.base import PageKey


@dataclass(frozen=True)
class PageInfo:
    """One page as a scan moves it. ``sections`` is shared between scans: read it, never change it."""

    key: PageKey          # the device tier's key (table name)
    host_key: PageKey     # the process-wide host tier's key (the version directory)
    location: Any         # storage.format.PageLocation
    encoding: str
    sections: dict[str, list[int]]
    num_rows: int
    codec: str
    device_bytes: int     # device bytes once delivered (decoded, or as stored when kept compressed)


_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # reader -> {what: value}
_lock = threading.Lock()


def _of(reader: Any) -> dict:
    try:
        got = _memo.get(reader)
        if got is None:
            with _lock:
                got = _memo.setdefault(reader, {})
        return got
    except TypeError:  # a reader that takes no weak references: nothing is kept
        return {}


def page_info(reader: Any, column: str, rg: int, compressed: bool = False) -> PageInfo:
    """The page (``column``, ``rg``) of ``reader``'s table version (see the module docstring)."""
    memo = _of(reader)
    what = (column, rg, compressed)
    info = memo.get(what)
    if info is None:
        from hetdb.backend.gpu.stream_pages import device_page_bytes, page_codec, page_layout

        enc, sections = page_layout(reader, column, rg)
        loc = reader.page_location(column, rg)
        n = reader.row_group_rows(rg)
        codec = page_codec(reader, column, rg)
        info = PageInfo(PageKey(reader.name, reader.version, column, rg),
                        PageKey(reader.path, reader.version, column, rg), loc, enc, sections, n, codec,
                        device_page_bytes(reader, column, rg, loc, sections, n, codec, compressed))
        memo[what] = info
    return info


def column_device_bytes(reader: Any, column: str, compressed: bool = False) -> int:
    """An upper bound of the device bytes of every page of ``column`` with its dictionary (from the
    manifest: ``compressed``: pages stay as stored, so the padded bytes on disk bound them)."""
    memo = _of(reader)
    what = ("column bound", column, compressed)
    got = memo.get(what)
    if got is None:
        got = reader.bytes_on_disk(column)  # padded pages + the string dictionary, if any
        if hasattr(reader, "decoded_bytes"):
            for rg in range(reader.num_row_groups):
                loc = reader.page_location(column, rg)
                # a string page in a string codec is decoded on arrival even into a compressed
                # cache; its chars may view the page as stored ("offsets"): both count
                coded = reader.page_codec(column, rg) != "plain" and "offsets" in reader.page_sections(column, rg)
                if coded:
                    got += reader.decoded_bytes(column, rg) + loc.length - loc.padded_length
                elif not compressed:
                    got += reader.decoded_bytes(column, rg) - loc.padded_length
        memo[what] = got
    return got


def scan_device_bytes(reader: Any, columns: list[str], compressed: bool = False,
                      decoded: frozenset[str] = frozenset()) -> int:
    """An upper bound of the device bytes a scan of every row group of ``columns`` holds in the
    device cache: each column's pages and dictionary, plus unpacked validity for nullable ones
    (``compressed``: pages as stored, except those of the columns in ``decoded``)."""
    return sum(column_device_bytes(reader, c, compressed and c not in decoded)
               + (reader.num_rows if reader.column(c).nullable else 0) for c in columns)


def row_group_padded_bytes(reader: Any, columns: tuple[str, ...], rg: int) -> int:
    """Padded stored bytes of the pages of ``columns`` in row group ``rg``."""
    memo = _of(reader)
    what = ("padded", columns, rg)
    got = memo.get(what)
    if got is None:
        got = memo[what] = sum(reader.page_location(c, rg).padded_length for c in columns)
    return got


def memoized(reader: Any, what: Any, compute: Any) -> Any:
    """``compute()`` once per (reader, ``what``) for as long as the reader lives (see the module
    docstring): per-table facts a scan would otherwise rebuild page by page."""
    memo = _of(reader)
    got = memo.get(what)
    if got is None:
        got = memo[what] = compute()
    return got
