"""A column's neighbouring pages in the pinned host tier go to the GPU as one copy (batch_plan's
``mirror``, batch.py's linked pieces), checked without a GPU: real encoded pages loaded into a real
HostPageCache (NumPy memory) column by column, as the streamer loads a group, a delivery planned with
the tier's block size, its copies carried out with memmove into a NumPy "device" buffer, then every
staged data section decoded by the CPU codec: the values equal the pages'. Loaded row group by row
group instead, the pages are not neighbours: the same values, one copy per page."""

from __future__ import annotations

import ctypes
import zlib

import numpy as np
import pytest

from hetdb import codec
from hetdb.backend.gpu.batch import _linked_pieces
from hetdb.backend.gpu.batch_plan import (
    ColumnSpecLite,
    PageSpec,
    coalesce,
    coalesce_linked,
    delivery_bound,
    plan_delivery,
)
from hetdb.cache import HostPageCache, PageKey
from hetdb.codec.encodings import CODEC_IDS, encode_as
from hetdb.io import aligned_empty

_NAMES = {v: k for k, v in CODEC_IDS.items()}
_BY_SIZE = {1: np.uint8, 4: np.int32, 8: np.int64}
BLOCK = 16 << 10


def _pages(rng, rows):
    """Per column (int32 for, int64 delta, int64 dict) per row group: (page bytes, sections, codec,
    values); a page's data section starts a few bytes in, behind a header, as stored pages' may."""
    cols = {"a": (4, lambda n: rng.integers(-1000, 1000, n).astype(np.int32), "for"),
            "b": (8, lambda n: np.sort(rng.integers(0, 1 << 40, n)).astype(np.int64), "delta"),
            "c": (8, lambda n: rng.choice(np.array([-(1 << 50), 3, 1 << 45], np.int64), n), "dict")}
    out = {}
    for name, (_, make, data_codec) in cols.items():
        pages = []
        for n in rows:
            values = make(n)
            data = encode_as(values, data_codec)
            raw = np.concatenate([np.full(256, 7, np.uint8), data])
            pages.append((raw, {"data": [256, int(data.shape[0])]}, data_codec, values))
        out[name] = pages
    return [ColumnSpecLite(name, size) for name, (size, _, _) in cols.items()], out


def _load(tier, pages, order):
    """Load every page into the tier in ``order`` ((column, row group) pairs); the HostPages."""
    got = {}
    for name, r in order:
        raw = pages[name][r][0]
        padded = -(-raw.shape[0] // 4096) * 4096
        page = tier.acquire(PageKey("/t", 1, name, r), raw.shape[0], padded, zlib.crc32(raw))
        assert page is not None
        done = 0
        for run in page.runs:
            k = min(run.shape[0], raw.shape[0] - done)
            if k > 0:
                run[:k] = raw[done:done + k]
            done += max(k, 0)
        got[(name, r)] = tier.commit(page)
    return got


@pytest.mark.parametrize("column_major", [True, False], ids=["neighbours", "interleaved"])
def test_neighbouring_pages_go_as_one_copy_and_decode_alike(column_major):
    rng = np.random.default_rng(4)
    rows = [3000, 2048, 4096, 1000, 3500]
    lite, pages = _pages(rng, rows)
    names = [c.name for c in lite]
    tier = HostPageCache(64 << 20, block_bytes=BLOCK, chunk_bytes=1 << 20, allocate=aligned_empty)
    order = [(n, r) for n in names for r in range(len(rows))] if column_major \
        else [(n, r) for r in range(len(rows)) for n in names]
    hosts = _load(tier, pages, order)
    specs = [[PageSpec(pages[n][r][0].shape[0], rows[r], pages[n][r][2], pages[n][r][1], f"{n} {r}",
                       padded=hosts[(n, r)].padded_length) for r in range(len(rows))] for n in names]
    assert all(p.codec != "plain" for col in specs for p in col)
    plan = plan_delivery(lite, specs, mirror=BLOCK)
    assert plan.linked  # consecutive encoded pages of a column are linked
    # the streamer sizes its groups by delivery_bound: the mirrored layout stays within it
    assert plan.nbytes <= sum(delivery_bound(p, c.itemsize, False, mirror=BLOCK) for c, col in zip(lite, specs)
                              for p in col) + plan.desc.nbytes
    sources = [[hosts[(n, r)].addresses() for r in range(len(rows))] for n in names]
    regions = [[hosts[(n, r)].run_chunks for r in range(len(rows))] for n in names]
    copies = coalesce_linked(_linked_pieces(plan, sources, regions))
    plain = coalesce([(s, d, k) for s, d, k, _, _ in _linked_pieces(plan, sources, regions)])
    if column_major:
        # a column's pages of one chunk lie back to back in the tier: one copy per column and chunk
        chunks = {(n, c) for (n, _), h in hosts.items() for c in h.run_chunks}
        assert len(copies) <= len(chunks) < len(plain)
    else:
        assert len(copies) == len(plain)
    buf = aligned_empty(plan.nbytes)
    buf[:] = 0
    base = buf.ctypes.data
    for src, dst, n in copies:
        assert 0 <= dst and dst + n <= plan.nbytes
        ctypes.memmove(base + dst, src, n)
    desc = plan.desc
    compared = 0
    for j in range(plan.decode.pages):
        at = plan.decode.start + 4 * j
        src, dst, n, size = (int(x) for x in desc[at:at + 4])
        values = codec.decode(buf[src:], _NAMES[int(buf[src])], n, _BY_SIZE[size])
        buf[dst:dst + n * size] = values.view(np.uint8)
    for name, cp in zip(names, plan.columns):
        off, ln = cp.data
        dtype = pages[name][0][3].dtype
        np.testing.assert_array_equal(buf[off:off + ln].view(dtype),
                                      np.concatenate([p[3] for p in pages[name]]), name)
        compared += cp.rows
    assert compared == sum(rows) * len(names)


def test_linked_pieces_join_only_inside_one_region_and_as_far_apart_as_planned():
    # (src, dst, n, tail, head): a gap is copied along only when both sides agree on it
    assert coalesce_linked([(1000, 0, 10, "r", None), (1100, 100, 10, None, "r")]) == [(1000, 0, 110)]
    assert coalesce_linked([(1000, 0, 10, "r", None), (1100, 100, 10, None, "q")]) == \
        [(1000, 0, 10), (1100, 100, 10)]
    assert coalesce_linked([(1000, 0, 10, "r", None), (1100, 96, 10, None, "r")]) == \
        [(1000, 0, 10), (1100, 96, 10)]
    assert coalesce_linked([(1000, 0, 10, None, None), (1100, 100, 10, None, None)]) == \
        [(1000, 0, 10), (1100, 100, 10)]
    # back to back on both sides: one copy as before
    assert coalesce_linked([(1000, 0, 10, None, None), (1010, 10, 5, None, None)]) == [(1000, 0, 15)]
