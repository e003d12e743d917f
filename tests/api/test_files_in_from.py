"""Files in FROM: read_parquet/read_csv, globs, lists, hive partitions, union_by_name, row-group
pruning, thread safety and the in-place crash cases — each differential against DuckDB."""

from __future__ import annotations

import datetime
import os
import threading

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hetdb
from hetdb.errors import HetdbError, InputError


def _rows(result):
    return sorted(result, key=lambda r: tuple((x is None, str(x)) for x in r))


def _same(con, sql, duck_sql=None):
    """Compare hetdb and DuckDB on ``sql``: rows (as multisets) and column names."""
    res = con.sql(sql)
    d = duckdb.sql(duck_sql or sql)
    got, want = res.fetchall(), d.fetchall()
    assert _rows(got) == _rows(want), sql
    assert [n.lower() for n in res.arrow().column_names] == [n.lower() for n in d.columns], sql
    return len(want)


@pytest.fixture
def con(tmp_path):
    c = hetdb.connect(str(tmp_path / "db"), device="cpu", threads=2)
    yield c
    c.close()


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    """12 hive-partitioned files year=2020..2022/month=1..4, 4 row groups of 250 rows each."""
    root = tmp_path_factory.mktemp("hive")
    k = 0
    for y in (2020, 2021, 2022):
        for m in (1, 2, 3, 4):
            d = root / f"year={y}" / f"month={m}"
            d.mkdir(parents=True)
            n = 1000
            t = pa.table({"id": pa.array(range(k, k + n), pa.int64()),
                          "v": pa.array([float(i % 97) if i % 13 else None for i in range(n)]),
                          "s": pa.array([f"s{i % 7}" for i in range(n)])})
            pq.write_table(t, d / "part.parquet", row_group_size=250)
            k += n
    return root


def test_hive_glob_matches_duckdb(con, hive):
    g = f"{hive}/**/*.parquet"
    n = 0
    for sql in [f"select year, month, count(*) as n, sum(v) as sv, min(s) as ms from read_parquet('{g}') group by all",
                f"select * from read_parquet('{g}', hive_partitioning=true) where id % 501 = 0",
                f"select count(*) as n from '{g}' where year = 2021 and month >= 3",
                f"select id, s from read_parquet('{g}', hive_partitioning=false) where id < 5"]:
        n += _same(con, sql)
    assert n > 0


def test_hive_and_statistics_prune_row_groups(con, hive):
    g = f"{hive}/**/*.parquet"
    sql = f"select count(*) as n, sum(v) as sv from read_parquet('{g}') where year = 2021 and id >= 5100 and id < 5300"
    _same(con, sql)
    text = con.explain(sql, analyze=True)
    line = next(x for x in text.splitlines() if "ExternalScan" in x)
    # 12 files: 4 of 2021 kept by the partition filter, and of those only file 5 (ids 5000..5999)
    # holds the ids; of its 4 row groups only the first (5000..5249) and second (5250..5499) match
    assert "files read=1 skipped=11" in line, line
    assert "row groups read=2 skipped=46" in line, line


def test_list_of_files_and_union_by_name(con, tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"x": [1, 2], "y": ["p", "q"]}), a)
    pq.write_table(pa.table({"y": ["r"], "z": [3.5]}), b)
    n = _same(con, f"select * from read_parquet(['{a}', '{b}'], union_by_name=true)")
    assert n == 3
    with pytest.raises(InputError, match="union_by_name"):
        con.sql(f"select * from read_parquet(['{a}', '{b}'])")


def test_read_csv_and_options(con, tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a;b;c\n1;hello;2024-01-02\n2;;2024-03-04\n3;x;\n")
    n = _same(con, f"select * from read_csv('{p}', delim=';', header=true)")
    n += _same(con, f"select a, c from read_csv_auto('{p}', sep=';') where a > 1")
    assert n == 5


def test_duplicate_column_names_are_renamed_like_duckdb(con, tmp_path):
    p = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4]), pa.array([5, 6])],
                                        names=["a", "a", "b"]), p)
    assert _same(con, f"select * from '{p}'") == 2
    assert _same(con, f"select a_1 + b as x from '{p}'") == 2


def test_nanosecond_timestamps_round_like_duckdb_cast(con, tmp_path):
    p = tmp_path / "ns.parquet"
    ts = pa.array([1_700_000_000_123_456_789, None, -1_500], pa.timestamp("ns"))
    pq.write_table(pa.table({"t": ts}), p, coerce_timestamps=None)
    got = con.sql(f"select t from '{p}'").fetchall()
    want = duckdb.sql(f"select cast(t as timestamp) from '{p}'").fetchall()
    assert got == want and got[0][0] == datetime.datetime(2023, 11, 14, 22, 13, 20, 123457)


def test_invalid_utf8_is_a_typed_error(con, tmp_path):
    p = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"s": pa.array([b"ok", b"\xff\xfe"], pa.binary()).cast(pa.string(), safe=False)}), p)
    with pytest.raises(InputError, match="UTF-8"):
        con.sql(f"select s from '{p}'").fetchall()


def test_fifo_is_refused_not_read(con, tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        con.sql(f"select * from '{fifo}'")
    with pytest.raises(InputError, match="not a regular file"):
        con.sql(f"select * from read_csv('{tmp_path}/*.csv')")


def test_missing_files_are_typed_errors(con, tmp_path):
    with pytest.raises(InputError, match="no files match"):
        con.sql(f"select * from read_parquet('{tmp_path}/nothing/*.parquet')")
    with pytest.raises(InputError, match="does not exist"):
        con.sql(f"select * from '{tmp_path}/missing.parquet'")


def test_four_threads_query_one_parquet_file(tmp_path):
    p = tmp_path / "big.parquet"
    n = 200_000
    pq.write_table(pa.table({"k": pa.array([i % 100 for i in range(n)]), "s": [f"v{i % 37}" for i in range(n)]}),
                   p, row_group_size=10_000)
    want = duckdb.sql(f"select k, count(*), min(s) from '{p}' group by k").fetchall()
    errors: list[BaseException] = []
    done = []

    def worker(i):
        try:
            with hetdb.connect(str(tmp_path / f"db{i}"), device="cpu", threads=4) as c:
                for _ in range(4):
                    got = c.sql(f"select k, count(*), min(s) from '{p}' group by k").fetchall()
                    assert sorted(got) == sorted(want)
                    done.append(1)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(done) == 16


def test_unknown_table_function_is_refused(con):
    with pytest.raises(HetdbError, match="table function"):
        con.sql("select * from read_xlsx('a.xlsx')")


def test_import_keeps_hive_columns_and_expands_globs(con, hive, tmp_path):
    from hetdb.storage.import_paths import import_paths

    reader = import_paths(con.db, "h", [f"{hive}/**/*.parquet"])
    assert [c.name for c in reader.schema] == ["id", "v", "s", "month", "year"]
    q = "SELECT year, month, count(*) AS n, sum(v) AS sv FROM {} GROUP BY year, month"
    got = sorted(con.sql(q.format("h")).fetchall())
    want = sorted(duckdb.sql(q.format(f"read_parquet('{hive}/**/*.parquet')")).fetchall())
    assert got == want and len(got) == 12
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"x": [i, i + 10]}), flat / f"p{i}.parquet")
    reader = import_paths(con.db, "f", [f"{flat}/*.parquet"])
    assert reader.num_rows == 6


def test_statistics_pruning_of_every_type_matches_duckdb(con, tmp_path):
    import decimal as D

    n = 4000
    p = tmp_path / "typed.parquet"
    pq.write_table(pa.table({
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i // 10) for i in range(n)]),
        "ts": pa.array([datetime.datetime(2021, 1, 1) + datetime.timedelta(minutes=i) for i in range(n)],
                       pa.timestamp("ns")),
        "m": pa.array([D.Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2)),
        "s": [f"k{i:05d}" for i in range(n)],
        "f": [float("nan") if i % 500 == 0 else i / 3 for i in range(n)],
        "i": pa.array(range(n), pa.int32()),
    }), p, row_group_size=500)
    filters = ["d >= DATE '2020-12-01'", "d = DATE '2020-02-05'", "m < 5.00", "m BETWEEN 12.34 AND 13.00",
               "s > 'k03500'", "s IN ('k00007', 'k03999')", "f < 10", "f BETWEEN 100 AND 120",
               "i BETWEEN 1000 AND 1100", "ts >= '2021-01-03 00:00:00'"]
    skipped = 0
    for f in filters:
        sql = f"SELECT count(*) AS n FROM '{p}' WHERE {f}"
        assert con.sql(sql).fetchall() == duckdb.sql(sql).fetchall(), f
        line = next(x for x in con.explain(sql, analyze=True).splitlines() if "ExternalScan" in x)
        skipped += int(line.split("row groups read=")[1].split("skipped=")[1].rstrip("]"))
    assert skipped > len(filters) * 2  # most filters skip row groups
