"""Fused aggregation over a wide dense key domain on the GPU (codegen/groups.dense_limit): a scanned
integer key whose zone-map domain is past the small dense limit but within DENSE_ROWS_FACTOR slots
per row (TPC-H q18's l_orderkey, q11's ps_partkey) runs as the fused kernel with global atomics into
one slot per possible group. The small limit is lowered here so that a small table has a "wide"
domain; answers against DuckDB, with a dense probe (q11's shape), decimal sums (the float shadow
sum of the overflow check), min/max/avg, group keys of a joined row looked up per group (TPC-H q03's
o_orderdate/o_shippriority), and no device memory left behind."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

ROWS = 20000
SPAN = 30000  # 1.5 slots per row: dense under the lowered limit
FUSED = "fused into one generated kernel"


@pytest.fixture(scope="module")
def tables():
    rng = np.random.default_rng(23)
    keys = np.sort(rng.integers(5, SPAN, ROWS))
    keys[[0, -1]] = [5, SPAN + 4]
    fact = pa.table({
        "k": pa.array(keys, pa.int64()),
        "d": pa.array(rng.integers(0, 40, ROWS), pa.int32()),
        "v": pa.array([f"{x / 100:.2f}" for x in rng.integers(-10**6, 10**6, ROWS)]).cast(pa.decimal128(12, 2)),
        "q": pa.array(rng.integers(1, 50, ROWS), pa.int64()),
    })
    dim = pa.table({"d": pa.array(np.arange(40), pa.int32()), "keep": pa.array(np.arange(40) % 3, pa.int32())})
    ok = np.unique(keys)  # one row per key (TPC-H q03's orders for lineitem)
    orders = pa.table({"ok": pa.array(ok, pa.int64()), "od": pa.array(rng.integers(9000, 9400, ok.shape[0]), pa.int32()),
                       "op": pa.array([None if i % 29 == 0 else f"{i % 5}-P" for i in range(ok.shape[0])],
                                      pa.string())})
    return {"f": fact, "dm": dim, "o": orders}


@pytest.fixture(scope="module")
def db_path(tmp_path_factory, tables):
    from hetdb.storage import ColumnSpec, Database

    path = str(tmp_path_factory.mktemp("wide-dense") / "db")
    db = Database.open(path, create=True)
    types = {pa.int64(): T.INT64, pa.int32(): T.INT32, pa.decimal128(12, 2): T.decimal(12, 2), pa.string(): T.STRING}
    for name, tab in tables.items():
        specs = [ColumnSpec(c, types[tab[c].type]) for c in tab.column_names]
        with db.create_table(name, specs, rows_per_page=4096) as w:
            w.append_arrow(tab)
    return path


QUERIES = [
    "select k, sum(v) as s, count(*) as n, min(q) as lo, max(q) as hi from f group by k",
    "select k, sum(v * q) as s from f, dm where f.d = dm.d and dm.keep = 1 group by k",
    "select k, avg(q) as a from f where q > 10 group by k having sum(q) > 60",
    # q03's shape: the joined row's columns are looked up per group (exec/fusion.DependentKey)
    "select k, od, op, sum(v) as s, count(*) as n from f, o where k = ok and od < 9300 group by k, od, op",
]


def test_wide_domains_fuse_and_match_duckdb(db_path, tables, monkeypatch) -> None:
    from hetdb.backend.gpu.codegen import groups as G

    monkeypatch.setattr(G, "MAX_FUSED_GROUPS", 1000)
    duck = duckdb.connect()
    for name, tab in tables.items():
        duck.register(name, tab)
    compared = 0
    with hetdb.connect(db_path, device="gpu") as con:
        for sql in QUERIES:
            for _ in range(2):  # the second run reuses what the first kept
                res = con.sql(sql)
                got = res.arrow().sort_by([("k", "ascending")])
                ref = duck.sql(sql).to_arrow_table().sort_by([("k", "ascending")])
                assert got.num_rows == ref.num_rows > 1000, sql
                for c in ref.column_names:
                    g, r = got[c].to_pylist(), ref[c].to_pylist()
                    if c == "a":
                        assert np.allclose(np.array(g, float), np.array(r, float), rtol=1e-9), sql
                    else:
                        assert g == r, (sql, c)
                assert res.stats["gpu_leaked_bytes"] == 0
                compared += 1
            text = con.explain(sql, analyze=True)
            agg = next(line for line in text.splitlines() if "HashAggregate" in line)
            assert FUSED in agg and "dense groups" in agg, text
    assert compared == 2 * len(QUERIES)
