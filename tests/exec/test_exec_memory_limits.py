"""host_memory_limit is enforced: queries whose operators would grow past it (a skewed join build,
many-to-many and cross joins under an aggregate, a large GROUP BY, a sort, windows) either finish with the right
answer within the limit (spilling, partitioning, streaming) or fail with OutOfMemoryError naming the
operator. Each query runs in a fresh subprocess whose address space is capped (RLIMIT_AS: what the
interpreter, its libraries and thread stacks already map plus 1.5 GiB), so a query that materialises
what it should stream dies with MemoryError or is killed, and the test sees that. The accounted peak
(the MemoryManager's high-water mark) must stay within the limit plus SLACK: the least an operator
takes to make progress whatever the limit (a build chunk or sort of 1,024 rows, a partition of 1,024
groups, one output batch of a probe), and the reservations must be back to zero after the query or
the error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.config import Options
from hetdb.exec.engine import QueryEngine
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

SLACK = 512 << 10
N_SKEW = 50_000
N_GROUPS = 200_000
SRC = str(Path(__file__).resolve().parents[2] / "src")

CHILD = textwrap.dedent("""
    import json, resource, sys
    import hetdb
    path, queries = sys.argv[1], json.loads(sys.argv[2])
    hetdb.connect(path, device="cpu").sql("select 1")  # load the libraries before the cap
    vm = int(next(line for line in open("/proc/self/status") if line.startswith("VmSize")).split()[1]) * 1024
    cap = vm + (3 << 29)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    for limit, sql, disabled in queries:
        con = hetdb.connect(path, device="cpu", host_memory_limit=limit, threads=2, disabled_passes=disabled)
        engine = con._get_engine()
        out = {"limit": engine.memory.limit}
        try:
            r = con.sql(sql)
            out.update(rows=[list(map(str, row)) for row in r.fetchall()], peak=r.stats["peak_host_bytes"],
                       spilled=r.stats["spilled_partitions"])
        except hetdb.OutOfMemoryError as e:
            out.update(error="OutOfMemoryError", message=str(e), peak=engine.memory.peak)
        out["used_after"] = engine.memory.used
        con.close()
        print("RESULT " + json.dumps(out), flush=True)
""")


def _put(db: Database, name: str, table: pa.Table) -> None:
    schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
    with db.create_table(name, schema, rows_per_page=16384) as w:
        w.append_arrow(table)


@pytest.fixture(scope="module")
def memdb(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("memdb"))
    db = Database.open(path, create=True)
    for t in ("c1", "c2", "c3"):
        _put(db, t, pa.table({"x": pa.array(np.arange(2500), pa.int64())}))
    _put(db, "skew", pa.table({"k": pa.array(np.zeros(N_SKEW, np.int64)),
                               "v": pa.array(np.arange(N_SKEW), pa.int64())}))
    _put(db, "few", pa.table({"k": pa.array([0, 0, 1, 2, None] * 2, pa.int64())}))
    _put(db, "mm_a", pa.table({"k": pa.array(np.arange(20_000) % 2, pa.int64()),
                               "v": pa.array(np.arange(20_000), pa.int64())}))
    _put(db, "mm_b", pa.table({"k": pa.array(np.arange(20_000) % 2, pa.int64())}))
    rng = np.random.default_rng(5)
    _put(db, "groups", pa.table({"g": pa.array(rng.permutation(N_GROUPS), pa.int64()),
                                 "v": pa.array(rng.integers(0, 100, N_GROUPS), pa.int64())}))
    return path


def _run(memdb: str, *queries: tuple[str, str, tuple[str, ...]]) -> list[dict]:
    """Run (limit, sql, disabled optimizer passes) queries in one capped subprocess."""
    proc = subprocess.run([sys.executable, "-c", CHILD, memdb, json.dumps(queries)],
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, f"the query process died (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    assert "MemoryError" not in proc.stderr
    outs = [json.loads(x[len("RESULT "):]) for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert len(outs) == len(queries)
    for (limit, sql, _), out in zip(queries, outs):
        assert out["used_after"] == 0, f"{sql}: reservations left after the query: {out['used_after']}"
        assert out["peak"] <= out["limit"] + SLACK, \
            f"{sql}: accounted peak {out['peak']:,} > {limit} + slack"
    return outs


KEEP_SKEW_BUILD = ("build_side", "join_order", "semi_build_side")


def test_joins_stream_their_output_into_an_aggregate(memdb) -> None:
    cross, mm_count, mm_sum = _run(
        memdb, ("64MB", "select count(*) from c1, c2, c3", ()),
        ("64MB", "select count(*) from mm_a join mm_b using (k)", ()),
        ("4MB", "select count(*), sum(v) from mm_a join mm_b using (k) where v < 2000", ()))
    assert cross["rows"] == [[str(2500 ** 3)]]
    # k alternates 0/1: each mm_a row matches the mm_b rows of its parity
    assert mm_count["rows"] == [[str(20_000 * 20_000 // 2)]]
    assert mm_sum["rows"] == [[str(2000 * 10_000), str(10_000 * sum(range(2000)))]]


def test_skewed_build_is_joined_in_chunks(memdb) -> None:
    # the optimizer would build on the small side: keep the skewed table (one key) as the build side
    n = N_SKEW
    inner, left, semi, anti = _run(
        memdb, ("1MB", "select count(*), sum(v) from few join skew using (k)", KEEP_SKEW_BUILD),
        ("1MB", "select count(*), count(v), sum(v) from few left join skew using (k)", KEEP_SKEW_BUILD),
        ("1MB", "select count(*) from few where k is not null and k in (select k from skew)", KEEP_SKEW_BUILD),
        ("1MB", "select count(*) from few where k is not null and k not in (select k from skew)",
         KEEP_SKEW_BUILD))
    total = n * (n - 1) // 2
    assert inner["rows"] == [[str(4 * n), str(4 * total)]]
    assert inner["spilled"] > 0
    # four probe rows with k = 0 match every build row; six (k = 1, 2, NULL) match none
    assert left["rows"] == [[str(4 * n + 6), str(4 * n), str(4 * total)]]
    assert semi["rows"] == [["4"]] and anti["rows"] == [["4"]]


def test_group_by_and_sort_spill(memdb) -> None:
    group, sort = _run(
        memdb, ("1MB", "select count(*), sum(s), max(g) from (select g, sum(v) s from groups group by g)", ()),
        ("1MB", "select g, v from groups order by v desc, g", ()))
    rng = np.random.default_rng(5)
    n = N_GROUPS
    g = rng.permutation(n)
    v = rng.integers(0, 100, n)
    assert group["rows"] == [[str(n), str(int(v.sum())), str(n - 1)]]
    assert group["spilled"] > 0
    # the external sort: runs on disk merged within the limit
    order = np.lexsort((g, -v))
    assert sort["rows"] == [[str(a), str(b)] for a, b in zip(g[order].tolist(), v[order].tolist())]
    assert sort["spilled"] > 0


def test_window_spills_by_partition_or_fails_typed(memdb) -> None:
    partitioned, whole = _run(
        memdb, ("1MB", "select count(*), sum(rn), max(rn) from "
                       "(select row_number() over (partition by v order by g) rn from groups)", ()),
        ("1MB", "select count(*), sum(rn) from (select row_number() over (order by g) rn from groups)", ()))
    rng = np.random.default_rng(5)
    rng.permutation(N_GROUPS)
    sizes = np.bincount(rng.integers(0, 100, N_GROUPS))
    assert partitioned["rows"] == [[str(N_GROUPS), str(int((sizes * (sizes + 1) // 2).sum())), str(sizes.max())]]
    assert partitioned["spilled"] > 0
    # one window partition of 200,000 rows: computed in memory only, so refused by name
    assert whole.get("error") == "OutOfMemoryError", whole
    assert "Window" in whole["message"] and "host_memory_limit" in whole["message"]


COUNT_ONLY = ("select count(*) from fact f join dim d on f.a = d.a",
              "select count(*) from fact f, dim d where d.a < 3",
              "select count(*) from fact f left join dim d on f.a = d.a",
              "select count(*), sum(f.k) from fact f join dim d on f.a = d.a")


@pytest.mark.parametrize("limit", [None, 300])
def test_count_only_joins_agree_with_duckdb(db, duck, backend, limit) -> None:
    # joins whose output keeps no column pass row counts only (the reference backend, like the GPU,
    # counts from pairs); at 300 bytes every build spills and is joined in chunks
    engine = QueryEngine(db, backend, Options(threads=2, batch_rows=500, host_memory_limit=limit))
    try:
        for sql in COUNT_ONLY:
            got = engine.execute(sql)[0].to_pylist()
            want = duck.execute(sql).fetchall()
            assert [tuple(r.values()) for r in got] == want, sql
            assert engine.memory.used == 0
    finally:
        engine.close()
