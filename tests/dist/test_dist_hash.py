"""The hash partitioning of exchanges (numpy, no pandas): equal keys hash equally whatever their
Arrow layout, partitions are balanced, and repartitioning keeps every row exactly once."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hetdb.dist.exchange as ex
from hetdb.dist.exchange import hash_column, hash_partition, partition_ids


def test_equal_keys_hash_equally_across_layouts() -> None:
    a = pa.array([1, 2, None, -5, 2**40, 0], pa.int64())
    h = hash_column(a)
    assert (h == hash_column(pa.chunked_array([a.slice(0, 2), a.slice(2)]))).all()
    assert (hash_column(pa.array([1, 2, None, -5], pa.int32())) == h[:4]).all()
    assert h[2] == 0 and len(set(h[[0, 1, 3, 4, 5]].tolist())) == 5
    s = pa.array(["x", "", None, "hello", "x", "héllo", "xx"])
    hs = hash_column(s)
    assert (hs == hash_column(s.cast(pa.large_string()))).all()
    assert (hs == hash_column(pc.dictionary_encode(s))).all()
    assert (hash_column(s.slice(3)) == hs[3:]).all()
    assert hs[0] == hs[4] and len({hs[i] for i in (0, 1, 3, 5, 6)}) == 5
    f = hash_column(pa.array([0.0, -0.0, float("nan"), -float("nan"), 1.5]))
    assert f[0] == f[1] and f[2] == f[3] and f[4] not in (f[0], f[2])
    dates = pa.array([1, 2, 1], pa.int32()).cast(pa.date32())
    d = hash_column(dates)
    assert d[0] == d[2] != d[1]


def test_strings_hash_the_same_in_blocks(monkeypatch) -> None:
    strings = pa.array(["ab" * (i % 300) for i in range(2000)] + ["z" * 100_000, None, ""])
    whole = hash_column(strings)
    monkeypatch.setattr(ex, "_STRING_BLOCK_BYTES", 997)
    assert (hash_column(strings) == whole).all()
    assert len(set(whole[:2000].tolist())) == 300


@pytest.mark.parametrize("parts", [2, 3, 4])
def test_partitions_are_balanced_and_complete(parts) -> None:
    keys = np.arange(1, 600_001, dtype=np.int64) * 4  # TPC-H order keys are sparse multiples
    table = pa.table({"k": keys, "v": np.arange(keys.size)})
    counts = np.bincount(partition_ids(table, ["k"], parts), minlength=parts)
    assert counts.max() / counts.mean() < 1.01
    out = hash_partition(table, ["k"], parts)
    assert [t.num_rows for t in out] == counts.tolist() and out[0].column_names == ["v"]
    got = np.sort(np.concatenate([t.column("v").to_numpy() for t in out]))
    assert (got == np.arange(keys.size)).all()
    # every row of one key goes to one partition, whatever else shares the batch
    again = hash_partition(table.slice(100, 5000), ["k"], parts)
    for p in range(parts):
        assert set(again[p].column("v").to_pylist()) <= set(out[p].column("v").to_pylist())


def test_received_strings_share_one_dictionary() -> None:
    from hetdb import types as T
    from hetdb.dist.exchange import Received
    from hetdb.plan.expr import Field

    fields = (Field("s", "s", T.STRING, True), Field("u", "u", T.STRING, True), Field("v", "v", T.INT64, True))
    few = ["1-URGENT", "2-HIGH", None, "5-LOW"]
    tables = tuple(pa.table({"s": pa.array([few[(i + j) % 4] for i in range(3000)]),
                             "u": pa.array([f"u{j}-{i}" for i in range(3000)]),
                             "v": pa.array(np.arange(3000))}) for j in range(3)) + (pa.table(
        {"s": pa.array([], pa.string()), "u": pa.array([], pa.string()), "v": pa.array([], pa.int64())}),)
    got = Received(tables, fields)
    assert got.num_row_groups == 3  # the empty table is no row group
    cols = [got.read("s", rg) for rg in range(3)]
    assert all(c.dictionary is cols[0].dictionary for c in cols) and len(cols[0].dictionary) == 3
    for rg, c in enumerate(cols):
        assert c.to_arrow().to_pylist() == tables[rg].column("s").to_pylist()
    unique = got.read("u", 1)  # nearly all distinct: stays plain
    assert unique.dictionary is None and unique.to_arrow().to_pylist() == tables[1].column("u").to_pylist()
    assert got.read("v", 2).to_arrow().to_pylist() == list(range(3000))


def test_many_partitions_sort_the_same_way() -> None:
    table = pa.table({"k": np.arange(50_000) % 977, "v": np.arange(50_000)})
    out = hash_partition(table, ["k"], 40)  # past 16 partitions: a radix sort instead of scans
    ids = partition_ids(table, ["k"], 40)
    for p in range(40):
        assert out[p].column("v").to_pylist() == np.flatnonzero(ids == p).tolist()


def test_range_partitioning_cuts_dense_keys_into_equal_ranges() -> None:
    from hetdb.dist.exchange import range_ids

    keys = pa.array([1, 2, 50, 51, 100, None, -7, 10**12], pa.int64())
    ids = range_ids(pa.table({"k": keys}), "k", 2, 1, 100)
    assert ids.tolist() == [0, 0, 0, 1, 1, 0, 0, 1]  # NULLs first, outside keys clamped
    table = pa.table({"k": pa.array(np.arange(1, 100_001) % 5000 + 1, pa.int32()), "v": np.arange(100_000)})
    out = hash_partition(table, ["k"], 4, (1, 5000))
    assert [t.num_rows for t in out] == [25_000] * 4
    got = sorted(v for t in out for v in t.column("v").to_pylist())
    assert got == list(range(100_000))
