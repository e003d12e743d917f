"""exec/columns.coalesce_batches: runs of small batches concatenated in order, large ones kept uncopied."""

from __future__ import annotations

import numpy as np

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.column import Batch, Column
from hetdb.exec.columns import coalesce_batches


def _batch(lo: int, n: int) -> Batch:
    v = np.arange(lo, lo + n, dtype=np.int64)
    return Batch({"a": Column(T.INT64, data=v), "b": Column(T.FLOAT64, data=v / 2, validity=v % 3 != 0)}, n)


def test_small_runs_concatenated_large_kept() -> None:
    be = CpuBackend()
    sizes = [5, 1, 7, 30, 1, 2, 2, 2, 40, 1]
    batches, lo = [], 0
    for n in sizes:
        batches.append(_batch(lo, n))
        lo += n
    out = coalesce_batches(be, batches, 10)
    assert [b.num_rows for b in out] == [13, 30, 7, 40, 1]
    assert out[1] is batches[3] and out[3] is batches[8]  # (not copied)
    a = np.concatenate([b.columns["a"].data for b in out])
    assert np.array_equal(a, np.arange(sum(sizes)))
    valid = np.concatenate([np.ones(b.num_rows, bool) if b.columns["b"].validity is None
                            else b.columns["b"].validity for b in out])
    assert np.array_equal(valid, np.arange(sum(sizes)) % 3 != 0)
    assert coalesce_batches(be, [], 10) == []
    assert [b.num_rows for b in coalesce_batches(be, batches, 1)] == sizes
