"""Fused pipeline code generation without a GPU: fusability decisions, deterministic kernel names,
and (where nvcc is installed) that every generated kernel compiles for sm_90."""

from __future__ import annotations

import shutil

import pytest
from gpu_codegen_ssb import SPECS, call, col, i64, lit

from hetdb import types as T
from hetdb.backend.gpu.codegen import (
    SELECTION,
    AggregateSpec,
    DenseProbe,
    FusedPipelineSpec,
    compile_fused_pipeline,
    generate,
)
from hetdb.backend.gpu.nvcc_check import nvcc_check
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import Case, Literal


def _mixed_specs() -> dict[str, FusedPipelineSpec]:
    f64 = ("x", T.FLOAT64)
    return {
        "select": FusedPipelineSpec(
            inputs=(("a", T.INT32), ("b", T.INT64)),
            filters=(call("in_list", T.BOOL, col("a"), lit(3), lit(5), lit(-7)),),
            probes=(DenseProbe(col("b", T.INT64), (("pay", T.INT64),)),),
            output=SELECTION),
        "minmax": FusedPipelineSpec(
            inputs=(("a", T.INT32), f64, ("d", T.decimal(12, 2))),
            filters=(call("or", T.BOOL, call("gt", T.BOOL, col("x", T.FLOAT64), Literal(T.FLOAT64, 0.5)),
                          call("not", T.BOOL, call("eq", T.BOOL, col("a"), lit(0)))),),
            group_keys=(col("a"),),
            aggregates=(AggregateSpec("min", col("x", T.FLOAT64)), AggregateSpec("max", col("a")),
                        AggregateSpec("sum", col("d", T.decimal(12, 2))), AggregateSpec("count_star"),
                        AggregateSpec("sum", Case(T.FLOAT64, ((call("lt", T.BOOL, col("a"), lit(0)),
                                                               col("x", T.FLOAT64)),),
                                                  Literal(T.FLOAT64, float("inf")))))),
    }


def all_specs() -> dict[str, FusedPipelineSpec]:
    return {**SPECS, **_mixed_specs()}


def test_names_are_content_hashes():
    a = generate(SPECS["q2.1"])
    b = generate(SPECS["q2.1"])
    c = generate(SPECS["q3.1"])
    assert a.name == b.name and a.body == b.body
    assert a.name != c.name
    assert a.name.startswith("fused_") and a.name in a.body


def test_columns_are_loaded_once_and_lazily():
    src = generate(SPECS["q1.1"]).body
    # four scanned columns, each loaded by exactly one selective tile load
    assert src.count("fused::BlockLoadSel") == 4
    # lo_extendedprice (in3) is only needed by the aggregate: loaded after every filter and the probe
    assert src.index("in3 + off") > src.index("// probe 0")
    assert "fused::SharedInit" in src and "fused::SharedFlush" in src


def test_post_probe_filter_runs_after_its_probe():
    spec = FusedPipelineSpec(
        inputs=(("k", T.INT32), ("v", T.INT32)),
        filters=(call("eq", T.BOOL, col("y"), lit(1993)), call("gt", T.BOOL, col("v"), lit(0))),
        probes=(DenseProbe(col("k"), (("y", T.INT32),)),),
        aggregates=(AggregateSpec("count_star"),))
    src = generate(spec).body
    assert src.index("// filter: gt(v") < src.index("// probe 0") < src.index("// filter: eq(y")


@pytest.mark.parametrize("spec, reason", [
    (FusedPipelineSpec(inputs=(("s", T.STRING),), filters=(call("eq", T.BOOL, col("s", T.STRING),
                                                                  Literal(T.STRING, "x")),),
                       aggregates=(AggregateSpec("count_star"),)), "string literal"),
    (FusedPipelineSpec(inputs=(("a", T.INT32),), filters=(call("like", T.BOOL, col("a"), lit(1)),),
                       aggregates=(AggregateSpec("count_star"),)), "like"),
    (FusedPipelineSpec(inputs=(("a", T.INT32),), aggregates=(AggregateSpec("sum", call(
        "div", T.FLOAT64, col("a"), col("a"))),)), "division"),
    (FusedPipelineSpec(inputs=(("a", T.INT32),), aggregates=(AggregateSpec("avg", col("a")),)), "avg"),
    (FusedPipelineSpec(inputs=(("a", T.INT32),), group_keys=(col("x", T.FLOAT64),),
                       aggregates=(AggregateSpec("count_star"),)), "x"),
    (FusedPipelineSpec(inputs=(("a", T.INT32),)), "at least one aggregate"),
    (FusedPipelineSpec(inputs=(("a", T.INT32),), filters=(call("eq", T.BOOL, col("a"), Literal(T.INT32, None)),),
                       aggregates=(AggregateSpec("count_star"),)), "NULL"),
])
def test_unfusable_specs_say_why(spec, reason):
    why = spec.unfusable_reason()
    assert why is not None and reason in why
    with pytest.raises(UnsupportedError, match="not fusable"):
        compile_fused_pipeline(spec)


def test_ssb_specs_are_fusable():
    for name, spec in all_specs().items():
        assert spec.unfusable_reason() is None, name


def test_literals_translate_exactly():
    spec = FusedPipelineSpec(
        inputs=(("b", T.INT64),),
        filters=(call("ne", T.BOOL, col("b", T.INT64), Literal(T.INT64, -(1 << 63))),
                 call("lt", T.BOOL, i64(col("b", T.INT64)), Literal(T.INT64, (1 << 63) - 1))),
        aggregates=(AggregateSpec("count_star"),))
    kernel = generate(spec)
    # the values are kernel arguments (their exact C++ texts serve host-compiled harnesses)
    assert [(lit.ctype, lit.value, lit.text) for lit in kernel.literals] == [
        ("long long", -(1 << 63), "(-9223372036854775807LL - 1LL)"),
        ("long long", (1 << 63) - 1, "(9223372036854775807LL)")]
    assert "const long long lit_0" in kernel.body and "9223372036854775807" not in kernel.body
    with pytest.raises(UnsupportedError):
        generate(FusedPipelineSpec(inputs=(("a", T.INT32),),
                                   filters=(call("eq", T.BOOL, col("a"), lit(1 << 40)),),
                                   aggregates=(AggregateSpec("count_star"),)))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_generated_kernels_compile_with_nvcc(tmp_path):
    compiled = 0
    for name, spec in all_specs().items():
        pipeline = compile_fused_pipeline(spec)
        result = nvcc_check(pipeline.source, tmp_path, name)
        assert result.returncode == 0, f"{name}:\n{result.stderr}\n{pipeline.kernel.body}"
        compiled += 1
    assert compiled == len(all_specs())


def test_probe_keyed_on_a_payload_loads_it_first():
    # a dictionary lookup on a build-side string: the lookup probe's key is the first probe's payload
    spec = FusedPipelineSpec(
        inputs=(("k", T.INT32), ("v", T.INT32)),
        probes=(DenseProbe(col("k"), (("city", T.STRING), ("g", T.INT32))),
                DenseProbe(col("city", T.STRING))),
        group_keys=(col("g"),),
        aggregates=(AggregateSpec("sum", i64(col("v"))),))
    src = generate(spec).body
    assert src.index("q0_0[i] = p0_pay0[r0[i]]") < src.index("// probe 1: city")
    assert "(long long)(q0_0[i]) - p1_lo" in src


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_warp_folded_kernels_compile_with_nvcc(tmp_path):
    """The experiment fused_fold (FusedPipelineSpec.fold): the SSB specs with their states combined
    per warp and group before the atomics compile too."""
    import dataclasses

    specs = {name: dataclasses.replace(spec, fold=True) for name, spec in all_specs().items() if spec.group_keys}
    bodies = [compile_fused_pipeline(spec) for spec in specs.values()]
    assert specs and all("fused::group_merge" in p.kernel.body for p in bodies)
    result = nvcc_check(bodies[0].source, tmp_path, "fold")
    assert result.returncode == 0, result.stderr


def test_columns_most_rows_need_are_loaded_first():
    """spec.eager: eager_columns picks the inputs of which 75% of the memory sectors or more would be read
    anyway when the generator loads them (the rows selected then: filters keep half, a probe its hit
    share); the kernel then loads them for the whole tile before its first filter, and is another
    kernel than the staged one."""
    import dataclasses

    from hetdb.backend.gpu.codegen.generate import eager_columns

    q11, q41 = SPECS["q1.1"], SPECS["q4.1"]
    # discount (every row), quantity (after two filters: 1/4); orderdate after three (1/8): staged
    assert eager_columns(q11, [1 / 7]) == ("lo_quantity", "lo_discount")
    # suppkey (every row), custkey (1/5 of rows after the supplier probe); the rest after 1/25
    assert eager_columns(q41, [0.2, 0.2, 0.4, 1.0]) == ("lo_custkey", "lo_suppkey")
    assert eager_columns(q41, [1.0, 1.0, 1.0, 1.0]) == tuple(c for c, _ in q41.inputs)
    eager = dataclasses.replace(q41, eager=("lo_custkey", "lo_suppkey"))
    body = generate(eager).body
    first_probe = body.index("// probe 0")
    for k in (0, 1):  # lo_custkey, lo_suppkey: both loads before the first probe
        assert body.index(f"BlockLoadSel<FP_BLOCK, FP_ITEMS>(in{k} + off") < first_probe
    assert body.index("BlockLoadSel<FP_BLOCK, FP_ITEMS>(in2 + off") > first_probe  # lo_partkey: staged
    assert generate(eager).name != generate(q41).name
    assert dataclasses.replace(q41, eager=("nope",)).unfusable_reason() == "a column loaded first is not an input"
    # after two filters (1/4 of the rows): 4-byte values fill 90% of their sectors, 8-byte ones 68%
    two = FusedPipelineSpec(inputs=(("a", T.INT32), ("n", T.INT32), ("w", T.INT64)),
                            filters=(call("ge", T.BOOL, col("a"), lit(1)), call("le", T.BOOL, col("a"), lit(9))),
                            aggregates=(AggregateSpec("sum", col("n")), AggregateSpec("sum", col("w", T.INT64))))
    assert eager_columns(two, []) == ("a", "n")


def test_literal_parameters_are_capped():
    """A long IN list passes its first MAX_LITERAL_PARAMS items as kernel parameters and keeps the rest
    in the source (a launch's parameters are limited in size)."""
    from hetdb.backend.gpu.codegen.expr_cuda import MAX_LITERAL_PARAMS

    items = tuple(Literal(T.INT64, v) for v in range(MAX_LITERAL_PARAMS + 3))
    spec = FusedPipelineSpec(inputs=(("b", T.INT64),),
                             filters=(call("in_list", T.BOOL, col("b", T.INT64), *items),),
                             aggregates=(AggregateSpec("count_star"),))
    kernel = generate(spec)
    assert len(kernel.literals) == MAX_LITERAL_PARAMS
    assert f"lit_{MAX_LITERAL_PARAMS - 1}" in kernel.body and f"({MAX_LITERAL_PARAMS + 2}LL)" in kernel.body


def test_kernels_for_compressed_pages_leave_out_decoders_their_pages_do_not_need():
    """The variants of an encoded spec per page encodings (input_codecs) and its register cap
    (min_blocks): distinct kernels, the tile decoders and their shared buffer only where an input may
    hold delta/rle pages, the launch bound in blocks of the spec's size."""
    import dataclasses

    base = dataclasses.replace(SPECS["q1.1"], encoded=True)
    n = len(base.inputs)
    bodies = {}
    for codecs in [(), ("any",) * n, ("random",) * n, ("plain",) * n, ("plain", "random", "any", "plain")]:
        spec = dataclasses.replace(base, input_codecs=codecs)
        assert spec.unfusable_reason() is None
        bodies[codecs] = generate(spec).body
    assert bodies[()].count("BlockLoadSelPage<FP_BLOCK, FP_ITEMS>(") == n and "fp_decode[" in bodies[()]
    random = bodies[("random",) * n]
    assert random.count("HETDB_PAGES_RANDOM>(") == n and "fp_decode" not in random
    plain = bodies[("plain",) * n]
    assert "BlockLoadSelPage" not in plain and "fp_decode" not in plain
    mixed = bodies[("plain", "random", "any", "plain")]
    assert mixed.count("HETDB_PAGES_RANDOM>(") == 1 and mixed.count("fp_decode);") == 1
    assert len({generate(dataclasses.replace(base, input_codecs=c)).name for c in bodies}) == len(bodies)
    assert "__launch_bounds__(FP_BLOCK)" in bodies[()]
    random_access = dataclasses.replace(base, input_codecs=("random",) * n)
    assert "__launch_bounds__(FP_BLOCK, 8)" in generate(dataclasses.replace(random_access, min_blocks=8)).body
    assert "__launch_bounds__(FP_BLOCK, 4)" in generate(dataclasses.replace(random_access, min_blocks=8,
                                                                            block=256)).body
    # (a kernel with the tile decoders is not capped: it would spill)
    assert "__launch_bounds__(FP_BLOCK)" in generate(dataclasses.replace(base, min_blocks=8)).body
    assert "blocks per SM" in dataclasses.replace(base, min_blocks=17).unfusable_reason()
    assert "do not match" in dataclasses.replace(base, input_codecs=("plain",)).unfusable_reason()


def test_page_classes():
    from hetdb.backend.gpu.codegen.spec import page_class

    assert page_class(set()) == page_class({"plain"}) == "plain"
    assert page_class({"plain", "for", "dict", "const"}) == "random"
    assert page_class({"for", "rle"}) == page_class({"delta"}) == "any"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_page_variants_and_register_caps_compile_with_nvcc(tmp_path):
    import dataclasses

    spec = dataclasses.replace(SPECS["q4.1"], encoded=True, min_blocks=8)
    n = len(spec.inputs)
    for i, codecs in enumerate([("random",) * n, ("plain",) * (n - 1) + ("any",)]):
        pipeline = compile_fused_pipeline(dataclasses.replace(spec, input_codecs=codecs))
        result = nvcc_check(pipeline.source, tmp_path, f"variant{i}")
        assert result.returncode == 0, result.stderr


def test_register_cap_option(tmp_path):
    import hetdb
    from hetdb.errors import HetdbError

    with hetdb.connect(str(tmp_path / "db"), device="cpu") as con:
        assert con.options.gpu_encoded_min_blocks == 8
        con.sql("SET gpu_encoded_min_blocks = 12")
        assert con.options.gpu_encoded_min_blocks == 12
        for bad in ("17", "'x'"):
            with pytest.raises(HetdbError, match="gpu_encoded_min_blocks"):
                con.sql(f"SET gpu_encoded_min_blocks = {bad}")
