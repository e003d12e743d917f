"""Runtime join filters: the scan below an inner/semi join drops rows whose key the build side
cannot hold; answers equal DuckDB's for integer, string, several-key and NULL keys, and the filter
shows in EXPLAIN only where dropping rows early is safe."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.bench.compare import compare_tables
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec


def _tables() -> dict[str, pa.Table]:
    n = 20_000
    big = pa.table({
        "k": pa.array([None if i % 97 == 0 else (i * 7919) % 5000 for i in range(n)], pa.int64()),
        "s": pa.array([None if i % 89 == 0 else f"v{i % 300}" for i in range(n)], pa.string()),
        "x": pa.array([i % 1000 for i in range(n)], pa.int32()),
        "v": pa.array([float(i) / 7 for i in range(n)], pa.float64()),
    })
    small = pa.table({
        "k": pa.array([None if i % 11 == 0 else i * 37 % 5000 for i in range(120)], pa.int64()),
        "s": pa.array([f"v{i * 7 % 400}" for i in range(120)], pa.string()),
        "x": pa.array([i * 13 % 1000 for i in range(120)], pa.int32()),
    })
    return {"big": big, "small": small}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    path = tmp_path_factory.mktemp("rfdb")
    database = Database.open(str(path), create=True)
    duck = duckdb.connect()
    for name, table in _tables().items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
        with database.create_table(name, schema, rows_per_page=4096) as w:
            w.append_arrow(table)
        duck.register(name, table)
    return str(path), duck


QUERIES = {
    "int": "select b.k, b.x, b.v from big b join small s on b.k = s.k",
    "int_filtered": "select b.k, b.v from big b join small s on b.k = s.k where b.x < 500 and s.x > 100",
    "string": "select b.s, b.v from big b join small s on b.s = s.s",
    "two_keys": "select b.k, b.v from big b join small s on b.k = s.k and b.x = s.x",
    "semi": "select b.k, b.v from big b where b.k in (select k from small)",
    "grouped": "select s.x, count(*), sum(b.v) from big b join small s on b.s = s.s group by s.x",
}
NOT_FILTERED = {
    "anti": "select b.k, b.v from big b where b.k not in (select k from small where k is not null)",
    "left": "select b.k, s.x from big b left join small s on b.k = s.k",
}


@pytest.mark.parametrize("name", sorted(QUERIES) + sorted(NOT_FILTERED))
def test_matches_duckdb(dbs, name):
    path, duck = dbs
    sql = {**QUERIES, **NOT_FILTERED}[name]
    with hetdb.connect(path, device="cpu", threads=2) as con:
        plan = con.explain(sql)
        got = con.sql(sql).arrow()
    want = duck.sql(sql).arrow()
    if hasattr(want, "read_all"):
        want = want.read_all()
    assert want.num_rows > 0
    assert compare_tables(got, want, ordered=False) is None
    assert ("runtime_filter" in plan) == (name in QUERIES), plan
