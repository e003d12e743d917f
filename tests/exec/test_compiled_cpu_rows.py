"""Compiled CPU loops that select rows for a sink taking them as they are: a hash build after a
filter (no probe), a sort and a top-N after filters and probes (inner unique and non-unique, left
with NULL keys, semi), with NULLs, dictionary strings and ties. Against DuckDB and the operators
(cpu_compile=False), at 1 and 3 threads and in 7-row batches; EXPLAIN ANALYZE names the loop."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import TOTAL, mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.exec.compiled_cpu import CPU_COMPILED  # noqa: E402


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(7)
    n = 30_000
    words = np.array(["apple", "fig", "grape", "kiwi", "lemon", "mango"])
    fact = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "a": pa.array(rng.integers(-5, 400, n), pa.int64(), mask=rng.random(n) < 0.05),
        "b": pa.array(words[rng.integers(0, len(words), n)], pa.string(), mask=rng.random(n) < 0.05),
        "v": pa.array(rng.integers(-1000, 1000, n), pa.int64(), mask=rng.random(n) < 0.05),
        "d": pa.array(rng.normal(0, 10, n), pa.float64()),
    })
    m = 600
    dim_a = rng.integers(0, 420, m)  # non-unique keys, some never in fact
    dim = pa.table({"a": pa.array(dim_a, pa.int64(), mask=rng.random(m) < 0.05),
                    "s": pa.array(words[dim_a % len(words)], pa.string()),
                    "w": pa.array(rng.integers(0, 50, m), pa.int32(), mask=rng.random(m) < 0.1)})
    u = np.arange(0, 300)
    uniq = pa.table({"a": pa.array(u, pa.int64()), "t": pa.array([f"t{x % 13}" for x in u], pa.string())})
    return {"fact": fact, "dim": dim, "uniq": uniq}


# (sql, ordered): ordered answers are compared in order (ORDER BY with a total order)
QUERIES = [
    ("SELECT f.id, f.v, d.s FROM fact f JOIN (SELECT * FROM dim WHERE w < 20) d ON f.a = d.a", False),
    ("SELECT f.id, f.b FROM fact f JOIN (SELECT a FROM uniq WHERE t IN ('t1', 't5')) u ON f.a = u.a", False),
    ("SELECT id, v, b FROM fact WHERE v > 900 OR b = 'kiwi' AND a < 3 ORDER BY v DESC NULLS LAST, id", True),
    ("SELECT id, a, d FROM fact WHERE d > 15 ORDER BY a NULLS FIRST, d, id", True),
    ("SELECT f.id, f.v, d.s, d.w FROM fact f JOIN dim d ON f.a = d.a WHERE f.v < 0 "
     "ORDER BY d.w DESC NULLS FIRST, f.v, f.id, d.s LIMIT 50", True),
    ("SELECT f.id, u.t, f.b FROM fact f JOIN uniq u ON f.a = u.a WHERE f.b <> 'fig' "
     "ORDER BY u.t, f.b NULLS FIRST, f.id LIMIT 70 OFFSET 5", True),
    ("SELECT f.id, d.w FROM fact f LEFT JOIN (SELECT DISTINCT a, w FROM dim WHERE a < 100) d ON f.a = d.a "
     "WHERE f.id % 7 = 0 ORDER BY d.w NULLS FIRST, f.id, d.w LIMIT 100", True),
    ("SELECT id, v FROM fact f WHERE EXISTS (SELECT 1 FROM uniq u WHERE u.a = f.a AND u.t = 't3') "
     "ORDER BY v, id", True),
    ("SELECT id FROM fact WHERE a > 10000 ORDER BY id LIMIT 5", True),
]


def test_row_sinks_compiled_match_duckdb_and_operators(tmp_path) -> None:
    tables = _tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    compared, compiled_sinks = 0, set()
    for options in ({"threads": 1}, {"threads": 3}, {"threads": 2, "batch_rows": 7}):
        with hetdb.connect(db.path, device="cpu", **options) as con, \
                hetdb.connect(db.path, device="cpu", cpu_compile=False, **options) as ops:
            for sql, ordered in QUERIES:
                got = con.sql(sql).arrow()
                order = TOTAL if ordered else ()
                want = duck.sql(sql).to_arrow_table()
                assert mismatch(got, want, order) is None, f"{options} {sql}\n{con.explain(sql, analyze=True)}"
                assert mismatch(got, ops.sql(sql).arrow(), order) is None, f"{options} {sql}"
                compared += 1
                for line in con.explain(sql, analyze=True).splitlines():
                    if CPU_COMPILED in line and "row selection" in line:
                        compiled_sinks.add(line.strip().split()[1])
    assert compared == 3 * len(QUERIES)
    # the filtered hash build, the sort and the top-N each ran as a compiled loop
    assert {"HashBuild", "Sort", "TopN"} <= compiled_sinks, compiled_sinks


RESULT_QUERIES = [
    ("SELECT c, count(*), max(s), min(s) FROM (SELECT a, count(*) AS c, min(v) AS s FROM fact GROUP BY a) GROUP BY c",
     False),
    ("SELECT a, n FROM (SELECT a, count(*) AS n FROM fact GROUP BY a) WHERE n > 70 ORDER BY n DESC, a", True),
    ("SELECT t.a, t.n, d.s FROM (SELECT a, count(v) AS n FROM fact GROUP BY a) t JOIN dim d ON t.a = d.a "
     "WHERE t.n > 60", False),
]


def test_result_sources_compiled_and_cut_into_morsels(tmp_path, monkeypatch) -> None:
    """A previous pipeline's result (an aggregation's one batch) read by a compiled loop, cut into a
    morsel per thread (the cut lowered to 50 rows here) or read whole."""
    from hetdb.backend.cpu import tuning
    from hetdb.exec.operators import basic

    tables = _tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    cuts = []
    pieces = basic.ResultSource._pieces

    def spy(self, ctx, b, share=None):
        out = pieces(self, ctx, b, share)
        cuts.append(len(out))
        return out

    monkeypatch.setattr(basic.ResultSource, "_pieces", spy)
    monkeypatch.setitem(tuning.values, "result_morsel_rows", 50)
    compared = 0
    for threads in (1, 3):
        with hetdb.connect(db.path, device="cpu", threads=threads) as con, \
                hetdb.connect(db.path, device="cpu", threads=threads, cpu_compile=False) as ops:
            for sql, ordered in RESULT_QUERIES:
                got = con.sql(sql).arrow()
                order = TOTAL if ordered else ()
                assert got.num_rows > 0, sql
                assert mismatch(got, duck.sql(sql).to_arrow_table(), order) is None, f"{threads} {sql}"
                assert mismatch(got, ops.sql(sql).arrow(), order) is None, f"{threads} {sql}"
                text = con.explain(sql, analyze=True)
                lines = text.splitlines()
                starts = [i for i, line in enumerate(lines) if "ResultScan aggregate" in line]
                assert starts, text
                sink = next(line for line in lines[starts[0]:] if "=>" in line)
                assert CPU_COMPILED in sink, text
                compared += 1
    assert compared == 2 * len(RESULT_QUERIES)
    assert max(cuts) == 3 and min(cuts) == 1, cuts


def test_interval_columns_are_refused_by_the_loop(tmp_path) -> None:
    """An INTERVAL column (a 16-byte container in a complex128 array) read by the loop (IS NOT NULL
    before a sort, count() of it) is refused with a reason: the loop reads int64/float64/bool only
    (it failed in Numba's lowering: 'Cannot cast complex128 to int64')."""
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as con:
        con.execute("CREATE TABLE ivs AS SELECT range AS id, range % 3 AS g, CASE WHEN range % 4 = 0 THEN NULL "
                    "ELSE to_days(range) END AS iv FROM range(50)")
        for sql, rows in (("SELECT id, iv FROM ivs WHERE iv IS NOT NULL ORDER BY iv DESC, id", 37),
                          ("SELECT g, count(iv) FROM ivs GROUP BY g", 3)):
            assert len(con.sql(sql).fetchall()) == rows, sql
            text = con.explain(sql, analyze=True)
            assert "of type INTERVAL is not compiled for the CPU" in text, text
