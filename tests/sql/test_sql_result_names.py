"""Result column names of unaliased select items are DuckDB's (count_star(), sum(x), (a + 1), window
specifications ...), and refusals name functions as DuckDB users write them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from corpus_data import build  # noqa: E402

import hetdb  # noqa: E402
from hetdb.errors import UnsupportedError  # noqa: E402

QUERIES = [
    "SELECT count(*), COUNT(x), Sum(i), avg(i + k), count(DISTINCT k), min(d), count(*) FILTER (WHERE k > 1) FROM w",
    "SELECT k + 1, k * i - 2, -k, upper(s), s || 'x', 1, 'lit', NULL, true, k = 1, k BETWEEN 1 AND 2, "
    "k IN (1, 2), k IS NULL, k IS NOT NULL, NOT (k > 1), coalesce(k, i), abs(k), round(x, 2), x / 2, k // 2, "
    "k % 2, s LIKE 'a%', w.k, k IS DISTINCT FROM i, typeof(k), extract(year FROM d) FROM w",
    "SELECT row_number() OVER (PARTITION BY g ORDER BY k DESC), lag(k, 1) OVER (ORDER BY k), "
    "sum(x) OVER (), rank() OVER (ORDER BY id) FROM w",
    "SELECT date_trunc('month', d), regexp_matches(s, 'a'), lpad(s, 2, 'x'), date_diff('day', d, d), "
    "strftime(d, '%Y') FROM w",
    "SELECT trim(s), \"left\"(s, 2), right(s, 1), replace(s, 'a', 'b'), log2(x), log10(x), log(x), "
    "TRY_CAST(s AS INT), CAST(k AS BIGINT), extract(dow FROM d), extract(microsecond FROM d), "
    "extract(Hour FROM d), current_date = d, d + INTERVAL 1 DAY, d - INTERVAL '2 hours', INTERVAL '3' MONTH, "
    "INTERVAL (k) DAY, to_days(k), d - TIMESTAMP '2020-01-01' FROM w",
    "SELECT variance(x), var_samp(x), mode(k), string_agg(s, ',' ORDER BY s DESC), corr(x, i), "
    "regr_slope(x, i), quantile_disc(x, 0.5), quantile_cont(x, 0.5) FROM w",
    "SELECT epoch_ms(CAST(d AS TIMESTAMP)), epoch_ms(1000), epoch_us(CAST(d AS TIMESTAMP)) FROM w",
    "SELECT g, k % 2 AS p, grouping(g, p), GROUPING(p) FROM w GROUP BY GROUPING SETS ((g), (p))",
    "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY x DESC), quantile(x, 0.5), count_if(k > 1), "
    "skewness(x), regr_sxy(x, i) FROM w",
    "SELECT s NOT LIKE 'a%', s GLOB 'a*', s SIMILAR TO 'a.*', position('p' IN s), "
    "CAST(k AS VARCHAR), trunc(x), atan2(x, i), isnan(x), datediff('day', d, d) FROM w",
    "SELECT translate(s, 'a', 'b'), levenshtein(s, 'x'), damerau_levenshtein(s, 'x'), sha256(s), sha1(s), "
    "ord(s), prefix(s, 'a'), hex(k), bin(k), regexp_escape(s), signbit(x), gamma(x), lgamma(x), "
    "nextafter(x, 1.0), round_even(x, 1) FROM w",
    "SELECT round(x, -1), trunc(x, -1), trunc(m, 1), -1, -(2.5), -k, -(k + 1) FROM w",
    "SELECT [k, 1], list_value(k), string_split(s, 'p'), string_split(s, 'p')[1], [k, 2, 3][2:], len([k]), "
    "list_contains([k], 1), list_sort([k], 'DESC'), list_reverse_sort([k]), array_to_string([s], ','), "
    "list_aggr([k], 'sum'), CAST([k] AS VARCHAR), unnest([k, 2]), list_transform([k], lambda v: v * 2), "
    "list_filter([k], lambda v, i: i > 1 AND v = 1), flatten([[k]]), list_concat([k], [2]) FROM w",
    "SELECT TIME '01:02:03', make_time(k % 24, 2, 3.5), extract(hour FROM TIME '01:02:03'), "
    "second(TIME '01:02:03'), d + TIME '01:00:00' FROM w",
    # written ASC / NULLS FIRST|LAST, count() OVER, frames with INTERVAL offsets, FILTER ... OVER
    "SELECT row_number() OVER (ORDER BY k ASC), rank() OVER (ORDER BY k NULLS LAST, id DESC NULLS FIRST), "
    "count(*) OVER (PARTITION BY g), count(*) FILTER (WHERE k > 1) OVER (), "
    "sum(k) OVER (ORDER BY d RANGE BETWEEN INTERVAL 3 DAY PRECEDING AND CURRENT ROW), "
    "sum(k) OVER (ORDER BY id ROWS 2 PRECEDING), string_agg(s, ',' ORDER BY id ASC) OVER (PARTITION BY g) FROM w",
    "SELECT CASE WHEN k > 0 THEN 1 END, CASE k WHEN 1 THEN 'a' ELSE 'b' END, CASE WHEN k > 1 THEN 1 WHEN k < 0 "
    "THEN -1 ELSE 0 END, x ** 2, x ^ 2, pow(x, 2), today() = d, "
    "regexp_extract(s, 'p'), regexp_extract_all(s, 'p'), TRY_CAST(x AS REAL), "
    "CAST(d AS TIMESTAMP) AT TIME ZONE 'UTC' FROM w",
    "SELECT listagg(s, '|' ORDER BY id), string_agg(s ORDER BY s DESC NULLS FIRST), "
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY x ASC) FROM w",
]


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("names") / "db")
    duck = build(path)
    return path, duck


@pytest.mark.parametrize("sql", QUERIES)
def test_result_names_are_duckdb_names(dbs, sql) -> None:
    path, duck = dbs
    with hetdb.connect(path, device="cpu") as con:
        got = con.sql(sql).arrow().column_names
    want = duck.sql(sql).columns
    assert len(want) > 0 and got == want


@pytest.mark.parametrize("sql,name", [
    ("SELECT jaro_similarity(s, s) FROM w", "jaro_similarity"),
    ("SELECT list_zip([s], [s]) FROM w", "list_zip"),
    ("SELECT array_intersect([s], [s]) FROM w", "array_intersect"),
    ("SELECT ARRAY_INTERSECT([s], [s]) FROM w", "array_intersect"),
])
def test_refusals_name_functions_as_written(dbs, sql, name) -> None:
    path, _ = dbs
    with hetdb.connect(path, device="cpu") as con:
        with pytest.raises(UnsupportedError, match=f"function {name}\\(\\)"):
            con.sql(sql)
