"""LIST columns of Parquet files read in place (``FROM 'f.parquet'``): returned, unnested, passed to
list functions as DuckDB does on the same file; storing one is refused naming the column."""

from __future__ import annotations

import datetime as dt

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hetdb
from hetdb.errors import UnsupportedError

QUERIES = [
    "SELECT * FROM '{f}'",
    "SELECT id, unnest(l) AS v FROM '{f}'",
    "SELECT id, len(s), l[1], l[-1], list_contains(s, 'a'), list_sort(l) FROM '{f}' WHERE len(l) > 0",
    "SELECT id, unnest(n) FROM '{f}'",
    "SELECT id, CAST(n AS VARCHAR), array_to_string(s, '/'), list_max(d) FROM '{f}'",
    "SELECT count(*), sum(len(l)) FROM '{f}' WHERE list_contains(l, 5)",
]


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("lists") / "lists.parquet"
    t = pa.table({
        "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "l": pa.array([[1, 2], None, [], [None, 5], [7, 5, 6]], pa.list_(pa.int32())),
        "s": pa.array([["a", "b"], ["c"], None, [None], ["", "a"]], pa.large_list(pa.string())),
        "n": pa.array([[[1], [2, 3]], [], None, [None], [[]]], pa.list_(pa.list_(pa.int64()))),
        "d": pa.array([[dt.date(2024, 2, 29)], None, [], [None], [dt.date(2020, 1, 1), dt.date(2021, 1, 1)]],
                      pa.list_(pa.date32())),
    })
    pq.write_table(t, path)
    return str(path)


def test_parquet_list_columns_answer_as_duckdb(parquet_file):
    duck = duckdb.connect()
    compared = 0
    with hetdb.connect(device="cpu", batch_rows=2) as con:
        for q in QUERIES:
            sql = q.format(f=parquet_file)
            got = sorted(map(repr, con.sql(sql).fetchall()))
            want = sorted(map(repr, duck.sql(sql).fetchall()))
            assert got == want, sql
            compared += bool(got)
    assert compared == len(QUERIES)


def test_storing_a_list_column_is_refused_by_name(parquet_file, tmp_path):
    with hetdb.connect(str(tmp_path / "db")) as con:
        with pytest.raises(UnsupportedError, match=r"column l is a LIST \(INTEGER\[\]\)"):
            con.sql(f"CREATE TABLE x AS SELECT id, l FROM '{parquet_file}'")
        con.sql(f"CREATE TABLE y AS SELECT id, unnest(l) AS v FROM '{parquet_file}'")
        assert con.sql("SELECT count(*), count(v) FROM y").fetchall() == [(7, 6)]
