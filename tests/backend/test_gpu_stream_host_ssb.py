"""SSB Q1 on a generated database (set HETDB_SSB_DB to its directory; skipped otherwise): warm runs (a new
connection per run, so the GPU page cache is cold and pages stream from the pinned host tier) with no
limit and with gpu_memory_limit at 10% of the data the queries reference, plus hot runs under that
limit. Answers must be equal in every configuration; times, bytes moved and the fraction of the pinned
host-to-device ceiling go to $OUT/ssb_host_tier.json when OUT is set."""

from __future__ import annotations

import json
import os
import statistics
import time

import pytest

from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy"),
              pytest.mark.skipif(not os.environ.get("HETDB_SSB_DB"), reason="HETDB_SSB_DB is not set")]

QUERIES = os.environ.get("HETDB_SSB_QUERIES", "q1.1,q1.2,q1.3").split(",")
REPEAT = 3


def timed(con, sql: str) -> tuple[list, dict, float]:
    start = time.perf_counter()
    res = con.sql(sql)
    rows = res.fetchall()
    return rows, res.stats, time.perf_counter() - start


def test_ssb_q1_streams_from_the_host_tier():
    import hetdb
    from hetdb.backend.gpu import measure_bandwidth
    from hetdb.bench import datasets
    from hetdb.bench.suites import get_suite, load_queries, referenced_columns
    from hetdb.cache.host_cache import shared_host_cache
    from hetdb.storage import Database

    path = os.environ["HETDB_SSB_DB"]
    db = Database.open(path, create=False)
    schema = datasets.table_columns(db, get_suite("ssb").tables)
    pinned = measure_bandwidth(64 << 20)["h2d_pinned_gbps"] * 1e9
    report: dict = {"db": path, "h2d_pinned_bytes_per_s": pinned, "queries": {}}
    compared = 0
    for q in load_queries("ssb", QUERIES):
        nbytes = datasets.column_bytes(db, referenced_columns(q.sql, schema))
        limit = nbytes // 10
        entry: dict = {"referenced_bytes": nbytes, "limit_bytes": limit}
        with hetdb.connect(path, device="gpu") as con:  # warm-up: loads the host tier from disk
            expected, stats, seconds = timed(con, q.sql)
        entry["first_run"] = {"seconds": seconds, "bytes_read": stats["bytes_read"]}
        for label, options, fresh in (("warm", {}, True), ("warm_limited", {"gpu_memory_limit": limit}, True),
                                      ("hot_limited", {"gpu_memory_limit": limit}, False),
                                      ("hot", {}, False)):
            runs = []
            con = None
            for _ in range(REPEAT + (0 if fresh else 1)):
                if con is None or fresh:
                    if con is not None:
                        con.close()
                    con = hetdb.connect(path, device="gpu", **options)
                rows, stats, seconds = timed(con, q.sql)
                assert rows == expected, (q.name, label)
                compared += 1
                runs.append((seconds, stats))
            con.close()
            runs = runs[-REPEAT:]
            median = statistics.median(s for s, _ in runs)
            exec_median = statistics.median(st["exec_seconds"] for _, st in runs)
            last = runs[-1][1]
            entry[label] = {
                "median_s": median, "exec_median_s": exec_median,
                "plan_median_s": statistics.median(st["plan_seconds"] for _, st in runs),
                "gbps": nbytes / median / 1e9, "exec_gbps": nbytes / exec_median / 1e9,
                "fraction_of_pinned_h2d": nbytes / median / pinned,
                "exec_fraction_of_pinned_h2d": nbytes / exec_median / pinned,
                "bytes_read": last["bytes_read"], "pages_read": last["pages_read"],
                "pages_cached": last["pages_cached"], "bytes_host_to_device": last["bytes_host_to_device"],
                "peak_gpu_bytes": last["peak_gpu_bytes"], "spilled": last["spilled_partitions"]}
            if label.startswith("warm"):
                assert last["bytes_read"] == 0, (q.name, label, last)  # all from the host tier
        entry["slowdown_warm_limited_vs_warm"] = entry["warm_limited"]["median_s"] / entry["warm"]["median_s"]
        entry["slowdown_hot_limited_vs_hot"] = entry["hot_limited"]["median_s"] / entry["hot"]["median_s"]
        report["queries"][q.name] = entry
    tier = shared_host_cache()
    report["host_tier"] = {"allocated_bytes": tier.allocated_bytes, "used_bytes": tier.used_bytes,
                           **tier.stats.as_dict()}
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "ssb_host_tier.json"), "w") as f:
            json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))
    assert compared == len(QUERIES) * (4 * REPEAT + 2)  # warm x2 fresh, hot x2 after a warm-up run
