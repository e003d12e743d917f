"""Everyday SQL probes (issue 14 items 2-5) run on DuckDB and on hetdb (CPU) over one small table;
prints per probe whether hetdb agrees with DuckDB (values and result column names), differs, or
refuses, then the counts.

    PYTHONPATH=$PWD/src /work/main/.venv/bin/python scripts/sql_probes.py [-v] [-k SUBSTRING] [--extras]

``-v`` prints the difference or the error of every probe that does not agree. Window functions are
left out (issue 14 item 1). A probe "agrees" when hetdb's answer equals DuckDB's (multiset,
``hetdb.bench.compare``; for INTERVAL results also the Python values of ``fetchall()``) and the
column names are DuckDB's; "names" when only the names differ.
"""

from __future__ import annotations

import argparse
import sys

import duckdb
import pyarrow as pa

import hetdb
from hetdb.bench.compare import compare_tables
from hetdb.errors import HetdbError, SqlError, UnsupportedError

SETUP = [
    "CREATE TABLE t (id INTEGER, g INTEGER, x DOUBLE, y DOUBLE, s VARCHAR, d DATE, ts TIMESTAMP, "
    "ts2 TIMESTAMP)",
    "INSERT INTO t VALUES "
    "(1, 1, 1.5, 2.0, '  apple ', DATE '2024-02-29', TIMESTAMP '2024-02-29 10:11:12.345678', "
    "TIMESTAMP '2024-03-31 01:00:00'), "
    "(2, 1, -2.0, 1.0, 'pear', DATE '2023-01-31', TIMESTAMP '2023-01-31 23:59:59', "
    "TIMESTAMP '2023-03-01 00:00:00'), "
    "(3, 2, 4.25, 9.5, 'fig-leaf-x', DATE '2020-12-31', TIMESTAMP '2020-12-31 00:00:00', "
    "TIMESTAMP '2021-01-01 12:30:00'), "
    "(4, 2, NULL, 3.0, NULL, NULL, NULL, TIMESTAMP '2024-01-01 00:00:00'), "
    "(5, 3, 0.0, NULL, 'kiwi', DATE '1999-07-04', TIMESTAMP '1999-07-04 12:00:00', NULL), "
    "(6, 3, 7.0, 6.5, 'apple', DATE '2024-10-27', TIMESTAMP '2024-10-27 02:30:00', "
    "TIMESTAMP '2024-10-26 02:30:00'), "
    "(7, 1, 3.0, 4.0, 'Plum', DATE '2000-02-29', TIMESTAMP '2000-02-29 06:07:08', "
    "TIMESTAMP '2000-03-01 06:07:08')",
]

# (name, SQL): the 49 everyday function probes of issue 14, then the constructs of items 2-3, the
# statistics and INTERVAL probes, and the names/messages probes of item 5.
FUNCTIONS = [
    ("date_trunc", "SELECT date_trunc('month', d), date_trunc('hour', ts) FROM t"),
    ("date_diff", "SELECT date_diff('day', d, DATE '2024-03-01'), date_diff('month', d, DATE '2024-03-01') FROM t"),
    ("date_minus_date", "SELECT d - DATE '2024-01-01' FROM t"),
    ("strftime", "SELECT strftime(d, '%Y/%m/%d %j'), strftime(ts, '%H:%M:%S') FROM t"),
    ("strptime", "SELECT strptime('2024-02-29 10:11:12', '%Y-%m-%d %H:%M:%S')"),
    ("make_date", "SELECT make_date(2024, 2, 29), make_date(g + 2020, g, 28) FROM t"),
    ("epoch", "SELECT epoch(ts), epoch(d) FROM t"),
    ("median", "SELECT g, median(x) FROM t GROUP BY g"),
    ("quantile_cont", "SELECT quantile_cont(x, 0.25), quantile_cont(y, 0.9) FROM t"),
    ("stddev", "SELECT stddev(x), stddev_pop(x) FROM t"),
    ("variance", "SELECT variance(x), var_pop(y) FROM t"),
    ("string_agg", "SELECT g, string_agg(s, ',' ORDER BY s) FROM t GROUP BY g"),
    ("arg_max", "SELECT arg_max(s, x) FROM t"),
    ("arg_min", "SELECT arg_min(s, x) FROM t"),
    ("bool_and", "SELECT g, bool_and(x > 0) FROM t GROUP BY g"),
    ("bool_or", "SELECT g, bool_or(x > 3) FROM t GROUP BY g"),
    ("mode", "SELECT mode(g) FROM t"),
    ("approx_count_distinct", "SELECT approx_count_distinct(s) FROM t"),
    ("trim", "SELECT trim(s), ltrim(s), rtrim(s) FROM t"),
    ("replace", "SELECT replace(s, 'p', 'P') FROM t"),
    ("split_part", "SELECT split_part(s, '-', 2) FROM t"),
    ("starts_with", "SELECT starts_with(s, 'ap') FROM t"),
    ("contains", "SELECT contains(s, 'i') FROM t"),
    ("regexp_matches", "SELECT regexp_matches(s, '^[a-z]+$') FROM t"),
    ("regexp_replace", "SELECT regexp_replace(s, '[aeiou]', '_', 'g') FROM t"),
    ("regexp_extract", "SELECT regexp_extract(s, '([a-z]+)-([a-z]+)', 2) FROM t"),
    ("lpad", "SELECT lpad(s, 6, '*') FROM t"),
    ("rpad", "SELECT rpad(s, 6, '*') FROM t"),
    ("left", "SELECT left(s, 3) FROM t"),
    ("right", "SELECT right(s, 3) FROM t"),
    ("reverse", "SELECT reverse(s) FROM t"),
    ("repeat", "SELECT repeat(s, 2) FROM t"),
    ("strpos", "SELECT strpos(s, 'p') FROM t"),
    ("md5", "SELECT md5(s) FROM t"),
    ("hash", "SELECT hash(s) FROM t"),
    ("format", "SELECT format('{}-{}', s, g) FROM t"),
    ("printf", "SELECT printf('%s:%d', s, g) FROM t"),
    ("log", "SELECT log(y), log(2, y), log2(y) FROM t"),
    ("log10", "SELECT log10(y) FROM t"),
    ("sign", "SELECT sign(x), sign(g - 2) FROM t"),
    ("random", "SELECT random() >= 0 AND random() < 1 FROM t"),
    ("typeof", "SELECT typeof(x), typeof(d), typeof(s), typeof(g) FROM t"),
    ("try_cast", "SELECT TRY_CAST(s AS INTEGER), TRY_CAST('12' AS INTEGER) FROM t"),
    ("timestamp_literal", "SELECT TIMESTAMP '2024-02-29 10:11:12', CAST('2021-01-01 00:00:01' AS TIMESTAMP)"),
    ("timestamp_plus_interval", "SELECT ts + INTERVAL 1 DAY, ts - INTERVAL '2 hours' FROM t"),
    ("extract_parts", "SELECT extract(hour FROM ts), extract(minute FROM ts), extract(second FROM ts), "
                      "extract(quarter FROM d), extract(dow FROM d), extract(doy FROM d), extract(week FROM d), "
                      "extract(isodow FROM d), extract(epoch FROM ts), extract(microsecond FROM ts) FROM t"),
    ("make_timestamp", "SELECT make_timestamp(2024, 2, 29, 23, 59, 59.5)"),
    ("to_timestamp_epoch_ms", "SELECT to_timestamp(1700000000), epoch_ms(ts) FROM t"),
    ("current_date_now", "SELECT current_date <= current_date, now() IS NOT NULL"),
]

CONSTRUCTS = [
    ("intersect", "SELECT g FROM t INTERSECT SELECT g FROM t WHERE x > 0"),
    ("intersect_all", "SELECT g FROM t INTERSECT ALL SELECT g FROM t WHERE x >= 0"),
    ("except", "SELECT g FROM t EXCEPT SELECT g FROM t WHERE x > 4"),
    ("except_all", "SELECT g FROM t EXCEPT ALL SELECT g FROM t WHERE x > 4"),
    ("union_by_name", "SELECT g, id FROM t UNION BY NAME SELECT id, s FROM t"),
    ("rollup", "SELECT g, s IS NULL AS n, count(*) FROM t GROUP BY ROLLUP (g, n)"),
    ("cube", "SELECT g, id > 3 AS big, sum(x) FROM t GROUP BY CUBE (g, big)"),
    ("grouping_sets", "SELECT g, id % 2 AS p, count(*), grouping(g, p) FROM t GROUP BY GROUPING SETS ((g), (p), ())"),
    ("filter", "SELECT g, count(*) FILTER (WHERE x > 0), sum(y) FILTER (y > 2) FROM t GROUP BY g"),
    ("distinct_on", "SELECT DISTINCT ON (g) g, id, s FROM t ORDER BY g, id DESC"),
    ("values", "SELECT * FROM (VALUES (1, 'a'), (2, NULL)) v(a, b)"),
    ("order_by_all", "SELECT g, id FROM t ORDER BY ALL"),
    ("is_distinct_from", "SELECT x IS DISTINCT FROM y, x IS NOT DISTINCT FROM NULL FROM t"),
    ("with_recursive", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) "
                       "SELECT sum(n) FROM r"),
    ("timestamptz", "SELECT CAST(ts AS TIMESTAMPTZ), TIMESTAMPTZ '2024-03-31 01:30:00+00' FROM t"),
    ("date_plus_interval", "SELECT d + INTERVAL 1 MONTH, d - INTERVAL 3 DAY, d + 7 FROM t"),
    ("date_sub", "SELECT date_sub('month', d, DATE '2025-01-01'), date_part('year', d) FROM t"),
]

STATS = [
    ("quantile_disc", "SELECT quantile_disc(x, 0.5), quantile_disc(y, 0.25) FROM t"),
    ("quantile_disc_group", "SELECT g, quantile_disc(x, 0.75) FROM t GROUP BY g"),
    ("corr", "SELECT corr(x, y) FROM t"),
    ("covar_pop", "SELECT g, covar_pop(x, y) FROM t GROUP BY g"),
    ("covar_samp", "SELECT covar_samp(x, y) FROM t"),
    ("regr_slope", "SELECT regr_slope(y, x) FROM t"),
    ("regr_intercept", "SELECT regr_intercept(y, x) FROM t"),
    ("regr_r2", "SELECT regr_r2(y, x) FROM t"),
]

INTERVALS = [
    ("interval_literal", "SELECT INTERVAL 3 DAY, INTERVAL '1 year 2 months', INTERVAL '90 minutes'"),
    ("ts_minus_ts", "SELECT ts2 - ts FROM t"),
    ("interval_compare", "SELECT id FROM t WHERE ts2 - ts > INTERVAL 30 DAY"),
    ("interval_arith", "SELECT INTERVAL 1 DAY + INTERVAL 2 HOUR, INTERVAL 1 DAY * 3, -INTERVAL 1 MONTH"),
    ("ts_plus_interval_col", "SELECT ts + (ts2 - ts) FROM t"),
    ("to_days", "SELECT to_days(g), to_hours(2), to_minutes(g), to_months(g) FROM t"),
    ("age", "SELECT age(ts2, ts) FROM t"),
    ("interval_extract", "SELECT extract(day FROM ts2 - ts), date_part('hour', ts2 - ts) FROM t"),
    ("interval_agg", "SELECT min(ts2 - ts), max(ts2 - ts) FROM t"),
    ("interval_order", "SELECT id, ts2 - ts AS dt FROM t ORDER BY dt NULLS LAST, id"),
]

NAMES = [
    ("alias_in_where", "SELECT x * 2 AS dbl FROM t WHERE dbl > 3"),
    ("alias_in_group_by", "SELECT id % 2 AS parity, count(*) FROM t GROUP BY parity"),
    ("alias_in_having", "SELECT g, sum(x) AS total FROM t GROUP BY g HAVING total > 1"),
    ("names_count_star", "SELECT count(*), sum(x), avg(x + 1), max(upper(s)) FROM t"),
]

PROBES = FUNCTIONS + CONSTRUCTS + STATS + INTERVALS + NAMES

# --extras: further everyday DuckDB functions beyond issue 14's list (one probe per line)
EXTRAS = [(q.split("(")[0].replace("SELECT ", "")[:30], q + " FROM t") for q in [
    "SELECT first(x)", "SELECT any_value(s)", "SELECT count_if(x > 0)", "SELECT ifnull(x, 0)", "SELECT instr(s, 'p')",
    "SELECT trunc(x)", "SELECT degrees(x), radians(x)", "SELECT sin(x), cos(x), tan(x), atan2(x, y)",
    "SELECT isnan(x), isinf(x), isfinite(x)", "SELECT product(y)", "SELECT kurtosis(x)", "SELECT skewness(x)",
    "SELECT bit_length(s)", "SELECT date_add(d, INTERVAL 1 DAY)", "SELECT dayofweek(d), dayofyear(d), weekofyear(d)",
    "SELECT last_day(d)", "SELECT make_time(1, 2, 3.5)", "SELECT ceil(x), floor(x)", "SELECT gcd(g, 6), lcm(g, 4)",
    "SELECT factorial(g)", "SELECT even(x)", "SELECT string_split(s, 'p')", "SELECT regexp_split_to_array(s, 'p')",
    "SELECT concat_ws('-', s, g)", "SELECT length(s), lower(s), upper(s)", "SELECT position('p' IN s)",
    "SELECT ascii(s), chr(65)", "SELECT unicode(s)", "SELECT to_base(g, 2)", "SELECT greatest(x, y), least(x, y)",
    "SELECT nullif(g, 1)", "SELECT median(d)", "SELECT max_by(s, x), min_by(s, x)", "SELECT entropy(g)",
    "SELECT histogram(g)", "SELECT sum(g) FILTER (WHERE x > 0)", "SELECT avg(d)", "SELECT quantile(x, 0.5)",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x)", "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x)",
    "SELECT regr_count(y, x), regr_avgx(y, x), regr_avgy(y, x), regr_sxx(y, x), regr_syy(y, x), regr_sxy(y, x)",
    "SELECT stddev_samp(x), var_samp(x)", "SELECT fsum(x)", "SELECT bit_and(g), bit_or(g), bit_xor(g)",
    "SELECT hour(ts), minute(ts), second(ts)", "SELECT year(d), month(d), day(d), quarter(d)",
    "SELECT epoch_us(ts), epoch_ns(ts)", "SELECT strftime(ts, '%A %B')", "SELECT date_trunc('week', ts)",
    "SELECT datediff('hour', ts, ts2)", "SELECT datesub('day', d, DATE '2024-01-01')",
    "SELECT date_part(['year', 'month'], d)", "SELECT ts::DATE, d::TIMESTAMP, '2024-01-01'::DATE",
    "SELECT CAST(x AS INTEGER), CAST(g AS VARCHAR), CAST('1.5' AS DOUBLE)", "SELECT s SIMILAR TO 'a.*', s GLOB 'a*'",
    "SELECT s ILIKE '%P%', s NOT LIKE 'a%'", "SELECT contains(s, NULL)", "SELECT suffix(s, 'e'), ends_with(s, 'e')",
    "SELECT regexp_full_match(s, 'a.*')", "SELECT lcase(s), ucase(s)", "SELECT substr(s, 2), substring(s, 2, 3)",
    "SELECT array_length([1,2])",
]]


def _python_rows_differ(got: list[tuple], want: list[tuple]) -> str | None:
    """INTERVAL results: the Python values (datetime.timedelta) must be DuckDB's too."""
    if sorted(got, key=repr) == sorted(want, key=repr):
        return None
    return f"Python rows differ: {got[:3]} vs DuckDB {want[:3]}"


def run(filter_text: str | None, verbose: bool, probes: list[tuple[str, str]] = PROBES) -> dict[str, int]:
    duck = duckdb.connect()
    duck.execute("SET threads TO 2")
    counts = {"agree": 0, "names": 0, "differ": 0, "refused": 0, "error": 0}
    with hetdb.connect(":memory:", device="cpu") as con:
        for stmt in SETUP:
            duck.execute(stmt)
            con.execute(stmt)
        for name, sql in probes:
            if filter_text and filter_text not in name:
                continue
            want = duck.sql(sql).to_arrow_table()
            try:
                got = con.sql(sql).arrow()
            except (UnsupportedError, SqlError) as e:
                outcome, detail = "refused", f"{type(e).__name__}: {e}"
            except HetdbError as e:
                outcome, detail = "error", f"{type(e).__name__}: {e}"
            except Exception as e:  # noqa: BLE001 - an internal error is a finding of the probe
                outcome, detail = "error", f"internal {type(e).__name__}: {e}"
            else:
                diff = compare_tables(got, want, ordered="ORDER BY" in sql)
                if diff is None and pa.month_day_nano_interval() in want.schema.types:
                    diff = _python_rows_differ(con.sql(sql).fetchall(), duck.sql(sql).fetchall())
                if diff is not None:
                    outcome, detail = "differ", diff
                elif got.column_names != want.column_names:
                    outcome, detail = "names", f"{got.column_names} vs DuckDB {want.column_names}"
                else:
                    outcome, detail = "agree", ""
            counts[outcome] += 1
            print(f"{outcome:8} {name}" + (f"\n         {detail}" if verbose and detail else ""))
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("-k", dest="filter", default=None, help="only probes whose name contains this")
    ap.add_argument("--extras", action="store_true", help="run the EXTRAS list instead of issue 14's probes")
    args = ap.parse_args(argv)
    counts = run(args.filter, args.verbose, EXTRAS if args.extras else PROBES)
    total = sum(counts.values())
    print(f"{total} probes: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
