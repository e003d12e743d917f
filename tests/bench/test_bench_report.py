"""report.md, plots and `bench compare` on results constructed here (no engine needed)."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

from hetdb.bench.cli import add_parser, parse_modes
from hetdb.bench.diff import diff_results, render_diff
from hetdb.bench.plots import write_plots
from hetdb.bench.report import RESULTS_FORMAT, load_results, render_markdown, write_report, write_results
from hetdb.bench.runner import geomean, jsonable, summarize
from hetdb.errors import HetdbError, InputError


def _query(name, status, hetdb_s, duck_s, refs=10_000_000):
    h = None if status == "error" else {
        "median_s": hetdb_s, "exec_median_s": hetdb_s * 0.8, "seconds": [hetdb_s], "bytes_read": refs,
        "bytes_host_to_device": refs, "peak_gpu_bytes": 1 << 20, "peak_host_bytes": 2 << 20}
    return {"name": name, "status": status, "correct": status == "ok",
            "check": "row 0, column 0 (x): 1 vs 2 expected" if status == "wrong" else None,
            "error": "UnsupportedError: LIKE" if status == "error" else None, "rows": 1,
            "hetdb": h, "duckdb": {"median_s": duck_s, "seconds": [duck_s]},
            "speedup": duck_s / hetdb_s if h else None, "referenced_bytes": refs,
            "throughput_bytes_per_s": refs / hetdb_s if h else None,
            "duckdb_throughput_bytes_per_s": refs / duck_s, "ceiling": "host memcpy",
            "fraction_of_ceiling": refs / hetdb_s / 1e10 if h else None}


def _results():
    queries = [_query("q1.1", "ok", 0.01, 0.04), _query("q1.2", "ok", 0.02, 0.02),
               _query("q2.1", "wrong", 0.5, 0.1), _query("q3.1", "error", 0, 0.1)]
    return {"format": RESULTS_FORMAT, "suite": "tpch", "sf": 0.01, "device": "cpu", "repeat": 1,
            "command_line": "hetdb bench tpch --sf 0.01", "created": "now",
            "versions": {"hetdb": "0.1.0"}, "machine": {"cpu": "test", "cpu_count": 2, "gpus": []},
            "dataset": {"path": "/db", "generated": True, "duckdb_load_seconds": 0.1},
            "ceilings": {"disk_read": {"bytes_per_s": 1e9}, "host_memcpy": {"bytes_per_s": 1e10},
                         "gpu": {"available": False}},
            "runs": [{"mode": "hot", "device": "cpu", "ceiling": "host memcpy", "ceiling_bytes_per_s": 1e10,
                      "queries": queries, "summary": summarize(queries)}]}


def test_summary_and_geomean():
    s = _results()["runs"][0]["summary"]
    assert (s["queries"], s["correct"], s["wrong"], s["errors"]) == (4, 2, 1, 1)
    assert s["geomean_speedup"] == pytest.approx(2.0)  # sqrt(4 * 1); wrong/failed queries excluded
    assert geomean([]) is None


def test_report_and_plots(tmp_path):
    results = _results()
    write_results(results, str(tmp_path))
    assert load_results(str(tmp_path)) == results
    text = render_markdown(results)
    assert "not comparable to published TPC-H results" in text
    assert "**2.00×**" in text and "2/4 answers correct" in text
    assert "| q2.1 | ✗ wrong |" in text and "q3.1: UnsupportedError: LIKE" in text
    assert len(re.findall(r"\n\| q\d", text)) == 4
    results["runs"][0]["queries"][0]["hetdb"]["paths"] = {
        "pages": {"gpu_resident": 3, "disk_direct": 2}, "bytes": {"gpu_resident": 3 << 20, "disk_direct": 2 << 20},
        "admitted": 1, "evicted": 0, "bypassed": 2}
    text = render_markdown(results)
    row = next(x for x in text.splitlines() if x.startswith("| q1.1 | 3 / "))
    assert row.endswith("| 1 | 0 | 2 |") and row.count("–") == 3
    write_report(results, str(tmp_path))
    paths = write_plots(results, str(tmp_path))
    assert sorted(p.split("/")[-1] for p in paths) == ["throughput_hot.png", "times_hot.png"]
    for p in paths:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_load_results_rejects_other_files(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(InputError, match="not a hetdb bench"):
        load_results(str(tmp_path / "x.json"))
    with pytest.raises(InputError, match="no benchmark results"):
        load_results(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json.gz").write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(InputError, match="cannot read"):
        load_results(str(tmp_path / "bad.json.gz"))


def test_archived_results_are_read_gzipped(tmp_path):
    import gzip
    results = _results()
    path = write_results(results, str(tmp_path))
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
        g.write(f.read())
    os.remove(path)
    assert load_results(str(tmp_path)) == results
    assert load_results(path + ".gz") == results


def test_compare_per_query_ratio(tmp_path, capsys):
    a = _results()
    b = copy.deepcopy(a)
    qb = b["runs"][0]["queries"]
    qb[0]["hetdb"]["median_s"] = 0.005          # q1.1 twice as fast
    qb[2]["status"] = "ok"                       # q2.1 fixed
    del qb[3]                                    # q3.1 no longer run
    d = diff_results(a, b)
    rows = {r["query"]: r for r in d["rows"]}
    assert len(rows) == 4
    assert rows["q1.1"]["ratio"] == pytest.approx(0.5) and rows["q1.2"]["ratio"] == pytest.approx(1.0)
    assert rows["q3.1"]["status_b"] == "absent" and rows["q3.1"]["ratio"] is None
    text = render_diff(d, "A.json", "B.json")
    assert "faster" in text and "wrong -> ok" in text and "geometric mean of B/A over 3 queries" in text

    write_results(a, str(tmp_path / "a"))
    write_results(b, str(tmp_path / "b"))
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b" / "results.json")])
    assert args.func(args) == 0
    assert "q1.1" in capsys.readouterr().out


def test_modes_and_jsonable():
    import numpy as np

    assert parse_modes("all") == ["hot", "warm", "cold"]
    assert parse_modes("cold,hot,cold") == ["cold", "hot"]
    with pytest.raises(HetdbError, match="lukewarm"):
        parse_modes("lukewarm")
    assert jsonable({"a": np.int64(3), "b": (np.float32(1.5), float("nan")), 4: {1, 2}}) == \
        {"a": 3, "b": [1.5, None], "4": [1, 2]}


def test_a_cold_run_reports_disk_reads_per_second_against_the_disk_ceiling():
    from hetdb.bench.harness import _one_line

    results = _results()
    run = results["runs"][0]
    run.update(mode="cold", ceiling="disk read", ceiling_bytes_per_s=1e9)
    for q in run["queries"]:
        h = q["hetdb"]
        if h:
            q["disk_bytes_per_s"] = h["bytes_read"] / h["median_s"]
            q["disk_fraction"] = q["disk_bytes_per_s"] / 1e9
    text = render_markdown(results)
    assert "against the disk ceiling (1.00 GB/s): geomean" in text
    assert "| q1.1 | 9.5 MiB | 10.0 ms | 1.00 GB/s | 100% |" in text
    assert "| q2.1 | 9.5 MiB | 500.0 ms | 20.0 MB/s | 2% |" in text
    assert "disk 1.00 GB/s = 100%" in _one_line(run["queries"][0])
    # not a cold run: no such table
    assert "against the disk ceiling" not in render_markdown(_results())


def test_a_warm_gpu_run_reports_host_to_device_bytes_per_second_against_the_pinned_link():
    from hetdb.bench.harness import _one_line
    from hetdb.bench.runner import _link_share

    results = _results()
    run = results["runs"][0]
    run.update(mode="warm", ceiling="H2D pinned", ceiling_bytes_per_s=50e9)
    for q in run["queries"]:
        h = q["hetdb"]
        if h:
            h["bytes_host_to_device"] = 400_000_000
            q["link_bytes_per_s"], q["link_fraction"] = _link_share(400_000_000, h["median_s"], 50e9)
    text = render_markdown(results)
    assert "against the H2D pinned ceiling (50.00 GB/s): geomean" in text
    assert "| q1.1 | 381.5 MiB | 10.0 ms | 40.00 GB/s | 80% |" in text
    assert "link 40.00 GB/s = 80%" in _one_line(run["queries"][0])
    assert "against the disk ceiling" not in text
    assert _link_share(None, 1.0, 50e9) == (None, None) and _link_share(10, 0.0, 50e9) == (None, None)
    assert _link_share(10, 1.0, None) == (10.0, None)
    # the mode's summary: over the queries answered correctly (q1.1 80%, q1.2 40%)
    from hetdb.bench.runner import summarize

    s = summarize(run["queries"])
    assert s["link_share_lowest"] == pytest.approx(0.4) and s["link_share_geomean"] == pytest.approx(0.32 ** 0.5)
