"""Runs of adjacent pages of one file read as one request, each page's checksum verified on its own.

A column's pages lie back to back in its file (storage/), so the pages of consecutive row groups a
scan reads are one byte range. Read as one O_DIRECT ``preadv`` scattered straight into each page's
buffers (a page's host-tier blocks need not be adjacent to the next page's), the device gets requests
of several MiB instead of one per page (the bench measures the disk's ceiling with 8 MiB blocks: 1 MiB
reads reached 78% of it on the H100 machine, session 17), and a reading thread takes the interpreter
lock once per span instead of once per page and block run. Each page keeps its own CRC check and
its own error: a damaged page fails alone, named by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hetdb.errors import CorruptDataError
from hetdb.io.direct import read_into, runs_crc32

# A span holds at most this many bytes (a page larger than that is a span of its own) and pages;
# 0 bytes: every page read on its own (as before spans; for A/B measurements).
MAX_SPAN_BYTES = 8 << 20
MAX_SPAN_PAGES = 64


@dataclass
class SpanPage:
    """One page of a span: its padded bytes at ``offset`` go into ``runs`` (in order, filled); the
    CRC-32 of its first ``length`` bytes must be ``checksum``."""

    offset: int
    padded_length: int
    length: int
    checksum: int
    runs: list[np.ndarray]


def adjacent_spans(ranges: Sequence[tuple[str, int, int]], max_bytes: int | None = None,
                   max_pages: int = MAX_SPAN_PAGES) -> list[range]:
    """Consecutive index ranges of ``ranges`` ((path, offset, padded length), in the order given)
    whose bytes lie back to back in one file, each of at most ``max_bytes`` (default
    MAX_SPAN_BYTES; 0: one page each) and ``max_pages`` pages; every index is in exactly one."""
    limit = MAX_SPAN_BYTES if max_bytes is None else max_bytes
    out: list[range] = []
    start = 0
    size = 0
    for i, (path, offset, padded) in enumerate(ranges):
        if i > start:
            prev_path, prev_offset, prev_padded = ranges[i - 1]
            if (path != prev_path or offset != prev_offset + prev_padded or size + padded > limit
                    or i - start >= max_pages):
                out.append(range(start, i))
                start, size = i, 0
        size += padded
    if ranges:
        out.append(range(start, len(ranges)))
    return out


def read_span(path: str, pages: list[SpanPage], direct: bool = True) -> list[Exception | None]:
    """Read ``pages`` (adjacent in ``path``, in file order) with one request and verify each; per
    page None, or the CorruptDataError to raise for it (truncated file, checksum mismatch: the
    message names the file, not the page). A missing file or a failed read raises for all."""
    return verify_span(path, pages, read_span_bytes(path, pages, direct))


def read_span_bytes(path: str, pages: list[SpanPage], direct: bool = True) -> int:
    """``read_span``'s read alone: the bytes read into the pages' runs (``verify_span`` checks them)."""
    return read_into(path, pages[0].offset, [run for p in pages for run in p.runs], direct=direct)


def verify_span(path: str, pages: list[SpanPage], got: int) -> list[Exception | None]:
    """``read_span``'s checks of pages ``got`` bytes were read into (from the first page's offset)."""
    start = pages[0].offset
    out: list[Exception | None] = []
    for p in pages:
        have = got - (p.offset - start)
        if have < p.padded_length:
            out.append(CorruptDataError(f"file {path} is truncated: needed {p.padded_length} bytes at offset "
                                        f"{p.offset}, found {max(0, have)}"))
            continue
        out.append(None if runs_crc32(p.runs, p.length) == p.checksum
                   else CorruptDataError("checksum mismatch (data is damaged)"))
    return out
