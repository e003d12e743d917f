"""Minimal reproductions of the engine bugs the fuzz campaigns found (outside rel-sem's issue-15 list),
each against DuckDB on the fuzz tables, or for refusals, the typed error hetdb must raise."""

from __future__ import annotations

import pytest
from diff_check import TOTAL, run_differential
from diff_fuzz import (
    Answer,
    FuzzRunner,
    reference_in_written_order,
    use_reference_without_statistics_propagation,
)
from diff_fuzzconfig import FUZZ_CONFIGURATIONS
from diff_fuzzgen import Query

from hetdb.errors import HetdbError, SqlError, UnsupportedError

WIDE_FLOAT_FRAMES = [
    "SELECT id, sum(f) OVER (PARTITION BY b ORDER BY id ROWS BETWEEN 1 PRECEDING AND UNBOUNDED FOLLOWING), "
    "sum(fn) OVER (PARTITION BY b ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 3 PRECEDING) FROM fa",
    "SELECT id, avg(fn) OVER (PARTITION BY k > 3 ORDER BY id ROWS BETWEEN 40 PRECEDING AND 2 FOLLOWING), "
    "sum(f) OVER (ORDER BY id DESC ROWS BETWEEN 35 FOLLOWING AND 90 FOLLOWING) FROM fa",
]

# (SQL, ordering, connection options, runs): each was a wrong answer or a crash
CASES: list[tuple[str, object, dict, int]] = [
    # a worker that finished before another began to spill left its aggregate states outside the
    # spill partitions, and finalize read only the partitions: groups were lost (146 -> 52 rows)
    ("SELECT sl, count(*) FROM fa GROUP BY sl", None, {"host_memory_limit": "16KB", "threads": 4}, 8),
    ("SELECT s, sl, count(*), min(id) FROM fa GROUP BY s, sl", None,
     {"host_memory_limit": "16KB", "threads": 4}, 8),
    # a CASE/COALESCE branch raised division by zero for rows that do not take it
    ("SELECT k, x, CASE WHEN k <> 0 THEN x // k END, CASE WHEN k = 0 THEN -1 WHEN x % k = 0 THEN 1 "
     "ELSE x % k END FROM fc", None, {}, 1),
    ("SELECT k, COALESCE(k, x // k) FROM fc", None, {"batch_rows": 3}, 1),
    ("SELECT count(*) FROM fc WHERE CASE WHEN k = 0 THEN FALSE ELSE x // k > 5 END", None, {}, 1),
    # a COALESCE argument overflowed for rows an earlier argument already decided (DuckDB never
    # evaluates big * 3 where big is not NULL)
    ("SELECT id, COALESCE(big, big * 3) FROM fa", None, {}, 1),
    ("SELECT id, COALESCE(big, big * 3, i) FROM fa", None, {"batch_rows": 7}, 1),
    ("SELECT count(*) FROM fa WHERE COALESCE(big, big * 3, 5) > 0", None, {"batch_rows": 7}, 1),
    # BIGINT rescaled to a DECIMAL wrapped for -2^63 when no other value of the batch was large
    # (abs(-2^63) is negative): big >= dn was TRUE for one joined row of a spilled join
    ("SELECT t0.id, t1.id, t0.big >= t0.dn FROM fa t0 JOIN fa t1 ON t0.s = t1.s AND t0.k = t1.k", None,
     {"host_memory_limit": "16KB", "threads": 4}, 2),
    ("SELECT id, big >= dn, big < 0.5 FROM fa WHERE big = -9223372036854775808", None, {"batch_rows": 1}, 1),
    # SUM/AVG states of DECIMAL (DECIMAL(38) sums) that spill (was a known fuzz issue: "cannot convert
    # decimal values to scale 4")
    ("SELECT k, s, sum(dw), avg(dw), sum(dc), sum(DISTINCT dc) FROM fa GROUP BY k, s", None,
     {"host_memory_limit": "16KB", "threads": 4}, 2),
    # DISTINCT aggregates whose raw rows of one group key pass the limit raised OutOfMemoryError
    ("SELECT count(t0.b), count(DISTINCT t0.sl) FROM fa t0 FULL JOIN fa t1 ON t0.k < t1.k", None,
     {"host_memory_limit": "16KB", "threads": 4}, 1),
    ("SELECT count(DISTINCT t0.f), sum(DISTINCT t0.i), avg(DISTINCT t0.dc), min(t0.s), max(DISTINCT t0.sl), "
     "count(*), sum(t0.i) FROM fa t0 FULL JOIN fa t1 ON t0.k < t1.k", None, {"host_memory_limit": "16KB"}, 1),
    ("SELECT t0.dw, max(t0.big), count(DISTINCT t0.s) FROM fa t0 CROSS JOIN fc t1 WHERE t1.k NOT IN (7, 4) "
     "GROUP BY t0.dw", None, {"host_memory_limit": "16KB", "threads": 4}, 1),
    # a join on DECIMAL = BIGINT (common type DECIMAL(23,4)) with BIGINT values near 2^63 was refused
    # ("joining on HUGEINT / DECIMAL(38) values that need more than 64 bits"; campaign seed 20261124,
    # cases 9792-9795, a TLP partition); a wide join key is now its high and low 64 bits
    ("SELECT t0.id, t2.id FROM fa t0 JOIN fb t2 ON t2.dc = t0.big", None, {}, 1),
    ("SELECT t0.id, t2.id FROM fa t0 FULL JOIN fb t2 ON t2.dc = t0.big", None, {"batch_rows": 7}, 1),
    ("SELECT id, big IN (SELECT dc FROM fb) FROM fa", None, {}, 1),
    ("SELECT count(*) FROM fa t0 WHERE t0.big NOT IN (SELECT dc FROM fb)", None, {}, 1),
    # ... and read back from a spilled join partition, values past 64 bits crashed (OverflowError)
    ("SELECT t0.id, t1.id FROM fa t0 JOIN fa t1 ON t0.dc = t1.big", None,
     {"host_memory_limit": "16KB", "threads": 4}, 1),
    ("SELECT t0.id, t1.id FROM fa t0 JOIN fa t1 ON CAST(t0.big AS HUGEINT) * 3 = CAST(t1.big AS HUGEINT) * 3",
     None, {"host_memory_limit": "16KB", "threads": 4}, 1),
    # min/max OVER a window compared raw doubles on the CPU: with NaN in the frame, IEEE comparisons
    # kept NaN as the minimum beside -inf (DuckDB orders NaN above +inf; campaign seed 24111901,
    # cases 5472-5475)
    ("SELECT DISTINCT min(t0.fn) OVER (PARTITION BY t0.dn) AS c0, t0.fn AS c1, COALESCE(t0.f, t0.fn) AS c2 "
     "FROM fa t0", None, {"zone_maps": False}, 1),
    ("SELECT id, min(fn) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), "
     "max(fn) OVER (PARTITION BY dn ORDER BY id), min(f) OVER (PARTITION BY dn) FROM fa", None, {}, 1),
    # double sums over frames wider than 32 rows came from prefix-sum differences: a prefix that
    # passed an inf made every later frame inf - inf = NaN (DuckDB: -inf, or the finite sum); found
    # by the ordered window items of the fuzz generator
    *[(sql, None, {}, 1) for sql in WIDE_FLOAT_FRAMES],
    # a spilled aggregate's HUGEINT sum state past 64 bits (campaign seed 777, cases 8092-8095)
    ("SELECT NULLIF(t1.d, DATE '1997-07-10') AS c0, t1.big AS c1, avg(t1.big) AS c2 FROM fa t0 FULL OUTER JOIN "
     "fa t1 ON t0.k = t1.k AND t0.dw <> t0.i WHERE t1.s NOT IN (SELECT q1.s FROM fc q1 WHERE q1.s = t1.s) "
     "GROUP BY NULLIF(t1.d, DATE '1997-07-10'), t1.big", None, {"host_memory_limit": "16KB", "threads": 4}, 2),
    # concat_ws over a row whose parts are all NULL: pyarrow's join dropped the row (ArrowInvalid, or
    # every later row shifted up one); DuckDB gives '' (found probing the generator's new forms)
    ("SELECT id, concat_ws('-', s, NULL, s), concat_ws(s, sl, s), concat_ws('/', NULL) FROM fa", None, {}, 1),
    ("SELECT k, concat_ws(',', s, CAST(x AS VARCHAR)) FROM fc", None, {"batch_rows": 3}, 1),
    # GROUP BY a DECIMAL(38) product past 64 bits was refused by the operator-at-a-time aggregate
    # (campaign seed 24112506, cases 800-803, cpu_compile=False): grouped on its high and low halves now
    ("SELECT (CAST(t0.dc AS DECIMAL(38,4)) * t1.dc), max((t1.id + t0.id)), count(t1.s), min(t1.dn) FROM fb t0 "
     "INNER JOIN fa t1 ON t0.d = t1.d GROUP BY (CAST(t0.dc AS DECIMAL(38,4)) * t1.dc)", None, {"cpu_compile": False}, 1),
    ("SELECT CAST(big AS HUGEINT) * 4 AS x, k, count(*) FROM fa GROUP BY x, k", None,
     {"cpu_compile": False, "host_memory_limit": "16KB", "threads": 4}, 1),
    # ... and PARTITION BY / ORDER BY such values crashed with OverflowError (window keys as int64)
    ("SELECT id, count(*) OVER (PARTITION BY CAST(big AS HUGEINT) * 4) FROM fa", None, {}, 1),
    ("SELECT id, count(*) OVER (PARTITION BY CAST(big AS HUGEINT) * 4) FROM fa", None,
     {"host_memory_limit": "16KB", "threads": 4}, 1),
    ("SELECT id, rank() OVER (ORDER BY CAST(big AS HUGEINT) * 4, id), "
     "sum(id) OVER (PARTITION BY k ORDER BY CAST(dw AS DECIMAL(38,4)) * dw DESC) FROM fa", None, {"batch_rows": 7}, 1),
    # a GROUP BY item holding a NaN constant did not match its SELECT twin ("must appear in the GROUP
    # BY clause": two NaN literals never compared equal; campaign seed 24112507, case 282)
    ("SELECT NULLIF(fn, 'nan'::DOUBLE) AS x, count(*) FROM fa GROUP BY NULLIF(fn, 'nan'::DOUBLE)", None, {}, 1),
    ("SELECT t1.id, COALESCE(t1.f, 'nan'::DOUBLE), count(*) FROM fa t0 FULL JOIN fb t1 ON t0.f = t1.f "
     "GROUP BY t1.id, COALESCE(t1.f, 'nan'::DOUBLE)", None, {}, 1),
    # dates and timestamps before year 1 as text: Arrow writes '-0001-11-28', DuckDB '0002-11-28 (BC)'
    # (found probing the generator's DATE + n form; years past 9999 were already right)
    ("SELECT id, CAST(d - 400 AS VARCHAR), (d - 400) || 'x', CAST(d + 30 AS VARCHAR), "
     "CAST(CAST(d AS TIMESTAMP) - INTERVAL 800 DAY AS VARCHAR) FROM fa", None, {}, 1),
    # regexp_extract of a group the pattern lacks raised "group 1 does not exist" where a row matched;
    # DuckDB extracts '' (campaign seed 20261125, cases 11248-11251)
    ("SELECT DISTINCT sl, regexp_extract(sl, '[0-9]+', 1), regexp_extract(sl, '([a-z])([0-9])', 3) FROM fa",
     None, {}, 1),
    # a bare NULL's column (sl || NULL) read back from a spill file: Arrow's null column could not be
    # filled with 0 (ArrowInvalid, 13 of 40 runs; campaign seed 20261125, case 12178)
    ("SELECT t1.i, (t1.sl || NULL) AS c1, lower(t1.s) FROM fc t0 RIGHT JOIN fa t1 ON t0.s = t1.s", None,
     {"host_memory_limit": "16KB", "threads": 4}, 4),
]

# (SQL, error type): refusals that must name the construct
REFUSALS = [
    # the subquery inside an aggregate argument was reported as a nested aggregate (SqlError)
    ("SELECT sum(CASE WHEN v = (SELECT count(x) FROM fc) THEN 1 ELSE 0 END) FROM fb", UnsupportedError),
]


@pytest.mark.parametrize("sql,ordering,options,runs", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_fuzz_regression(sql, ordering, options, runs, fuzz_db, hetdb_runner) -> None:
    truth = fuzz_db.reference(sql)
    assert truth.num_rows > 0
    for run in range(runs):  # races: fresh connections, several times
        outcome = run_differential(f"fuzz regression run {run}", sql, hetdb_runner(fuzz_db.path, **options),
                                   truth, ordering)
        assert outcome.failure is None, outcome.failure
        assert outcome.compared


@pytest.mark.parametrize("sql", WIDE_FLOAT_FRAMES)
def test_wide_float_frames_on_the_array_kernels(sql, fuzz_db, hetdb_runner, monkeypatch) -> None:
    """The GPU's window algorithm (``exec/window_array`` on NumPy) sums the same frames."""
    import numpy as np

    from hetdb.exec.operators import window
    from hetdb.exec.window_array import ArrayKernels

    monkeypatch.setattr(window, "host_kernels", lambda: ArrayKernels(np))
    truth = fuzz_db.reference(sql)
    outcome = run_differential("array kernels", sql, hetdb_runner(fuzz_db.path), truth, None)
    assert outcome.failure is None, outcome.failure
    assert outcome.compared and truth.num_rows == 240


@pytest.mark.parametrize("sql", WIDE_FLOAT_FRAMES)
def test_wide_float_frames_on_each_device(sql, device, fuzz_db, hetdb_runner) -> None:
    truth = fuzz_db.reference(sql)
    outcome = run_differential(device, sql, hetdb_runner(fuzz_db.path, device=device), truth, None)
    assert outcome.failure is None, outcome.failure
    assert outcome.compared and truth.num_rows == 240


@pytest.mark.parametrize("sql,error", REFUSALS, ids=[f"refusal{i}" for i in range(len(REFUSALS))])
def test_fuzz_refusal(sql, error, fuzz_db, hetdb_runner) -> None:
    fuzz_db.reference(sql)  # DuckDB answers it: hetdb refuses what it does not support, by name
    with pytest.raises(error, match="subqueries inside aggregate"):
        hetdb_runner(fuzz_db.path)(sql)


def test_reference_engine_pass_that_answers_wrongly_is_off(fuzz_db, hetdb_runner) -> None:
    """DuckDB 2.0 keeps groups that fail HAVING here unless statistics propagation is off; hetdb is right."""
    sql = ("SELECT k, sum(v) FROM fb WHERE (id > (SELECT max(k) FROM fc WHERE k >= 300)) IS NULL "
           "GROUP BY k HAVING sum(v) < 20")
    use_reference_without_statistics_propagation(fuzz_db.duck)  # as every FuzzRunner does
    truth = fuzz_db.reference(sql)
    assert truth.num_rows > 0 and all(s < 20 for s in truth.column(1).to_pylist())
    outcome = run_differential("reference", sql, hetdb_runner(fuzz_db.path), truth, None)
    assert outcome.failure is None, outcome.failure


def test_fuzz_regression_cases_are_ordered_queries() -> None:
    assert all(ordering in (TOTAL, None) and runs >= 1 for _, ordering, _, runs in CASES)


# found by the issue-15 campaign (seed 20261128, case 100, every configuration): the decorrelated
# scalar subquery's sum of DECIMAL(18,4) is DECIMAL(38,4), and hetdb refuses its wide values as a
# grouping / join key even though no row reaches it (fe is empty); DuckDB answers no rows. A probe
# against an empty build side no longer computes its key values.
WIDE_KEY_OVER_EMPTY_JOIN = (
    "SELECT t1.f AS c0, (SELECT sum(q1.dc) FROM fb q1 WHERE q1.k = t2.k AND q1.dc <= q1.dc) AS c1 "
    "FROM fa t0 LEFT OUTER JOIN fe t1 ON t0.f = t1.f AND t1.dc = t0.big INNER JOIN fc t2 ON t1.k = t2.k "
    "WHERE t0.id < t0.k")


def test_wide_decimal_subquery_key_over_empty_join(fuzz_db, hetdb_runner) -> None:
    assert fuzz_db.reference(WIDE_KEY_OVER_EMPTY_JOIN).num_rows == 0
    assert hetdb_runner(fuzz_db.path)(WIDE_KEY_OVER_EMPTY_JOIN).num_rows == 0


# found by the issue-15 campaign (seed 20261125, case 19290, threads=4 batch_rows=16): a regexp_replace
# rewrite naming a group its pattern lacks crashed with Python's re.error under LIMIT 0, where DuckDB
# evaluates nothing and answers no rows; elsewhere both engines raise
BAD_REWRITE = "SELECT regexp_replace(s, '[aeiou]', '\\2\\1', 'g') AS c0 FROM fc"


def test_limit_zero_evaluates_nothing_and_a_bad_rewrite_is_a_typed_error(fuzz_db, hetdb_runner) -> None:
    run = hetdb_runner(fuzz_db.path, threads=4, batch_rows=16)
    for tail in (" ORDER BY 1 NULLS FIRST LIMIT 0 OFFSET 8", " LIMIT 0"):
        assert fuzz_db.reference(BAD_REWRITE + tail).num_rows == 0
        got = run(BAD_REWRITE + tail)
        assert got.num_rows == 0 and got.schema.names == ["c0"]
    with pytest.raises(Exception, match="(?i)invalid replacement string"):
        fuzz_db.reference(BAD_REWRITE)
    with pytest.raises(HetdbError, match="Invalid replacement string for regexp_replace"):
        run(BAD_REWRITE)
    # the group index of regexp_extract is checked when the query is bound, as DuckDB does
    for group in (10, -1):
        sql = f"SELECT regexp_extract(s, '[0-9]+', {group}) FROM fc WHERE false"
        with pytest.raises(Exception, match="(?i)group index must be between 0 and 9"):
            fuzz_db.reference(sql)
        with pytest.raises(SqlError, match="group index must be between 0 and 9"):
            run(sql)


# found by this campaign (seed 20261125, cases 52552-52555, all passes off; not a hetdb bug): DuckDB
# pushes the filter below the joins and casts fa's inf to DECIMAL although fe is empty, so no joined
# row exists to filter; hetdb with its passes off filters the joins' output (no row, no cast) and
# counts 0, which is DuckDB's answer too when it filters where the query writes it. SQL leaves the
# order to the engine (hetdb with its pushdown on raises as DuckDB does); the harness now asks DuckDB
# again in written order before calling a run-time error against an answer a mismatch.
PUSHED_CAST = ("SELECT count(*) FROM fe t0 INNER JOIN fa t1 ON t0.f = t1.f JOIN fe t2 ON t0.s = t2.s "
               "WHERE (CAST(t1.f AS DECIMAL(18,2)) >= 2)")


def test_error_of_a_filter_the_reference_moved_below_an_empty_join(fuzz_db, hetdb_runner) -> None:
    assert fuzz_db.reference("SELECT count(*) FROM fe").column(0).to_pylist() == [0]
    use_reference_without_statistics_propagation(fuzz_db.duck)
    with pytest.raises(Exception, match="Could not cast value inf"):
        fuzz_db.reference(PUSHED_CAST)
    written = reference_in_written_order(fuzz_db.duck, PUSHED_CAST)
    assert written.error is None and written.table.column(0).to_pylist() == [0]
    with pytest.raises(HetdbError, match="Could not cast value inf"):  # pushdown on: fa's rows are cast
        hetdb_runner(fuzz_db.path)(PUSHED_CAST)
    passes_off = dict(FUZZ_CONFIGURATIONS)["all passes off"]
    got = hetdb_runner(fuzz_db.path, **passes_off)(PUSHED_CAST)
    assert got.column(0).to_pylist() == [0]
    runner = FuzzRunner("all passes off", lambda sql: got, fuzz_db.duck, {})
    truth = Answer(error=_raised(fuzz_db, PUSHED_CAST))
    assert runner.judge("case 52552", Query(PUSHED_CAST), Answer(got), truth) is None
    # a wrong count is still a failure, and so is an answer where DuckDB raises in written order too
    wrong = got.set_column(0, got.schema.field(0), [[1]])
    assert "error mismatch" in runner.judge("case 52552", Query(PUSHED_CAST), Answer(wrong), truth)
    bad = "SELECT count(*) FROM fa WHERE CAST(f AS DECIMAL(18,2)) >= 2"
    assert "error mismatch" in runner.judge("bad", Query(bad), Answer(got), Answer(error=_raised(fuzz_db, bad)))


def _raised(fuzz_db, sql: str) -> Exception:
    try:
        fuzz_db.reference(sql)
    except Exception as e:
        return e
    raise AssertionError(f"DuckDB answered {sql}")
