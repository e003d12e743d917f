"""Extensions of the GPU pipeline compiler without a GPU (issue 10): the generated CUDA text of each
newly accepted shape, the refusals that remain (with their reasons), the switches that turn each
extension off (exec/compiled_features.py), and (where nvcc is installed) that every kernel here
compiles for sm_90."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from hetdb import types as T
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline
from hetdb.backend.gpu.codegen.pipeline_spec import (
    AggregateSink,
    FilterStage,
    Input,
    MarkBuildSink,
    MaterializeSink,
    PipelineSpec,
    ProbeStage,
)
from hetdb.backend.gpu.nvcc_check import nvcc_check
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Literal


def col(c: str, t=T.INT32) -> ColumnRef:
    return ColumnRef(t, c, True)


def call(op: str, t, *a) -> Call:
    return Call(t, op, tuple(a))


BASE = (Input("a", T.INT32), Input("b", T.INT64, nullable=False), Input("s", T.STRING, True, True),
        Input("x", T.FLOAT64))


def specs() -> dict[str, PipelineSpec]:
    return {
        # q21: EXISTS (... l2.l_suppkey <> l1.l_suppkey) with the outer side as the build
        "right_semi_residual": PipelineSpec(BASE, (
            FilterStage(call("gt", T.BOOL, col("x", T.FLOAT64), Literal(T.FLOAT64, 0.5))),
            ProbeStage("semi", (col("a"),), (T.INT32,)),
            ProbeStage("right_semi", (col("b", T.INT64),), (T.INT64,), (Input("r", T.INT32),),
                       residual=call("ne", T.BOOL, col("r"), col("a")))), MarkBuildSink()),
        # q04/q22-like NOT EXISTS without a residual, two keys
        "right_anti_two_keys": PipelineSpec(BASE, (
            ProbeStage("right_anti", (col("b", T.INT64), col("a")), (T.INT64, T.INT64)),), MarkBuildSink()),
        # q22: c_acctbal > (SELECT avg(...)) as a single join without keys, then a keyless semi
        # with a residual and a keyless inner (cross) join expanding rows
        "keyless": PipelineSpec(BASE, (
            ProbeStage("single", (), (), (Input("avg", T.FLOAT64),)),
            FilterStage(call("gt", T.BOOL, col("x", T.FLOAT64), col("avg", T.FLOAT64))),
            ProbeStage("semi", (), (), (Input("lo", T.INT32),), residual=call("gt", T.BOOL, col("lo"), col("a"))),
            ProbeStage("anti", (), ()),
            ProbeStage("inner", (), (), (Input("w", T.INT64, nullable=False),))),
            AggregateSink((col("s", T.STRING),), (("sum", col("w", T.INT64)), ("count_star", None)))),
        "keyless_materialize": PipelineSpec(BASE, (
            ProbeStage("left", (), (), (Input("w", T.INT64),)),), MaterializeSink()),
        # q10: GROUP BY c_custkey, c_name, c_address with the customer strings plain in the build
        "string_group_rows": PipelineSpec(BASE, (
            ProbeStage("inner", (col("b", T.INT64),), (T.INT64,),
                       (Input("ck", T.INT64), Input("name", T.STRING, build_row=True))),
            ProbeStage("left", (col("a"),), (T.INT32,), (Input("addr", T.STRING, build_row=True),))),
            AggregateSink((col("ck", T.INT64), col("name", T.STRING), col("addr", T.STRING)),
                          (("sum", col("x", T.FLOAT64)),))),
        # q22: GROUP BY substring(c_phone, 1, 2) over a dictionary column
        "dict_expr_key": PipelineSpec(BASE, (),
                                      AggregateSink((call("substring", T.STRING, col("s", T.STRING), Literal(T.INT64, 1),
                                                          Literal(T.INT64, 2)), col("a")),
                                                    (("count_star", None),))),
        # q16: count(DISTINCT ps_suppkey) GROUP BY p_brand, p_type, p_size: distinct tuples, no accumulators
        "distinct_tuples": PipelineSpec(BASE, (ProbeStage("inner", (col("a"),), (T.INT32,),
                                                          (Input("brand", T.STRING, True, True),)),),
                                        AggregateSink((col("brand", T.STRING), col("b", T.INT64), col("a")), ())),
        # q13: o_comment NOT LIKE '%special%requests%' on a plain-string page; a UTF-8 '_' pattern
        "plain_like": PipelineSpec(BASE + (Input("t", T.STRING),), (
            FilterStage(call("not_like", T.BOOL, col("t", T.STRING), Literal(T.STRING, "%special%requests%"))),
            FilterStage(call("or", T.BOOL, call("like", T.BOOL, col("t", T.STRING), Literal(T.STRING, "é_x%")),
                             call("starts_with", T.BOOL, col("t", T.STRING), Literal(T.STRING, "ab"))))),
            AggregateSink((col("a"),), (("count_star", None),))),
    }


def test_like_on_a_plain_string_input_runs_in_the_kernel():
    k = generate_pipeline(specs()["plain_like"])
    body = k.body
    assert "const long long* __restrict__ off4" in body and "const unsigned char* __restrict__ chr4" in body
    assert "!pipe::like_bytes(chr4 + off4[row], off4[row + 1] - off4[row], " in body
    # the patterns are kernel arguments (device arrays of their UTF-8 bytes, and their lengths)
    pats = [(lit.value, lit.ctype) for lit in k.literals if isinstance(lit.value, bytes)]
    assert pats == [(b"%special%requests%", "unsigned char* __restrict__"), ("é_x%".encode(), "unsigned char* __restrict__"),
                    (b"ab%", "unsigned char* __restrict__")]
    assert [lit.value for lit in k.literals if lit.ctype == "int"] == [18, 5, 3]
    assert "%special" not in body.replace("// filter not_like(t, ?)", "") and not k.lookups
    with pytest.raises(UnsupportedError, match="not a dictionary column"):  # any other use of the string
        generate_pipeline(PipelineSpec(BASE + (Input("t", T.STRING),), (),
                                       AggregateSink((col("t", T.STRING),), (("count_star", None),))))
    with pytest.raises(UnsupportedError, match="wildcard"):
        generate_pipeline(PipelineSpec(BASE + (Input("t", T.STRING),), (
            FilterStage(call("contains", T.BOOL, col("t", T.STRING), Literal(T.STRING, "a%"))),),
            AggregateSink((), (("count_star", None),))))


def test_distinct_tuples_kernel_has_no_accumulators():
    k = generate_pipeline(specs()["distinct_tuples"])
    assert not k.accumulators and len(k.group_keys) == 3 and "pipe::group_slot<3>" in k.body


def test_string_key_computed_from_one_dictionary_column_groups_by_its_codes():
    k = generate_pipeline(specs()["dict_expr_key"])
    key = k.group_keys[0]
    assert key.dict_cid == "s" and key.expr is not None and key.dtype == T.STRING
    assert "substring" not in k.body.split("find or insert the group")[1]  # the kernel only sees codes
    with pytest.raises(UnsupportedError, match="not a dictionary column"):
        generate_pipeline(PipelineSpec(BASE, (), AggregateSink(
            (call("concat", T.STRING, col("s", T.STRING), call("cast", T.STRING, col("a"))),), (("count_star", None),))))
    with pytest.raises(UnsupportedError, match="not a dictionary column"):
        generate_pipeline(PipelineSpec(BASE, (), AggregateSink(
            (call("concat", T.STRING, col("s", T.STRING), call("random", T.STRING)),), (("count_star", None),))))


def test_plain_string_build_keys_group_by_build_row():
    k = generate_pipeline(specs()["string_group_rows"])
    body = k.body
    assert "kb[1] = br0 >= 0 ? br0 : 0;" in body and "kb[2] = br1 >= 0 ? br1 : 0;" in body
    assert "if (br1 < 0) nb |= 4LL;" in body          # a left join without a match: NULL string
    assert "b0_pay1" not in body and "b1_pay0" not in body  # the strings are never read
    assert [g.build_rows_of for g in k.group_keys] == [None, "name", "addr"]
    assert "name:VARCHAR row" in specs()["string_group_rows"].describe()
    with pytest.raises(UnsupportedError, match="plain"):
        generate_pipeline(PipelineSpec(BASE, (
            ProbeStage("inner", (col("a"),), (T.INT32,), (Input("name", T.STRING, build_row=True),)),
            FilterStage(call("like", T.BOOL, col("name", T.STRING), Literal(T.STRING, "%a%")))),
            AggregateSink((col("name", T.STRING),), (("count_star", None),))))


def test_joins_without_keys_loop_over_every_build_row():
    k = generate_pipeline(specs()["keyless"])
    body = k.body
    assert "probe_slot" not in body
    # single: one build row expected (error past it), a missing row is one row of NULLs
    assert "const i64 pc0 = b0_n > 0 ? b0_n : 1;" in body and "if (pc0 > 1) atomicAdd(errors, 1ULL);" in body
    assert "const i64 br0 = b0_n > 0 ? m0 : -1;" in body
    # semi with a residual: any build row passing it; anti without one: any build row at all
    assert "for (i64 m2 = 0; m2 < b2_n; ++m2) {" in body and "if (!hit2) continue;" in body
    assert "if (b3_n > 0) continue;" in body
    assert "const i64 pc4 = b4_n > 0 ? b4_n : 0;" in body
    m = generate_pipeline(specs()["keyless_materialize"])
    assert m.row_outputs == (0,) and "out_b0[o] = br0;" in m.body


def test_keyless_refusals():
    with pytest.raises(UnsupportedError, match="mark join without keys"):
        generate_pipeline(PipelineSpec(BASE, (ProbeStage("mark", (), (), mark="mk"),),
                                       AggregateSink((), (("count_star", None),))))
    with pytest.raises(UnsupportedError, match="left join with a residual"):
        generate_pipeline(PipelineSpec(BASE, (ProbeStage("left", (), (), residual=Literal(T.BOOL, True)),),
                                       AggregateSink((), (("count_star", None),))))


def test_right_probes_mark_build_rows_after_the_residual():
    k = generate_pipeline(specs()["right_semi_residual"])
    body = k.body
    assert "unsigned char* __restrict__ out_marked" in body and "out_marked[br2] = 1;" in body
    # the residual decides per match, before the mark; the semi probe before it drops rows
    assert body.index("// residual") < body.index("out_marked[br2] = 1;")
    assert "if (ps1 < 0) continue;" in body
    assert not k.accumulators and not k.row_outputs and not k.mark_outputs
    anti = generate_pipeline(specs()["right_anti_two_keys"]).body
    assert "probe_slot<2>" in anti and "out_marked[br0] = 1;" in anti and "// residual" not in anti


@pytest.mark.parametrize("spec, reason", [
    # a right probe must end the pipeline, into a MarkBuildSink
    (PipelineSpec(BASE, (ProbeStage("right_semi", (col("a"),), (T.INT32,)),),
                  AggregateSink((), (("count_star", None),))), "last stage"),
    (PipelineSpec(BASE, (ProbeStage("right_anti", (col("a"),), (T.INT32,)),
                         FilterStage(call("gt", T.BOOL, col("a"), Literal(T.INT32, 1)))), MarkBuildSink()),
     "must end in"),
    (PipelineSpec(BASE, (ProbeStage("semi", (col("a"),), (T.INT32,)),), MarkBuildSink()), "must end in"),
    (PipelineSpec(BASE, (), MarkBuildSink()), "must end in"),
])
def test_refusals_say_why(spec, reason):
    with pytest.raises(UnsupportedError, match=reason):
        generate_pipeline(spec)


def test_mark_sink_is_part_of_the_canonical_text():
    a = specs()["right_semi_residual"]
    assert a.describe().endswith("mark build rows")
    assert "probe right_semi" in a.describe() and "residual" in a.describe()


def test_features_switch_off_by_name(monkeypatch):
    from hetdb.exec import compiled_features

    monkeypatch.setattr(compiled_features, "disabled", {"right_semi_anti"})
    why = compiled_features.off("right_semi_anti")
    assert why is not None and "HETDB_GPU_COMPILE_OFF=right_semi_anti" in why
    monkeypatch.setattr(compiled_features, "disabled", set())
    for name in compiled_features.FEATURES:
        assert compiled_features.off(name) is None
    with pytest.raises(KeyError):
        compiled_features.off("no_such_feature")
    monkeypatch.setattr(compiled_features, "enabled", set())
    assert not any(compiled_features.on(name) for name in compiled_features.EXPERIMENTS)
    monkeypatch.setattr(compiled_features, "enabled", {"slot_share"})
    assert compiled_features.on("slot_share")
    with pytest.raises(KeyError):
        compiled_features.on("no_such_experiment")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_every_kernel_here_compiles_with_nvcc(tmp_path):
    from hetdb.backend.gpu.compile import load_source

    kernels = [generate_pipeline(s) for s in specs().values()]
    run = nvcc_check(load_source("pipeline.cuh") + "\n" + "\n".join(k.body for k in kernels), tmp_path, "extensions", 300)
    assert run.returncode == 0, run.stderr[-4000:]


def test_env_switches_extensions_off_and_planning_refuses_with_the_reason():
    import os
    import sys

    code = ("from hetdb.exec import compiled_features as f; "
            "print(sorted(f.disabled)); print(f.off('keyless_join')); print(f.off('plain_like'))")
    env = dict(os.environ, HETDB_GPU_COMPILE_OFF="keyless_join, count_distinct")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    lines = out.stdout.splitlines()
    assert lines[0] == "['count_distinct', 'keyless_join']", out.stderr
    assert "HETDB_GPU_COMPILE_OFF=keyless_join" in lines[1] and lines[2] == "None"


def test_switched_off_keyless_join_is_a_refusal_naming_the_switch(monkeypatch):
    from types import SimpleNamespace as NS

    from hetdb.exec import compiled_features
    from hetdb.exec.compiled import plan_compiled
    from hetdb.exec.operators.aggregate import HashAggregate
    from hetdb.exec.operators.base import OpStats
    from hetdb.exec.operators.join import HashProbe
    from hetdb.exec.operators.join_build import HashBuild

    stats: dict[int, OpStats] = {}
    side = NS(partitions=None, num_rows=1, batch=NS(columns={}))
    ctx = NS(stat=lambda op_id: stats.setdefault(op_id, OpStats()), device=object(), results={7: side})
    probe = HashProbe(kind="single", build=HashBuild(), build_pipeline=7, op_id=2)
    pipe = NS(source=NS(), ops=[probe], sink=HashAggregate(keys=(), aggs=(), op_id=3))
    plan, why = plan_compiled(ctx, pipe)
    assert plan is not None and why == ""
    monkeypatch.setattr(compiled_features, "disabled", {"keyless_join"})
    plan, why = plan_compiled(ctx, pipe)
    assert plan is None and "HETDB_GPU_COMPILE_OFF=keyless_join" in why
    assert "HETDB_GPU_COMPILE_OFF=keyless_join" in stats[2].fused
