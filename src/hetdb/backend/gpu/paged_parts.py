"""A paged delivery handed out without a Column per page until something asks for one.

A paged delivery (stream_batch.py: pages kept as stored under ``gpu_compressed_cache``) is one Batch
per row group, each with a Column per page over the delivery's buffer. A fused kernel reads them all
through one page table, and making a CuPy view, a Column (an EncodedColumn and its DevicePage for a
page kept encoded) and a Batch per page, then walking them again for the page table, cost the host
~1 ms a delivery of 20-28 row groups of 4-6 columns (H100, SSB SF 20 warm at a 25% budget: the
early scan took 9.7 ms to queue five deliveries, against 3.8 ms for eight unpaged ones), which made
the host, not the link, the bound.

In the warm steady state (every page a hit of the pinned host tier, fixed-width values without
NULLs, nothing read in place, cached or admitted) where a page's values or encoded section lie in the
buffer depends only on the delivery's plan: ``paged_layout`` works it out once per plan (the plan is
kept per table version and row groups, so once per scan shape), and the delivery is a ``PagedParts``:
its layout, its buffer, and how to make the Batches when a consumer iterates it. A fused kernel's page
table is then a copy of a template per layout and kernel with the buffer's address added
(``FusedPipeline.layout_page_table``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class PagedLayout:
    """Where a paged delivery's pages lie in its buffer (per column, per page)."""

    offsets: np.ndarray    # int64 [columns, pages]: buffer offset of the values or the encoded section
    codec_ids: np.ndarray  # int64 [columns, pages]: 0 for values, else the encoded page's codec id
    rows: np.ndarray       # int64 [pages]: each page's rows (its row group's)
    dtypes: tuple[np.dtype, ...]   # per column: its value dtype
    classes: tuple[str, ...]       # per column: codegen.spec.page_class of its encoded pages
    encoded: tuple[bool, ...]      # per column: some page kept encoded
    # (kernel tile, spec encoded, input columns) -> page-table template (FusedPipeline.layout_page_table)
    templates: dict = field(default_factory=dict, repr=False)

    @property
    def num_pages(self) -> int:
        return int(self.rows.shape[0])


_NONE = "none"  # a plan's memo: no layout


def paged_layout(plan: Any, rgs: list[Any], reader: Any, ids: tuple[int, ...], specs: list[Any]) -> PagedLayout | None:
    """The layout of a paged delivery ``plan`` of row groups ``rgs`` (stream_batch._RowGroup: their
    ``pages`` per column; row groups ``ids`` of ``reader``, columns ``specs``), worked out once per
    plan; None when a page is not a fixed-width value array or encoded section without NULLs (the
    delivery then makes its Columns at once)."""
    got = getattr(plan, "_paged_layout", None)
    if got is None:
        got = _layout(plan, rgs, [reader.row_group_rows(i) for i in ids],
                      [np.dtype(spec.dtype.numpy_dtype) for spec in specs])
        plan._paged_layout = _NONE if got is None else got
    return None if got is _NONE else got


def _layout(plan: Any, rgs: list[Any], rows: list[int], dtypes: list[np.dtype]) -> PagedLayout | None:
    from hetdb.backend.gpu.codegen.spec import page_class
    from hetdb.codec.encodings import CODEC_IDS

    ncols, npages = len(plan.pages), len(rgs)
    if ncols == 0 or npages == 0 or len(dtypes) != ncols or any(len(col) != npages for col in plan.pages):
        return None
    offsets = np.zeros((ncols, npages), np.int64)
    ids = np.zeros((ncols, npages), np.int64)
    classes, encoded = [], []
    for c, col in enumerate(plan.pages):
        codecs = set()
        for r, cp in enumerate(col):
            page = rgs[r].pages[c]
            if cp.validity is not None or cp.offsets is not None or getattr(page, "encoding", None) == "dict":
                return None
            if cp.encoded is not None:
                if page.codec not in CODEC_IDS or int(page.num_rows) != rows[r]:
                    return None
                offsets[c, r], ids[c, r] = cp.encoded[0], CODEC_IDS[page.codec]
                codecs.add(page.codec)
            elif cp.data is not None and cp.rows == rows[r]:
                offsets[c, r] = cp.data[0]
            else:
                return None
        classes.append(page_class(codecs))
        encoded.append(bool(codecs))
    return PagedLayout(offsets, ids, np.asarray(rows, np.int64), tuple(np.dtype(d) for d in dtypes),
                       tuple(classes), tuple(encoded))


class PagedParts:
    """A paged delivery's Batches (one per row group), made on first use (``batches``); ``layout``,
    ``base`` (the buffer's device address) and ``index`` (a column's key -> its layout row) let a
    page-table consumer read the pages without them. ``buffer`` keeps the delivery's memory."""

    __slots__ = ("layout", "buffer", "base", "index", "num_rows", "page_table", "_make", "_made", "_count")

    def __init__(self, layout: PagedLayout, buffer: Any, make: Callable[[], list], index: dict,
                 nonempty: bool = False) -> None:
        self.layout = layout
        self.buffer = buffer
        # (a CuPy array's device address; a NumPy buffer's where the streamer's host stand-in runs)
        data = getattr(buffer, "data", None)
        self.base = int(data.ptr) if hasattr(data, "ptr") else int(buffer.ctypes.data)
        self.index = index
        self.num_rows = int(layout.rows.sum())
        self.page_table: Any = None  # set by a consumer that read it through the layout
        self._make = make
        self._made: list | None = None
        # how many Batches ``make`` makes: one per page, or (``nonempty``) per page with rows
        self._count = int((layout.rows > 0).sum()) if nonempty else layout.num_pages

    def batches(self) -> list:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        return iter(self.batches())

    def __getitem__(self, i: int) -> Any:
        return self.batches()[i]

    def keyed(self, pairs: list[tuple[Any, Any]]) -> PagedParts:
        """The same delivery with its columns under new keys: ``pairs`` of (new key, old key) (a scan's
        column ids for the streamer's column names); row groups without rows left out of the Batches."""
        from hetdb.column import Batch

        parent = self

        def make() -> list:
            return [Batch({new: b.columns[old] for new, old in pairs}, b.num_rows)
                    for b in parent.batches() if b.num_rows]

        return PagedParts(self.layout, self.buffer, make, {new: self.index[old] for new, old in pairs}, nonempty=True)


def layout_template(layout: PagedLayout, columns: tuple[int, ...], tile: int, encoded: bool) -> tuple | None:
    """(table with buffer offsets where the page pointers go, the pointers' slice, pages, tiles, rows,
    per input the page class) of a fused kernel's page table (codegen/runtime.py ``page_table``'s
    layout) over ``layout``'s pages with rows, reading layout rows ``columns``; None when an input has
    encoded pages and the kernel reads none (``encoded`` False)."""
    if not encoded and any(layout.encoded[c] for c in columns):
        return None
    keep = layout.rows > 0
    rows = layout.rows[keep]
    num, k = int(rows.shape[0]), len(columns)
    tiles = -(-rows // tile)
    table = np.zeros(3 * num + 1 + num * k * (2 if encoded else 1), np.int64)
    if num:
        table[1:num] = np.cumsum(tiles)[:-1]
        table[num + 2:2 * num + 1] = np.cumsum(rows)[:-1]
    table[num] = int(tiles.sum())
    table[2 * num + 1:3 * num + 1] = rows
    lo = 3 * num + 1
    cols = list(columns)
    table[lo:lo + num * k] = layout.offsets[cols][:, keep].T.reshape(-1)
    if encoded:
        table[lo + num * k:] = layout.codec_ids[cols][:, keep].T.reshape(-1)
    classes = tuple(layout.classes[c] for c in columns) if encoded else ()
    return table, slice(lo, lo + num * k), num, int(tiles.sum()), int(rows.sum()), classes
