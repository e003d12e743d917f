"""hetdb.io.spans: adjacent pages of a file read as one request into scattered buffers, each page's
CRC checked on its own (a damaged or missing page fails alone)."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

from hetdb.errors import CorruptDataError
from hetdb.io import ALIGN, SpanPage, adjacent_spans, aligned_empty, read_into, read_span
from hetdb.io import spans as spans_mod

PAGES = [(0, 3 * ALIGN, 3 * ALIGN - 100), (3 * ALIGN, ALIGN, 17), (4 * ALIGN, 5 * ALIGN, 5 * ALIGN)]


@pytest.fixture
def page_file(tmp_path) -> tuple[str, bytes]:
    data = np.random.default_rng(3).integers(0, 256, 9 * ALIGN, dtype=np.uint8).tobytes()
    path = str(tmp_path / "col.bin")
    with open(path, "wb") as f:
        f.write(data)
    return path, data


def span_pages(data: bytes, split: int = ALIGN) -> list[SpanPage]:
    """The PAGES of ``data`` with their checksums, each into runs of ``split`` bytes lying apart
    (as a page's host-tier blocks may), every run 4096-aligned."""
    out = []
    for offset, padded, length in PAGES:
        runs = [aligned_empty(min(split, padded - i)) for i in range(0, padded, split)]
        out.append(SpanPage(offset, padded, length, zlib.crc32(data[offset:offset + length]), runs))
    return out


def joined(page: SpanPage) -> bytes:
    return b"".join(r.tobytes() for r in page.runs)


def test_adjacent_spans_split_at_gaps_files_and_limits() -> None:
    a, b = "/x/a.col", "/x/b.col"
    ranges = [(a, 0, 100), (a, 100, 50), (a, 150, 10), (a, 4096, 10), (b, 4106, 5), (b, 4111, 5)]
    assert adjacent_spans(ranges, 1 << 20) == [range(0, 3), range(3, 4), range(4, 6)]
    # at most max_bytes (a larger page alone), at most max_pages
    assert adjacent_spans(ranges, 150) == [range(0, 2), range(2, 3), range(3, 4), range(4, 6)]
    assert adjacent_spans(ranges, 99) == [range(0, 1), range(1, 3), range(3, 4), range(4, 6)]
    assert adjacent_spans(ranges, 1 << 20, max_pages=2) == [range(0, 2), range(2, 3), range(3, 4), range(4, 6)]
    assert adjacent_spans([]) == []
    # the module's default: 0 reads page by page (the A/B switch)
    old = spans_mod.MAX_SPAN_BYTES
    try:
        spans_mod.MAX_SPAN_BYTES = 0
        assert adjacent_spans(ranges) == [range(i, i + 1) for i in range(6)]
    finally:
        spans_mod.MAX_SPAN_BYTES = old


@pytest.mark.parametrize("split", [ALIGN, 2 * ALIGN, 1 << 20])
def test_read_span_scatters_each_page_into_its_runs_with_one_read(page_file, split, monkeypatch) -> None:
    path, data = page_file
    pages = span_pages(data, split)
    calls = []
    real = os.preadv
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, off: calls.append(len(bufs)) or real(fd, bufs, off))
    assert read_span(path, pages) == [None, None, None]
    assert len(calls) == 1 and calls[0] == sum(len(p.runs) for p in pages)
    for p in pages:
        assert joined(p) == data[p.offset:p.offset + p.padded_length]


def test_a_damaged_page_fails_alone(page_file, tmp_path) -> None:
    path, data = page_file
    bad = bytearray(data)
    bad[3 * ALIGN + 5] ^= 0xFF  # inside the second page's checksummed bytes
    bad[3 * ALIGN + 200] ^= 0xFF  # and in its padding (not checksummed: no error from that alone)
    damaged = str(tmp_path / "damaged.col")
    with open(damaged, "wb") as f:
        f.write(bytes(bad))
    pages = span_pages(data)
    got = read_span(damaged, pages)
    assert got[0] is None and got[2] is None
    assert isinstance(got[1], CorruptDataError) and "checksum mismatch" in str(got[1])
    assert joined(pages[2]) == data[4 * ALIGN:9 * ALIGN]


def test_a_truncated_file_fails_the_pages_past_its_end(page_file, tmp_path) -> None:
    path, data = page_file
    short = str(tmp_path / "short.col")
    with open(short, "wb") as f:
        f.write(data[:6 * ALIGN])
    got = read_span(short, span_pages(data))
    assert got[0] is None and got[1] is None
    assert isinstance(got[2], CorruptDataError) and "truncated" in str(got[2]) and short in str(got[2])
    with pytest.raises(FileNotFoundError):
        read_span(str(tmp_path / "missing.col"), span_pages(data))


def test_read_into_unaligned_buffers_reads_buffered(page_file) -> None:
    path, data = page_file
    raw = np.empty(3 * ALIGN + 1, np.uint8)
    first, second = raw[1:1 + ALIGN], raw[1 + ALIGN:]  # not 4096-aligned: no O_DIRECT
    assert read_into(path, 10, [first, second]) == 3 * ALIGN
    assert first.tobytes() + second.tobytes() == data[10:10 + 3 * ALIGN]
    # past the end: the bytes there are
    tail = aligned_empty(2 * ALIGN)
    assert read_into(path, 8 * ALIGN, [tail], direct=False) == ALIGN


def test_will_need_asks_quietly(page_file, tmp_path) -> None:
    from hetdb.io import will_need

    path, data = page_file
    will_need(path)  # (asynchronous readahead into the page cache: the bytes read after are the same)
    with open(path, "rb") as f:
        assert f.read() == data
    will_need(str(tmp_path / "missing.dict"))  # (nothing: the read that follows reports it)
