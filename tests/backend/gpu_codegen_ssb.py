"""SSB Q1.1, Q2.1, Q3.1 and Q4.1 as fused pipeline specs (shared by the codegen tests).

Dimension-side predicates are build-side filters (masks given to dense_build); string attributes used
as group keys are dictionary codes carried as probe payloads.
"""

from __future__ import annotations

from hetdb import types as T
from hetdb.backend.gpu.codegen import AggregateSpec, DenseProbe, FusedPipelineSpec
from hetdb.plan.expr import Call, Cast, ColumnRef, Literal


def col(cid: str, dtype=T.INT32) -> ColumnRef:
    return ColumnRef(dtype, cid, nullable=False)


def lit(v: int, dtype=T.INT32) -> Literal:
    return Literal(dtype, v)


def call(op: str, dtype, *args) -> Call:
    return Call(dtype, op, tuple(args))


def i64(e) -> Cast:
    return Cast(T.INT64, e)


LO = ("lo_orderdate", "lo_partkey", "lo_suppkey", "lo_custkey", "lo_quantity", "lo_extendedprice",
      "lo_discount", "lo_revenue", "lo_supplycost")


def inputs(*names: str) -> tuple:
    return tuple((n, T.INT32) for n in names)


Q11 = FusedPipelineSpec(
    inputs=inputs("lo_quantity", "lo_discount", "lo_orderdate", "lo_extendedprice"),
    filters=(call("ge", T.BOOL, col("lo_discount"), lit(1)), call("le", T.BOOL, col("lo_discount"), lit(3)),
             call("lt", T.BOOL, col("lo_quantity"), lit(25))),
    probes=(DenseProbe(col("lo_orderdate")),),
    aggregates=(AggregateSpec("sum", call("mul", T.INT64, i64(col("lo_extendedprice")),
                                          i64(col("lo_discount")))),),
)

Q21 = FusedPipelineSpec(
    inputs=inputs("lo_partkey", "lo_suppkey", "lo_orderdate", "lo_revenue"),
    probes=(DenseProbe(col("lo_partkey"), (("p_brand1", T.STRING),)),
            DenseProbe(col("lo_suppkey")),
            DenseProbe(col("lo_orderdate"), (("d_year", T.INT32),))),
    group_keys=(col("d_year"), col("p_brand1", T.STRING)),
    aggregates=(AggregateSpec("sum", i64(col("lo_revenue"))),),
)

Q31 = FusedPipelineSpec(
    inputs=inputs("lo_custkey", "lo_suppkey", "lo_orderdate", "lo_revenue"),
    probes=(DenseProbe(col("lo_suppkey"), (("s_nation", T.STRING),)),
            DenseProbe(col("lo_custkey"), (("c_nation", T.STRING),)),
            DenseProbe(col("lo_orderdate"), (("d_year", T.INT32),))),
    group_keys=(col("c_nation", T.STRING), col("s_nation", T.STRING), col("d_year")),
    aggregates=(AggregateSpec("sum", i64(col("lo_revenue"))),),
)

Q41 = FusedPipelineSpec(
    inputs=inputs("lo_custkey", "lo_suppkey", "lo_partkey", "lo_orderdate", "lo_revenue", "lo_supplycost"),
    probes=(DenseProbe(col("lo_suppkey")),
            DenseProbe(col("lo_custkey"), (("c_nation", T.STRING),)),
            DenseProbe(col("lo_partkey")),
            DenseProbe(col("lo_orderdate"), (("d_year", T.INT32),))),
    group_keys=(col("d_year"), col("c_nation", T.STRING)),
    aggregates=(AggregateSpec("sum", call("sub", T.INT64, i64(col("lo_revenue")), i64(col("lo_supplycost")))),),
)

SPECS = {"q1.1": Q11, "q2.1": Q21, "q3.1": Q31, "q4.1": Q41}
