"""A small orders table whose o_comment pages are plain strings (as TPC-H's), and TPC-H q13's orders
aggregation behind NOT LIKE over it: a compiled GPU kernel takes the LIKE pattern as a device array
(backend/gpu/codegen/runtime.literal_values). Made with hetdb's own writer (no tpchgen-cli)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

ROWS = 5000
ROWS_PER_PAGE = 1000
SQL = ("select o_custkey, count(o_orderkey) as n from orders "
       "where o_comment not like '%special%requests%' group by o_custkey")


def build_orders(path: str) -> None:
    """ROWS orders over ROWS / ROWS_PER_PAGE pages; o_comment of distinct strings (plain pages)."""
    from hetdb import types as T
    from hetdb.storage import ColumnSpec, Database

    rng = np.random.default_rng(7)
    words = ["special", "requests", "quickly", "final", "deposits", "pending", "ironic", "carefully"]
    table = pa.table({
        "o_orderkey": pa.array(np.arange(ROWS, dtype=np.int64)),
        "o_custkey": pa.array(rng.integers(1, 300, ROWS).astype(np.int64)),
        "o_comment": pa.array([" ".join(words[j] for j in rng.integers(0, len(words), 5)) + f" {i}"
                               for i in range(ROWS)], pa.string()),
    })
    schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=False) for f in table.schema]
    with Database.open(path, create=True).create_table("orders", schema, rows_per_page=ROWS_PER_PAGE) as writer:
        writer.append_arrow(table)
