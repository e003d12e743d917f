"""The window operator's threaded concatenation of its buffered input equals ``concat_batches``:
fixed-width columns with and without NULLs, dictionary strings (taken by concat_batches), batches
of uneven sizes and an empty one, past the row count where threads start."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.column import Batch, Column
from hetdb.exec.columns import concat_batches
from hetdb.exec.operators import window_concat


def _batches(rng) -> list[Batch]:
    out = []
    for n in (300_000, 0, 1, 417_311, 350_002):
        valid = rng.random(n) < 0.8
        words = pa.array(rng.choice(["a", "bb", "ccc"], n)).dictionary_encode()
        cols = {"i": Column(T.INT64, data=rng.integers(-9, 9, n)),
                "f": Column(T.FLOAT64, data=rng.random(n), validity=valid if n % 2 else None),
                "d": Column(T.DATE, data=rng.integers(0, 9000, n).astype(np.int32), validity=valid),
                "s": Column.from_arrow(words, T.STRING)}
        out.append(Batch(cols, n))
    return out


def test_threaded_concat_equals_concat_batches(monkeypatch) -> None:
    pools = []
    real = window_concat._pool
    monkeypatch.setattr(window_concat, "_pool", lambda n: pools.append(n) or real(n))
    be = CpuBackend()
    batches = _batches(np.random.default_rng(3))
    names = ["i", "f", "d", "s"]
    got = window_concat.concat(be, batches, names, threads=4)
    want = concat_batches(be, batches, names)
    assert got.num_rows == want.num_rows == sum(b.num_rows for b in batches) > window_concat._PARALLEL_ROWS
    assert got.to_arrow().equals(want.to_arrow())
    assert pools == [4]  # the threaded path made it
