"""Kernels that read compressed pages in place (option gpu_compressed_cache) and overflow-checked
arithmetic, without a GPU: the generated CUDA per input signature (plain vs each codec), its cache
identity, refusals, and (where nvcc is installed) that the generated kernels compile for sm_90."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from gpu_codegen_ssb import SPECS

from hetdb import types as T
from hetdb.backend.gpu.codegen import AGGREGATE, FusedPipelineSpec, generate
from hetdb.backend.gpu.codegen.checked import raise_if_overflowed
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_spec import (
    AggregateSink,
    FilterStage,
    Input,
    MaterializeSink,
    PipelineSpec,
)
from hetdb.backend.gpu.codegen.spec import AggregateSpec, DenseProbe
from hetdb.backend.gpu.nvcc_check import nvcc_check
from hetdb.errors import OutOfRangeError, UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Literal

CODECS = ("const", "for", "dict", "delta", "rle")


def col(c: str, t=T.INT32) -> ColumnRef:
    return ColumnRef(t, c, True)


def call(op: str, t, *a) -> Call:
    return Call(t, op, tuple(a))


def pipeline_spec(codec_a: str, codec_x: str = "plain", codec_s: str = "plain") -> PipelineSpec:
    inputs = (Input("a", T.INT32, codec=codec_a), Input("b", T.INT64, nullable=False, codec=codec_a),
              Input("x", T.FLOAT64, codec=codec_x), Input("s", T.STRING, True, True, codec=codec_s),
              Input("m", T.decimal(12, 2), nullable=False, codec=codec_x))
    return PipelineSpec(inputs, (FilterStage(call("gt", T.BOOL, col("a"), Literal(T.INT32, 3))),),
                        AggregateSink((col("s", T.STRING),),
                                      (("sum", call("add", T.INT64, col("b", T.INT64), col("b", T.INT64))),
                                       ("max", col("x", T.FLOAT64)),
                                       ("sum", call("mul", T.decimal(18, 4), col("m", T.decimal(12, 2)),
                                                    col("m", T.decimal(12, 2)))))))


def fused_spec(encoded: bool) -> FusedPipelineSpec:
    inputs = (("k", T.INT32), ("q", T.INT32), ("p", T.decimal(15, 2)))
    return FusedPipelineSpec(inputs, (call("lt", T.BOOL, col("q"), Literal(T.INT32, 25)),),
                             (DenseProbe(col("k"), (("y", T.INT32),)),), (col("y"),),
                             (AggregateSpec("sum", call("mul", T.decimal(18, 2), col("p", T.decimal(15, 2)),
                                                        col("q"))),), AGGREGATE, encoded=encoded)


def test_each_codec_generates_its_own_load():
    plain = generate_pipeline(pipeline_spec("plain"))
    assert "pipe::PlainColumn<int> in0{col0}" in plain.body and "pl_smem" not in plain.body
    names = {plain.name}
    for codec in CODECS:
        k = generate_pipeline(pipeline_spec(codec))
        names.add(k.name)
        assert "const unsigned char* __restrict__ col0" in k.body
        if codec in ("delta", "rle"):
            assert f"load_tile_{codec}<PL_BLOCK, PL_ITEMS>(pg0, t * PL_TILE, tl0, pl_num, pl_smem);" in k.body
            assert "tl0[it]" in k.body and "__shared__ i64 pl_smem[HETDB_DECODE_SMEM_I64];" in k.body
        else:
            column = {"const": "ConstColumn", "for": "ForColumn", "dict": "DictColumn"}[codec]
            args = "" if codec == "const" else ", t * PL_TILE"  # for/dict: per tile (its block's entry)
            assert f"pipe::{column}<int> in0{{col0{args}}}" in k.body
            assert f"pipe::{column}<long long> in1{{col1{args}}}" in k.body
        assert f"a:INTEGER? {codec}" in k.body  # the signature is in the kernel's describe text
    assert len(names) == len(CODECS) + 1  # one kernel (one cache entry) per signature


def test_unknown_codec_is_refused():
    with pytest.raises(UnsupportedError, match="codec 'zstd'"):
        generate_pipeline(pipeline_spec("zstd"))


def test_fused_encoded_spec_reads_codec_flags_from_the_page_table():
    plain, enc = generate(fused_spec(False)), generate(fused_spec(True))
    assert plain.name != enc.name
    assert "BlockLoadSelPage" not in plain.body and "fp_decode" not in plain.body
    assert "fused::BlockLoadSelPage<FP_BLOCK, FP_ITEMS>(in1, enc1, off, v1, flags, num, fp_decode);" in enc.body
    assert "enc2 = page_table[3 * num_pages + 1 + num_pages * 3 + p * 3 + 2];" in enc.body


def test_integer_arithmetic_is_checked():
    k = generate_pipeline(pipeline_spec("plain"))
    assert "checked_arith((long long)((e" in k.body
    assert "(-9223372036854775807LL - 1LL), (9223372036854775807LL), 8, arith_err" in k.body
    # a decimal product is checked against 18 digits (the CPU's unscaled product)
    assert "(-999999999999999999LL), (999999999999999999LL), 18, arith_err" in k.body
    fused = generate(fused_spec(False))
    assert "checked_arith(" in fused.body and "arith_err, true)" in fused.body


def test_overflow_record_becomes_the_cpu_error():
    raise_if_overflowed(np.zeros(4, np.uint64))  # nothing recorded: no error
    words = np.array([1, 8, 9223372036854775807, 1], np.uint64)  # add of INT64
    with pytest.raises(OutOfRangeError, match=r"Overflow in addition of INT64 \(9223372036854775807 \+ 1\)!"):
        raise_if_overflowed(words)
    neg = np.array([1, 2, np.uint64(2**64 - 5), 3], np.uint64)  # mul of INT32
    with pytest.raises(OutOfRangeError, match=r"Overflow in multiplication of INT32 \(-5 \* 3\)!"):
        raise_if_overflowed(neg)
    dec = np.array([1, 18, 10**17, 100], np.uint64)
    with pytest.raises(OutOfRangeError, match=r"DECIMAL\(18\) .* bigger decimal"):
        raise_if_overflowed(dec)
    with pytest.raises(OutOfRangeError, match=r"Overflow in negation of numeric value!"):
        raise_if_overflowed(np.array([1, 3 + 8, 2**63, 0], np.uint64))
    with pytest.raises(OutOfRangeError, match=r"Overflow on abs\(-2147483648\)"):
        raise_if_overflowed(np.array([1, 4, 2**64 - 2**31, 0], np.uint64))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_generated_compressed_kernels_compile_with_nvcc(tmp_path):
    specs = [pipeline_spec(c, c, c) for c in CODECS] + [pipeline_spec("for", "delta", "rle")]
    materialize = PipelineSpec(pipeline_spec("rle").inputs, (FilterStage(call("gt", T.BOOL, col("a"),
                                                                                  Literal(T.INT32, 0))),),
                               MaterializeSink())
    bodies = [generate_pipeline(s).body for s in [*specs, materialize]]
    bodies += [generate(fused_spec(e)).body for e in (False, True)]
    _nvcc(tmp_path, bodies)
    assert len(bodies) == len(CODECS) + 4


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_ssb_star_kernels_over_compressed_pages_compile_with_nvcc(tmp_path):
    bodies = [generate(dataclasses.replace(spec, encoded=True)).body for spec in SPECS.values()]
    _nvcc(tmp_path, bodies)
    assert len(bodies) == len(SPECS) == 4


def _nvcc(tmp_path, bodies: list[str]) -> None:
    from hetdb.backend.gpu.compile import load_source

    run = nvcc_check(load_source("pipeline.cuh") + "\n" + "\n".join(bodies), tmp_path, "compressed")
    assert run.returncode == 0, run.stderr[-4000:]
