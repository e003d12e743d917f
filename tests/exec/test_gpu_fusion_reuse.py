"""Fused pipelines kept between runs of one cached plan (exec/fusion_reuse.py), planned and driven on
the CPU with emulated kernels (fusion_emulation.py): a repeated query reuses its dense tables and
skips the dimension builds, streamed runs too, and a new table version plans and builds again."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

import pyarrow as pa  # noqa: E402
from diff_check import mismatch  # noqa: E402
from diff_queries import SSB_ORDERING, load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb import types as T  # noqa: E402
from hetdb.storage import ColumnSpec, Database  # noqa: E402


def _aggregate_line(text: str) -> str:
    return next(line for line in text.splitlines() if "HashAggregate" in line)


def test_repeated_queries_reuse_dense_tables_and_skip_dimension_builds(ssb_db, emulated_fusion):
    from hetdb.exec.fusion import REUSED

    queries = load_queries("ssb")
    reused = skipped = 0
    with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:  # the fusion emulation, not the CPU loops
        for name, sql in queries.items():
            first = con.sql(sql)
            text = con.explain(sql, analyze=True)  # the same cached plan: its fused state is reused
            again = con.sql(sql)
            assert REUSED in _aggregate_line(text), f"{name}:\n{text}"
            assert "operator at a time" not in text, f"{name}:\n{text}"
            reused += 1
            skipped += text.count("its result is built into") + text.count("runs inside pipeline")
            for got in (first, again):
                diff = mismatch(got.arrow(), ssb_db.reference(sql), SSB_ORDERING[name])
                assert diff is None, f"{name}: {diff}\n{text}"
        engine = con._get_engine()
        assert engine.fused_states.hits >= 2 * len(queries)
    assert reused == len(queries) == 13
    assert skipped >= 13  # every star query has at least one dimension pipeline it no longer runs


def test_streamed_runs_reuse_dense_tables_too(ssb_db, emulated_fusion):
    """Connection.execute streams its result through a variant of the cached physical plan (its
    result pipeline's sink replaced): the fused state is still kept and taken per cached plan."""
    queries = load_queries("ssb")
    names = ["q2.1", "q3.1", "q4.1"]
    with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:
        store = con._get_engine().fused_states
        for name in names:
            sql = queries[name]
            expected = ssb_db.reference(sql)
            for _ in range(3):
                hits = store.hits
                got = con.execute(sql).arrow()
                diff = mismatch(got, expected, SSB_ORDERING[name])
                assert diff is None, f"{name}: {diff}"
            assert store.hits > hits, name  # the last streamed run took the state the earlier ones kept
    assert len(names) == 3


def test_a_new_table_version_plans_and_builds_again(tmp_path, emulated_fusion):

    from hetdb.exec.fusion import REUSED

    db = Database.open(str(tmp_path / "db"), create=True)
    rng = np.random.default_rng(3)
    fact = pa.table({"k": pa.array(rng.integers(0, 100, 5000), pa.int32()),
                     "v": pa.array(rng.integers(0, 50, 5000), pa.int64())})

    def dim(offset):
        return pa.table({"k": pa.array(np.arange(100), pa.int32()),
                         "g": pa.array((np.arange(100) + offset) % 7, pa.int32())})

    for name, tab in (("f", fact), ("d", dim(0))):
        with db.create_table(name, [ColumnSpec(c, T.INT32 if tab[c].type == pa.int32() else T.INT64)
                                    for c in tab.column_names], rows_per_page=1000) as w:
            w.append_arrow(tab)
    sql = "select g, sum(v) as s, count(*) as n from f, d where f.k = d.k group by g"
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as con:
        before = con.sql(sql).arrow().sort_by("g")
        assert REUSED in con.explain(sql, analyze=True)
        with db.create_table("d", [ColumnSpec("k", T.INT32), ColumnSpec("g", T.INT32)],
                             rows_per_page=1000, replace=True) as w:
            w.append_arrow(dim(3))
        text = con.explain(sql, analyze=True)
        after = con.sql(sql).arrow().sort_by("g")
    assert REUSED not in _aggregate_line(text), text
    assert "fused into one generated kernel" in text, text
    expect = {}
    g_of = (np.arange(100) + 3) % 7
    for k, v in zip(fact["k"].to_pylist(), fact["v"].to_pylist()):
        expect[int(g_of[k])] = expect.get(int(g_of[k]), 0) + v
    assert after["s"].to_pylist() == [expect[g] for g in sorted(expect)]
    assert before.num_rows == after.num_rows == 7
