"""A fused kernel's page table made from a lazily handed-out paged delivery's layout
(backend/gpu/paged_parts.py, ``FusedPipeline.layout_page_table``) equals the one ``page_table`` makes
from the delivery's Columns: page pointers, tile and row starts, rows, codec ids and page classes, pages
without rows left out; refused (None) where the Columns would not run fused that way. No GPU: the
arrays are stand-ins with device addresses, which is all either table reads of them."""

from __future__ import annotations

import types

import numpy as np
import pytest

from hetdb import types as T
from hetdb.backend.gpu.codegen.runtime import FusedPipeline
from hetdb.backend.gpu.encoded import DevicePage, EncodedColumn
from hetdb.backend.gpu.paged_parts import PagedLayout, PagedParts
from hetdb.codec.encodings import CODEC_IDS
from hetdb.column import Column

BASE = 1 << 40


class _Array:
    """A device array stand-in: its address, rows and dtype."""

    def __init__(self, ptr: int, n: int, dtype) -> None:
        self.data = types.SimpleNamespace(ptr=ptr)
        self.shape = (n,)
        self.dtype = np.dtype(dtype)
        self.flags = types.SimpleNamespace(c_contiguous=True)
        self.nbytes = n * self.dtype.itemsize


def _pipeline(inputs, encoded: bool, tile: int = 1024) -> FusedPipeline:
    fp = FusedPipeline.__new__(FusedPipeline)
    fp.spec = types.SimpleNamespace(inputs=inputs, encoded=encoded)
    fp.tile = tile
    return fp


def _delivery(codecs: list[list[str]], rows: list[int], dtypes: list) -> tuple[PagedParts, list]:
    """A PagedParts over pages at made-up offsets, and the Columns a delivery would hand out for them."""
    ncols, npages = len(codecs), len(rows)
    offsets = np.arange(ncols * npages, dtype=np.int64).reshape(ncols, npages) * 4096 + 256
    ids = np.array([[CODEC_IDS.get(c, 0) for c in col] for col in codecs], np.int64)
    classes, encoded = [], []
    from hetdb.backend.gpu.codegen.spec import page_class

    for col in codecs:
        kept = {c for c in col if c != "plain"}
        classes.append(page_class(kept))
        encoded.append(bool(kept))
    layout = PagedLayout(offsets, ids, np.array(rows, np.int64), tuple(np.dtype(d.numpy_dtype) for d in dtypes),
                         tuple(classes), tuple(encoded))
    pages = []
    for r, n in enumerate(rows):
        cols = {}
        for c in range(ncols):
            ptr, dt = BASE + int(offsets[c, r]), dtypes[c]
            if codecs[c][r] == "plain":
                cols[f"c{c}"] = Column(dt, data=_Array(ptr, n, dt.numpy_dtype))
            else:
                page = DevicePage(_Array(ptr, 64, np.uint8), codecs[c][r], n, np.dtype(dt.numpy_dtype))
                cols[f"c{c}"] = EncodedColumn(dt, device_page=page)
        pages.append((n, cols))
    buffer = types.SimpleNamespace(data=types.SimpleNamespace(ptr=BASE))
    parts = PagedParts(layout, buffer, lambda: [], {f"c{c}": c for c in range(ncols)})
    return parts, pages


@pytest.mark.parametrize("inputs", [("c1", "c0"), ("c2",), ("c0", "c1", "c2")])
def test_layout_page_table_equals_the_columns_page_table(inputs):
    dtypes = [T.INT64, T.INT32, T.INT64]
    codecs = [["for", "delta", "plain", "rle", "for"], ["plain"] * 5, ["dict", "const", "for", "for", "plain"]]
    rows = [5000, 1, 0, 4096, 777]  # (a page without rows is left out of both tables)
    parts, pages = _delivery(codecs, rows, dtypes)
    fp = _pipeline([(cid, dtypes[int(cid[1])]) for cid in inputs], encoded=True)
    got = fp.layout_page_table(parts)
    want = fp.page_table(pages)
    assert np.array_equal(got.host, want.host)
    assert (got.num_pages, got.num_tiles, got.num_rows, got.codecs) == \
           (want.num_pages, want.num_tiles, want.num_rows, want.codecs) == (got.num_pages, got.num_tiles, 9874,
                                                                            got.codecs)
    assert got.num_pages == 4 and got.keep == [parts.buffer]
    # the template is kept per layout and kernel: a second delivery of the plan adds its own address
    moved = PagedParts(parts.layout, types.SimpleNamespace(data=types.SimpleNamespace(ptr=BASE + 8192)),
                       lambda: [], parts.index)
    again = fp.layout_page_table(moved)
    lo = 3 * 4 + 1
    assert np.array_equal(again.host[lo:lo + 4 * len(inputs)], got.host[lo:lo + 4 * len(inputs)] + 8192)
    assert np.array_equal(again.host[:lo], got.host[:lo]) and len(parts.layout.templates) == 1


def test_layout_page_table_refuses_what_the_columns_would_not_run_that_way():
    dtypes = [T.INT64, T.INT32]
    parts, pages = _delivery([["for", "plain"], ["plain", "plain"]], [10, 20], dtypes)
    # a kernel that reads no encoded pages, an encoded input: None (its Columns decode on .data)
    assert _pipeline([("c0", T.INT64)], encoded=False).layout_page_table(parts) is None
    # values only: the flat table without codec ids, equal to page_table's
    fp = _pipeline([("c1", T.INT32)], encoded=False)
    got, want = fp.layout_page_table(parts), fp.page_table(pages)
    assert np.array_equal(got.host, want.host) and got.codecs == want.codecs == ()
    # another dtype than the kernel's, or an input the delivery does not have: None
    assert _pipeline([("c1", T.INT64)], encoded=True).layout_page_table(parts) is None
    assert _pipeline([("c9", T.INT64)], encoded=True).layout_page_table(parts) is None


def test_keyed_parts_count_their_batches_and_share_the_layout():
    parts, _ = _delivery([["plain", "plain", "plain"]], [3, 0, 4], [T.INT64])
    made = []
    parent = PagedParts(parts.layout, parts.buffer, lambda: made or made.extend(
        [types.SimpleNamespace(columns={"c0": [i] * n}, num_rows=n) for i, n in enumerate((3, 0, 4))]) or made,
        parts.index)
    assert len(parent) == 3 and parent._made is None
    keyed = parent.keyed([(11, "c0")])
    assert len(keyed) == 2 and keyed.index == {11: 0} and keyed.num_rows == 7
    assert [b.columns for b in keyed] == [{11: [0] * 3}, {11: [2] * 4}] and len(keyed) == len(list(keyed))
