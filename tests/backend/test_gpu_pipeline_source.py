"""The general pipeline compiler without a GPU: generated CUDA text (three-valued logic, probes of
every kind, dictionary lookups, hash aggregation), refusals that say why, the compile cache key,
and (where nvcc is installed) that a representative set of generated kernels compiles for sm_90 in
one nvcc invocation."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_spec import (
    AggregateSink,
    FilterStage,
    Input,
    MaterializeSink,
    PipelineSpec,
    ProbeStage,
    ProjectStage,
)
from hetdb.backend.gpu.nvcc_check import nvcc_check
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import Call, Case, ColumnRef, Literal


def col(c: str, t=T.INT32) -> ColumnRef:
    return ColumnRef(t, c, True)


def lit(v, t=T.INT32) -> Literal:
    return Literal(t, v)


def call(op: str, t, *a) -> Call:
    return Call(t, op, tuple(a))


BASE = (Input("a", T.INT32), Input("b", T.INT64, nullable=False), Input("s", T.STRING, True, True),
        Input("x", T.FLOAT64), Input("m", T.decimal(12, 2)))


def specs() -> dict[str, PipelineSpec]:
    agg = AggregateSink((col("a"),), (("count_star", None), ("sum", col("m", T.decimal(12, 2)))))
    return {
        "null_filter": PipelineSpec(BASE, (FilterStage(call("or", T.BOOL, call("gt", T.BOOL, col("a"), lit(3)),
                                                            call("is_null", T.BOOL, col("x", T.FLOAT64)))),), agg),
        "like_lookup": PipelineSpec(BASE, (FilterStage(call("like", T.BOOL, col("s", T.STRING),
                                                            Literal(T.STRING, "%ab%"))),),
                                    AggregateSink((col("s", T.STRING),), (("min", col("x", T.FLOAT64)),))),
        "inner_multi_key": PipelineSpec(BASE, (ProbeStage("inner", (col("b", T.INT64), col("a")), (T.INT64, T.INT32),
                                                          (Input("y", T.INT32), Input("z", T.STRING, True, True))),),
                                        AggregateSink((col("z", T.STRING), col("y")), (("avg", col("x", T.FLOAT64)),))),
        "semi_anti_mark": PipelineSpec(BASE, (
            ProbeStage("semi", (col("a"),), (T.INT32,)),
            ProbeStage("anti", (col("b", T.INT64),), (T.INT64,), (Input("r", T.INT32),),
                       residual=call("ne", T.BOOL, col("r"), col("a"))),
            ProbeStage("mark", (col("a"),), (T.INT32,), mark="mk"),
            FilterStage(call("not", T.BOOL, col("mk", T.BOOL)))), agg),
        "left_single_case": PipelineSpec(BASE, (
            ProbeStage("left", (col("a"),), (T.INT32,), (Input("w", T.INT64),)),
            ProbeStage("single", (col("b", T.INT64),), (T.INT64,), (Input("q", T.FLOAT64),)),
            ProjectStage((("p", Case(T.INT64, ((call("gt", T.BOOL, col("q", T.FLOAT64), lit(0.5, T.FLOAT64)),
                                                 col("w", T.INT64)),), None)),
                          ("c", call("coalesce", T.INT64, col("w", T.INT64), col("b", T.INT64)))))),
            AggregateSink((col("c", T.INT64), call("add", T.INT64, col("a"), lit(1, T.INT64))),
                          (("sum", col("p", T.INT64)), ("max", col("q", T.FLOAT64)), ("count", col("w", T.INT64))))),
        "dates": PipelineSpec(BASE + (Input("dt", T.DATE),), (),
                              AggregateSink((call("extract_year", T.INT64, col("dt", T.DATE)),),
                                            (("max", call("extract_day", T.INT64, col("dt", T.DATE))),))),
        "materialize": PipelineSpec(BASE, (
            ProbeStage("inner", (col("b", T.INT64),), (T.INT64,), (Input("y", T.INT32),)),
            ProbeStage("mark", (col("y"),), (T.INT32,), mark="mk"),
            FilterStage(call("or", T.BOOL, col("mk", T.BOOL), call("lt", T.BOOL, col("a"), lit(0))))),
            MaterializeSink()),
        "global": PipelineSpec(BASE, (FilterStage(call("in_list", T.BOOL, col("a"), lit(1), lit(None))),),
                               AggregateSink((), (("count_star", None),))),
    }


def test_kernel_names_are_content_hashes():
    a, b = generate_pipeline(specs()["null_filter"]), generate_pipeline(specs()["null_filter"])
    c = generate_pipeline(specs()["like_lookup"])
    assert a.name == b.name and a.body == b.body and a.name != c.name
    assert a.name.startswith("pipe_") and a.name in a.body


def test_kleene_or_keeps_rows_where_one_side_is_null():
    body = generate_pipeline(specs()["null_filter"]).body
    # OR is TRUE when either side is valid and TRUE, whatever the other side's validity
    assert "|| ((true) && e3)" in body and "pipe::is_valid(val0, row)" in body
    # non-nullable inputs carry no validity pointer
    assert "val1" not in body


def test_string_predicates_become_dictionary_lookups():
    k = generate_pipeline(specs()["like_lookup"])
    assert len(k.lookups) == 1 and k.lookups[0].cid == "s"
    assert "lut0_val[" in k.body and k.group_keys[0].dict_cid == "s"


def test_probe_kinds_and_expansion():
    body = generate_pipeline(specs()["semi_anti_mark"]).body
    assert "if (ps0 < 0) continue;" in body          # semi without residual
    assert "if (hit1) continue;" in body             # anti with a residual: any passing match
    assert "b2_has_null || pn2" in body              # mark: NULL when a NULL took part
    inner = generate_pipeline(specs()["inner_multi_key"]).body
    assert "probe_slot<2>" in inner and "for (i64 m0 = 0; m0 < pc0; ++m0)" in inner
    left = generate_pipeline(specs()["left_single_case"]).body
    assert "(ps0 >= 0 ? b0_count[ps0] : 1)" in left and "atomicAdd(errors, 1ULL)" in left


def test_date_parts_use_civil_arithmetic():
    body = generate_pipeline(specs()["dates"]).body
    assert "pipe::civil_part((long long)" in body and ", 0)" in body and ", 2)" in body


def test_materialize_writes_rows_build_rows_and_marks():
    k = generate_pipeline(specs()["materialize"])
    assert k.row_outputs == (0,) and k.mark_outputs == (1,) and not k.accumulators
    body = k.body
    assert "pipe::claim(out_count)" in body and "out_b0[o] = br0;" in body and "out_m1[o] =" in body
    assert body.index("// filter") < body.index("pipe::claim")


def test_accumulators_carry_non_null_counts():
    k = generate_pipeline(specs()["left_single_case"])
    parts = [(a.agg, a.part) for a in k.accumulators]
    assert parts == [(0, "sum"), (0, "fsum"), (0, "cnt"), (1, "val"), (1, "cnt"), (2, "cnt")]


@pytest.mark.parametrize("spec, reason", [
    (PipelineSpec((Input("s", T.STRING),), (), AggregateSink((col("s", T.STRING),), (("count_star", None),))),
     "not a dictionary"),
    (PipelineSpec(BASE, (ProbeStage("left", (col("a"),), (T.INT32,), residual=lit(True, T.BOOL)),),
                  AggregateSink((), (("count_star", None),))), "residual"),
    (PipelineSpec(BASE, (), AggregateSink((), (("sum", call("div", T.FLOAT64, col("x", T.FLOAT64),
                                                             col("x", T.FLOAT64))),))), "division"),
])
def test_refusals_say_why(spec, reason):
    with pytest.raises(UnsupportedError, match=reason):
        generate_pipeline(spec)


def test_cache_key_covers_source_options_arch_and_versions():
    from hetdb.backend.gpu.compile import cache_key

    src = generate_pipeline(specs()["global"]).full_source()
    base = cache_key(src, ("-std=c++17",), (), "90", (12, 8))
    assert base == cache_key(src, ("-std=c++17",), (), "90", (12, 8))
    others = [cache_key(src + " ", ("-std=c++17",), (), "90", (12, 8)),
              cache_key(src, ("-std=c++20",), (), "90", (12, 8)),
              cache_key(src, ("-std=c++17",), (), "80", (12, 8)),
              cache_key(src, ("-std=c++17",), (), "90", (13, 0))]
    assert len({base, *others}) == 5


def test_paged_kernels_read_a_page_table():
    """generate_pipeline(paged=True): inputs through the page table, page-local rows, global rows out."""
    k = generate_pipeline(specs()["materialize"], paged=True)
    body = k.body
    assert "const long long* __restrict__ pl_pages" in body and "col0" not in body
    assert "fused::NextPage(pl_pages, pl_num_pages, t, pl_page)" in body
    assert "const long long row = pl_first + threadIdx.x" in body and "out_rows[o] = pl_base + row;" in body
    assert k.name != generate_pipeline(specs()["materialize"]).name
    # a per-batch codec is not read by a paged kernel, nor a paged one by a per-batch kernel
    count = AggregateSink((), (("count_star", None),))
    with pytest.raises(UnsupportedError, match="read only by per-batch kernels"):
        generate_pipeline(PipelineSpec((Input("x", T.INT64, codec="for"),), (), count), paged=True)
    with pytest.raises(UnsupportedError, match="read only by paged kernels"):
        generate_pipeline(PipelineSpec((Input("x", T.INT64, codec="paged"),), (), count))


def test_paged_kernels_read_compressed_and_plain_string_pages(tmp_path):
    """Paged inputs of codec "paged" read each page as a value array or an encoded data section (the
    page table's third entry per page and input, pipe::PageColumn); "paged_tile" ones also decode a
    delta/rle page's tile before the row loop; a plain string reads its offsets and bytes from the
    table."""
    like = Call(T.BOOL, "like", (ColumnRef(T.STRING, "s", True), Literal(T.STRING, "%ab%")))
    spec = PipelineSpec((Input("s", T.STRING), Input("a", T.INT64, codec="paged"),
                         Input("b", T.INT32, False, codec="paged_tile")),
                        (FilterStage(like),),
                        AggregateSink((ColumnRef(T.INT32, "b", False),), (("sum", ColumnRef(T.INT64, "a", True)),)))
    body = generate_pipeline(spec, paged=True).body
    assert "const long long* __restrict__ off0 = (const long long*)pl_ptr[0];" in body
    assert "const unsigned char* __restrict__ chr0 = (const unsigned char*)pl_ptr[2];" in body
    assert "const pipe::PageColumn<long long> in1{(const unsigned char*)pl_ptr[3], pl_ptr[5], pl_first};" in body
    assert "in1.load(row)" in body and "tl1" not in body
    assert "const bool tt2 = in2.tiled();" in body and "(tt2 ? tl2[it] : in2.load(row))" in body
    assert "if (tt2) in2.load_tile<PL_BLOCK, PL_ITEMS>(pl_first, tl2, pl_num, pl_smem);" in body
    assert "__shared__ i64 pl_smem[HETDB_DECODE_SMEM_I64];" in body
    plain = generate_pipeline(dataclasses.replace(spec, inputs=(spec.inputs[0], Input("a", T.INT64),
                                                                Input("b", T.INT32, False))), paged=True)
    assert "PageColumn" not in plain.body and "pl_smem" not in plain.body and plain.name != generate_pipeline(
        spec, paged=True).name
    if shutil.which("nvcc") is not None:  # the kernel and pipe_paged_take (reading encoded pages) compile
        _nvcc_bodies(tmp_path, [body, plain.body])


def _nvcc(tmp_path, names: list[str], paged: bool = False) -> None:
    kernels = [generate_pipeline(s) for n, s in specs().items() if n in names]
    kernels += [generate_pipeline(s, paged=True) for n, s in specs().items() if n in names and paged]
    _nvcc_bodies(tmp_path, [k.body for k in kernels])


def _nvcc_bodies(tmp_path, bodies: list[str]) -> None:
    from hetdb.backend.gpu.compile import load_source

    run = nvcc_check(load_source("pipeline.cuh") + "\n" + "\n".join(bodies), tmp_path, "pipelines", 300)
    assert run.returncode == 0, run.stderr[-4000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_representative_kernels_compile_with_nvcc(tmp_path):
    _nvcc(tmp_path, ["semi_anti_mark", "left_single_case", "dates", "materialize"], paged=True)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_every_generated_kernel_compiles_with_nvcc(tmp_path):
    _nvcc(tmp_path, list(specs()))


def test_pipeline_modes_count_how_each_pipeline_ran():
    from types import SimpleNamespace as NS

    from hetdb.exec.operators.base import OpStats
    from hetdb.exec.run_stats import pipeline_modes

    notes = ["compiled into one generated kernel (hash probes and hash aggregation; 3 batches)",
             "fused into one generated kernel (6 dense groups)", "on the host: 4 rows in",
             "operator at a time: right_semi join is not compiled", ""]
    physical = NS(pipelines=[NS(sink=NS(op_id=i)) for i in range(len(notes) + 1)])
    ops = {i: OpStats(fused=n) for i, n in enumerate(notes)}
    assert pipeline_modes(physical, ops) == {"compiled": 1, "dense_fused": 1, "host": 1,
                                             "operator_at_a_time": 2, "not_run": 1}


def test_refused_operator_carries_the_reason():
    from types import SimpleNamespace as NS

    from hetdb.exec.compiled import plan_compiled
    from hetdb.exec.operators.aggregate import HashAggregate
    from hetdb.exec.operators.base import OpStats
    from hetdb.exec.operators.basic import LimitOp
    from hetdb.plan.expr import AggCall

    stats: dict[int, OpStats] = {}
    ctx = NS(stat=lambda op_id: stats.setdefault(op_id, OpStats()), device=object())
    sink = HashAggregate(keys=(), aggs=(), op_id=3)
    plan, why = plan_compiled(ctx, NS(source=NS(), ops=[LimitOp(limit=5, op_id=2)], sink=sink))
    assert plan is None and why == "LimitOp is not compiled"
    assert stats[2].fused == "not compiled: LimitOp is not compiled"
    # a DISTINCT aggregate next to one that duplicates change is refused
    mixed = HashAggregate(keys=(), aggs=((None, AggCall(T.INT64, "count", col("a"), distinct=True)),
                                         (None, AggCall(T.INT64, "count_star", None))), op_id=4)
    plan, why = plan_compiled(ctx, NS(source=NS(), ops=[], sink=mixed))
    assert plan is None and "count_star without DISTINCT" in why and 4 not in stats


def test_string_join_keys_look_up_the_builds_ids(tmp_path):
    """A string join key of a dictionary column (probe input or an earlier probe's payload) is the
    build's id of its string, looked up per code (a Lookup with join_key the executor fills from the
    build's key encoder); a NULL key matches nothing; a plain-string key looks its string up in the
    build encoder's table of strings (string_hash.cuh string_key_id); a computed string key is refused."""
    t = col("t", T.STRING)
    spec = PipelineSpec(BASE, (ProbeStage("inner", (col("s", T.STRING), col("a")), (T.STRING, T.INT32),
                                          (Input("t", T.STRING, True, True),)),
                               ProbeStage("semi", (t,), (T.STRING,))),
                        AggregateSink((col("a"),), (("count_star", None),)))
    k = generate_pipeline(spec)
    assert [lk.join_key for lk in k.lookups] == [(0, 0), (1, 0)]
    body = k.body
    assert "pb0[0] = lut0_val[e" in body and "pb1[0] = lut1_val[e" in body
    assert "const long long* __restrict__ lut0_val" in body and "const long long* __restrict__ lut1_val" in body
    assert body.count("pn0 = pn0 || !(") == 2 and "pn1 = pn1 || !(" in body  # NULL keys match nothing
    paged = generate_pipeline(dataclasses.replace(spec, inputs=tuple(
        dataclasses.replace(i, codec="paged") if i.dtype.kind != "float64" else i for i in BASE)), paged=True)
    # a plain-string key: each row's string is looked up in the build encoder's table of strings
    plain_spec = PipelineSpec((Input("s", T.STRING),), (ProbeStage("inner", (col("s", T.STRING),), (T.STRING,)),),
                              AggregateSink((), (("count_star", None),)))
    plain = generate_pipeline(plain_spec)
    plain_paged = generate_pipeline(plain_spec, paged=True)
    for k in (plain, plain_paged):
        assert [(lk.join_key, lk.plain) for lk in k.lookups] == [((0, 0), True)]
        assert "pb0[0] = string_key_id(chr0 + off0[row], off0[row + 1] - off0[row], lut0_off" in k.body
        assert "long long lut0_mask" in k.body and "pn0 = pn0 || !pipe::is_valid(val0, row);" in k.body
    upper = Call(T.STRING, "upper", (col("s", T.STRING),))
    with pytest.raises(UnsupportedError, match="is not a dictionary-encoded column"):
        generate_pipeline(dataclasses.replace(plain_spec, stages=(ProbeStage("inner", (upper,), (T.STRING,)),)))
    if shutil.which("nvcc") is not None:
        _nvcc_bodies(tmp_path, [body, paged.body, plain.body, plain_paged.body])
