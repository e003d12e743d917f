"""Zone-map verdicts of compiled CPU scans are kept across queries per (table reader, pushed filters,
row group): other filters, a new version of the table (an append, or the table dropped and made
again) must not see them. Against the same queries with zone maps off."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

import hetdb
from hetdb import types as T
from hetdb.exec.compiled_cpu import CPU_COMPILED
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

SQL = "SELECT g, count(*), sum(v) FROM t WHERE v BETWEEN {lo} AND {hi} GROUP BY g ORDER BY g"


def _make(path: str, base: int) -> None:
    i = np.arange(8000)
    table = pa.table({"g": pa.array(i % 7, pa.int32()), "v": pa.array(i + base, pa.int32())})
    # 1000 rows per row group: zone maps skip all but the row groups a filter can match
    with Database.open(path, create=True).create_table(
            "t", [ColumnSpec("g", T.INT32, True), ColumnSpec("v", T.INT32, True)], rows_per_page=1000) as w:
        w.append_arrow(table)


def _check(con, plain, lo: int, hi: int) -> int:
    q = SQL.format(lo=lo, hi=hi)
    got = con.sql(q).fetchall()
    assert got == plain.sql(q).fetchall(), q
    text = con.explain(q, analyze=True)
    assert CPU_COMPILED in text or not got, text
    assert int(re.search(r"pages skipped=(\d+)", text).group(1)) > 0, text
    return sum(r[1] for r in got)


def test_verdicts_follow_filters_and_table_versions(tmp_path) -> None:
    path = str(tmp_path / "db")
    _make(path, 0)
    with hetdb.connect(path, device="cpu") as con, hetdb.connect(path, device="cpu", zone_maps=False) as plain:
        assert _check(con, plain, 100, 1500) == 1401
        assert _check(con, plain, 2500, 3500) == 1001    # other filters over the same version
        assert _check(con, plain, 100, 1500) == 1401     # the first ones again (their verdicts kept)
        assert _check(con, plain, 10_100, 11_500) == 0    # every row group skipped (asked again below)
        con.execute("INSERT INTO t SELECT 1, 1200 FROM range(0, 5) r(i)")
        assert _check(con, plain, 100, 1500) == 1406     # a new version of the table
        con.execute("DROP TABLE t")
    _make(path, 10_000)                                  # the table made again: other values, one name
    # (new connections: the verdicts are the process's; a connection's page cache is its own)
    with hetdb.connect(path, device="cpu") as con, hetdb.connect(path, device="cpu", zone_maps=False) as plain:
        assert _check(con, plain, 100, 1500) == 0
        assert _check(con, plain, 10_100, 11_500) == 1401
