"""Compiled CPU workers read a morsel's cached pages in one call and add their statistics once at
the end (exec/compiled_cpu_morsel.py): the answers match DuckDB at several thread counts and batch
sizes, and EXPLAIN ANALYZE counts the same pages, paths and rows as the operators' scan does."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.exec.compiled_cpu import CPU_COMPILED  # noqa: E402
from hetdb.exec.host_cache import DecodedPageCache  # noqa: E402

ROWS, PER_PAGE = 60_000, 4096
SQL = ("SELECT d.g, count(*), sum(f.v), min(f.k) FROM fact f JOIN dim d ON f.k = d.id "
       "WHERE f.v > -50 GROUP BY d.g")


@pytest.fixture(scope="module")
def tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(11)
    return {"fact": pa.table({"k": pa.array(rng.integers(0, 3000, ROWS), pa.int32()),
                              "v": pa.array(rng.integers(-100, 100, ROWS), pa.int64(),
                                            mask=rng.random(ROWS) < 0.03)}),
            "dim": pa.table({"id": pa.array(np.arange(0, 3000, 3), pa.int32()),
                             "g": pa.array(np.arange(1000) % 13, pa.int32())})}


@pytest.fixture(scope="module")
def db(tmp_path_factory, tables):
    return stored_tables(tmp_path_factory.mktemp("morsel") / "db", tables, rows_per_page=PER_PAGE)


def _fact_scan(text: str) -> str:
    lines = [line for line in text.splitlines() if "TableScan fact" in line]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("batch_rows", [None, 7, 1000])
def test_hot_runs_match_duckdb(db, tables, threads, batch_rows) -> None:
    want = duck_tables(tables).sql(SQL).to_arrow_table()
    assert want.num_rows == 13
    with hetdb.connect(db.path, device="cpu", threads=threads, batch_rows=batch_rows) as con:
        for _ in range(3):  # cold, then pages from the host page cache
            assert mismatch(con.sql(SQL).arrow(), want, ()) is None
        assert CPU_COMPILED in con.explain(SQL, analyze=True)


def test_statistics_match_the_operators(db, monkeypatch) -> None:
    pages = -(-ROWS // PER_PAGE)
    lines = {}
    served = []
    read_resident = DecodedPageCache.read_resident

    def spy(self, keys):
        got = read_resident(self, keys)
        served.append(got is not None)
        return got

    monkeypatch.setattr(DecodedPageCache, "read_resident", spy)
    for compile_ in (True, False):
        with hetdb.connect(db.path, device="cpu", threads=2, cpu_compile=compile_) as con:
            for _ in range(3):
                con.sql(SQL).arrow()
            text = con.explain(SQL, analyze=True)
            assert (CPU_COMPILED in text) == compile_, text
            lines[compile_] = _fact_scan(text)
    for line in lines.values():
        assert f"rows in={ROWS:,} " in line, line
        assert f"host_cpu {2 * pages} pages/" in line, line  # two columns per row group, all cached
    assert sum(served) >= pages, served  # the compiled hot runs took the one-call path
    stored = [re.search(r"host_cpu \d+ pages/([\d,]+) B", line).group(1) for line in lines.values()]
    assert stored[0] == stored[1], lines
