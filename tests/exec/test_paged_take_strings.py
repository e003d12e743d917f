"""compiled_paged._take_strings: plain strings of a paged scan gathered at global rows in any order
(a top-N hands its best rows in rank order; the H100 gathered the wrong page's strings for them)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.column import Column
from hetdb.exec.compiled_paged import _take_strings


def _page(strings: list[str]) -> dict[str, Column]:
    arr = pa.array(strings, pa.string())
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[: len(strings) + 1].astype(np.int64)
    chars = np.frombuffer(arr.buffers()[2], np.uint8)[: int(offsets[-1])].copy()
    return {"s": Column(T.STRING, offsets=offsets, chars=chars)}


def test_rows_in_any_order_take_their_own_strings() -> None:
    pages = [[f"p{p}r{r}" for r in range(n)] for p, n in enumerate((5, 3, 7, 4))]
    flat = [s for page in pages for s in page]
    starts = np.cumsum([0] + [len(p) for p in pages[:-1]]).astype(np.int64)
    table = SimpleNamespace(pages=[_page(p) for p in pages], starts=starts, num_rows=len(flat))
    ctx = SimpleNamespace(backend=CpuBackend())
    rng = np.random.default_rng(7)
    for rows in (np.arange(len(flat)), np.array([12, 0, 6, 18, 5]), rng.permutation(len(flat))[:9],
                 np.array([3]), np.array([], np.int64)):
        col = _take_strings(ctx, table, "s", rows.astype(np.int64))
        got = col.to_arrow().to_pylist()
        assert got == [flat[i] for i in rows], (rows, got)
