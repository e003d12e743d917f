"""The compiled CPU loops' group tables within host_memory_limit: each worker's table is reserved
before it grows, and a table the limit refuses to grow hands its groups to the aggregation (which
spills them) and starts again small — the answer stays right and the accounted peak within the limit."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa

import hetdb
from hetdb import types as T
from hetdb.exec.compiled_cpu_budget import MIN_FLUSH_GROUPS, TableBudget, grown_nbytes, table_nbytes
from hetdb.exec.memory import MemoryManager
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

N = 120_000
SLACK = 512 << 10


def test_table_budget_reserves_and_refuses() -> None:
    ctx = SimpleNamespace(memory=MemoryManager(1 << 20), cleanup=[])
    budget = TableBudget(ctx)
    state = budget.new(1, 2, 1)
    assert ctx.memory.used == table_nbytes(state) > 0
    # below MIN_FLUSH_GROUPS a table grows whatever the limit
    state = budget.grow((*state[:5], 64), 4 * MIN_FLUSH_GROUPS)
    assert state is not None and ctx.memory.used == table_nbytes(state)
    assert grown_nbytes(state, 4 * MIN_FLUSH_GROUPS) == table_nbytes(state)
    # a full table of MIN_FLUSH_GROUPS groups may not grow past the limit: the caller flushes it
    full = (*state[:5], MIN_FLUSH_GROUPS)
    assert budget.grow(full, 1 << 20) is None
    assert ctx.memory.used == table_nbytes(state)
    budget.release()
    assert ctx.memory.used == 0


def test_compiled_group_by_flushes_its_table_within_the_limit(tmp_path) -> None:
    rng = np.random.default_rng(3)
    k = rng.permutation(N).astype(np.int64)
    v = rng.integers(0, 100, N).astype(np.int64)
    db = Database.open(str(tmp_path), create=True)
    table = pa.table({"k": k, "v": v})
    with db.create_table("t", [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema],
                         rows_per_page=1 << 14) as w:
        w.append_arrow(table)
    sql = "SELECT count(*), sum(s), max(k) FROM (SELECT k, sum(v) * 2 AS s FROM t GROUP BY k)"
    with hetdb.connect(str(tmp_path), device="cpu", host_memory_limit="1MB", threads=2) as con:
        plan = con.explain(sql, analyze=True)
        r = con.sql(sql)
        rows = r.fetchall()
        assert "compiled into one CPU loop" in plan, plan
        assert rows == [(N, 2 * int(v.sum()), N - 1)]
        assert r.stats["spilled_partitions"] > 0
        assert r.stats["peak_host_bytes"] <= (1 << 20) + SLACK, r.stats["peak_host_bytes"]
        assert con._get_engine().memory.used == 0
