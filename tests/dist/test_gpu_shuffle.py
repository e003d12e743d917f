"""Exchange batches encoded on the GPU (gpu-marked): each section byte-identical to the host encoder
with the GPU's codecs, every partition decoded by the CPU's ``decode_batch`` equal to the host's rows,
the device decoders reading the same payload, and the GPU's partition ids equal to the host's. The
layout assembly runs on the CPU too, with the host encoder encoding the segments."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.codec import encode
from hetdb.column import Column
from hetdb.dist.exchange import partition_ids as host_partition_ids
from hetdb.dist.shuffle_codec import decode_arrays, decode_batch

SIZES = [1, 5, 1023, 1024, 1025, 5000, 70_001]


def _cases(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "sorted_i64": np.sort(rng.integers(0, 6_000_000, n)).astype(np.int64),
        "small_i32": rng.integers(-7, 90, n).astype(np.int32),
        "const_i64": np.full(n, -123456789012, np.int64),
        "wide_i64": rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64),
        "extremes": rng.choice(np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0]), n).astype(np.int64),
        "bool": rng.random(n) < 0.3,
        "i8": rng.integers(-128, 128, n).astype(np.int8),
        "f64_bits": rng.normal(size=n).view(np.int64),
        "runs_i32": np.repeat(rng.integers(0, 5, n // 100 + 1), 100)[:n].astype(np.int32),
    }


def _cupy():
    return pytest.importorskip("cupy")


@pytest.mark.gpu
@pytest.mark.parametrize("n", SIZES)
def test_segment_bytes_equal_the_host_encoder(n: int) -> None:
    from hetdb.backend.gpu.shuffle_encode import GPU_CODECS, encode_segment

    cupy = _cupy()
    compared = 0
    for name, values in _cases(n, np.random.default_rng(n)).items():
        data, codec = encode_segment(cupy.asarray(values))
        want, want_codec = encode(values, GPU_CODECS)
        assert codec == want_codec, (name, n)
        assert np.array_equal(cupy.asnumpy(data), want.view(np.uint8)), (name, n, codec)
        compared += 1
    assert compared == 9


@pytest.mark.gpu
def test_segments_of_one_plan_through_row_numbers() -> None:
    """Many segments (partitions gathered through row numbers, empty ones included) in one plan."""
    from hetdb.backend.gpu.shuffle_encode import GPU_CODECS, Segment, SegmentPlan

    cupy = _cupy()
    rng = np.random.default_rng(7)
    values = np.sort(rng.integers(0, 1 << 40, 50_000)).astype(np.int64)
    ids = rng.integers(0, 5, values.shape[0])
    order = np.argsort(ids, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(ids, minlength=6))])  # partition 5 is empty
    d_values, d_order = cupy.asarray(values), cupy.asarray(order)
    segs = [Segment(d_values, int(bounds[p + 1] - bounds[p]), int(bounds[p]), d_order) for p in range(6)]
    segs.append(Segment(d_values, 3000, 100))
    plan = SegmentPlan(segs)
    offsets = np.concatenate([[0], np.cumsum([x + (-x % 8) for x in plan.nbytes])])
    out = cupy.full(int(offsets[-1]) + 8, 0xAB, cupy.uint8)
    plan.pack(offsets[:-1], out)
    host = cupy.asnumpy(out)
    wants = [values[order[bounds[p]:bounds[p + 1]]] for p in range(6)] + [values[100:3100]]
    for i, want_values in enumerate(wants):
        want, codec = encode(want_values, GPU_CODECS)
        assert plan.codecs[i] == codec and plan.nbytes[i] == want.shape[0], i
        assert np.array_equal(host[offsets[i]:offsets[i] + plan.nbytes[i]], want.view(np.uint8)), i
    assert plan.codecs[5] == "plain" and plan.nbytes[5] == 0


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.1
    return pa.table({
        "k": pa.array(np.sort(rng.integers(0, 10 ** 7, n)), pa.int64()),
        "q": pa.array(rng.integers(1, 51, n).astype(np.int32), mask=nulls),
        "x": pa.array(rng.normal(size=n)),
        "d": pa.array((rng.integers(-10 ** 9, 10 ** 9, n)).astype(np.int32)).cast(pa.decimal128(12, 2)),
        "b": pa.array(rng.random(n) < 0.5),
        "day": pa.array(rng.integers(8000, 11000, n).astype(np.int32)).cast(pa.date32()),
        "prio": pa.array([f"{i % 5}-PRIORITY" for i in rng.integers(0, 5, n)]).dictionary_encode(),
        "comment": pa.array([f"c{i}" for i in rng.integers(0, 10 ** 6, n)]),
    })


def _columns(table: pa.Table, to_device) -> list[tuple[str, Column]]:
    from hetdb.exec.hostutil import _map_arrays

    out = []
    for name in table.column_names:
        col = Column.from_arrow(table.column(name))
        assert (col.dictionary is not None) == (name == "prio") and (col.offsets is not None) == (name == "comment")
        out.append((name, _map_arrays(col, to_device, {})))
    return out


def _partitioned(table: pa.Table, parts: int) -> tuple[np.ndarray, list[int], pa.Table]:
    """(row order, partition bounds, the table with hetdb's result types) of ``table`` cut by ``k``."""
    ids = host_partition_ids(table, ["k"], parts).astype(np.int64)
    order = np.argsort(ids, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(ids, minlength=parts))]).tolist()
    want = table.set_column(table.schema.get_field_index("prio"), "prio", table.column("prio").cast(pa.string()))
    assert want.schema == pa.schema([pa.field(f.name, T.from_arrow(f.type).to_arrow()) for f in want.schema])
    return order, bounds, want


@pytest.mark.parametrize("parts", [1, 3, 8])
def test_partition_layout_assembled_on_the_host(parts: int) -> None:
    from hetdb.dist.gpu_shuffle import encode_with
    from hetdb.dist.segments import HostSegmentPlan

    table = _table(9_000, parts)
    order, bounds, want_table = _partitioned(table, parts)
    for compress in (True, False):
        batches = encode_with(_columns(table, np.asarray), order, bounds, compress, np, HostSegmentPlan)
        assert len(batches) == parts
        for p, batch in enumerate(batches):
            want = want_table.take(pa.array(order[bounds[p]:bounds[p + 1]]))
            got = decode_batch(batch)
            assert got.num_rows == want.num_rows and got.equals(want), (p, compress)
            assert batch.columns[1].null_count == want.column("q").null_count
            assert {s.codec for s in batch.columns[0].sections.values()} == ({"delta"} if compress else {"plain"})


@pytest.mark.gpu
@pytest.mark.parametrize("parts", [1, 3, 8])
def test_partitions_round_trip_through_the_cpu_and_device_decoders(parts: int) -> None:
    from hetdb.backend.gpu.decode import decode_device
    from hetdb.dist.gpu_shuffle import encode_partitions, host_copy

    cupy = _cupy()
    table = _table(20_000, parts)
    order, bounds, want_table = _partitioned(table, parts)
    for compress in (True, False):
        batches = encode_partitions(_columns(table, cupy.asarray), cupy.asarray(order), bounds, compress)
        assert len(batches) == parts
        for p, batch in enumerate(batches):
            rows = order[bounds[p]:bounds[p + 1]]
            want = want_table.take(pa.array(rows))
            got = decode_batch(host_copy(batch))
            assert got.num_rows == len(rows) and got.equals(want), (p, compress)
            on_device = decode_arrays(batch, payload=batch.payload, decode_fn=decode_device)
            on_host = decode_arrays(host_copy(batch))
            for dev, hst in zip(on_device, on_host):
                for key in hst:
                    if key != "dictionary":
                        assert np.array_equal(cupy.asnumpy(dev[key]), hst[key]), (p, key)
        if compress:
            wire = sum(b.payload.nbytes for b in batches)
            assert wire < sum(b.raw_bytes for b in batches)


@pytest.mark.gpu
def test_partition_ids_equal_the_host() -> None:
    from hetdb.backend.gpu.shuffle_encode import partition_ids

    cupy = _cupy()
    rng = np.random.default_rng(3)
    n = 30_000
    a = rng.integers(-(1 << 62), 1 << 62, n)
    b = rng.integers(0, 100, n).astype(np.int32)
    valid = rng.random(n) > 0.05
    table = pa.table({"a": pa.array(a, mask=~valid), "b": pa.array(b)})
    for parts in (2, 4, 8, 300):
        got = partition_ids([cupy.asarray(a)], [cupy.asarray(valid)], parts)
        assert np.array_equal(cupy.asnumpy(got), host_partition_ids(table, ["a"], parts))
        got2 = partition_ids([cupy.asarray(a), cupy.asarray(b.astype(np.int64))], [cupy.asarray(valid), None], parts)
        assert np.array_equal(cupy.asnumpy(got2), host_partition_ids(table, ["a", "b"], parts))
