"""The collective exchange of the GPU workers without Ray: several ranks in one process (threads of a
LocalGroup) exchange hash partitions and broadcasts of their batches; every row arrives once, at the
worker its key hashes to, equal to what was sent. On the CPU backend (host codecs) here; on the GPU
(device encoding in one launch, frames decoded on the device) gpu-marked."""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from hetdb.column import Batch, Column
from hetdb.dist.collective import LocalGroup
from hetdb.dist.collective_exchange import CollectiveExchange, ReceivedSource
from hetdb.dist.exchange import partition_ids
from hetdb.exec.hostutil import _map_arrays


def _table(rank: int, n: int) -> pa.Table:
    rng = np.random.default_rng(rank)
    nulls = rng.random(n) < 0.1
    return pa.table({
        "k": pa.array(np.sort(rng.integers(0, 10 ** 6, n)), pa.int64()),
        "q": pa.array(rng.integers(1, 51, n).astype(np.int32), mask=nulls),
        "x": pa.array(rng.normal(size=n)),
        "d": pa.array(rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int32)).cast(pa.decimal128(12, 2)),
        "prio": pa.array([f"{rank}-{i % 5}" for i in rng.integers(0, 5, n)], pa.string()).dictionary_encode(),
        "comment": pa.array([f"c{i}" for i in rng.integers(0, 10 ** 6, n)], pa.string()),
    })


def _rows(table: pa.Table) -> Counter:
    return Counter(zip(*(table.column(c).cast(pa.string()).to_pylist() for c in table.column_names)))


def _run(backend, workers: int, sizes: list[int], broadcast: bool) -> tuple[list[list[pa.Table]], list]:
    xp = backend.xp
    to_dev = xp.asarray
    to_host = xp.asnumpy if backend.name == "gpu" else np.asarray
    group = LocalGroup(workers)
    got: list = [None] * workers
    errors: list = []

    def rank(r: int) -> None:
        try:
            table = _table(r, sizes[r])
            batch = Batch({name: _map_arrays(Column.from_arrow(table.column(name)), to_dev, {})
                           for name in table.column_names}, table.num_rows)
            ex = CollectiveExchange(group.member(r), backend)
            if broadcast:
                received, messages = ex.exchange(batch)
            else:
                ids = partition_ids(table, ["k"], workers).astype(np.int64)
                order = np.argsort(ids, kind="stable")
                bounds = [0, *np.cumsum(np.bincount(ids, minlength=workers)).tolist()]
                received, messages = ex.exchange(batch, to_dev(order), bounds)
            got[r] = ([Batch({k: _map_arrays(c, to_host, None) for k, c in b.columns.items()}, b.num_rows).to_arrow()
                       for b in received], messages, received)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(e)
            group._barrier.abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [g[0] for g in got], [(g[1], g[2]) for g in got]


def _check(backend, broadcast: bool) -> None:
    workers, sizes = 3, [5000, 0, 2300]
    tables, extra = _run(backend, workers, sizes, broadcast)
    sent = [_table(r, sizes[r]) for r in range(workers)]
    want_all = sum((_rows(t) for t in sent), Counter())
    assert sum(want_all.values()) == sum(sizes)
    if broadcast:
        for r in range(workers):
            assert sum((_rows(t) for t in tables[r]), Counter()) == want_all
        return
    total = Counter()
    for r in range(workers):
        for t in tables[r]:
            assert t.num_rows and set(partition_ids(t, ["k"], workers).tolist()) == {r}
            total += _rows(t)
        # one dictionary for the string column over every batch received (merged from the senders')
        assert len({id(b.columns["prio"].dictionary) for b in extra[r][1]}) <= 1
    assert total == want_all
    # every non-empty message to another worker was compressed
    messages = [m for ms, _ in extra for m in ms]
    assert messages and all(m[4] < m[3] for m in messages)


@pytest.mark.parametrize("broadcast", [False, True])
def test_collective_exchange_on_the_cpu(broadcast: bool) -> None:
    from hetdb.backend.cpu import CpuBackend

    _check(CpuBackend(), broadcast)


def test_received_source_reads_the_batches_in_pieces() -> None:
    from hetdb import types as T
    from hetdb.backend.cpu import CpuBackend
    from hetdb.plan.expr import Field

    backend = CpuBackend()
    batch = Batch({"a": Column(T.INT64, data=np.arange(10, dtype=np.int64))}, 10)

    class Ctx:
        batch_rows = 4

        def add(self, *a, **k):
            pass

        def enter_op(self, op):
            return None

        def exit_op(self, prev):
            pass

    ctx = Ctx()
    ctx.backend = backend
    src = ReceivedSource(stage=1, kind="hash", fields=(Field("a", "a", T.INT64, False),), batches=(batch,))
    morsels = src.morsels(ctx, None)
    assert morsels == [(0, 0, 4), (0, 4, 8), (0, 8, 10)]
    got = np.concatenate([b.columns["a"].data for m in morsels for b in src.read(ctx, m, None)])
    assert np.array_equal(got, np.arange(10))


@pytest.mark.gpu
@pytest.mark.parametrize("broadcast", [False, True])
def test_collective_exchange_on_the_gpu(broadcast: bool) -> None:
    pytest.importorskip("cupy")
    from hetdb.backend.gpu import GpuBackend

    _check(GpuBackend(), broadcast)
