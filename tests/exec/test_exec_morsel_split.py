"""Host scans split row groups into row ranges when there are too few row groups for the workers:
the answers (filters, runtime join filters, plain and dictionary strings, NULLs, aggregates whose local
merges stop early) equal DuckDB's with one thread and with several."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.exec.operators import aggregate as agg_mod
from hetdb.exec.operators import scan as scan_mod
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

N = 300_000


def _table() -> pa.Table:
    rng = np.random.default_rng(3)
    k = rng.integers(0, 50_000, N)
    v = rng.integers(-1000, 1000, N)
    s = np.array(["red", "green", "blue", "a longer plain string value"])[rng.integers(0, 4, N)]
    valid = rng.random(N) > 0.05
    return pa.table({"k": pa.array(k, pa.int64()), "v": pa.array(v, pa.int64(), mask=~valid),
                     "s": pa.array(s, pa.string()), "u": pa.array(np.arange(N), pa.int64())})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("morsels"))
    t = _table()
    db = Database.open(path, create=True)
    for name, table in (("t", t), ("d", t.slice(0, 20_000))):
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
        with db.create_table(name, schema) as w:
            w.append_arrow(table)
    duck = duckdb.connect()
    duck.register("t", t)
    duck.register("d", t.slice(0, 20_000))
    return path, duck


QUERIES = [
    "SELECT s, count(*) AS n, sum(v) AS sv FROM t WHERE v > 100 GROUP BY s ORDER BY s",
    "SELECT u, sum(v) AS sv FROM t GROUP BY u ORDER BY sv DESC NULLS LAST, u LIMIT 10",
    "SELECT count(*) AS n, sum(t.v) AS sv FROM t JOIN d ON t.u = d.u WHERE d.s = 'red'",
    "SELECT k, s FROM t WHERE u % 9973 = 0 ORDER BY u",
]


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_split_morsels_answer_like_duckdb(data, monkeypatch, threads):
    path, duck = data
    monkeypatch.setattr(scan_mod, "MIN_MORSEL_ROWS", 1 << 12)  # several ranges per row group
    monkeypatch.setattr(agg_mod, "MERGE_ROWS", 1 << 12)        # local merges start (and stop)
    con = hetdb.connect(path, device="cpu", threads=threads, batch_rows=1 << 14)
    reader = con._get_engine().db.table("t")
    morsels = scan_mod.host_morsels(reader, threads)
    if threads > 1:
        assert any(isinstance(m, tuple) for m in morsels)
    assert sum(reader.row_group_rows(m) if isinstance(m, int) else m[2] - m[1] for m in morsels) == N
    compared = 0
    for q in QUERIES:
        got = con.sql(q).fetchall()
        want = duck.execute(q).fetchall()
        assert [tuple(r) for r in got] == [tuple(r) for r in want], q
        compared += len(want)
    assert compared > 0
    con.close()


class _Groups:
    def __init__(self, rows: list[int]) -> None:
        self.rows = rows
        self.num_row_groups = len(rows)

    def row_group_rows(self, rg: int) -> int:
        return self.rows[rg]


@pytest.mark.parametrize("groups", [16, 20, 58])
def test_last_row_groups_are_cut_into_quarters(groups):
    reader = _Groups([1 << 20] * (groups - 1) + [5000])
    morsels = scan_mod.host_morsels(reader, 16)
    whole = groups - 16
    assert morsels[:whole] == list(range(whole))
    tail = morsels[whole:]
    # every tail row group in TAIL_PARTS ranges except the small last one, which stays whole
    assert len(tail) == 15 * scan_mod.TAIL_PARTS + 1 and tail[-1] == groups - 1
    covered = {}
    for m in tail[:-1]:
        rg, lo, hi = m
        assert covered.get(rg, 0) == lo and hi - lo >= scan_mod.MIN_MORSEL_ROWS
        covered[rg] = hi
    assert covered == {rg: 1 << 20 for rg in range(whole, groups - 1)}
    assert scan_mod.host_morsels(reader, 1) == list(range(groups))
