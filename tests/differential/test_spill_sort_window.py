"""External sort (ORDER BY past host_memory_limit: sorted runs on disk, k-way merge) and window
functions over hash-partitioned spill files, against DuckDB.

The table mixes every key kind a sort meets: dictionary and long strings with NULLs, doubles with
NaN/±inf/-0.0, decimals, dates, low-cardinality integers with many ties. Each query runs under limits
small enough that the sort spills (several runs; at the smallest, more runs than one merge takes) and
on 1 and 4 worker threads; answers with a total ORDER BY are compared with DuckDB row by row, and
ties must come out exactly as the in-memory sort orders them. Windows spill by PARTITION BY hash
and must agree with DuckDB (and number peers as the in-memory operator does); one window partition
larger than the limit, or a window without PARTITION BY past it, fails with OutOfMemoryError naming
the window operator.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from diff_check import TOTAL, mismatch
from diff_data import load_duckdb

import hetdb
from hetdb import types as T
from hetdb.errors import OutOfMemoryError
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

N = 20_000
LIMITS = ["48KB", "256KB"]


def spill_table(n: int = N, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    null = lambda share: rng.random(n) < share  # noqa: E731
    words = ["", "a", "A", "ab", "b", "straße", "é", "zz", "a_b"]
    f = (rng.integers(-40, 40, n) / 4.0).tolist()
    for i in np.nonzero(rng.random(n) < 0.1)[0]:
        f[i] = [float("nan"), float("inf"), float("-inf"), -0.0][int(rng.integers(0, 4))]
    longs = ["x" * int(rng.integers(0, 60)) + str(int(v)) for v in rng.integers(0, 500, n)]
    return pa.table({
        "id": pa.array(rng.permutation(n), pa.int64()),
        "k": pa.array(rng.integers(0, 50, n), pa.int64(), mask=null(0.1)),
        "s": pa.array([words[i] for i in rng.integers(0, len(words), n)], pa.string(), mask=null(0.15)),
        "sl": pa.array(longs, pa.string(), mask=null(0.05)),
        "f": pa.array(f, pa.float64(), mask=null(0.05)),
        "d": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**9, 10**9, n)], pa.decimal128(18, 2)),
        "dt": pa.array(rng.integers(-20000, 20000, n).astype("int32"), pa.int32()).cast(pa.date32()),
    })


@pytest.fixture(scope="module")
def spill_db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("spill-sort"))
    db = Database.open(path, create=True)
    table = spill_table()
    with db.create_table("t", [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema],
                         rows_per_page=4096) as w:
        w.append_arrow(table)
    duck, _, _ = load_duckdb(path)
    return path, duck


ORDERED = [
    "SELECT id, s, k FROM t ORDER BY s, k DESC, id",
    "SELECT id, s, sl FROM t ORDER BY s DESC NULLS FIRST, sl NULLS FIRST, id DESC",
    "SELECT id, f, d FROM t ORDER BY f DESC, d, id",
    "SELECT id, f FROM t ORDER BY f NULLS FIRST, id",
    "SELECT id, dt, k, s FROM t WHERE k < 40 ORDER BY dt DESC NULLS LAST, k NULLS FIRST, s, id",
    "SELECT k, count(*) AS n, min(sl) AS m FROM t GROUP BY k ORDER BY n DESC, k NULLS FIRST",
    "SELECT id, s || sl AS x FROM t ORDER BY x, id",
]


def _run(path: str, limit: str | None, threads: int, sql: str) -> tuple[pa.Table, dict]:
    con = hetdb.connect(path, device="cpu", host_memory_limit=limit, threads=threads)
    try:
        r = con.sql(sql)
        return r.arrow(), r.stats
    finally:
        con.close()


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("threads", [1, 4])
def test_external_sort_agrees_with_duckdb(spill_db, limit, threads) -> None:
    path, duck = spill_db
    spilled = 0
    for sql in ORDERED:
        want = duck.sql(sql).to_arrow_table()
        got, stats = _run(path, limit, threads, sql)
        assert want.num_rows > 0
        diff = mismatch(got, want, TOTAL)
        assert diff is None, f"{sql} at {limit}, {threads} threads: {diff}"
        spilled += stats["spilled_partitions"] > 0
    assert spilled >= len(ORDERED) - 1  # the grouped query's sort input is small


@pytest.mark.parametrize("limit", LIMITS)
def test_ties_keep_the_in_memory_order(spill_db, limit) -> None:
    """ORDER BY a key with many ties: the spilled sort returns exactly the rows and order of the
    in-memory sort (scan order within ties), and the keys are ordered as DuckDB orders them."""
    path, duck = spill_db
    for sql in ("SELECT id, k, s FROM t ORDER BY k DESC NULLS FIRST",
                "SELECT id, s, f FROM t ORDER BY s NULLS FIRST, f"):
        whole, _ = _run(path, None, 4, sql)
        got, stats = _run(path, limit, 4, sql)
        assert stats["spilled_partitions"] > 0
        assert mismatch(got, whole, TOTAL) is None, sql  # row by row: ids included
        keys = sql.split("ORDER BY ")[1].replace(" DESC", "").replace(" NULLS FIRST", "").split(", ")
        want = duck.sql(sql).to_arrow_table()
        assert got.num_rows == N and mismatch(got.select(keys), want.select(keys), TOTAL) is None, sql


def test_top_k_stays_in_memory(spill_db) -> None:
    path, duck = spill_db
    sql = "SELECT id, sl FROM t ORDER BY sl DESC, id LIMIT 25 OFFSET 5"
    got, stats = _run(path, "48KB", 4, sql)
    assert stats["spilled_partitions"] == 0
    assert mismatch(got, duck.sql(sql).to_arrow_table(), TOTAL) is None
    assert got.num_rows == 25


WINDOWS = [
    "SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY id) AS rn, "
    "sum(d) OVER (PARTITION BY k ORDER BY id) AS sd, lag(sl) OVER (PARTITION BY k ORDER BY id) AS l "
    "FROM t WHERE k IS NOT NULL ORDER BY id",
    "SELECT id, rank() OVER (PARTITION BY s, k ORDER BY f DESC) AS r, "
    "count(*) OVER (PARTITION BY s, k) AS c, max(sl) OVER (PARTITION BY s, k ORDER BY id "
    "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS m FROM t ORDER BY id",
    # NaN is one partition and one peer group; -0.0 and 0.0 are one partition
    "SELECT id, count(*) OVER (PARTITION BY f) AS c, dense_rank() OVER (PARTITION BY k ORDER BY f) AS dr "
    "FROM t WHERE k IS NOT NULL ORDER BY id",
]


@pytest.mark.parametrize("threads", [1, 4])
def test_window_partitions_spill(spill_db, threads) -> None:
    path, duck = spill_db
    for sql in WINDOWS:
        want = duck.sql(sql).to_arrow_table()
        got, stats = _run(path, "384KB", threads, sql)
        assert want.num_rows > 0
        assert stats["spilled_partitions"] >= 16, sql
        assert stats["peak_host_bytes"] <= (384 << 10) + (512 << 10), sql
        diff = mismatch(got, want, TOTAL)
        assert diff is None, f"{sql}, {threads} threads: {diff}"


def test_spilled_window_numbers_peers_as_in_memory(spill_db) -> None:
    """row_number() over ties of the ORDER BY: DuckDB leaves their order open; the spilled operator
    numbers them exactly as the in-memory one (collection order)."""
    path, _ = spill_db
    sql = "SELECT id, row_number() OVER (PARTITION BY k ORDER BY s) AS rn FROM t WHERE k IS NOT NULL ORDER BY id"
    whole, _ = _run(path, None, 4, sql)
    got, stats = _run(path, "384KB", 4, sql)
    assert stats["spilled_partitions"] > 0 and whole.num_rows > 0
    assert mismatch(got, whole, TOTAL) is None


@pytest.mark.parametrize("sql", [
    "SELECT id, row_number() OVER (ORDER BY sl) AS rn FROM t",  # no PARTITION BY
    "SELECT id, sum(id) OVER (PARTITION BY k IS NULL) AS x FROM t",  # two partitions of 2,000 / 18,000 rows
], ids=["no-partition-by", "one-huge-partition"])
def test_window_partition_past_the_limit_is_a_typed_error(spill_db, sql) -> None:
    path, _ = spill_db
    with pytest.raises(OutOfMemoryError, match="Window.*host_memory_limit"):
        _run(path, "256KB", 4, sql)
