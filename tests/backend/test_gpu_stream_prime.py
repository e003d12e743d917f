"""A primed PageStreamer (``prime``: deliveries queued before the consumer asks, on streams of the
scan's own, stream_io.early_streams) hands out the same rows as the host reader, in order, whether
one delivery or all were primed; closing one that was primed and never read gives back every
budget byte and host-tier pin."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.backend.gpu import gpu_available
from hetdb.cache import HostPageCache
from hetdb.storage import ColumnSpec, Database

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

RPP = 4096
ROWS = 7 * RPP + 123
COLUMNS = ["c_for", "c_delta", "c_plain", "c_nulls", "s_dict"]


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    rng = np.random.default_rng(9)
    n = ROWS
    cols = {
        "c_for": (T.INT64, pa.array(rng.integers(1000, 1050, n).astype(np.int64))),
        "c_delta": (T.INT64, pa.array(np.sort(rng.integers(-10**12, 10**12, n)))),
        "c_plain": (T.INT64, pa.array(rng.integers(-(1 << 62), 1 << 62, n))),
        "c_nulls": (T.INT32, pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.3)),
        "s_dict": (T.STRING, pa.array(rng.choice(["red", "green", "blue", None], n).tolist())),
    }
    path = str(tmp_path_factory.mktemp("prime") / "db")
    db = Database.open(path, create=True)
    with db.create_table("t", [ColumnSpec(k, t) for k, (t, _) in cols.items()], rows_per_page=RPP) as w:
        w.append_arrow(pa.table({k: a for k, (_, a) in cols.items()}))
    return Database.open(path, create=False).table("t")


def _arrow(col) -> pa.Array:
    import cupy

    from hetdb.column import Column

    def h(a):
        return None if a is None else cupy.asnumpy(a)

    d = col.dictionary
    dictionary = None if d is None else Column(d.dtype, data=h(d.data), validity=h(d.validity),
                                                 offsets=h(d.offsets), chars=h(d.chars))
    return Column(col.dtype, data=h(col.data), validity=h(col.validity), dictionary=dictionary,
                  offsets=h(col.offsets), chars=h(col.chars)).to_arrow()


def _streamer(reader, host, budget, **kw):
    import cupy

    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.backend.gpu.stream_io import early_streams

    per = sum(reader.page_location(c, 1).length for c in COLUMNS)
    # primed deliveries aim at PRIMED_BATCHES x batch_bytes: two row groups each here
    return PageStreamer(reader, COLUMNS, budget=budget, host_cache=host, batch_bytes=per // 2 + 1, overlap=True,
                        streams=early_streams(cupy.cuda.Device().id), **kw)


@pytest.mark.parametrize("prime,more", [(1, 0), (1 << 40, 0), (1, 1 << 40)], ids=["first", "all", "first-then-rest"])
def test_primed_deliveries_equal_the_host_reader(reader, prime, more):
    from hetdb.backend.gpu.memory import DeviceMemoryBudget

    host = HostPageCache(64 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20)
    b = DeviceMemoryBudget(1 << 30)
    with _streamer(reader, host, b) as s:  # loads the tier
        for _ in s.batches():
            pass
    seen, compared = [], 0
    with _streamer(reader, host, b) as s:
        it = s.prime(prime)
        assert it is not None and s.held_bytes > 0
        primed = s.routes.deliveries
        assert primed == 1 if prime == 1 else primed > 1
        if more:  # (exec/early_scan.py: the fact scan's first delivery, the dimension scans, its rest)
            s.prime_more(more)
            assert s.routes.deliveries > primed
        for rgs, parts in it:
            (batch,) = parts
            seen.extend(rgs)
            expected = {c: [] for c in COLUMNS}
            for rg in rgs:
                got = reader.read_batch(COLUMNS, rg)
                for c in COLUMNS:
                    expected[c].append(got[c].to_arrow())
            for c in COLUMNS:
                assert _arrow(batch[c]).equals(pa.concat_arrays(expected[c])), (c, rgs)
                compared += batch.num_rows
        assert s.stats.pages_host == len(COLUMNS) * reader.num_row_groups
    assert seen == list(range(reader.num_row_groups))
    assert compared == ROWS * len(COLUMNS)
    assert b.used_bytes == 0 and host.pinned_bytes() == 0


def test_a_primed_streamer_closed_unread_gives_everything_back(reader):
    from hetdb.backend.gpu.memory import DeviceMemoryBudget

    host = HostPageCache(64 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20)
    b = DeviceMemoryBudget(1 << 30)
    s = _streamer(reader, host, b)
    assert s.prime(1 << 40) is not None and b.used_bytes > 0
    s.close()
    assert b.used_bytes == 0 and host.pinned_bytes() == 0
