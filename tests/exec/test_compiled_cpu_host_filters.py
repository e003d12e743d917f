"""Scan filters over plain-string pages in compiled CPU loops that materialize rows (a hash build, a
sort, a top-N): evaluated per morsel by the operators into a BOOL column the loop reads
(compiled_cpu_kernels.host_filters), the rest of the pipeline compiled (TPC-H q20's part scan).
NULL strings, LIKE / NOT LIKE; aggregating loops and a plain-string column the loop itself needs
stay operator at a time. At 1 and 3 threads, against DuckDB and the operators."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from exec_plan_helpers import compiled_answers, duck_tables, stored_tables  # noqa: E402

_WORDS = ["special", "requests", "pending", "deposits", "quickly", "furious", "blithely", "ironic"]


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(13)
    n = 30_000
    words = rng.integers(0, len(_WORDS), (n, 4))
    # unique suffixes: too many distinct strings for a dictionary page
    comments = [" ".join(_WORDS[w] for w in row) + f" #{i}" for i, row in enumerate(words)]
    orders = pa.table({
        "ok": pa.array(np.arange(n), pa.int64()),
        "ck": pa.array(rng.integers(0, 2000, n), pa.int64()),
        "c": pa.array(comments, pa.string(), mask=rng.random(n) < 0.03),
        "v": pa.array(rng.integers(-50, 50, n), pa.int64())})
    cust = pa.table({"ck": pa.array(np.arange(2000), pa.int64()), "g": pa.array(np.arange(2000) % 7, pa.int32())})
    return {"orders": orders, "cust": cust}


COMPILED = [
    # the filtered orders are the (smaller) build side of the join
    "SELECT count(*), sum(o.v), sum(f.v) FROM orders f JOIN (SELECT ok, v FROM orders WHERE c LIKE "
    "'%ironic%deposits%') o ON f.ok = o.ok",
    "SELECT ok, v FROM orders WHERE c NOT LIKE '%quickly%' AND v > 40 ORDER BY v, ok",
    "SELECT ok, v FROM orders WHERE c LIKE '%pending%' ORDER BY v DESC, ok LIMIT 25",
]
OPERATORS = [
    # aggregating loops behind a plain-string filter: operator at a time (q13's shape)
    "SELECT ck, count(ok) FROM orders WHERE c NOT LIKE '%special%requests%' GROUP BY ck",
    "SELECT s.g, count(*), sum(o.v) FROM orders o JOIN cust s ON o.ck = s.ck WHERE o.c LIKE '%ironic%deposits%' "
    "GROUP BY s.g",
    # the loop would need the strings themselves (a group key)
    "SELECT c, count(*) FROM orders WHERE c LIKE 'blithely blithely%' GROUP BY c",
]


def test_plain_string_scan_filters_in_compiled_loops(tmp_path) -> None:
    tables = _tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=8192)
    duck = duck_tables(tables)
    ran = 0
    for _threads, sql, plan in compiled_answers(db.path, duck, COMPILED + OPERATORS):
        if sql in OPERATORS:  # (the pages are plain: the other queries' loops read them)
            assert "plain (not dictionary-encoded) string page" in plan, plan
        else:
            assert "plain (not dictionary-encoded)" not in plan, plan
            assert "compiled into one CPU loop (scan, filters, row selection" in plan, plan
        ran += 1
    assert ran == 2 * (len(COMPILED) + len(OPERATORS))
