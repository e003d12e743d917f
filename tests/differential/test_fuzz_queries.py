"""Seeded random queries over the NULL-heavy fuzz tables under every executor configuration.

Each configuration checks at least ``MIN_COMPARED`` hetdb answers: queries compared with DuckDB plus
the partition queries of TLP/NoREC metamorphic checks of hetdb against itself (``diff_fuzz``). Every
configuration runs the same cases (DuckDB's answers are computed once). ``make fuzz`` runs the long campaign
(``fuzz_main.py``); ``HETDB_FUZZ_SEED`` changes the seed here, ``HETDB_FUZZ_ALLOW``/``_DENY`` draw or leave out
known-issue shapes (``diff_fuzzgen.KNOWN_ISSUES``).
"""

from __future__ import annotations

import json
import os
import re

import duckdb
import pyarrow as pa
import pytest
from diff_check import describe
from diff_fuzz import FuzzRunner, FuzzStats, error_kind
from diff_fuzzconfig import FUZZ_CONFIGURATIONS, split_options
from diff_fuzzdata import LONG_STRING_PAGES_PLAIN
from diff_fuzzgen import FAMILY, KNOWN_ISSUES, Query, allowed_from_env
from diff_oracles import Oracle

from hetdb.errors import HetdbError

SEED = int(os.environ.get("HETDB_FUZZ_SEED", "15"))
MIN_COMPARED = 2000
CHUNK = 50


def _campaign(runner: FuzzRunner, minimum: int) -> FuzzStats:
    """Run cases 0, 1, ... until ``minimum`` answers were compared or a case failed."""
    stats, index = FuzzStats(), 0
    while stats.compared < minimum and not stats.failures:
        stats.add(runner.run(SEED, CHUNK, index, stop_at_first=True))
        index += CHUNK
    return stats


@pytest.mark.parametrize("label,options", FUZZ_CONFIGURATIONS, ids=[c[0] for c in FUZZ_CONFIGURATIONS])
def test_fuzz_queries_under_configuration(label, options, device, fuzz_db, fuzz_samples,
                                          fuzz_reference_cache, hetdb_runner, request) -> None:
    compression, options = split_options(options)
    data = fuzz_db if compression == "auto" else request.getfixturevalue("fuzz_db_plain")
    run = hetdb_runner(data.path, device=device, **options)
    runner = FuzzRunner(f"{device} {label}", run, fuzz_db.duck, fuzz_samples, allowed_from_env(),
                        fuzz_reference_cache)
    stats = _campaign(runner, MIN_COMPARED)
    print(f"[{device} {label}] seed={SEED}: {stats.summary()}")  # shown with pytest -rP
    if stats.failures:
        pytest.fail(f"[{label}] seed={SEED}: {stats.summary()}\n\n" + "\n\n".join(stats.failures),
                    pytrace=False)
    assert stats.compared >= MIN_COMPARED, stats.summary()
    assert stats.differential >= MIN_COMPARED // 3, stats.summary()
    assert stats.oracle_queries >= MIN_COMPARED // 5, stats.summary()
    assert all(stats.by_oracle.get(k, 0) > 0 for k in ("tlp-where", "tlp-distinct", "tlp-aggregate", "tlp-group",
                                                               "norec"))
    assert stats.skipped <= stats.cases // 50, f"DuckDB refused too many generated queries: {stats.summary()}"
    assert stats.nonempty >= stats.differential // 2, stats.summary()


def test_fuzz_tables_hold_the_edge_values(fuzz_db) -> None:
    """The data really has what the generator is meant to stress (else the fuzzing tests less)."""
    duck = fuzz_db.duck
    one = duck.sql("""SELECT count(*) FILTER (WHERE isnan(fn)), count(*) FILTER (WHERE f = 'inf'::DOUBLE),
                              count(*) FILTER (WHERE f = '-inf'::DOUBLE),
                              count(*) FILTER (WHERE f = 0 AND signbit(f)),
                              count(*) FILTER (WHERE big = 9223372036854775807),
                              count(*) FILTER (WHERE big = -9223372036854775808),
                              max(abs(dw)) > 10^13, max(length(sl)) > 200, min(d) < DATE '1000-01-01',
                              count(*) FILTER (WHERE k IS NULL), count(DISTINCT s)
                       FROM fa""").fetchall()[0]
    assert all(one), one
    assert fuzz_db.row_counts == {"fa": 240, "fb": 90, "fc": 14, "fe": 0}
    from hetdb.storage import Database

    reader = Database.open(fuzz_db.path).table("fa")
    assert reader.num_row_groups > 2
    encodings = {c: {reader.page_encoding(c, rg) for rg in range(reader.num_row_groups)}
                 for c in ("s", LONG_STRING_PAGES_PLAIN)}
    # the short strings are stored with a dictionary, the long ones in plain pages
    assert encodings == {"s": {"dict"}, LONG_STRING_PAGES_PLAIN: {"plain"}}, encodings


def test_fuzz_harness_detects_wrong_answers(fuzz_db, fuzz_samples) -> None:
    """Wrong answers fail the differential check; a wrong partition fails the metamorphic ones."""

    def duck_as_hetdb(sql: str) -> pa.Table:
        try:
            return fuzz_db.duck.sql(sql).to_arrow_table()
        except duckdb.Error as e:  # a typed error, as hetdb raises
            raise HetdbError(str(e)) from None

    def wrong(sql: str) -> pa.Table:
        table = duck_as_hetdb(sql)
        return table.slice(0, max(0, table.num_rows - 1))

    stats = FuzzRunner("self-test", wrong, fuzz_db.duck, fuzz_samples).run(SEED, 60, 0)
    assert len(stats.failures) >= 20, stats.summary()

    def loses_null_partition(sql: str) -> pa.Table:
        """Right on every query but TLP's third partition, which comes back empty."""
        table = duck_as_hetdb(sql)
        return table.slice(0, 0) if sql.endswith(") IS NULL") else table

    stats = FuzzRunner("self-test", loses_null_partition, fuzz_db.duck, fuzz_samples).run(SEED, 60, 0)
    assert sum("disagrees with itself" in f for f in stats.failures) >= 3, stats.summary()

    good = FuzzRunner("self-test", duck_as_hetdb, fuzz_db.duck, fuzz_samples).run(SEED, 60, 0)
    assert not good.failures, good.failures[0]
    assert good.compared >= 60 and good.oracle_checks > 0


def _text(case) -> str:
    return "\n".join([case.base.sql, *case.parts]) if isinstance(case, Oracle) else case.sql


def _shape(sql: str) -> str:
    """``sql`` with every literal (string, date, number, LIMIT/OFFSET count) as ``?``."""
    sql = re.sub(r"'(?:[^']|'')*'", "?", sql)
    number = r"\b\d+(?:\.\d+)?(?:e[-+]?\d+)?"
    sql = re.sub(rf"\(-{number}\)", "?", sql)   # a negative literal
    return re.sub(rf"(?<![\w.])-?{number}", "?", sql)


def test_cases_of_a_family_share_a_shape_and_draw_their_own_values(fuzz_samples) -> None:
    """FAMILY consecutive cases are one query shape with other constants (their compiled CPU loops
    are compiled once, literals being parameters), and families differ in shape."""
    runner = FuzzRunner("families", lambda sql: None, duckdb.connect(), fuzz_samples)

    def texts(index: int) -> list[str]:
        case = runner.draw(SEED, index)
        return [case.base.sql, *case.parts] if isinstance(case, Oracle) else [case.sql]

    families = 60
    shapes, varied = set(), 0
    for f in range(families):
        members = [texts(f * FAMILY + i) for i in range(FAMILY)]
        assert len({tuple(_shape(t) for t in m) for m in members}) == 1, members
        varied += len({tuple(m) for m in members}) > 1
        shapes.add(tuple(_shape(t) for t in members[0]))
    assert varied >= families // 2, varied
    assert len(shapes) >= families - 3, len(shapes)


def test_error_kinds_of_both_engines() -> None:
    con = duckdb.connect()
    with pytest.raises(duckdb.Error) as overflow:
        con.sql("SELECT 9223372036854775807::BIGINT + 1").fetchall()
    with pytest.raises(duckdb.Error) as zero:
        con.sql("SELECT 1 // 0").fetchall()
    assert error_kind(overflow.value) == "overflow"
    assert error_kind(zero.value) == "division by zero"
    assert error_kind(HetdbError("division by zero in intdiv(x, 0)")) == "division by zero"
    assert error_kind(HetdbError("table 'x' does not exist")) == "other"


def test_known_issue_switches_are_named() -> None:
    assert allowed_from_env() <= set(KNOWN_ISSUES)
    assert KNOWN_ISSUES == {}, "every shape is drawn: fix a parked bug shape, then remove its entry"


def test_compression_off_configuration_reads_plain_pages(fuzz_db, fuzz_db_plain) -> None:
    """The compression=none configuration queries tables of plain pages; the others compressed ones."""
    from hetdb.storage import Database

    def codecs(path: str) -> set[str]:
        db = Database.open(path)
        return {db.table(t).page_codec(c.name, rg) for t in db.tables() for c in db.table(t).schema
                for rg in range(db.table(t).num_row_groups)}

    assert codecs(fuzz_db_plain.path) == {"plain"}
    assert len(codecs(fuzz_db.path) - {"plain"}) >= 2


def test_campaign_tasks_split_resume_and_shard(tmp_path) -> None:
    """``make fuzz`` (fuzz_main): shards of a campaign cover each case once; a resumed campaign runs
    only the cases its finished tasks left; a run cut short records the cases it finished."""
    from fuzz_campaign import TASK_CASES, Campaign, merge_ranges, plan_tasks
    from fuzz_main import parse_cases, parse_shard

    def cases(tasks) -> list[int]:
        return [i for start, count in tasks for i in range(start, start + count)]

    whole = cases(plan_tasks(0, 4550, (0, 1), []))
    assert whole == list(range(4550))
    parts = [cases(plan_tasks(0, 4550, (i, 4), [])) for i in range(4)]
    assert sorted(c for p in parts for c in p) == whole and all(parts)
    done = [(0, 130), (250, 260), (4000, 9000)]
    left = cases(plan_tasks(0, 4550, (0, 1), done))
    assert left == [i for i in whole if not (i < 130 or 250 <= i < 260 or i >= 4000)]
    assert all(c <= TASK_CASES for _, c in plan_tasks(0, 4550, (0, 1), done))
    assert cases(plan_tasks(120, 333, (0, 1), [])) == list(range(120, 333))
    assert merge_ranges([(5, 9), (0, 3), (3, 4), (8, 12)]) == [(0, 4), (5, 12)]

    campaign = Campaign.open(tmp_path / "c", 7, 1000)
    stats = {"cases": 40, "differential": 40, "oracle_checks": 9, "oracle_queries": 30, "hetdb_queries": 70,
             "errors_agreed": 1, "skipped": 0, "nonempty": 30, "failures": 1, "seconds": 2.0,
             "by_oracle": {"norec": 9}}
    fail = {"config": "default", "device": "cpu", "case": 17, "text": "--- cpu default seed=7 case=17: differs"}
    campaign.record({"device": "cpu", "start": 0, "done": 40, "seconds": 2.5, "pid": 1,
                     "stats": {"cpu default": stats}, "failures": [fail]}, "replay --case {case} --config '{config}'")
    again = Campaign.open(tmp_path / "c", None, None)
    assert (again.seed, again.queries, again.done("cpu")) == (7, 1000, [(0, 40)])
    assert cases(plan_tasks(0, 100, (0, 1), again.done("cpu"))) == list(range(40, 100))
    assert "replay --case 17 --config 'default'" in (tmp_path / "c" / "failures.txt").read_text()
    summary = (tmp_path / "c" / "summary.txt").read_text()
    assert "[cpu default] 40 cases, 70 answers checked" in summary and "failures: 1" in summary
    with pytest.raises(SystemExit, match="seed=7"):
        Campaign.open(tmp_path / "c", 8, None)
    assert parse_shard("2/5") == (2, 5) and parse_cases("100:") == (100, None)
    with pytest.raises(Exception, match="I must be"):
        parse_shard("5/5")


def test_make_fuzz_runs_and_resumes_a_small_campaign(tmp_path, capsys) -> None:
    """fuzz_main end to end: a worker process runs the cases under the chosen configurations, the
    summary counts them per configuration, and the same command with more cases runs only the new ones."""
    from fuzz_main import main

    args = ["--dir", str(tmp_path / "c"), "--seed", "5", "--queries", "1000", "--config", "default",
            "--config", "cpu_compile=False", "--jobs", "1"]
    assert main([*args, "--cases", "0:4"]) == 0
    assert main([*args, "--cases", "0:6"]) == 0
    lines = (tmp_path / "c" / "results.jsonl").read_text().splitlines()
    assert [(r["start"], r["done"]) for r in map(json.loads, lines)] == [(0, 4), (4, 2)]
    summary = (tmp_path / "c" / "summary.txt").read_text()
    assert "cpu: 6 of 1000 cases done under each configuration (0..5)" in summary
    assert "[cpu default] 6 cases" in summary and "[cpu cpu_compile=False] 6 cases" in summary
    assert "failures: 0" in summary and "cases 4..5 under 2 configurations" in capsys.readouterr().out


def _dies_on_cases_from_100(configs, seed: int, start: int, count: int, deadline=None) -> dict:
    """A campaign task (fuzz_worker.run_task's signature) whose process dies on the block at case 100."""
    if start == 100:
        os._exit(3)
    return {"device": "cpu", "seed": seed, "start": start, "done": count, "seconds": 0.0, "pid": os.getpid(),
            "stats": {}, "failures": []}


def test_campaign_records_a_worker_process_that_dies(tmp_path) -> None:
    """A task whose process dies (a segfault, an OOM kill) runs once more, then is recorded as a
    failure with its replay command, and the other tasks go on."""
    from fuzz_campaign import Campaign
    from fuzz_main import Scheduler
    from fuzz_worker import configurations

    campaign = Campaign.open(tmp_path / "c", 7, 1000)
    tasks = {"cpu": [(0, 100), (100, 100), (200, 100)]}
    scheduler = Scheduler(campaign, {"cpu": tuple(configurations("cpu", ["default"]))}, tasks, 1, 0, None,
                          task=_dies_on_cases_from_100)
    scheduler.run()
    assert campaign.done("cpu") == [(0, 100), (200, 300)]
    assert scheduler.failures == 1
    text = (tmp_path / "c" / "failures.txt").read_text()
    assert "cases 100..199: a worker process died" in text and "--cases 100:200" in text


def test_campaign_runs_every_configuration_on_the_same_cases(fuzz_db, fuzz_samples) -> None:
    """A campaign process (fuzz_worker.Harness) runs each case under every configuration, each with
    values of its own in the case's shape (the default configuration those of the fuzz tests), with
    the checks of the fuzz tests: a wrong answer under one configuration is reported for that
    configuration and case."""
    from fuzz_worker import Harness, configurations

    configs = configurations("cpu", ["default", "cpu_compile=False"])
    harness = Harness(configs)
    result = harness.run(SEED, 0, 12)
    assert result["done"] == 12 and not result["failures"], result["failures"][:1]
    counts = [result["stats"][c.label] for c in configs]
    assert all(s["cases"] == 12 and s["differential"] + s["oracle_queries"] >= 12 for s in counts)
    default, other = (runner for _, runner in harness.runners)
    texts = [(default.draw(SEED, i), other.draw(SEED, i)) for i in range(12)]
    plain = FuzzRunner("plain", None, fuzz_db.duck, fuzz_samples)
    assert all(_shape(_text(a)) == _shape(_text(b)) for a, b in texts)
    assert sum(_text(a) != _text(b) for a, b in texts) >= 6
    assert all(_text(a) == _text(plain.draw(SEED, i)) for i, (a, _) in enumerate(texts))
    runner = harness.runners[1][1]
    right = runner.run_hetdb
    runner.run_hetdb = lambda sql: right(sql).slice(1)  # drops a row of every answer
    result = harness.run(SEED, 0, 12)
    assert result["failures"] and {f["config"] for f in result["failures"]} == {"cpu_compile=False"}
    assert result["failures"][0]["text"].startswith("--- cpu cpu_compile=False seed=")


def test_campaign_with_one_set_of_values_per_device_and_its_compile_clock(tmp_path) -> None:
    """``--values device``: every configuration of a device draws the same values for a case (the GPU
    compiles literals into its kernels: its configurations then share the kernels), kept in the
    campaign's identity and in its replay commands; each task records its configurations' NVRTC and
    Numba compiles and the harness's build time."""
    from fuzz_campaign import Campaign
    from fuzz_main import Scheduler
    from fuzz_worker import Harness, configurations

    gpu = configurations("gpu", values="device")
    assert len(gpu) == 11 and {c.variant for c in gpu} == {"gpu"}
    assert len({c.variant for c in configurations("gpu")}) == 11  # (the default: each its own)
    configs = configurations("cpu", ["default", "cpu_compile=False"], values="device")
    harness = Harness(configs)
    assert harness.seconds > 0
    result = harness.run(SEED, 0, 4)
    assert result["done"] == 4 and not result["failures"], result["failures"][:1]
    default, other = (runner for _, runner in harness.runners)
    assert all(_text(default.draw(SEED, i)) == _text(other.draw(SEED, i)) for i in range(4))
    for c in configs:
        s = result["stats"][c.label]
        assert s["nvrtc_compiles"] == 0 and s["numba_compiles"] >= 0 and s["numba_seconds"] >= 0
    campaign = Campaign.open(tmp_path / "c", 7, 1000, "device")
    assert Campaign.open(tmp_path / "c", None, None).values == "device"
    with pytest.raises(SystemExit, match="values=device"):
        Campaign.open(tmp_path / "c", None, None, "configuration")
    assert Campaign.open(tmp_path / "old", 7, 1000).values == "configuration"
    scheduler = Scheduler(campaign, {"cpu": tuple(configs)}, {"cpu": []}, 1, 0, None)
    assert scheduler.replay.endswith("--values device")
    result.update(device="cpu", seed=7, start=0, seconds=1.0, pid=1, harness_seconds=0.5)
    campaign.record(result, scheduler.replay)
    summary = (tmp_path / "c" / "summary.txt").read_text()
    assert "one set of values per device" in summary and "cpu: of that, building harnesses" in summary


def test_oracle_parts_combine_dates_past_python_range() -> None:
    """DuckDB's dates go past year 9999 (DATE '9999-12-31' + 30), Python's do not: the partitions of
    an oracle combine such dates as their day numbers (this killed a campaign with OverflowError)."""
    from diff_oracles import TLP_WHERE, combine

    days = pa.array([2_932_896 + 30, None, 0], pa.date32())  # 10000-01-30, NULL, 1970-01-01
    whole = pa.table({"c0": days})
    parts = [whole.slice(0, 1), whole.slice(1, 1), whole.slice(2, 1)]
    oracle = Oracle(TLP_WHERE, Query("SELECT d + 30 AS c0 FROM fa"), ["p", "NOT p", "p IS NULL"], "concat")
    got = combine(oracle, parts, whole)
    assert got.column(0).cast(pa.int32()).to_pylist() == [2_932_926, None, 0]
    assert describe("x", "SELECT 1", "differs", got, whole).count("10000-01-30") == 2
