"""Generated kernels reading compressed pages in place (option gpu_compressed_cache), on the GPU: every
codec's values through a tiny generated pipeline kernel (group by row number and value, so each row
comes back exactly) against the values the CPU encoder was given, on random and adversarial data incl.
block widths 0..64, negative references, int64 extremes and partial last blocks; a fused kernel over a
page table mixing plain and encoded pages of every codec against NumPy; and overflow-checked
arithmetic raising the CPU's OutOfRangeError from both kinds of kernel."""

from __future__ import annotations

import os

import numpy as np
import pytest
from codec_cases import ENCODED, cases, width_blocks

from hetdb import types as T
from hetdb.backend.gpu import gpu_available
from hetdb.codec.encodings import CODEC_IDS, decode, encode_as
from hetdb.errors import OutOfRangeError
from hetdb.plan.expr import Call, ColumnRef

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

os.environ.setdefault("HETDB_CHECK_LAUNCHES", "1")

_TYPES = {np.dtype(np.int32): T.INT32, np.dtype(np.int64): T.INT64, np.dtype(np.float64): T.FLOAT64,
          np.dtype(np.bool_): T.BOOL}


def all_cases() -> dict[str, np.ndarray]:
    out = dict(cases())
    out["widths_0_64"] = width_blocks(1, 333)
    out["widths_0_64_full"] = width_blocks(2, 0)
    return out


def _key_image(values: np.ndarray) -> np.ndarray:
    """Values as the kernel's group keys come back: doubles with SQL's key normalisation."""
    if values.dtype == np.float64:
        v = np.where(values == 0.0, 0.0, values)
        return np.where(np.isnan(v), np.float64("nan"), v).view(np.int64)
    return values


def _encoded_column(values: np.ndarray, codec: str):
    import cupy

    from hetdb.backend.gpu.encoded import DevicePage, EncodedColumn

    buf = encode_as(values, codec)
    assert np.array_equal(decode(buf, codec, values.shape[0], values.dtype).view(np.uint8),
                          values.view(np.uint8))  # the CPU decoder agrees with what the kernel must give
    page = DevicePage(cupy.asarray(buf), codec, int(values.shape[0]), values.dtype)
    return EncodedColumn(_TYPES[values.dtype], device_page=page)


@pytest.mark.parametrize("codec", ENCODED)
def test_generated_kernel_decodes_every_codec(codec):
    import cupy

    from hetdb.backend.gpu.codegen.pipeline_runtime import CompiledPipeline
    from hetdb.backend.gpu.codegen.pipeline_spec import AggregateSink, Input, PipelineSpec
    from hetdb.column import Column

    compared = 0
    for name, values in sorted(all_cases().items()):
        try:
            col = _encoded_column(values, codec)
        except ValueError:
            continue  # the codec does not apply (const of varying values, dict of too many)
        n = int(values.shape[0])
        dtype = _TYPES[values.dtype]
        spec = PipelineSpec((Input("r", T.INT64, nullable=False), Input("v", dtype, nullable=False, codec=codec)),
                            (), AggregateSink((ColumnRef(T.INT64, "r", False), ColumnRef(dtype, "v", False)),
                                              (("count_star", None),)))
        kernel = CompiledPipeline(spec)
        rows = Column(T.INT64, data=cupy.arange(n, dtype=cupy.int64))
        groups = kernel.aggregate({"r": rows, "v": col}, n, [], [])
        assert groups.num_groups == n, name
        r, v = (cupy.asnumpy(k[0]) for k in groups.keys)
        order = np.argsort(r)
        assert np.array_equal(r[order], np.arange(n)), name
        got = v[order]
        want = _key_image(values)
        if values.dtype == np.float64:
            got = _key_image(got).view(np.int64)
            want = want.view(np.int64)
        assert np.array_equal(got.astype(want.dtype), want), f"{codec} on {name}"
        compared += 1
    assert compared >= (1 if codec == "const" else 10)


@pytest.mark.parametrize("min_blocks", [0, 8, 16])
@pytest.mark.parametrize("codecs", [("plain",), ("plain", "for", "dict", "const"), ("plain", *CODEC_IDS, "for")],
                         ids=["plain", "random-access", "any"])
def test_fused_page_table_mixes_plain_and_every_codec(codecs, min_blocks):
    """The page table's encodings pick the kernel variant reading them (codegen/runtime.py
    FusedPipeline.variant), compiled under the register cap ``min_blocks`` (option
    gpu_encoded_min_blocks; uncapped where the cap spills): every one adds up as NumPy does."""
    import dataclasses

    import cupy

    from hetdb.backend.gpu.codegen import AGGREGATE, FusedPipelineSpec, compile_fused_pipeline
    from hetdb.backend.gpu.codegen.spec import AggregateSpec
    from hetdb.column import Column

    rng = np.random.default_rng(7)
    spec = FusedPipelineSpec((("g", T.INT32), ("v", T.INT64)), (), (), (ColumnRef(T.INT32, "g", False),),
                             (AggregateSpec("sum", ColumnRef(T.INT64, "v", False)), AggregateSpec("count_star")),
                             AGGREGATE, encoded=True, min_blocks=min_blocks)
    fp = compile_fused_pipeline(spec)
    pages, gs, vs = [], [], []
    for i, codec in enumerate([*codecs, "plain"]):
        n = 1024 * (1 + i % 3) + 17 * i
        g = rng.integers(0, 7, n).astype(np.int32)
        if codec == "const":
            v = np.full(n, -(1 << 40) + i, np.int64)
        elif codec == "rle":
            v = np.repeat(rng.integers(-(1 << 30), 1 << 30, n // 5 + 1), 5)[:n]
        elif codec == "delta":
            v = np.cumsum(rng.integers(0, 9, n)) - (1 << 35)
        elif codec == "dict":
            v = rng.choice(np.array([-9, 4, 1 << 41], np.int64), n)
        else:
            v = rng.integers(-(1 << 20), 1 << 20, n)
        v = v.astype(np.int64)
        gcol = _encoded_column(g, "for") if i % 2 and len(codecs) > 1 else Column(T.INT32, data=cupy.asarray(g))
        vcol = Column(T.INT64, data=cupy.asarray(v)) if codec == "plain" else _encoded_column(v, codec)
        pages.append((n, {"g": gcol, "v": vcol}))
        gs.append(g)
        vs.append(v)
    state = fp.new_state([(0, 6)])
    table = fp.page_table(pages)
    want = {1: ("plain", "plain"), 4: ("random", "random")}.get(len(codecs), ("random", "any"))
    assert table.codecs == want
    variant = fp.variant(table.codecs)
    assert variant is not fp and variant.spec == dataclasses.replace(spec, input_codecs=want)
    assert variant.spec.decodes_tiles == (want[1] == "any")
    fp.consume_pages(state, table, [])
    # (capped when asked, unless it holds the tile decoders; compiled uncapped if the cap spilled)
    assert (variant.spill_bytes is not None) == (bool(min_blocks) and not variant.spec.decodes_tiles)
    result = fp.finish(state)
    g, v = np.concatenate(gs), np.concatenate(vs)
    keys = cupy.asnumpy(result.keys[0])
    assert sorted(keys.tolist()) == sorted(set(g.tolist()))
    for k, s, c in zip(keys, cupy.asnumpy(result.values[0]), cupy.asnumpy(result.values[1])):
        assert int(s) == int(v[g == k].sum()) and int(c) == int((g == k).sum()), k


def test_generated_kernels_raise_on_overflow():
    import cupy

    from hetdb.backend.gpu.codegen import AGGREGATE, FusedPipelineSpec, compile_fused_pipeline
    from hetdb.backend.gpu.codegen.pipeline_runtime import CompiledPipeline
    from hetdb.backend.gpu.codegen.pipeline_spec import AggregateSink, Input, PipelineSpec
    from hetdb.backend.gpu.codegen.spec import AggregateSpec
    from hetdb.column import Column

    x = ColumnRef(T.INT64, "x", False)
    doubled = Call(T.INT64, "add", (x, x))
    data = np.array([1, 2, 1 << 62, 5], np.int64)
    col = Column(T.INT64, data=cupy.asarray(data))
    pipe = CompiledPipeline(PipelineSpec((Input("x", T.INT64, nullable=False),), (),
                                         AggregateSink((), (("sum", doubled),))))
    with pytest.raises(OutOfRangeError, match=r"Overflow in addition of INT64 \(4611686018427387904 \+ "
                                               r"4611686018427387904\)!"):
        pipe.aggregate({"x": col}, 4, [], [])
    small = Column(T.INT64, data=cupy.asarray(data[:2]))
    assert int(cupy.asnumpy(pipe.aggregate({"x": small}, 2, [], []).accumulators[0])[0]) == 6
    fp = compile_fused_pipeline(FusedPipelineSpec((("x", T.INT64),), (), (), (),
                                                  (AggregateSpec("sum", doubled),), AGGREGATE))
    with pytest.raises(OutOfRangeError, match="Overflow in addition of INT64"):
        fp.aggregate({"x": col}, [])
