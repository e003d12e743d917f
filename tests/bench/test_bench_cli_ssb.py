"""CI: `hetdb bench ssb --sf 0.01 --device cpu --vs duckdb --repeat 1` end to end on the real engine.

Checks that results.json is complete, every answer is marked correct, and the plots exist. Nothing
about speed is asserted."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("hetdb.exec.engine", reason="the SQL engine has not landed yet")
pytest.importorskip("hetdb.datagen.ssb")


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return str(tmp_path_factory.mktemp("bench") / "ssb-db")


def test_bench_ssb_cpu_end_to_end(tmp_path, ssb_db):
    from hetdb.cli.main import main

    out = tmp_path / "out"
    rc = main(["bench", "ssb", "--sf", "0.01", "--device", "cpu", "--vs", "duckdb", "--repeat", "1",
               "--db", ssb_db, "--out", str(out), "--disk-test-mb", "32"])
    with open(out / "results.json") as f:
        results = json.load(f)
    for key in ("format", "command_line", "versions", "machine", "dataset", "ceilings", "runs", "suite",
                "sf", "device", "repeat"):
        assert key in results, key
    assert results["ceilings"]["disk_read"]["bytes_per_s"] > 0
    assert results["ceilings"]["host_memcpy"]["bytes_per_s"] > 0
    assert set(results["dataset"]["tables"]) == {"lineorder", "customer", "supplier", "part", "date"}
    (run,) = results["runs"]
    assert run["mode"] == "hot"
    queries = run["queries"]
    assert [q["name"] for q in queries] == ["q1.1", "q1.2", "q1.3", "q2.1", "q2.2", "q2.3", "q3.1", "q3.2",
                                            "q3.3", "q3.4", "q4.1", "q4.2", "q4.3"]
    problems = {q["name"]: q.get("check") or q.get("error") for q in queries if not q["correct"]}
    assert problems == {}
    assert rc == 0
    for q in queries:
        assert q["status"] == "ok" and q["expected_rows"] == q["rows"]
        assert q["hetdb"]["median_s"] > 0 and len(q["hetdb"]["seconds"]) == 1
        assert q["duckdb"]["median_s"] > 0 and q["speedup"] > 0
        assert q["referenced_bytes"] > 0 and q["throughput_bytes_per_s"] > 0
        assert q["fraction_of_ceiling"] is not None
        # hot on the CPU: the timed run reads its pages from the host page cache
        assert q["hetdb"]["paths"]["pages"].get("host_cpu", 0) > 0
    assert run["summary"]["geomean_speedup"] > 0
    report = (out / "report.md").read_text()
    assert "Geometric-mean speed-up" in report
    assert "Pages by path" in report and "| q1.1 | – | – | " in report
    for png in ("times_hot.png", "throughput_hot.png"):
        assert os.path.getsize(out / png) > 1000


def test_bench_warm_and_cold_modes_reuse_the_data(tmp_path, ssb_db):
    from hetdb.cli.main import main

    out = tmp_path / "out"
    rc = main(["bench", "ssb", "--sf", "0.01", "--device", "cpu", "--vs", "none", "--repeat", "2",
               "--mode", "warm,cold", "--queries", "q1.1,q4.3", "--db", ssb_db, "--out", str(out),
               "--disk-test-mb", "16", "--set", "batch_rows=7", "--set", "zone_maps=false"])
    with open(out / "results.json") as f:
        results = json.load(f)
    # --set passes connection options to hetdb's side (answers still checked) and is recorded
    assert results["config"]["settings"] == {"batch_rows": 7, "zone_maps": False}
    assert "--set batch_rows=7 --set zone_maps=false" in results["command_line"]
    assert [r["mode"] for r in results["runs"]] == ["warm", "cold"]
    assert results["runs"][1]["ceiling"] == "disk read" and results["runs"][1]["cache_drop"]["method"]
    # a cold run's disk bytes per second of end-to-end time, against the disk ceiling (a warm one: none)
    assert all(q["disk_bytes_per_s"] is None for q in results["runs"][0]["queries"])
    ceiling = results["runs"][1]["ceiling_bytes_per_s"]
    for q in results["runs"][1]["queries"]:
        assert q["disk_bytes_per_s"] == pytest.approx(q["hetdb"]["bytes_read"] / q["hetdb"]["median_s"])
        assert q["disk_fraction"] == pytest.approx(q["disk_bytes_per_s"] / ceiling)
    for run in results["runs"]:
        assert [q["name"] for q in run["queries"]] == ["q1.1", "q4.3"]
        assert all(q["correct"] and q["duckdb"] is None and len(q["hetdb"]["seconds"]) == 2
                   for q in run["queries"])
    assert rc == 0
    assert (out / "times_cold.png").exists() and (out / "throughput_warm.png").exists()


def test_bench_set_names_the_options_it_takes(tmp_path, ssb_db, capsys):
    from hetdb.cli.main import main

    rc = main(["bench", "ssb", "--sf", "0.01", "--device", "cpu", "--vs", "none", "--db", ssb_db,
               "--out", str(tmp_path / "out"), "--set", "gpu_coproces=on"])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert "--set gpu_coproces: not a connection option" in err and "gpu_coprocess" in err
    assert not (tmp_path / "out").exists()
