"""Generated pipeline kernels reading compressed pages in place, *run* without a GPU (the host harness
of pipeline_host.py: g++, one thread at a time): const, for and dict pages (random access,
pipe::ConstColumn/ForColumn/DictColumn) over blocks of every interesting bit width (0..64), negative
references and a partial last block, against the values the CPU encoder was given; and overflow-
checked arithmetic recording the operands the host turns into the CPU's error. (delta/rle pages
decode cooperatively in shared memory, which a sequential emulation cannot run: the gpu-marked
tests/codec/test_gpu_compressed_cache.py covers them.)"""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from pipeline_host import run_kernel

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_spec import AggregateSink, FilterStage, Input, PipelineSpec
from hetdb.codec.encodings import encode_as
from hetdb.plan.expr import Call, Case, ColumnRef, Literal

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

WIDTHS = (0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 47, 63, 64)


def col(c: str, t=T.INT64) -> ColumnRef:
    return ColumnRef(t, c, False)


def blocks_of_widths(rng, widths, last: int, lo_bits: int = 64) -> np.ndarray:
    """One 1024-value block per width (values spanning exactly that many bits above a negative
    reference), then a partial block of ``last`` values."""
    out = []
    for w in widths:
        if w == 0:
            out.append(np.full(1024, -(1 << min(40, lo_bits - 2)), np.int64))
            continue
        span = (1 << w) - 1 if w < 64 else None
        if span is None:
            v = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 1024, dtype=np.int64, endpoint=True)
            v[0], v[1] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        else:
            ref = -(1 << min(w, lo_bits - 2)) if w < lo_bits - 1 else np.iinfo(np.int64).min
            v = (np.int64(ref) + rng.integers(0, span, 1024, dtype=np.uint64, endpoint=True).astype(np.int64))
            v[0], v[1] = ref, np.int64(ref) + np.uint64(span).astype(np.int64)
        out.append(v)
    out.append(rng.integers(-1000, 1000, last).astype(np.int64))
    return np.concatenate(out)


def test_random_access_codecs_decode_every_row(tmp_path):
    rng = np.random.default_rng(15)
    a = blocks_of_widths(rng, WIDTHS, 333)
    n = a.shape[0]
    b = blocks_of_widths(rng, [w for w in WIDTHS if w <= 31], 0, lo_bits=32)
    b = np.resize(b, n).astype(np.int32)  # int32 values: widths up to 32 over negative references
    c = rng.choice(np.array([-(1 << 62), -5, 0, 7, 1 << 50], np.int64), n)
    d = np.full(n, -123456, np.int32)
    enc = {"a": encode_as(a, "for"), "b": encode_as(b, "for"), "c": encode_as(c, "dict"), "d": encode_as(d, "const")}
    inputs = (Input("r", T.INT64, nullable=False), Input("a", T.INT64, False, codec="for"),
              Input("b", T.INT32, False, codec="for"), Input("c", T.INT64, False, codec="dict"),
              Input("d", T.INT32, False, codec="const"))
    keys = (col("r"), col("a"), col("b", T.INT32), col("c"), col("d", T.INT32))
    spec = PipelineSpec(inputs, (), AggregateSink(keys, (("count_star", None),)))
    r = np.arange(n, dtype=np.int64)
    columns = {"r": r.tolist(), "a": a.tolist(), "b": b.tolist(), "c": c.tolist(), "d": d.tolist()}
    groups = run_kernel(spec, columns, [], tmp_path, slots=1 << 15, encoded=enc)
    got = sorted((k, v) for k, v in groups)
    want = sorted((tuple(int(x) for x in row), [1]) for row in zip(r, a, b, c, d))
    assert len(got) == n == len(want)
    assert got == want


def test_overflowing_sum_records_its_operands(tmp_path):
    inputs = (Input("x", T.INT64, nullable=False), Input("y", T.INT32, nullable=False))
    spec = PipelineSpec(inputs, (), AggregateSink((col("y", T.INT32),),
                                                  (("sum", Call(T.INT64, "add", (col("x"), col("x")))),)))
    ok = run_kernel(spec, {"x": [1, 2, 3], "y": [0, 0, 1]}, [], tmp_path)
    assert sorted((k, v[0]) for k, v in ok) == [((0,), 6), ((1,), 6)]
    with pytest.raises(AssertionError, match=r"OVERFLOW 8 4611686018427387904 4611686018427387904"):
        run_kernel(spec, {"x": [1, 1 << 62, 3], "y": [0, 0, 1]}, [], tmp_path)


def test_overflow_counts_only_in_the_case_branch_a_row_takes(tmp_path):
    x = col("x")
    times4 = Call(T.INT64, "mul", (x, Literal(T.INT64, 4)))
    small = Call(T.BOOL, "lt", (x, Literal(T.INT64, 100)))
    guarded = Case(T.INT64, ((small, times4),), Literal(T.INT64, 0))
    y = ColumnRef(T.INT64, "y", True)
    fallback = Call(T.INT64, "coalesce", (y, times4))  # x * 4 only where y is NULL
    spec = PipelineSpec((Input("x", T.INT64, nullable=False), Input("y", T.INT64)), (),
                        AggregateSink((), (("sum", guarded), ("sum", fallback))))
    data = {"x": [1, 1 << 62, 3, 1 << 62], "y": [None, 5, None, 6]}
    (key, sums), = run_kernel(spec, data, [], tmp_path)
    assert sums == [16, 4, 4 + 5 + 12 + 6, 4]  # (sum, count) per aggregate
    data["y"][3] = None  # now a row needs 2**62 * 4
    with pytest.raises(AssertionError, match=r"OVERFLOW 10 4611686018427387904 4"):
        run_kernel(spec, data, [], tmp_path)


def test_paged_kernel_reads_compressed_pages_next_to_value_arrays(tmp_path):
    """One paged launch (page table) over pages of which some are kept compressed (for, dict, const:
    pipe::PageColumn, flagged per page and input in the table) and some are value arrays, with NULLs
    and a filter: the same groups as the plain pages and as the Python reference."""
    rng = np.random.default_rng(4)
    pages = (700, 13, 1500, 300)
    n = sum(pages)
    a = [None if rng.random() < 0.1 else int(x) for x in rng.integers(-(1 << 40), 1 << 40, n)]
    first = [sum(pages[:p]) for p in range(len(pages))]
    a[first[3]:] = [42] * pages[3]  # the last page of a: one value (a const page)
    a[first[2]:first[2] + pages[2]] = [None if v is None else int(v) % 9 - 4 for v in a[first[2]:first[2] + pages[2]]]
    b = [int(x) for x in rng.integers(-3, 4, n)]

    def sections(values, dtype, codecs):
        out = []
        for p, codec in enumerate(codecs):
            page = np.asarray([0 if v is None else v for v in values[first[p]:first[p] + pages[p]]], dtype=dtype)
            out.append(None if codec is None else encode_as(page, codec))
        return out

    enc = {"a": sections(a, np.int64, ("for", None, "dict", "const")), "b": sections(b, np.int32, (None, "for", "for", None))}
    a_ref = ColumnRef(T.INT64, "a", True)
    spec = PipelineSpec((Input("a", T.INT64, codec="paged"), Input("b", T.INT32, False, codec="paged")),
                        (FilterStage(Call(T.BOOL, "gt", (a_ref, Literal(T.INT64, -2)))),),
                        AggregateSink((col("b", T.INT32),), (("count_star", None), ("sum", a_ref))))
    got = dict(run_kernel(spec, {"a": a, "b": b}, [], tmp_path, encoded=enc, pages=pages))
    plain = PipelineSpec(tuple(dataclasses.replace(i, codec="plain") for i in spec.inputs), spec.stages, spec.sink)
    assert dict(run_kernel(plain, {"a": a, "b": b}, [], tmp_path, pages=pages)) == got
    want: dict = {}
    for x, g in zip(a, b):
        if x is not None and x > -2:
            cnt, total, nn = want.get((g,), [0, 0, 0])
            want[(g,)] = [cnt + 1, total + x, nn + 1]
    assert got == want and len(want) == 7
