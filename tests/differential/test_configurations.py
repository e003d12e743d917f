"""The SSB + TPC-H differential on small data under every executor/optimizer configuration.

Each configuration must give DuckDB's answers: batches of 7 and 1000 rows, zone-map pruning off,
each optimizer pass switched off in turn, and a host memory limit small enough to force the hash join
and aggregation to partition and spill. Batches of one row run on a subset (small tables) because
the whole suite would take minutes per query; the whole suite with one-row batches is marked slow.
"""

from __future__ import annotations

import pytest
from diff_check import TOTAL, run_differential
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

from hetdb.plan.optimizer import PASSES

SUITE_SIZE = 13 + 22
SPILL_LIMIT = "256KB"

CONFIGURATIONS: list[tuple[str, dict]] = [
    ("batch_rows=7", {"batch_rows": 7}),
    ("batch_rows=1000", {"batch_rows": 1000}),
    ("zone_maps=False", {"zone_maps": False}),
    *[(f"without {name}", {"disabled_passes": {name}}) for name, _ in PASSES],
    ("all passes off", {"disabled_passes": {name for name, _ in PASSES}}),
    (f"host_memory_limit={SPILL_LIMIT}", {"host_memory_limit": SPILL_LIMIT}),
    ("batch_rows=7 + zone_maps=False + spill", {"batch_rows": 7, "zone_maps": False,
                                                  "host_memory_limit": SPILL_LIMIT}),
]


def _run_both_suites(label, ssb_small, tpch_small, hetdb_runner, expected_answers, options):
    ssb = run_suite(f"SSB small [{label}]", ssb_small, load_queries("ssb"), SSB_ORDERING,
                    hetdb_runner(ssb_small.path, **options), expected=expected_answers.setdefault("ssb", {}))
    tpch = run_suite(f"TPC-H small [{label}]", tpch_small, load_queries("tpch"), TPCH_ORDERING,
                     hetdb_runner(tpch_small.path, **options), TPCH_TOLERANCE,
                     expected=expected_answers.setdefault("tpch", {}))
    return ssb, tpch


# Configurations that take minutes on 2 cores (joins without build-side choice build the larger side;
# every pass off joins in the written order): `make test-all` / -m slow runs them.
SLOW_CONFIGURATIONS = {"without build_side", "all passes off"}


def _configuration_params():
    return [pytest.param(label, options, id=label,
                         marks=[pytest.mark.slow] if label in SLOW_CONFIGURATIONS else [])
            for label, options in CONFIGURATIONS]


@pytest.mark.parametrize("label,options", _configuration_params())
def test_suites_under_configuration(label, options, ssb_small, tpch_small, hetdb_runner,
                                    expected_answers) -> None:
    ssb, tpch = _run_both_suites(label, ssb_small, tpch_small, hetdb_runner, expected_answers, options)
    failures = ssb.failures + tpch.failures
    if failures:
        pytest.fail(f"[{label}] {len(failures)} of {SUITE_SIZE} queries failed\n\n" + "\n\n".join(failures),
                    pytrace=False)
    assert ssb.compared + tpch.compared == SUITE_SIZE
    # the small data still gives most queries rows to compare
    assert ssb.nonempty + tpch.nonempty >= SUITE_SIZE // 2, f"only {ssb.nonempty + tpch.nonempty} non-empty"


def test_spill_configuration_spills(tpch_small, hetdb_runner) -> None:
    """The spill configuration really makes an operator spill (else it would test nothing)."""
    run = hetdb_runner(tpch_small.path, host_memory_limit=SPILL_LIMIT)
    sql = ("select l_orderkey, l_partkey, count(*), sum(l_quantity) from lineitem "
           "group by l_orderkey, l_partkey")
    outcome = run_differential("spill probe", sql, run, tpch_small.reference(sql), None)
    assert outcome.failure is None, outcome.failure
    assert outcome.compared and outcome.rows > 0
    if "spilled_partitions" not in run.last_stats:
        pytest.skip("hetdb does not report spilled_partitions")
    assert run.last_stats["spilled_partitions"] > 0, f"no spill under {SPILL_LIMIT}: {run.last_stats}"


# ---- one-row batches on small tables -------------------------------------------------------------

BATCH1_TPCH = [
    "select n_name, r_name from nation join region on n_regionkey = r_regionkey order by n_name",
    "select r_name, count(*), min(n_name), max(n_nationkey) from nation, region "
    "where n_regionkey = r_regionkey group by r_name order by r_name",
    "select s_name, n_name, s_acctbal from supplier, nation where s_nationkey = n_nationkey "
    "and s_acctbal > 0 order by s_acctbal desc, s_name limit 5",
    "select c_mktsegment, count(*), sum(c_acctbal), min(c_acctbal) from customer "
    "group by c_mktsegment order by 1",
    "select p_brand, count(distinct p_size) from part where p_type like '%BRASS' group by p_brand "
    "order by p_brand",
    "select n_name from nation where n_nationkey not in (select s_nationkey from supplier) order by n_name",
    "select n_name from nation where exists (select 1 from customer where c_nationkey = n_nationkey "
    "and c_acctbal > 9000) order by 1",
    "select c_custkey, c_acctbal from customer where c_acctbal > (select avg(c_acctbal) from customer) "
    "order by c_custkey limit 10 offset 3",
    "select n_name, (select count(*) from supplier where s_nationkey = n_nationkey) as cnt "
    "from nation order by n_name",
    "select distinct substring(c_phone, 1, 2) as cc from customer order by 1",
    "select n_name, coalesce(s_name, 'none') from nation left join supplier on s_nationkey = n_nationkey "
    "order by 1, 2",
    "select case when p_size > 25 then 'big' else 'small' end as sz, count(*) from part group by 1 order by 1",
    "with t as (select s_nationkey, count(*) as c from supplier group by s_nationkey) "
    "select n_name, c from nation, t where n_nationkey = s_nationkey order by n_name",
]

BATCH1_NULLS = [
    "select k, count(*), count(s), sum(v), min(d), max(s) from nulls2 group by k order by k nulls first",
    "select a.id, b.id from nulls2 a join nulls2 b on a.k = b.k and a.v < b.v order by 1, 2",
    "select a.id, b.id from nulls2 a left join nulls2 b on a.k = b.k + 1 order by 1, 2 nulls first",
    "select id from nulls2 where k not in (select k from nulls2 where v > 900) order by id",
    "select id from nulls2 where k in (select k from nulls2 where v > 900) order by id",
    "select id, s from nulls2 where s like 'a%' or s is null order by id",
    "select id, s, v from nulls2 order by s desc nulls first, v, id limit 20",
    "select distinct s from nulls2 order by 1",
    "select id, coalesce(k, -1) + 1, case when v > 0 then 'p' when v < 0 then 'n' end from nulls2 order by id",
]


def _run_list(label, data, queries, run) -> tuple[int, list[str]]:
    compared, failures = 0, []
    for i, sql in enumerate(queries):
        outcome = run_differential(f"{label} #{i}", sql, run, data.reference(sql), TOTAL)
        compared += outcome.compared
        if outcome.failure:
            failures.append(outcome.failure)
    return compared, failures


def test_one_row_batches_on_small_tables(tpch_small, nulls_db, hetdb_runner) -> None:
    c1, f1 = _run_list("batch_rows=1 tpch", tpch_small, BATCH1_TPCH, hetdb_runner(tpch_small.path, batch_rows=1))
    c2, f2 = _run_list("batch_rows=1 nulls", nulls_db, BATCH1_NULLS, hetdb_runner(nulls_db.path, batch_rows=1))
    if f1 + f2:
        pytest.fail("\n\n".join(f1 + f2), pytrace=False)
    assert c1 + c2 == len(BATCH1_TPCH) + len(BATCH1_NULLS)


def test_one_row_batch_queries_are_deterministic(tpch_small, nulls_db) -> None:
    """Every query of the one-row-batch list is totally ordered (checked: DuckDB answers twice the same)."""
    for data, queries in ((tpch_small, BATCH1_TPCH), (nulls_db, BATCH1_NULLS)):
        for sql in queries:
            assert data.reference(sql).equals(data.reference(sql)), sql


@pytest.mark.slow
def test_suites_with_one_row_batches(ssb_small, tpch_small, hetdb_runner, expected_answers) -> None:
    ssb, tpch = _run_both_suites("batch_rows=1", ssb_small, tpch_small, hetdb_runner, expected_answers,
                                 {"batch_rows": 1})
    failures = ssb.failures + tpch.failures
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    assert ssb.compared + tpch.compared == SUITE_SIZE
