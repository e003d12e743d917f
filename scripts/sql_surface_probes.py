"""The probes of ``sql_surface_audit.py``: every construct issue 14 lists in Deliver 1-5, with the
edges the issue names (NULLs, empty input, ties, frames at partition edges, leap years and month ends,
time zones across a DST change), over small tables built by ``SETUP`` on hetdb and on DuckDB alike.

A probe is ``P(section, name, sql)``; ``ordered`` compares rows in order (the query's ORDER BY is
total), ``setup`` statements run on both engines before the query (and ``RESET`` ones after),
``error`` names a text hetdb's error must contain where the statement is one hetdb must refuse or fail
(DuckDB is not run on those: a runaway WITH RECURSIVE never stops there).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class P:
    section: str
    name: str
    sql: str
    ordered: bool = False
    setup: tuple[str, ...] = ()
    reset: tuple[str, ...] = ()
    error: str | None = None


def _w_rows() -> str:
    """24 rows: partitions 1..3 and NULL, order keys with ties and NULLs, values with NULLs, dates
    across the 2024 leap day and month ends, timestamps across the US DST change of 2024-03-10."""
    names = ["apple", "Pear", "fig", None, "kiwi", "plum", "fig", "ápple", "b-c-d", "", "apple", "zeta"]
    rows = []
    for i in range(1, 25):
        p = [1, 2, 3, None][i % 4]
        o = None if i % 6 == 0 else (i * 7) % 5
        v = None if i % 5 == 0 else (i * 3) % 11 - 4
        f = None if i % 7 == 0 else i / 4 - 2.5
        s = names[i % len(names)]
        day = f"DATE '2024-02-{20 + i}'" if i <= 9 else f"DATE '2024-03-{i - 9:02d}'" if i < 23 else "NULL"
        hour = 20 + 3 * i
        ts = f"TIMESTAMP '2024-03-{9 + hour // 24:02d} {hour % 24:02d}:{(i * 13) % 60:02d}:{(i * 7) % 60:02d}.{i * 4567:06d}'"
        cells = [str(i), "NULL" if p is None else str(p), "NULL" if o is None else str(o),
                 "NULL" if v is None else str(v), "NULL" if f is None else repr(f),
                 "NULL" if s is None else "'" + s + "'", day, ts]
        rows.append("(" + ", ".join(cells) + ")")
    return ", ".join(rows)


SETUP = [
    "SET TimeZone = 'UTC'",
    "CREATE TABLE w (id INTEGER, p INTEGER, o INTEGER, v INTEGER, f DOUBLE, s VARCHAR, d DATE, ts TIMESTAMP)",
    f"INSERT INTO w VALUES {_w_rows()}",
    "CREATE TABLE e (id INTEGER, p INTEGER, o INTEGER, v INTEGER, f DOUBLE, s VARCHAR, d DATE, ts TIMESTAMP)",
    "CREATE TABLE a (k INTEGER, s VARCHAR)",
    "INSERT INTO a VALUES (1, 'x'), (1, 'x'), (1, 'x'), (2, 'y'), (NULL, NULL), (NULL, NULL), (3, 'z')",
    "CREATE TABLE b (k INTEGER, s VARCHAR)",
    "INSERT INTO b VALUES (1, 'x'), (1, 'x'), (NULL, NULL), (4, 'q'), (3, 'z')",
    "CREATE TABLE edges (src INTEGER, dst INTEGER)",
    "INSERT INTO edges VALUES (1, 2), (2, 3), (3, 4), (2, 5), (5, 6), (6, 2)",
    "CREATE TABLE tzt (id INTEGER, ts TIMESTAMP)",
    "INSERT INTO tzt VALUES (1, TIMESTAMP '2024-03-10 06:30:00'), (2, TIMESTAMP '2024-03-10 07:30:00'), "
    "(3, TIMESTAMP '2024-11-03 05:30:00'), (4, TIMESTAMP '2024-11-03 06:30:00'), "
    "(5, TIMESTAMP '2024-03-31 00:30:00'), (6, TIMESTAMP '2024-03-31 01:30:00'), (7, NULL)",
    # 300,000 rows in 3 partitions: window partitions far past the tiny configurations' budgets
    "CREATE TABLE big AS SELECT CAST(range AS INTEGER) AS id, CAST(range % 3 AS INTEGER) AS p, "
    "CAST(range * 7919 % 1000 AS INTEGER) AS v, CAST(range * 31 % 997 AS DOUBLE) / 8 AS f FROM range(300000)",
]

PO = "PARTITION BY p ORDER BY id"

# 1. window functions, every frame kind, QUALIFY
WINDOWS = [
    P("window", "row_number", f"SELECT id, row_number() OVER ({PO}) FROM w"),
    P("window", "row_number_no_partition", "SELECT id, row_number() OVER (ORDER BY v DESC NULLS FIRST, id) FROM w"),
    P("window", "rank_ties_nulls", "SELECT id, rank() OVER (PARTITION BY p ORDER BY o) FROM w"),
    P("window", "dense_rank_desc", "SELECT id, dense_rank() OVER (PARTITION BY p ORDER BY o DESC NULLS LAST) FROM w"),
    P("window", "percent_rank", "SELECT id, percent_rank() OVER (PARTITION BY p ORDER BY o) FROM w"),
    P("window", "cume_dist", "SELECT id, cume_dist() OVER (PARTITION BY p ORDER BY o NULLS FIRST) FROM w"),
    P("window", "ntile", f"SELECT id, ntile(4) OVER ({PO}), ntile(10) OVER (ORDER BY id) FROM w"),
    P("window", "lag_lead", f"SELECT id, lag(v) OVER ({PO}), lead(v) OVER ({PO}) FROM w"),
    P("window", "lag_lead_offset_default", f"SELECT id, lag(v, 2, -1) OVER ({PO}), lead(s, 3, 'none') OVER ({PO}), "
      f"lag(f, 0) OVER ({PO}) FROM w"),
    P("window", "lag_dates", f"SELECT id, lag(d) OVER ({PO}), lead(ts, 1) OVER ({PO}) FROM w"),
    P("window", "first_last_value_default_frame", f"SELECT id, first_value(v) OVER ({PO}), last_value(v) OVER ({PO}) FROM w"),
    P("window", "first_last_value_full_frame", "SELECT id, first_value(s) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN "
      "UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), last_value(s) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN "
      "UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM w"),
    P("window", "first_value_ignore_nulls", f"SELECT id, first_value(v IGNORE NULLS) OVER ({PO}), "
      f"last_value(v IGNORE NULLS) OVER ({PO}) FROM w"),
    P("window", "nth_value", f"SELECT id, nth_value(v, 2) OVER ({PO}), nth_value(v, 3) OVER (PARTITION BY p ORDER BY id "
      "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM w"),
    P("window", "rows_n_preceding", f"SELECT id, sum(v) OVER ({PO} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM w"),
    P("window", "rows_preceding_following", f"SELECT id, avg(f) OVER ({PO} ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w"),
    P("window", "rows_current_unbounded_following", f"SELECT id, count(v) OVER ({PO} ROWS BETWEEN CURRENT ROW AND "
      f"UNBOUNDED FOLLOWING), min(s) OVER ({PO} ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM w"),
    P("window", "rows_preceding_only", f"SELECT id, sum(v) OVER ({PO} ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) FROM w"),
    P("window", "rows_following_only", f"SELECT id, max(v) OVER ({PO} ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) FROM w"),
    P("window", "rows_short_form", f"SELECT id, sum(v) OVER ({PO} ROWS UNBOUNDED PRECEDING), "
      f"count(*) OVER ({PO} ROWS 2 PRECEDING) FROM w"),
    P("window", "range_default_ties", "SELECT id, sum(v) OVER (PARTITION BY p ORDER BY o), count(*) OVER (ORDER BY o) FROM w"),
    P("window", "range_numeric_offsets", "SELECT id, sum(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 1 PRECEDING "
      "AND 1 FOLLOWING) FROM w"),
    P("window", "range_desc_offsets", "SELECT id, count(*) OVER (ORDER BY f DESC RANGE BETWEEN 1.5 PRECEDING AND "
      "CURRENT ROW) FROM w"),
    P("window", "range_interval_date", "SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN INTERVAL 3 DAY PRECEDING "
      "AND CURRENT ROW) FROM w"),
    P("window", "range_interval_timestamp", "SELECT id, sum(v) OVER (PARTITION BY p ORDER BY ts RANGE BETWEEN "
      "INTERVAL '12 hours' PRECEDING AND INTERVAL 1 HOUR FOLLOWING) FROM w"),
    P("window", "range_current_row", "SELECT id, sum(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN CURRENT ROW "
      "AND CURRENT ROW) FROM w"),
    P("window", "range_unbounded_following", "SELECT id, sum(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN "
      "CURRENT ROW AND UNBOUNDED FOLLOWING) FROM w"),
    P("window", "groups_frame", "SELECT id, sum(v) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 1 PRECEDING AND "
      "CURRENT ROW) FROM w"),
    P("window", "exclude_current_row", f"SELECT id, sum(v) OVER ({PO} ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING "
      "EXCLUDE CURRENT ROW) FROM w"),
    P("window", "agg_whole_partition", "SELECT id, sum(v) OVER (PARTITION BY p), avg(v) OVER (PARTITION BY p), "
      "min(d) OVER (PARTITION BY p), max(ts) OVER (PARTITION BY p), count(*) OVER () FROM w"),
    P("window", "agg_stats_over", "SELECT id, stddev_samp(f) OVER (PARTITION BY p), var_pop(f) OVER (PARTITION BY p), "
      "bool_and(v > 0) OVER (PARTITION BY p), bool_or(v > 3) OVER (PARTITION BY p) FROM w"),
    P("window", "agg_stats_frames", f"SELECT id, stddev_samp(f) OVER ({PO} ROWS BETWEEN 3 PRECEDING AND CURRENT ROW), "
      f"var_pop(v) OVER ({PO}), stddev_pop(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 1 PRECEDING AND 1 "
      "FOLLOWING EXCLUDE GROUP) FROM w"),
    P("window", "exclude_group_ties", "SELECT id, sum(v) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN UNBOUNDED "
      "PRECEDING AND CURRENT ROW EXCLUDE GROUP), count(*) OVER (PARTITION BY p ORDER BY o GROUPS BETWEEN 1 PRECEDING "
      "AND 1 FOLLOWING EXCLUDE TIES), max(s) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED "
      "FOLLOWING EXCLUDE TIES), median(f) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING "
      "EXCLUDE GROUP), mode(o) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE "
      f"CURRENT ROW), avg(v) OVER ({PO} ROWS 1 PRECEDING EXCLUDE NO OTHERS) FROM w"),
    P("window", "agg_issue_aggregates_frames", f"SELECT id, string_agg(s, '|') OVER ({PO} ROWS BETWEEN 2 PRECEDING "
      f"AND CURRENT ROW), arg_max(s, id) OVER ({PO} ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), arg_min(id, f) OVER "
      f"({PO}), approx_count_distinct(o) OVER ({PO}), median(d) OVER ({PO} ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), "
      f"bool_or(v > 3) OVER ({PO} ROWS 2 PRECEDING) FROM w"),
    P("window", "agg_more_over_windows", f"SELECT id, quantile_disc(v, 0.4) OVER ({PO}), count_if(v > 0) OVER ({PO}), "
      f"any_value(s) OVER ({PO} ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING), bit_or(v + 4) OVER (PARTITION BY p), "
      f"max(v > 0) OVER ({PO}), count(DISTINCT s) OVER ({PO} ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) FROM w"),
    P("window", "agg_holistic_over", "SELECT id, median(f) OVER (PARTITION BY p), quantile_cont(v, 0.25) OVER "
      "(PARTITION BY p), mode(o) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM w"),
    P("window", "agg_arg_string_over", "SELECT id, arg_max(id, v) OVER (PARTITION BY p), "
      "string_agg(s, ',' ORDER BY id) OVER (PARTITION BY p) FROM w"),
    P("window", "agg_running_median", f"SELECT id, median(v) OVER ({PO} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM w"),
    P("window", "count_distinct_over", "SELECT id, count(DISTINCT o) OVER (PARTITION BY p) FROM w"),
    P("window", "agg_filter_over", "SELECT id, sum(v) FILTER (WHERE o > 1) OVER (PARTITION BY p ORDER BY id) FROM w"),
    P("window", "named_window", "SELECT id, sum(v) OVER win, row_number() OVER win FROM w "
      "WINDOW win AS (PARTITION BY p ORDER BY id)"),
    P("window", "partition_by_expression", "SELECT id, rank() OVER (PARTITION BY p, v % 2 ORDER BY s NULLS FIRST, id) FROM w"),
    P("window", "window_arithmetic", f"SELECT id, v - lag(v) OVER ({PO}), 100.0 * v / sum(v) OVER (PARTITION BY p) FROM w"),
    P("window", "window_over_group_by", "SELECT p, sum(v) AS t, rank() OVER (ORDER BY sum(v) DESC) FROM w GROUP BY p"),
    P("window", "window_in_order_by", "SELECT id FROM w ORDER BY row_number() OVER (ORDER BY v DESC NULLS LAST, id), id",
      ordered=True),
    P("window", "window_empty_input", "SELECT id, row_number() OVER (ORDER BY id), sum(v) OVER (PARTITION BY p) FROM e"),
    P("window", "window_filtered_to_nothing", "SELECT id, lag(v) OVER (ORDER BY id) FROM w WHERE id > 100"),
    P("window", "window_decimal_running_sum", f"SELECT id, sum(CAST(f AS DECIMAL(10,2))) OVER ({PO}) FROM w"),
    P("window", "qualify_top2", "SELECT p, id, v FROM w QUALIFY row_number() OVER (PARTITION BY p ORDER BY v DESC "
      "NULLS LAST, id) <= 2"),
    P("window", "qualify_alias", "SELECT id, rank() OVER (PARTITION BY p ORDER BY o) AS r FROM w QUALIFY r = 1"),
    P("window", "qualify_with_where_group", "SELECT p, count(*) AS c FROM w WHERE v IS NOT NULL GROUP BY p "
      "QUALIFY rank() OVER (ORDER BY count(*) DESC) <= 2"),
]

# 1b. windows whose partitions hold 100,000 rows each: under cpu-tiny (256 KB host budget, 7-row
# batches) and gpu-tiny (1 MB GPU budget) they spill or run on the host; answers aggregated to compare
BIG = [
    P("window_spill", "big_ranks_running", "SELECT p, count(*), sum(rn), max(rk), sum(rs) FROM (SELECT p, "
      "row_number() OVER (PARTITION BY p ORDER BY v, id) AS rn, rank() OVER (PARTITION BY p ORDER BY v) AS rk, "
      "sum(v) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS rs FROM big) GROUP BY p"),
    P("window_spill", "big_lag_lead_ntile", "SELECT q, count(*), sum(d), min(f), max(f), sum(nx) FROM (SELECT f, "
      "v - lag(v) OVER (ORDER BY id) AS d, lead(v, 2, 0) OVER (PARTITION BY p ORDER BY id) AS nx, "
      "ntile(4) OVER (ORDER BY f, id) AS q FROM big) GROUP BY q"),
    P("window_spill", "big_qualify_top3", "SELECT p, id, v FROM big QUALIFY row_number() OVER (PARTITION BY p "
      "ORDER BY v DESC, id) <= 3"),
    P("window_spill", "big_frames_exclude", "SELECT p, sum(a), sum(m), sum(fv), count(mo) FROM (SELECT p, "
      "avg(f) OVER (PARTITION BY p ORDER BY v RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS a, "
      "median(v) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING EXCLUDE CURRENT ROW) "
      "AS m, first_value(v) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 5 FOLLOWING) AS fv, "
      "mode(v) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS mo FROM big) "
      "GROUP BY p"),
    P("window_spill", "big_whole_partition", "SELECT p, max(c), min(mx), sum(cd) FROM (SELECT p, "
      "count(*) OVER (PARTITION BY p) AS c, max(f) OVER (PARTITION BY p) AS mx, "
      "count(DISTINCT v) OVER (PARTITION BY p) AS cd FROM big) GROUP BY p"),
]

# 2. set operations and grouping
SETOPS = [
    P("setops", "union_distinct", "SELECT k, s FROM a UNION SELECT k, s FROM b"),
    P("setops", "union_all", "SELECT k FROM a UNION ALL SELECT k FROM b"),
    P("setops", "intersect_nulls", "SELECT k, s FROM a INTERSECT SELECT k, s FROM b"),
    P("setops", "intersect_all", "SELECT k, s FROM a INTERSECT ALL SELECT k, s FROM b"),
    P("setops", "except_nulls", "SELECT k, s FROM a EXCEPT SELECT k, s FROM b"),
    P("setops", "except_all", "SELECT k, s FROM a EXCEPT ALL SELECT k, s FROM b"),
    P("setops", "setop_precedence", "SELECT k FROM a UNION ALL SELECT k FROM b INTERSECT SELECT k FROM b"),
    P("setops", "setop_order_limit", "SELECT k FROM a UNION SELECT k FROM b ORDER BY k NULLS FIRST LIMIT 3", ordered=True),
    P("setops", "setop_type_widening", "SELECT k FROM a UNION SELECT f FROM w WHERE id < 4"),
    P("setops", "union_by_name", "SELECT k, s FROM a UNION BY NAME SELECT s, k * 10 AS k, 'extra' AS z FROM b"),
    P("setops", "union_all_by_name", "SELECT k FROM a UNION ALL BY NAME SELECT s FROM b"),
    P("setops", "rollup", "SELECT p, o, count(*), sum(v) FROM w GROUP BY ROLLUP (p, o)"),
    P("setops", "cube", "SELECT p, v > 0 AS pos, count(*), grouping(p, pos) FROM w GROUP BY CUBE (p, pos)"),
    P("setops", "grouping_sets", "SELECT p, o, count(*), grouping(p), grouping(o) FROM w "
      "GROUP BY GROUPING SETS ((p, o), (p), ())"),
    P("setops", "grouping_id", "SELECT p, o, grouping_id(p, o) FROM w GROUP BY ROLLUP (p, o)"),
    P("setops", "rollup_having_order", "SELECT p, sum(v) AS t FROM w GROUP BY ROLLUP (p) HAVING sum(v) > 0 "
      "ORDER BY grouping(p), p NULLS LAST", ordered=True),
    P("setops", "filter_clause", "SELECT p, count(*) FILTER (WHERE v > 0), sum(f) FILTER (WHERE o = 1), "
      "count(DISTINCT o) FILTER (WHERE v IS NOT NULL), avg(v) FILTER (WHERE false) FROM w GROUP BY p"),
    P("setops", "filter_no_group", "SELECT count(*) FILTER (WHERE s LIKE '%p%'), max(d) FILTER (WHERE v < 0) FROM w"),
    P("setops", "distinct_on", "SELECT DISTINCT ON (p) p, id, v FROM w ORDER BY p, v DESC NULLS LAST, id"),
    P("setops", "distinct_on_two_keys", "SELECT DISTINCT ON (p, o) p, o, id FROM w ORDER BY p, o, id DESC"),
    P("setops", "values_from", "SELECT * FROM (VALUES (1, 'a', 2.5), (2, NULL, NULL), (NULL, 'c', 1)) v(x, y, z)"),
    P("setops", "values_statement", "VALUES (1, 'a'), (2, 'b')"),
    P("setops", "values_join", "SELECT w.id, v.label FROM w JOIN (VALUES (1, 'one'), (2, 'two')) v(k, label) "
      "ON w.p = v.k"),
    P("setops", "order_by_all", "SELECT p, o, id FROM w ORDER BY ALL", ordered=True),
    P("setops", "order_by_all_desc", "SELECT p, s FROM w ORDER BY ALL DESC", ordered=True),
    P("setops", "group_by_all", "SELECT p, o, count(*) FROM w GROUP BY ALL"),
    P("setops", "is_distinct_from", "SELECT id, v IS DISTINCT FROM o, v IS NOT DISTINCT FROM NULL, "
      "s IS DISTINCT FROM 'fig' FROM w"),
    P("setops", "is_not_distinct_join", "SELECT count(*) FROM a JOIN b ON a.k IS NOT DISTINCT FROM b.k"),
    P("setops", "recursive_counter", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100) "
      "SELECT count(*), sum(n) FROM r"),
    P("setops", "recursive_graph_union", "WITH RECURSIVE reach(node) AS (SELECT 1 UNION SELECT e.dst FROM edges e "
      "JOIN reach r ON e.src = r.node) SELECT node FROM reach"),
    P("setops", "recursive_paths", "WITH RECURSIVE p(node, depth, path) AS (SELECT 1, 0, '1' UNION ALL "
      "SELECT e.dst, depth + 1, path || '>' || e.dst FROM edges e JOIN p ON e.src = p.node WHERE depth < 6) "
      "SELECT node, depth, path FROM p"),
    P("setops", "recursive_limit", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
      "SELECT count(*) FROM r", error="recursion_limit"),
]

# 3. dates and times
TZ = ("SET TimeZone = 'America/New_York'",)
UTC = ("SET TimeZone = 'UTC'",)
PARTS = ["year", "quarter", "month", "week", "day", "dow", "isodow", "doy", "hour", "minute", "second",
         "millisecond", "microsecond", "epoch", "isoyear", "yearweek", "decade", "century", "millennium", "era"]
DATES = [
    P("dates", "timestamp_literal_us", "SELECT TIMESTAMP '2024-02-29 23:59:59.999999', "
      "CAST('2021-01-01 00:00:01.5' AS TIMESTAMP), '1999-12-31 12:00'::TIMESTAMP"),
    P("dates", "timestamp_cast_date", "SELECT id, CAST(ts AS DATE), CAST(d AS TIMESTAMP), CAST(ts AS VARCHAR) FROM w"),
    P("dates", "timestamptz_literal", "SELECT TIMESTAMPTZ '2024-03-10 01:30:00-05', "
      "CAST('2024-11-03 01:30:00+00' AS TIMESTAMPTZ)"),
    P("dates", "timestamptz_shown_in_zone", "SELECT id, CAST(ts AS TIMESTAMPTZ), CAST(CAST(ts AS TIMESTAMPTZ) AS VARCHAR) "
      "FROM tzt", setup=TZ, reset=UTC),
    P("dates", "timestamptz_parts_in_zone", "SELECT id, extract(hour FROM ts::TIMESTAMPTZ), "
      "date_trunc('day', ts::TIMESTAMPTZ), ts::TIMESTAMPTZ::DATE FROM tzt", setup=TZ, reset=UTC),
    P("dates", "timestamptz_plus_day_dst", "SELECT id, ts::TIMESTAMPTZ + INTERVAL 1 DAY, "
      "ts::TIMESTAMPTZ + INTERVAL 24 HOUR, ts::TIMESTAMPTZ - INTERVAL 1 MONTH FROM tzt", setup=TZ, reset=UTC),
    P("dates", "timestamptz_strftime", "SELECT id, strftime(ts::TIMESTAMPTZ, '%Y-%m-%d %H:%M %Z') FROM tzt",
      setup=TZ, reset=UTC),
    P("dates", "timestamptz_europe_dst", "SELECT id, ts::TIMESTAMPTZ, extract(hour FROM ts::TIMESTAMPTZ), "
      "date_trunc('hour', ts::TIMESTAMPTZ) FROM tzt", setup=("SET TimeZone = 'Europe/Berlin'",), reset=UTC),
    P("dates", "timestamp_to_tz_nonexistent", "SELECT CAST(TIMESTAMP '2024-03-10 02:30:00' AS TIMESTAMPTZ), "
      "CAST(TIMESTAMP '2024-11-03 01:30:00' AS TIMESTAMPTZ)", setup=TZ, reset=UTC),
    P("dates", "timezone_function", "SELECT id, timezone('Asia/Tokyo', ts::TIMESTAMPTZ), "
      "ts AT TIME ZONE 'America/Los_Angeles' FROM tzt"),
    P("dates", "date_plus_interval_types", "SELECT d + INTERVAL 1 MONTH, d - INTERVAL 3 DAY, d + 7, d - 1, "
      "d + INTERVAL '2 hours' FROM w"),
    P("dates", "month_end_arith", "SELECT DATE '2024-01-31' + INTERVAL 1 MONTH, DATE '2023-01-31' + INTERVAL 1 MONTH, "
      "DATE '2024-02-29' + INTERVAL 1 YEAR, DATE '2024-03-31' - INTERVAL 1 MONTH, "
      "TIMESTAMP '2024-01-31 10:00' + INTERVAL '1 month 1 day'"),
    P("dates", "timestamp_interval_arith", "SELECT id, ts + INTERVAL 90 MINUTE, ts - INTERVAL '1 year 2 months', "
      "ts + INTERVAL 1 SECOND * v FROM w"),
    P("dates", "date_minus_date", "SELECT id, d - DATE '2024-01-01', DATE '2024-03-01' - d FROM w"),
    P("dates", "timestamp_minus_timestamp", "SELECT id, ts - TIMESTAMP '2024-03-10 00:00:00', "
      "ts - CAST(d AS TIMESTAMP) FROM w"),
    P("dates", "interval_ops", "SELECT INTERVAL 1 DAY + INTERVAL 2 HOUR, INTERVAL 1 DAY * 3, INTERVAL 3 HOUR / 2, "
      "-INTERVAL 1 MONTH, INTERVAL '1 year 2 months 3 days 04:05:06.5'"),
    P("dates", "time_type", "SELECT TIME '12:34:56' + INTERVAL 2 HOUR, CAST(ts AS TIME), extract(minute FROM "
      "TIME '12:34:56') FROM w WHERE id < 4"),
]
# issue 14's named edges beyond the first pass: DST in the connection's zone (arithmetic, grouping,
# differences), more date_diff/date_sub parts, strptime/strftime specifiers, make_timestamp,
# epoch_ms both ways
DATES += [
    P("dates", "timestamptz_dst_arith_zone", "SELECT id, ts::TIMESTAMPTZ + INTERVAL 1 DAY - ts::TIMESTAMPTZ, "
      "date_diff('hour', ts::TIMESTAMPTZ, ts::TIMESTAMPTZ + INTERVAL 1 DAY), "
      "date_trunc('day', ts::TIMESTAMPTZ) + INTERVAL 12 HOUR, ts::TIMESTAMPTZ < TIMESTAMPTZ '2024-03-10 03:30:00-04' "
      "FROM tzt", setup=TZ, reset=UTC),
    P("dates", "timestamptz_group_by_local_day", "SELECT date_trunc('day', ts::TIMESTAMPTZ) AS dd, count(*), "
      "min(ts::TIMESTAMPTZ) FROM tzt GROUP BY dd", setup=TZ, reset=UTC),
    P("dates", "timestamptz_literal_zone_names", "SELECT TIMESTAMPTZ '2024-03-10 02:30:00 America/New_York', "
      "TIMESTAMPTZ '2024-11-03 01:30:00 America/New_York', TIMESTAMPTZ '2024-07-01 12:00:00+02', "
      "CAST(TIMESTAMPTZ '2024-03-31 02:30:00 Europe/Berlin' AS VARCHAR)", setup=TZ, reset=UTC),
    P("dates", "timestamptz_extract_epoch_dst", "SELECT id, epoch(ts::TIMESTAMPTZ), extract(epoch FROM ts::TIMESTAMPTZ), "
      "epoch_ms(ts::TIMESTAMPTZ), extract(dow FROM ts::TIMESTAMPTZ) FROM tzt", setup=TZ, reset=UTC),
    P("dates", "date_diff_more_parts", "SELECT id, date_diff('microsecond', ts, TIMESTAMP '2024-03-11 00:00'), "
      "date_diff('decade', d, DATE '2041-01-01'), date_diff('century', d, DATE '2200-01-01'), "
      "date_diff('millennium', d, DATE '3001-01-01'), date_diff('isoyear', d, DATE '2026-01-05'), "
      "date_diff('dow', d, DATE '2024-03-31'), date_diff('doy', d, DATE '2024-03-31') FROM w"),
    P("dates", "date_sub_more_parts", "SELECT id, date_sub('quarter', d, DATE '2024-09-30'), "
      "date_sub('minute', ts, TIMESTAMP '2024-03-11 05:00'), date_sub('second', ts, TIMESTAMP '2024-03-11 05:00'), "
      "date_sub('millisecond', ts, TIMESTAMP '2024-03-11 05:00'), date_sub('decade', d, DATE '2044-02-29') FROM w"),
    P("dates", "date_diff_negative_and_null", "SELECT date_diff('month', DATE '2024-03-31', DATE '2024-01-31'), "
      "date_sub('month', DATE '2024-03-31', DATE '2024-02-29'), date_diff('day', NULL, DATE '2024-01-01'), "
      "date_diff('year', TIMESTAMP '2024-12-31 23:59', TIMESTAMP '2025-01-01 00:00')"),
    P("dates", "strptime_more_formats", "SELECT strptime('2024-060', '%Y-%j'), strptime('Thursday 29 February 2024', "
      "'%A %d %B %Y'), strptime('24-2-9 7:05:09', '%y-%-m-%-d %-H:%M:%S'), strptime('2024-02-29T10:11:12.5', "
      "'%Y-%m-%dT%H:%M:%S.%f'), strptime('12/31/99 11 PM', '%m/%d/%y %I %p')"),
    P("dates", "strptime_tz_offset", "SELECT strptime('2024-03-10 02:30:00 +0100', '%Y-%m-%d %H:%M:%S %z'), "
      "typeof(strptime('2024-03-10 02:30:00 +0100', '%Y-%m-%d %H:%M:%S %z'))", setup=TZ, reset=UTC),
    P("dates", "strftime_more", "SELECT id, strftime(ts, '%c'), strftime(ts, '%x %X'), strftime(d, '%d/%m/%Y'), "
      "strftime(ts, '%H%M%S%g'), strftime(ts, '%n %T %-j %z') FROM w WHERE id < 6"),
    P("dates", "make_timestamp_edges", "SELECT make_timestamp(2024, 2, 29, 0, 0, 0), make_timestamp(1969, 12, 31, 23, "
      "59, 59.999999), make_timestamp(0), make_timestamp(-1), make_date(2024, 13 - 1, 31), "
      "make_timestamp(NULL, 1, 1, 0, 0, 0)"),
    P("dates", "epoch_ms_both_ways", "SELECT epoch_ms(-1), epoch_ms(0), epoch_ms(1709251199999), "
      "epoch_ms(TIMESTAMP '1969-12-31 23:59:59.999'), epoch_ms(DATE '2024-02-29'), to_timestamp(-1.5), "
      "epoch_us(TIMESTAMP '2024-02-29 12:00:00.123456')"),
]
for _part in PARTS:
    _arg = "d" if _part in ("isoyear", "yearweek", "decade", "century", "millennium", "era", "week", "doy") else "ts"
    DATES.append(P("dates", f"extract_{_part}", f"SELECT id, extract({_part} FROM {_arg}), "
                   f"date_part('{_part}', {_arg}) FROM w"))
DATES += [
    P("dates", "extract_date_parts_of_date", "SELECT id, extract(quarter FROM d), extract(dow FROM d), "
      "extract(isodow FROM d), extract(doy FROM d), extract(week FROM d), extract(epoch FROM d) FROM w"),
    P("dates", "extract_interval", "SELECT extract(day FROM INTERVAL '40 days 5 hours'), "
      "date_part('hour', INTERVAL '40 days 5 hours'), extract(epoch FROM INTERVAL '1 day 2 hours'), "
      "extract(month FROM INTERVAL 14 MONTH)"),
    P("dates", "date_part_shorthands", "SELECT id, year(d), month(d), day(d), hour(ts), minute(ts), second(ts), "
      "dayofweek(d), dayofyear(d), weekofyear(d), quarter(d), dayname(d), monthname(d), last_day(d) FROM w"),
    P("dates", "date_trunc_date", "SELECT id, date_trunc('year', d), date_trunc('quarter', d), date_trunc('month', d), "
      "date_trunc('week', d), date_trunc('day', d), date_trunc('decade', d) FROM w"),
    P("dates", "date_trunc_timestamp", "SELECT id, date_trunc('hour', ts), date_trunc('minute', ts), "
      "date_trunc('second', ts), date_trunc('millisecond', ts), date_trunc('week', ts), date_trunc('century', ts) FROM w"),
    P("dates", "date_diff_parts", "SELECT id, date_diff('day', d, DATE '2024-03-01'), date_diff('month', d, "
      "DATE '2024-03-31'), date_diff('year', d, DATE '2025-01-01'), date_diff('week', d, DATE '2024-03-04'), "
      "date_diff('quarter', d, DATE '2024-07-01') FROM w"),
    P("dates", "date_diff_timestamp", "SELECT id, date_diff('hour', ts, TIMESTAMP '2024-03-11 00:00'), "
      "date_diff('minute', ts, TIMESTAMP '2024-03-11 00:00'), date_diff('second', ts, TIMESTAMP '2024-03-11 00:00'), "
      "date_diff('millisecond', ts, TIMESTAMP '2024-03-11 00:00'), datediff('day', ts, TIMESTAMP '2024-03-11') FROM w"),
    P("dates", "date_sub_parts", "SELECT id, date_sub('month', d, DATE '2024-03-31'), date_sub('year', d, "
      "DATE '2025-02-28'), date_sub('day', ts, TIMESTAMP '2024-03-11 05:00'), date_sub('hour', ts, "
      "TIMESTAMP '2024-03-11 05:00'), datesub('week', d, DATE '2024-04-01') FROM w"),
    P("dates", "date_diff_month_end", "SELECT date_diff('month', DATE '2024-01-31', DATE '2024-02-29'), "
      "date_sub('month', DATE '2024-01-31', DATE '2024-02-29'), date_sub('month', DATE '2024-01-31', DATE '2024-03-31'), "
      "date_sub('year', DATE '2020-02-29', DATE '2021-02-28')"),
    P("dates", "strftime_formats", "SELECT id, strftime(ts, '%Y-%m-%d %H:%M:%S.%f'), strftime(d, '%a %A %b %B %j'), "
      "strftime(ts, '%I:%M %p %y'), strftime(d, '%U %W %V %G %u %w'), strftime(ts, '%-d/%-m %%') FROM w"),
    P("dates", "strptime_formats", "SELECT strptime('2024-02-29 10:11:12', '%Y-%m-%d %H:%M:%S'), "
      "strptime('29/02/2024', '%d/%m/%Y'), strptime('2024-03-10 02:30:00.123456', '%Y-%m-%d %H:%M:%S.%f'), "
      "strptime('Feb 29 2024 1:05 PM', '%b %d %Y %I:%M %p')"),
    P("dates", "strptime_column", "SELECT id, strptime(strftime(ts, '%d.%m.%Y %H-%M'), '%d.%m.%Y %H-%M') FROM w"),
    P("dates", "try_strptime", "SELECT try_strptime('2024-13-01', '%Y-%m-%d'), try_strptime('2024-12-01', '%Y-%m-%d')"),
    P("dates", "make_date_timestamp", "SELECT make_date(2024, 2, 29), make_timestamp(2024, 2, 29, 23, 59, 59.5), "
      "make_timestamp(1709251199000000), make_time(13, 14, 15.25)"),
    P("dates", "make_date_columns", "SELECT id, make_date(2020 + p, 1 + id % 12, 1 + id), "
      "make_timestamp(2024, 3, 10, id % 24, v + 10, f + 30) FROM w WHERE p IS NOT NULL AND v IS NOT NULL "
      "AND f IS NOT NULL"),
    P("dates", "to_timestamp_epoch", "SELECT to_timestamp(1700000000), to_timestamp(1700000000.5), epoch_ms(1700000000123), "
      "epoch_ms(TIMESTAMP '2024-01-01 00:00:00.5')"),
    P("dates", "epoch_functions", "SELECT id, epoch(ts), epoch_ms(ts), epoch_us(ts), epoch_ns(ts), epoch(d) FROM w"),
    P("dates", "current_date_now", "SELECT current_date = CAST(now() AS DATE), now() IS NOT NULL, "
      "current_timestamp <= now() + INTERVAL 1 MINUTE, today() = current_date"),
    P("dates", "leap_year_edges", "SELECT DATE '2024-02-28' + 1, DATE '2023-02-28' + 1, DATE '2000-02-28' + 1, "
      "DATE '1900-02-28' + 1, extract(doy FROM DATE '2024-12-31'), extract(doy FROM DATE '2023-12-31'), "
      "last_day(DATE '2024-02-10'), last_day(DATE '2100-02-10')"),
    P("dates", "iso_week_year_edges", "SELECT extract(week FROM DATE '2021-01-03'), extract(isoyear FROM "
      "DATE '2021-01-03'), extract(week FROM DATE '2024-12-30'), extract(isoyear FROM DATE '2024-12-30'), "
      "extract(yearweek FROM DATE '2024-12-30')"),
    P("dates", "age_function", "SELECT age(TIMESTAMP '2024-03-31', TIMESTAMP '2024-02-29'), age(DATE '2024-03-01', "
      "DATE '2023-02-28')"),
    P("dates", "date_filter_group", "SELECT date_trunc('week', d) AS wk, count(*) FROM w WHERE d >= DATE '2024-02-26' "
      "AND ts < TIMESTAMP '2024-03-12' GROUP BY wk"),
]

# 4. functions: aggregates, strings, regexes, math, TRY_CAST
FUNCS = [
    P("aggregate", "median", "SELECT p, median(v), median(f), median(d) FROM w GROUP BY p"),
    P("aggregate", "quantile_cont_disc", "SELECT p, quantile_cont(f, 0.9), quantile_disc(v, 0.5), quantile_cont(ts, 0.5) "
      "FROM w GROUP BY p"),
    P("aggregate", "quantile_list", "SELECT quantile_cont(v, [0.1, 0.5, 0.9]), quantile_disc(v, [0.25, 0.75]) FROM w"),
    P("aggregate", "median_decimal", "SELECT p, median(CAST(f AS DECIMAL(8,2))), quantile_cont(CAST(v AS DECIMAL(6,1)), 0.5), "
      "typeof(median(CAST(f AS DECIMAL(8,2)))) FROM w GROUP BY p"),
    P("aggregate", "stddev_var", "SELECT p, stddev(f), stddev_pop(f), stddev_samp(v), variance(v), var_samp(f), "
      "var_pop(v) FROM w GROUP BY p"),
    P("aggregate", "stddev_single_row", "SELECT stddev(v), var_samp(v), stddev_pop(v) FROM w WHERE id = 1"),
    P("aggregate", "string_agg", "SELECT p, string_agg(s, ', ' ORDER BY id), string_agg(s ORDER BY s DESC, id), "
      "listagg(s, '|' ORDER BY id) FROM w GROUP BY p"),
    P("aggregate", "string_agg_of_integers", "SELECT p, string_agg(v, ',' ORDER BY id) FROM w GROUP BY p"),
    P("aggregate", "string_agg_distinct", "SELECT string_agg(DISTINCT s, ',' ORDER BY s) FROM w"),
    P("aggregate", "arg_max_min", "SELECT p, arg_max(s, v), arg_min(id, f), max_by(d, v), min_by(s, ts) FROM w "
      "WHERE v IS NOT NULL GROUP BY p"),
    P("aggregate", "bool_and_or", "SELECT p, bool_and(v > -5), bool_or(v > 5), bool_and(o = 1) FROM w GROUP BY p"),
    P("aggregate", "mode", "SELECT mode(x), mode(y), mode(x) FILTER (WHERE y = 'a') FROM (VALUES (1, 'a'), "
      "(2, 'b'), (2, 'b'), (NULL, NULL), (NULL, NULL), (NULL, NULL), (3, 'a'), (1, 'a'), (1, 'a')) t(x, y)"),
    P("aggregate", "mode_grouped", "SELECT g, mode(x) FROM (VALUES (1, 5), (1, 5), (1, 6), (2, 7), (2, NULL), "
      "(2, NULL), (3, NULL)) t(g, x) GROUP BY g"),
    P("aggregate", "approx_count_distinct", "SELECT approx_count_distinct(s), approx_count_distinct(v), "
      "count(DISTINCT s) FROM w"),
    P("aggregate", "approx_quantile", "SELECT approx_quantile(v, 0.5) BETWEEN quantile_disc(v, 0.3) AND "
      "quantile_disc(v, 0.7), approx_quantile(f, 0.9) >= 1 FROM w"),
    P("aggregate", "count_sum_avg_empty", "SELECT count(*), count(v), sum(v), avg(f), min(s), max(d), bool_and(v > 0), "
      "string_agg(s, ','), median(v), stddev(f) FROM e"),
    P("aggregate", "group_by_empty", "SELECT p, count(*), sum(v) FROM e GROUP BY p"),
    P("aggregate", "avg_int_types", "SELECT avg(v), sum(v), sum(CAST(v AS BIGINT)), avg(CAST(f AS DECIMAL(8,2))) FROM w"),
    P("aggregate", "count_if_product", "SELECT count_if(v > 0), product(p), any_value(p IS NOT NULL), "
      "first(id ORDER BY id DESC) FROM w"),
    P("string", "trim_family", "SELECT id, trim(s), ltrim(s), rtrim(s), trim(s, 'ae'), ltrim('xxhixx', 'x') FROM w"),
    P("string", "replace", "SELECT id, replace(s, 'p', 'PP'), replace(s, '', 'x') FROM w"),
    P("string", "split_part", "SELECT id, split_part(s, '-', 2), split_part(s, '-', -1), split_part(s, '-', 9), "
      "split_part(s, '', 1) FROM w"),
    P("string", "starts_ends_contains", "SELECT id, starts_with(s, 'ap'), ends_with(s, 'e'), contains(s, 'i'), "
      "prefix(s, ''), suffix(s, 'ig') FROM w"),
    P("string", "regexp_matches", "SELECT id, regexp_matches(s, '^[a-z]+$'), regexp_matches(s, 'P', 'i'), "
      "regexp_full_match(s, '[a-z]+') FROM w"),
    P("string", "regexp_replace", "SELECT id, regexp_replace(s, '[aeiou]', '_'), regexp_replace(s, '[aeiou]', '_', 'g'), "
      "regexp_replace(s, '(.)(.)', '\\2\\1') FROM w"),
    P("string", "regexp_extract", "SELECT id, regexp_extract(s, '([a-z])-([a-z])', 2), regexp_extract(s, '[a-z]+'), "
      "regexp_extract(s, 'zz') FROM w"),
    P("string", "regexp_split_extract_all", "SELECT id, regexp_extract_all(s, '[aeiou]'), string_split(s, '-'), "
      "regexp_split_to_array(s, '[-i]') FROM w"),
    P("string", "pad_left_right", "SELECT id, lpad(s, 6, '*'), rpad(s, 3, '-'), left(s, 2), right(s, 2), "
      "left(s, -1), right(s, -2) FROM w"),
    P("string", "reverse_repeat_strpos", "SELECT id, reverse(s), repeat(s, 2), repeat(s, 0), strpos(s, 'p'), "
      "instr(s, 'i'), position('g' IN s) FROM w"),
    P("string", "length_case_unicode", "SELECT id, length(s), upper(s), lower(s), strlen(s), bit_length(s) FROM w"),
    P("string", "substring_forms", "SELECT id, substring(s, 2), substring(s, 2, 3), substr(s, -3), substring(s, 0, 2), "
      "s[2:3] FROM w"),
    P("string", "concat_nulls", "SELECT id, s || '!', concat(s, '!', NULL), concat_ws('-', s, p, NULL) FROM w"),
    P("string", "md5_hash", "SELECT id, md5(s), hash(s), hash(id), sha256(s) FROM w"),
    P("string", "format_printf", "SELECT id, format('{}-{}', s, p), printf('%s:%05d', s, id), printf('%.3f', f), "
      "format('{:.2f}', f) FROM w"),
    P("string", "like_ilike_glob", "SELECT id, s LIKE 'a%', s ILIKE '%P%', s NOT LIKE '%i%', s GLOB '[a-f]*', "
      "s SIMILAR TO '[a-z]+' FROM w"),
    P("string", "like_escape", "SELECT 'a_c' LIKE 'a\\_c' ESCAPE '\\', 'abc' LIKE 'a\\_c' ESCAPE '\\', "
      "'50%' LIKE '50!%' ESCAPE '!'"),
    P("string", "ascii_chr_unicode", "SELECT ascii('A'), chr(97), unicode('á'), ord('b')"),
    P("math", "log_family", "SELECT id, log(f + 3), ln(f + 3), log2(f + 3), log10(f + 3), log(2, f + 3) FROM w "
      "WHERE f > -3"),
    P("math", "sign_abs", "SELECT id, sign(f), sign(v), abs(v), abs(f), sign(-0.0) FROM w"),
    P("math", "round_family", "SELECT id, round(f), round(f, 1), round(v * 13, -1), ceil(f), floor(f), trunc(f), "
      "round(2.5), round(-2.5), round(CAST(2.345 AS DECIMAL(5,3)), 2) FROM w"),
    P("math", "power_sqrt_exp", "SELECT id, sqrt(abs(f)), pow(f, 2), power(2, v), exp(f), cbrt(v), f ** 2 FROM w"),
    P("math", "int_division_modulo", "SELECT id, v / 3, v // 3, v % 3, f % 1.5, -7 // 2, -7 % 3, 7 / 2 FROM w"),
    P("math", "division_by_zero", "SELECT 1 / 0, 1.0 / 0, -1 / 0, f / 0, 0 / 0 FROM w WHERE id < 3"),
    P("math", "random_setseed", "SELECT random() BETWEEN 0 AND 1, random() <> random() FROM w"),
    P("math", "typeof", "SELECT typeof(id), typeof(f), typeof(s), typeof(d), typeof(ts), typeof(1), typeof(1.5), "
      "typeof(NULL), typeof(INTERVAL 1 DAY), typeof(CAST(1 AS DECIMAL(10,2))) FROM w WHERE id = 1"),
    P("math", "trig_misc", "SELECT pi(), sin(1), cos(0), atan2(1, 2), degrees(pi()), radians(180), "
      "greatest(1, NULL, 3), least(2, 1.5), gcd(12, 18), lcm(4, 6), factorial(5), bit_count(7)"),
    P("math", "isnan_isinf", "SELECT isnan(CAST('NaN' AS DOUBLE)), isinf(CAST('inf' AS DOUBLE)), "
      "isfinite(1.0), 'NaN'::DOUBLE = 'NaN'::DOUBLE"),
    P("cast", "try_cast_strings", "SELECT id, TRY_CAST(s AS INTEGER), TRY_CAST(s AS DOUBLE), TRY_CAST(s AS DATE), "
      "TRY_CAST('12' AS INTEGER), TRY_CAST('2024-02-30' AS DATE), TRY_CAST('x' AS TIMESTAMP) FROM w"),
    P("cast", "try_cast_overflow", "SELECT TRY_CAST(300 AS TINYINT), TRY_CAST(-129 AS TINYINT), "
      "TRY_CAST(3000000000 AS INTEGER), TRY_CAST(1e300 AS FLOAT), TRY_CAST('1e3' AS BIGINT)"),
    P("cast", "cast_strings", "SELECT CAST('  42 ' AS INTEGER), CAST('1.50' AS DECIMAL(5,2)), CAST(42 AS VARCHAR), "
      "CAST(1.5 AS VARCHAR), CAST(TRUE AS INTEGER), CAST('true' AS BOOLEAN), CAST(DATE '2024-01-01' AS VARCHAR)"),
]

FUNCS += [
    P("aggregate", "approx_count_distinct_grouped", "SELECT p, approx_count_distinct(o), approx_count_distinct(d), "
      "approx_count_distinct(ts) FROM w GROUP BY p"),
    P("string", "format_more", "SELECT id, format('{:>8}|{:<6}|{:^7}', s, p, v), format('{:,}', id * 123456), "
      "format('{:05d}', v), format('{1}-{0}', s, id) FROM w WHERE v IS NOT NULL AND s IS NOT NULL"),
    P("string", "printf_more", "SELECT id, printf('%-6s|%6s', s, s), printf('%x %X %o', id * 255, id * 255, id), "
      "printf('%+d %5.1f %e', v, f, f), printf('%%|%c', 65 + id) FROM w WHERE v IS NOT NULL AND s IS NOT NULL "
      "AND f IS NOT NULL"),
    P("string", "md5_hash_types", "SELECT id, md5(CAST(id AS VARCHAR)), hash(f), hash(d), hash(ts), hash(s, id), "
      "md5(NULL), hash(NULL) FROM w"),
]
NAMES_EXTRA = [
    P("names", "bare_null_type", "SELECT NULL, NULL AS n, coalesce(NULL, NULL), CASE WHEN id > 0 THEN NULL END, "
      "typeof(NULL) FROM w WHERE id < 3"),
    P("names", "bare_null_through_subquery", "SELECT x, y FROM (SELECT NULL AS x, id AS y FROM w) WHERE y < 4 "
      "UNION ALL SELECT NULL, 100"),
]

SETOPS += [
    P("setops", "union_by_name_types", "SELECT k, s FROM a UNION ALL BY NAME SELECT CAST(k AS BIGINT) AS k, NULL AS s, "
      "1.5 AS extra FROM b"),
    P("setops", "grouping_in_having_order", "SELECT p, o, grouping(p, o) AS g, count(*) FROM w GROUP BY CUBE (p, o) "
      "HAVING grouping(o) = 1 ORDER BY g, p NULLS FIRST", ordered=True),
    P("setops", "recursive_limit_setting", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
      "SELECT count(*) FROM r", error="recursion"),
]

# 5. names and messages
NAMES = [
    P("names", "names_aggregates", "SELECT count(*), count(v), sum(v), avg(f + 1), max(upper(s)) FROM w"),
    P("names", "names_expressions", "SELECT id + 1, -v, v * 2.5, CAST(v AS BIGINT), s || 'x', v IS NULL, "
      "CASE WHEN v > 0 THEN 1 END, coalesce(v, 0), 1, 'a', NULL FROM w"),
    P("names", "names_functions", "SELECT extract(year FROM d), date_trunc('month', d), lower(s), "
      "row_number() OVER (ORDER BY id), v BETWEEN 1 AND 3, v IN (1, 2) FROM w"),
    P("names", "names_star_and_dups", "SELECT *, id, id FROM a, (SELECT 1 AS id) x"),
    P("names", "alias_in_where", "SELECT v * 2 AS dbl FROM w WHERE dbl > 3"),
    P("names", "alias_in_group_by", "SELECT id % 3 AS bucket, count(*) FROM w GROUP BY bucket"),
    P("names", "alias_in_having", "SELECT p, sum(v) AS total FROM w GROUP BY p HAVING total > 1"),
    P("names", "alias_lateral_select", "SELECT v + 1 AS a1, a1 * 2 AS a2 FROM w"),
    P("names", "alias_in_order_by_expr", "SELECT id, v AS vv FROM w ORDER BY vv DESC NULLS LAST, id", ordered=True),
    P("names", "group_order_by_ordinal", "SELECT p, count(*) FROM w GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST",
      ordered=True),
    P("names", "column_shadows_alias", "SELECT v + 100 AS v FROM w WHERE v > 2"),
]

MESSAGES = [
    P("messages", "unknown_function", "SELECT frobnicate(v) FROM w", error="frobnicate"),
    P("messages", "unknown_column", "SELECT nosuchcol FROM w", error="nosuchcol"),
    P("messages", "unknown_table", "SELECT * FROM nosuchtable", error="nosuchtable"),
    P("messages", "wrong_argument_count", "SELECT date_trunc('month') FROM w", error="date_trunc"),
    P("messages", "bad_date_part", "SELECT date_trunc('fortnight', d) FROM w", error="fortnight"),
    P("messages", "bad_extract_part", "SELECT date_part('fortnight', d) FROM w", error="fortnight"),
    P("messages", "modulo_by_zero", "SELECT v % 0 FROM w", error="v % 0"),
    P("messages", "decimal_modulo_by_zero", "SELECT 5.0 % 0", error="5.0 % 0"),
    P("messages", "window_in_where", "SELECT id FROM w WHERE row_number() OVER () > 1", error="WHERE"),
    P("messages", "ntile_bad_arg", "SELECT ntile(0) OVER (ORDER BY id) FROM w", error="ntile"),
    P("messages", "cast_failure_names_value", "SELECT CAST(s AS INTEGER) FROM w WHERE s = 'apple' OR s = '42'",
      error="apple"),
    P("messages", "strptime_failure", "SELECT strptime('2024-13-01', '%Y-%m-%d')", error="2024-13-01"),
    P("messages", "set_op_arity", "SELECT k, s FROM a UNION SELECT k FROM b", error="UNION"),
    P("messages", "syntax_error_position", "SELECT id FROM w WHERE v = = 3", error="line 1"),
]

SECTIONS = {"window": WINDOWS, "window_spill": BIG, "setops": SETOPS, "dates": DATES, "functions": FUNCS, "names": NAMES + NAMES_EXTRA,
            "messages": MESSAGES}
PROBES = [p for probes in SECTIONS.values() for p in probes]
