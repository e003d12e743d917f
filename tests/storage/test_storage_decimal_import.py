"""Parquet DECIMAL wider than 18 digits: hetdb stores DECIMAL(min(p, 18), s); values that fit round-trip
exactly (checked against DuckDB reading the same file), values that do not are refused with a typed
InputError — on import and when the file is queried in place."""

from __future__ import annotations

import decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetdb.connection import Connection
from hetdb.errors import InputError
from hetdb.storage import Database
from hetdb.storage.ingest import import_files

D = decimal.Decimal

FITTING = [
    (pa.decimal128(38, 10), ["12345678.1234567891", "-99999999.9999999999", "0.0000000001", "1.5", None]),
    (pa.decimal128(38, 0), ["999999999999999999", "-999999999999999999", "0", None]),
    (pa.decimal128(20, 2), ["9999999999999999.99", "-0.01", "123.45"]),
    (pa.decimal128(25, 18), ["0.123456789012345678", "-0.5"]),
]

TOO_WIDE = [
    (pa.decimal128(38, 10), "1000000000"),  # the reproduction: read back as -844674407.37...
    (pa.decimal128(38, 10), "-100000000"),  # 9 integer digits, DECIMAL(18,10) holds 8
    (pa.decimal128(38, 0), "1000000000000000000"),  # 19 digits
    (pa.decimal128(38, 2), "92233720368547758.07"),
]


def _write(path: str, t: pa.DataType, values: list[str | None]) -> None:
    pq.write_table(pa.table({"d": pa.array([None if v is None else D(v) for v in values], t)}), path)


@pytest.mark.parametrize(("dtype", "values"), FITTING, ids=[str(t) for t, _ in FITTING])
def test_wide_decimals_that_fit_round_trip(db: Database, tmp_path, dtype, values):
    path = str(tmp_path / "d.parquet")
    _write(path, dtype, values)
    reader = import_files(db, "t", [path])
    got = reader.arrow().column("d").to_pylist()
    want = [r[0] for r in duckdb.sql(f"SELECT d FROM read_parquet('{path}')").fetchall()]
    assert got == want and len(want) == len(values)
    with Connection(db.path, device="cpu") as con:
        assert [r[0] for r in con.sql(f"SELECT d FROM '{path}'").fetchall()] == want
        assert con.sql("SELECT sum(d) FROM t").fetchall()[0][0] == sum(v for v in want if v is not None)


@pytest.mark.parametrize(("dtype", "value"), TOO_WIDE, ids=[v for _, v in TOO_WIDE])
def test_wide_decimals_that_do_not_fit_are_refused(db: Database, tmp_path, dtype, value):
    path = str(tmp_path / "d.parquet")
    _write(path, dtype, ["1", value, None])
    assert duckdb.sql(f"SELECT d FROM read_parquet('{path}')").fetchall()[1][0] == D(value)
    with pytest.raises(InputError, match=r"column 'd'.*does not fit in DECIMAL\(18,"):
        import_files(db, "t", [path])
    assert db.tables() == []
    with Connection(db.path, device="cpu") as con, pytest.raises(InputError, match="does not fit"):
        con.sql(f"SELECT d FROM '{path}'")
