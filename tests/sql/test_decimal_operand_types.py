"""Result types of DECIMAL arithmetic with integer literals and typed NULLs, against DuckDB's typeof()
and values: DuckDB 2.0.1 gives an integer literal the digits of INTEGER, BIGINT or HUGEINT by its
value (DECIMAL(5,2) * 3 is DECIMAL(15,2), not DECIMAL(6,2)), a remainder takes no extra integer digit,
and CAST(NULL AS DECIMAL(5,2)) brings its type to a COALESCE (rel11 found the literal rule; the
others came with it)."""

from __future__ import annotations

import duckdb
import pytest

import hetdb

BASE = "(SELECT 1.50::DECIMAL(10,0) d, 7.25::DECIMAL(5,2) e, 123.456::DECIMAL(18,3) f)"
EXPRS = ["d * 3", "d * 300000", "e * 3", "e * -7", "f * 3", "d * 3000000000", "d + 3", "e + 3", "f + 3",
         "3 - e", "e * 3000000000", "e + 3000000000", "d * 12345678901234567890", "e * d", "e + d", "e % 3",
         "e % 300", "e % d", "f % e", "coalesce(NULL::DECIMAL(5,2), 3)", "coalesce(e, 3)",
         "CASE WHEN e > 100 THEN e ELSE 3 END", "coalesce(NULL::INTEGER, 2.5)"]


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    with hetdb.connect(str(tmp_path_factory.mktemp("dectypes") / "db"), device="cpu") as c:
        yield c


@pytest.mark.parametrize("expr", EXPRS)
def test_decimal_operand_types_and_values_are_duckdbs(con, expr) -> None:
    sql = f"SELECT typeof({expr}), {expr} FROM {BASE}"
    assert con.sql(sql).fetchall() == duckdb.connect().execute(sql).fetchall()


def test_decimal_times_an_integer_past_18_digits_raises_as_duckdb(con) -> None:
    sql = "SELECT 999999999::DECIMAL(10,0) * 2147483647"  # DECIMAL(18,0), computed in 64 bits
    with pytest.raises(duckdb.OutOfRangeException):
        duckdb.connect().execute(sql)
    with pytest.raises(hetdb.HetdbError, match="Overflow in multiplication of DECIMAL"):
        con.sql(sql).fetchall()


@pytest.mark.parametrize("sql", [
    "SELECT x, coalesce(x, 3) FROM (VALUES (NULL::DECIMAL(5,2)), (1.5)) t(x)",
    "SELECT typeof(x), x FROM (VALUES (NULL::BIGINT), (1)) t(x)",
])
def test_a_typed_null_row_types_a_values_column_as_duckdb(con, sql) -> None:
    # (the typed NULL was skipped when the rows' common type was chosen: x was DECIMAL(2,1), 1.5 not 1.50)
    assert con.sql(sql).fetchall() == duckdb.connect().execute(sql).fetchall()
