"""Scan-benchmark table t: row count, md5 memo, value ranges, and S1–S3 fractions via DuckDB."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from hetdb.datagen import scan
from hetdb.errors import InputError
from hetdb.storage import Database


@pytest.fixture(scope="module")
def t_1m() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("t", pa.concat_tables([b.to_arrow() for b in scan.batches(0.1, workers=2)]))
    return con


def test_num_rows():
    assert scan.num_rows(1) == 10_000_000 and scan.num_rows(70) == 700_000_000
    assert scan.num_rows(0.1) == 1_000_000 and scan.num_rows(1e-9) == 1
    with pytest.raises(InputError):
        scan.num_rows(300)  # id would overflow int32
    with pytest.raises(InputError):
        scan.num_rows(0)


def test_columns(t_1m):
    row = t_1m.execute("""select count(*), min(id), max(id), count(distinct id),
        min(least(x, y, z)), max(greatest(x, y, z)),
        sum(case when memo <> md5(id::varchar) then 1 else 0 end), count(memo) from t""").fetchone()
    assert row[:4] == (1_000_000, 1, 1_000_000, 1_000_000)
    assert 0 <= row[4] < 0.01 and 999.99 < row[5] < 1000
    assert row[6] == 0 and row[7] == 1_000_000  # every memo is md5 of the id's text


def test_query_fractions(t_1m):
    n = 1_000_000
    s1 = t_1m.execute("select count(*) from t where x between y - 2 and y + 2").fetchone()[0] / n
    s2 = t_1m.execute("select count(*) from t where sqrt((x - 200) * (x - 200) + (y - 300) * (y - 300) "
                      "+ (z - 400) * (z - 400)) < 10").fetchone()[0]
    s3 = t_1m.execute("select count(*) from t where memo like '%abcd%'").fetchone()[0] / n
    wide = t_1m.execute("select count(*) from t where sqrt((x - 200) * (x - 200) + (y - 300) * (y - 300) "
                        "+ (z - 400) * (z - 400)) < 50").fetchone()[0] / n
    assert abs(s1 / 4.0e-3 - 1) < 0.1
    assert abs(s3 / 4.4e-4 - 1) < 0.2
    assert s2 <= 20  # ~4.2 rows expected at 1M; the radius-50 sphere checks the same uniformity
    assert abs(wide / (4.2e-6 * 125) - 1) < 0.2


def test_same_data_with_one_and_two_workers(monkeypatch):
    monkeypatch.setattr(scan, "ROWS_PER_CHUNK", 3_000)
    one = pa.concat_tables([b.to_arrow() for b in scan.batches(0.001, workers=1)])
    two = pa.concat_tables([b.to_arrow() for b in scan.batches(0.001, workers=2)])
    assert one.num_rows == 10_000 and one.equals(two)


def test_generate_into_store(tmp_path):
    db = Database.open(str(tmp_path / "db"), create=True)
    assert scan.generate(db, 0.002, workers=2, progress=True, rows_per_page=4096) == {"t": 20_000}
    stored = db.table("t").arrow()
    expected = pa.concat_tables([b.to_arrow() for b in scan.batches(0.002)])
    assert stored.num_rows == 20_000 and stored.cast(expected.schema).equals(expected)
    assert [(f.name, f.nullable) for f in stored.schema] == [
        ("id", False), ("x", False), ("y", False), ("z", False), ("memo", True)]
