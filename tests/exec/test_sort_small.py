"""Small device batches ordered on the host (exec/operators/sort_small.py) order exactly as the
backend sort does: against the CPU backend's sort_keys + sort_indices / topk_indices on random
batches with NULLs in every key, NaN and -0.0, plain and dictionary strings (unsorted dictionary,
duplicates), ties, every direction and NULL placement. The "device" here is the CPU backend seen
through a NumPy proxy (so the code takes its device path without a GPU)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.backend.cpu.strings import _arrow_to_offsets_chars
from hetdb.column import Batch, Column
from hetdb.exec.expressions import ExprEvaluator
from hetdb.exec.operators.sort import sort_keys
from hetdb.exec.operators.sort_small import host_order, is_prefix_order
from hetdb.plan.expr import ColumnRef, SortKey


class _NumpyProxy:
    def __getattr__(self, name):
        return getattr(np, name)


class _ProxyBackend(CpuBackend):
    xp = _NumpyProxy()

    def to_host(self, array):
        return np.asarray(array)


def _strings(values: list) -> tuple:
    return _arrow_to_offsets_chars(pa.array(values, pa.string()))


def _batch(rng: np.random.Generator, n: int) -> Batch:
    words = ["pear", "", "apple", "Zed", "é", "appl", "zz", "b", "apple"]
    nulls = lambda: rng.random(n) < 0.2  # noqa: E731
    f = rng.choice([1.5, -2.0, 0.0, -0.0, np.nan, 7.25, np.inf], n)
    s = [None if x else words[rng.integers(0, len(words))] for x in nulls()]
    offsets, chars = _strings(["" if v is None else v for v in s])
    d_off, d_chr = _strings(words)
    codes = rng.integers(0, len(words), n).astype(np.int32)
    return Batch({
        "i": Column(T.INT64, data=rng.integers(-3, 4, n).astype(np.int64), validity=~nulls()),
        "f": Column(T.FLOAT64, data=f, validity=~nulls()),
        "s": Column(T.STRING, offsets=offsets, chars=chars, validity=np.array([v is not None for v in s])),
        "d": Column(T.STRING, data=codes, validity=~nulls(), dictionary=Column(T.STRING, offsets=d_off, chars=d_chr)),
    }, n)


TYPES = {"i": T.INT64, "f": T.FLOAT64, "s": T.STRING, "d": T.STRING}


@pytest.mark.parametrize("seed", range(12))
def test_host_order_is_the_backend_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 1, 5, 100, 700]))
    batch = _batch(rng, n)
    cols = list(rng.permutation(list(TYPES)))[: int(rng.integers(1, 5))]
    keys = tuple(SortKey(ColumnRef(TYPES[c], c, True), bool(rng.integers(0, 2)), bool(rng.integers(0, 2)))
                 for c in cols)
    device = SimpleNamespace(backend=_ProxyBackend(), evaluator=ExprEvaluator(_ProxyBackend()))
    cpu = CpuBackend()
    host = SimpleNamespace(backend=cpu, evaluator=ExprEvaluator(cpu))
    arrays, desc = sort_keys(host, keys, batch)
    if n:
        assert host_order(device, keys, batch).tolist() == cpu.sort_indices(arrays, desc).tolist()
        for k in (1, 3, n):
            assert host_order(device, keys, batch, k).tolist() == cpu.topk_indices(arrays, desc, k).tolist()
    assert host_order(host, keys, batch) is None  # (a host batch: the caller's own sort)


def test_prefix_order() -> None:
    assert is_prefix_order(np.arange(5)) and is_prefix_order(np.arange(0))
    assert not is_prefix_order(np.array([0, 2, 1]))
