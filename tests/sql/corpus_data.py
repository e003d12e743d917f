"""The tables of the SQL corpus (``tests/sql/corpus/*.test``): small, with NULLs, ties, several
partitions, leap days and month ends, written through hetdb's table store and loaded into DuckDB
from what hetdb reads back."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa


def corpus_tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(14)
    n = 300
    g = rng.integers(0, 6, n)
    k = rng.integers(0, 25, n).astype(np.int32)
    x = [None if i % 9 == 0 else float(v) for i, v in enumerate(rng.integers(-50, 50, n))]
    i64 = [None if i % 11 == 3 else int(v) for i, v in enumerate(rng.integers(-1000, 1000, n))]
    dec = [None if i % 13 == 5 else int(v) for i, v in enumerate(rng.integers(-99999, 99999, n))]
    words = ["apple", "pear", "fig", "kiwi", "plum", "Ümlaut", ""]
    s = [None if i % 10 == 7 else words[v] for i, v in enumerate(rng.integers(0, len(words), n))]
    base = dt.date(2019, 12, 25).toordinal()
    d = [None if i % 17 == 2 else dt.date.fromordinal(base + int(v))
         for i, v in enumerate(rng.integers(0, 1200, n))]
    t = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "g": pa.array(g.astype(np.int64)),
        "k": pa.array(k),
        "x": pa.array(x, pa.float64()),
        "i": pa.array(i64, pa.int64()),
        "m": pa.array([None if v is None else Decimal(v).scaleb(-2) for v in dec], pa.decimal128(12, 2)),
        "s": pa.array(s, pa.string()),
        "d": pa.array(d, pa.date32()),
    })
    empty = t.slice(0, 0)
    return {"w": t, "w_empty": empty, "tz": _tz_table(rng), "ivs": _interval_table(rng), "times": _time_table(rng),
            **_graph_tables(rng)}


def _time_table(rng) -> pa.Table:
    """TIME values (microseconds, some on whole seconds, midnight, the last microsecond of the day,
    ties, NULLs) next to a timestamp and a group."""
    n = 120
    us = rng.integers(0, 86_400_000_000, n)
    us[::7] = us[::7] // 1_000_000 * 1_000_000
    us[3], us[4], us[5] = 0, 86_399_999_999, us[6]
    ts = rng.integers(1_500_000_000_000_000, 1_700_000_000_000_000, n)
    return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                     "g": pa.array(rng.integers(0, 4, n).astype(np.int64)),
                     "t": pa.array(us, pa.int64(), mask=np.arange(n) % 13 == 2).cast(pa.time64("us")),
                     "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("us"))})


def _interval_table(rng) -> pa.Table:
    """Stored INTERVAL values: months, days and microseconds of both signs, some equal once
    normalised (1 month = 30 days, 1 day = 24 hours), NULLs."""
    n = 150
    months = rng.integers(-14, 15, n)
    days = rng.integers(-40, 41, n)
    micros = rng.integers(-2 * 86_400_000_000, 2 * 86_400_000_000, n)
    cells = [None if i % 11 == 4 else pa.scalar((0, 30, 0) if i % 13 == 1 else (1, 0, 0) if i % 13 == 2
                                                 else (int(m), int(d), int(u) * 1000), pa.month_day_nano_interval())
             for i, (m, d, u) in enumerate(zip(months, days, micros))]
    return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                     "g": pa.array(rng.integers(0, 5, n).astype(np.int64)),
                     "iv": pa.array([None if c is None else c.as_py() for c in cells], pa.month_day_nano_interval())})


def _graph_tables(rng) -> dict[str, pa.Table]:
    """``edges``: a directed graph of 40 nodes with cycles, a self loop and a NULL target;
    ``tree``: 60 nodes, each with a parent of a smaller id (roots have NULL)."""
    src = rng.integers(0, 40, 90)
    dst = rng.integers(0, 40, 90)
    edges = pa.table({"src": pa.array(np.append(src, [7, 3]).astype(np.int64)),
                      "dst": pa.array([*map(int, dst), 7, None], pa.int64()),
                      "w": pa.array(rng.integers(1, 9, 92).astype(np.int32))})
    parent = [None if i in (0, 1) else int(rng.integers(0, i)) for i in range(60)]
    tree = pa.table({"id": pa.array(np.arange(60, dtype=np.int64)), "parent": pa.array(parent, pa.int64()),
                     "name": pa.array([f"n{i}" for i in range(60)])})
    return {"edges": edges, "tree": tree}


def _tz_table(rng) -> pa.Table:
    """Instants every 7 minutes (plus random microseconds) across the 2024 DST changes of
    Europe/Berlin (Mar 31, Oct 27) and America/New_York (Mar 10, Nov 3) and a New Year, as
    TIMESTAMPTZ (``ts``, some NULL) and the same numbers as a naive TIMESTAMP (``naive``)."""
    starts = [dt.datetime(2024, 3, 30, 20), dt.datetime(2024, 10, 26, 20), dt.datetime(2024, 3, 9, 20),
              dt.datetime(2024, 11, 2, 20), dt.datetime(2023, 12, 31, 21)]
    epoch = dt.datetime(1970, 1, 1)
    us = np.array([(b - epoch) // dt.timedelta(microseconds=1) + i * 420_000_000 + int(rng.integers(0, 10**6))
                   for b in starts for i in range(100)], np.int64)
    n = len(us)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "g": pa.array((np.arange(n) % 4).astype(np.int64)),
        "ts": pa.array(us, pa.int64(), mask=np.arange(n) % 23 == 5).cast(pa.timestamp("us", tz="UTC")),
        "naive": pa.array(us, pa.int64()).cast(pa.timestamp("us")),
    })


def build(path: str) -> duckdb.DuckDBPyConnection:
    """Write the corpus tables into a hetdb database at ``path``; a DuckDB holding the same rows."""
    from hetdb import types as T
    from hetdb.storage import ColumnSpec, Database

    db = Database.open(path, create=True)
    duck = duckdb.connect()
    duck.execute("SET threads TO 2")
    for name, table in corpus_tables().items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=f.name != "id") for f in table.schema]
        with db.create_table(name, schema, rows_per_page=64, replace=True) as writer:
            for start in range(0, max(table.num_rows, 1), 97):
                part = table.slice(start, 97)
                if part.num_rows:
                    writer.append_arrow(part)
        back = db.table(name).arrow()
        duck.register(f"_{name}", back)
        duck.execute(f"CREATE TABLE {name} AS SELECT * FROM _{name}")
        duck.unregister(f"_{name}")
    return duck
