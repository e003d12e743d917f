"""semi_join_reduction, semi_build_side and count_pushdown: the plans take the new shape where they should, and the
answers equal DuckDB's with the passes on and off."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.bench.compare import compare_tables
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

N_FACT = 150_000


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(5)
    part = np.arange(20_000)
    fact = pa.table({
        "f_part": pa.array(rng.integers(0, 20_000, N_FACT), pa.int64()),
        "f_order": pa.array(rng.integers(0, 40_000, N_FACT), pa.int64()),
        "f_qty": pa.array(rng.integers(1, 50, N_FACT), pa.int64()),
        "f_flag": pa.array(rng.integers(0, 2, N_FACT), pa.int32()),
    })
    dim = pa.table({"p_part": pa.array(part, pa.int64()),
                    "p_kind": pa.array([f"k{i % 97}" for i in part], pa.string())})
    orders = pa.table({"o_order": pa.array(np.arange(40_000), pa.int64()),
                       "o_day": pa.array(rng.integers(0, 1000, 40_000), pa.int32())})
    return {"fact": fact, "dim": dim, "orders": orders}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    path = tmp_path_factory.mktemp("semired")
    database = Database.open(str(path), create=True)
    duck = duckdb.connect()
    for name, table in _tables().items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
        with database.create_table(name, schema, rows_per_page=1 << 15) as w:
            w.append_arrow(table)
        duck.register(name, table)
    return str(path), duck


CORRELATED = """select sum(f_qty) from fact, dim where p_part = f_part and p_kind = 'k7'
  and f_qty < (select 0.5 * avg(f_qty) from fact f2 where f2.f_part = p_part)"""
GROUPED = """select d.p_part, g.total from dim d join
  (select f_part, sum(f_qty) total from fact group by f_part) g on g.f_part = d.p_part where d.p_kind = 'k3'"""
EXISTS = """select o_day % 10, count(*) from orders where o_day < 30
  and exists (select 1 from fact where f_order = o_order and f_flag = 1) group by 1"""
NOT_EXISTS = """select count(*) from orders where o_day < 30
  and not exists (select 1 from fact where f_order = o_order and f_qty > 10)"""
COUNTS = """select c, count(*) from (select p_part, count(f_qty) c from dim left join fact
  on f_part = p_part and f_qty > 30 group by p_part) group by c"""

CASES = [(CORRELATED, "semi_join_reduction", "HashProbe semi"), (GROUPED, "semi_join_reduction", "HashProbe semi"),
         (EXISTS, "semi_build_side", "HashProbe right_semi"),
         (NOT_EXISTS, "semi_build_side", "HashProbe right_anti"),
         (COUNTS, "count_pushdown", "coalesce(")]


@pytest.mark.parametrize("sql,pass_name,marker", CASES, ids=["correlated", "grouped", "exists", "not_exists", "counts"])
def test_shape_and_answers(dbs, sql, pass_name, marker):
    path, duck = dbs
    want = duck.sql(sql).arrow()
    if hasattr(want, "read_all"):
        want = want.read_all()
    assert want.num_rows > 0
    for off in (frozenset(), frozenset([pass_name])):
        with hetdb.connect(path, device="cpu", threads=2, disabled_passes=off) as con:
            plan = con.explain(sql)
            got = con.sql(sql).arrow()
        assert (marker in plan) == (not off), plan
        assert compare_tables(got, want, ordered=False, float_rel_tol=1e-9) is None


def test_reduction_when_the_table_is_sorted_by_the_group_key(tmp_path):
    """A table sorted by the group key (partsupp by ps_partkey, TPC-H q02) shows a sample few distinct
    keys, so the groups look few; the key's range in its zone maps tells the reduction pays."""
    keys = 50_000
    rng = np.random.default_rng(8)
    tables = {"sfact": pa.table({"s_part": pa.array(np.repeat(np.arange(keys), 4), pa.int64()),
                                 "s_cost": pa.array(rng.integers(1, 1000, 4 * keys), pa.int64())}),
              "sdim": pa.table({"d_part": pa.array(np.arange(keys), pa.int64()),
                                "d_kind": pa.array(rng.integers(0, 60, keys), pa.int32())})}
    database = Database.open(str(tmp_path), create=True)
    duck = duckdb.connect()
    for name, table in tables.items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
        with database.create_table(name, schema, rows_per_page=1 << 15) as w:
            w.append_arrow(table)
        duck.register(name, table)
    sql = ("select d.d_part, g.low from sdim d join (select s_part, min(s_cost) low from sfact group by s_part) g "
           "on g.s_part = d.d_part where d.d_kind = 7")
    want = duck.sql(sql).arrow()
    want = want.read_all() if hasattr(want, "read_all") else want
    assert want.num_rows > 0
    for off in (frozenset(), frozenset(["semi_join_reduction"])):
        with hetdb.connect(str(tmp_path), device="cpu", threads=2, disabled_passes=off) as con:
            plan = con.explain(sql)
            got = con.sql(sql).arrow()
        assert ("HashProbe semi" in plan) == (not off), plan
        assert compare_tables(got, want, ordered=False, float_rel_tol=1e-9) is None
