"""Aggregating compiled CPU loops read integer columns whose zone maps fit a narrower type from narrow
copies of the cached pages (exec/compiled_cpu_narrow.py): the answers match DuckDB, copies are made
for the columns that fit (signed and unsigned, decimals) and not for the others, and the host page
cache counts their bytes and gives them back with the page."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb import types as T  # noqa: E402
from hetdb.backend.cpu import tuning  # noqa: E402
from hetdb.column import Column  # noqa: E402
from hetdb.exec.compiled_cpu import CPU_COMPILED  # noqa: E402
from hetdb.exec.host_cache import DecodedPageCache  # noqa: E402

ROWS, PER_PAGE = 50_000, 4096
QUERIES = [
    "SELECT g, count(*), sum(a), sum(b), min(c), sum(d), max(v) FROM fact WHERE a > -20 AND b < 50000 "
    "AND d >= 1.50 GROUP BY g",
    "SELECT sum(a * b), sum(d * a), count(*) FROM fact WHERE c BETWEEN -1000 AND 30000 AND a + 1 > 0",
    "SELECT sum(b) FROM fact f JOIN dim ON f.a = dim.id WHERE dim.w > 3",
]


@pytest.fixture(scope="module")
def tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(17)
    return {"fact": pa.table({
        "g": pa.array(rng.integers(0, 9, ROWS), pa.int32()),
        "a": pa.array(rng.integers(-100, 101, ROWS), pa.int32(), mask=rng.random(ROWS) < 0.05),   # int8
        "b": pa.array(rng.integers(0, 60_001, ROWS), pa.int64()),                                # uint16
        "c": pa.array(rng.integers(-40_000, 40_001, ROWS), pa.int32()),                          # stays
        "d": pa.array([Decimal(int(x)).scaleb(-2) for x in rng.integers(0, 500, ROWS)], pa.decimal128(15, 2)),
        "v": pa.array(rng.integers(-(1 << 40), 1 << 40, ROWS), pa.int64())}),                    # stays
        "dim": pa.table({"id": pa.array(np.arange(-100, 101), pa.int32()),
                         "w": pa.array(np.arange(201) % 7, pa.int32())})}


@pytest.fixture(scope="module")
def db(tmp_path_factory, tables):
    return stored_tables(tmp_path_factory.mktemp("narrow") / "db", tables, rows_per_page=PER_PAGE)


@pytest.mark.parametrize("threads", [1, 3])
def test_narrow_copies_answer_as_duckdb(db, tables, threads, monkeypatch) -> None:
    made: dict[str, set] = {}
    narrow = DecodedPageCache.narrow

    def spy(self, key, dtype):
        got = narrow(self, key, dtype)
        made.setdefault(key[1], set()).add(None if got is None else got.dtype)
        return got

    monkeypatch.setattr(DecodedPageCache, "narrow", spy)
    duck = duck_tables(tables)
    with tuning.override(narrow_scan_rows=0), hetdb.connect(db.path, device="cpu", threads=threads) as con:
        for sql in QUERIES:
            want = duck.sql(sql).to_arrow_table()
            assert want.num_rows > 0
            for _ in range(3):  # cold, then pages (and their narrow copies) from the host page cache
                assert mismatch(con.sql(sql).arrow(), want, ()) is None, sql
            assert CPU_COMPILED in con.explain(sql, analyze=True)
    assert made["a"] == {np.dtype(np.int8)}
    assert made["b"] == {np.dtype(np.uint16)}
    assert made["d"] == {np.dtype(np.int16)}
    assert "c" not in made and "v" not in made and "g" not in made  # (g: the group key, read as it is)


def test_narrow_copies_counted_and_given_back() -> None:
    cache = DecodedPageCache(1 << 20)
    key = ("/v1", "x", 0)
    col = Column(T.INT32, data=np.arange(-50, 50, dtype=np.int32))
    cache._put(key, col, col.data.nbytes, col.data.nbytes)
    before = cache.used
    got = cache.narrow(key, np.dtype(np.int8))
    assert got.dtype == np.int8 and np.array_equal(got, col.data)
    assert cache.used == before + got.nbytes
    assert cache.narrow(key, np.dtype(np.int8)) is got
    assert cache.narrow(("/v1", "y", 0), np.dtype(np.int8)) is None  # not cached: no copy
    wide = ("/v1", "z", 0)
    zcol = Column(T.INT32, data=np.array([0, 1000], np.int32))
    cache._put(wide, zcol, 8, 8)
    assert cache.narrow(wide, np.dtype(np.int8)) is None  # values past int8
    cache.clear()
    assert cache.used == 0




def test_copies_made_in_the_run_that_reads_the_pages(db, monkeypatch) -> None:
    """The first run (pages read from disk into the cache) makes the copies; the next one only reads
    them (made in the second run, their cost fell on a timed run)."""
    made: list[bool] = []
    narrow = DecodedPageCache.narrow

    def spy(self, key, dtype):
        fresh = key not in self._narrow
        got = narrow(self, key, dtype)
        made.append(fresh and got is not None)
        return got

    monkeypatch.setattr(DecodedPageCache, "narrow", spy)
    with tuning.override(narrow_scan_rows=0), hetdb.connect(db.path, device="cpu", threads=1) as con:
        con.sql(QUERIES[0]).arrow()
        first = list(made)
        made.clear()
        con.sql(QUERIES[0]).arrow()
    assert first and all(first)
    assert made and not any(made)
