"""Data sets of the differential suites: hetdb databases plus DuckDB loaded with the *same* rows.

Every data set is generated with hetdb's own generators (``hetdb.datagen``) or written through the
table store's writer, then read back with ``db.table(t).arrow()`` and loaded into an in-memory DuckDB,
so a difference between the engines can only come from query processing, never from the data.

Data sets are built once per test session in a temporary directory. Setting ``HETDB_TEST_DATA`` to a
directory keeps them there between sessions (a data set is reused only when its build completed).
"""

from __future__ import annotations

import datetime as dt
import inspect
import os
import shutil
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

SSB_TABLES = ("lineorder", "part", "supplier", "customer", "date")
TPCH_TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")
NULL_TABLES = ("nulls", "nulls2")

_COMPLETE = ".hetdb-test-complete"


@dataclass
class Dataset:
    """One hetdb database directory and a DuckDB connection holding identical tables."""

    name: str
    path: str
    duck: duckdb.DuckDBPyConnection
    arrow_schemas: dict[str, pa.Schema] = field(default_factory=dict)
    row_counts: dict[str, int] = field(default_factory=dict)

    def reference(self, sql: str) -> pa.Table:
        """DuckDB's answer to ``sql`` (the truth of every differential test)."""
        return self.duck.sql(sql).to_arrow_table()


def _call_generator(fn, db, sf: float, rows_per_page: int) -> None:
    """Call a datagen ``generate`` passing rows_per_page/workers only when it takes them."""
    params = inspect.signature(fn).parameters
    kwargs = {}
    if "rows_per_page" in params:
        kwargs["rows_per_page"] = rows_per_page
    if "workers" in params:
        kwargs["workers"] = 1  # 2 shared cores: extra processes only cost start-up time here
    fn(db, sf, **kwargs)


def build_ssb(path: str, sf: float, rows_per_page: int) -> None:
    from hetdb.datagen import ssb
    from hetdb.storage import Database

    _call_generator(ssb.generate, Database.open(path, create=True), sf, rows_per_page)


def build_tpch(path: str, sf: float, rows_per_page: int) -> None:
    from hetdb.datagen import tpch
    from hetdb.storage import Database

    _call_generator(tpch.generate, Database.open(path, create=True), sf, rows_per_page)


# ---- the table full of NULLs ------------------------------------------------------------------------

NULLS_ROWS = 3000
NULLS2_ROWS = 240
NULLS_ROWS_PER_PAGE = 256  # many pages, some of them entirely NULL in some columns

_STRINGS = ["", "a", "ab", "abc", "b", "ba", "A%B", "x_y", "é", "éa", "straße", "zz", "Z", " a", "a "]


def _null_pattern(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """A validity mask (True = valid) of one of several NULL patterns."""
    idx = np.arange(n)
    if kind == "none":
        return np.ones(n, bool)
    if kind == "random":
        return rng.random(n) > 0.3
    if kind == "sparse":
        return rng.random(n) > 0.03
    if kind == "dense":
        return rng.random(n) > 0.9
    if kind == "alternate":
        return idx % 2 == 0
    if kind == "runs":  # whole pages NULL, so zone maps see all-NULL pages
        return (idx // NULLS_ROWS_PER_PAGE) % 3 != 1
    if kind == "all":
        return np.zeros(n, bool)
    raise ValueError(kind)


def nulls_tables(seed: int = 20240607) -> dict[str, pa.Table]:
    """The NULL tables: every hetdb type, each column with its own NULL pattern.

    Floats are multiples of 1/4 so that sums are exact in any order (no tolerance games).
    ``nulls.k`` and ``nulls2.k`` are join keys with NULLs and duplicates on both sides.
    """
    rng = np.random.default_rng(seed)
    n = NULLS_ROWS

    def arr(values, kind: str, typ: pa.DataType) -> pa.Array:
        return pa.array(values, type=typ, mask=~_null_pattern(rng, len(values), kind))

    base = dt.date(1992, 1, 1).toordinal()
    days = rng.integers(0, 2600, n)
    seconds = rng.integers(0, 3 * 365 * 86400, n)
    nulls = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "k": arr(rng.integers(-3, 40, n).astype(np.int32), "random", pa.int32()),
        "i32": arr(rng.integers(-50, 51, n).astype(np.int32), "random", pa.int32()),
        "i64": arr(rng.integers(-10**12, 10**12, n), "runs", pa.int64()),
        "f64": arr(rng.integers(-4000, 4000, n) / 4.0, "alternate", pa.float64()),
        "dec": arr([Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**6, 10**6, n)], "sparse",
                   pa.decimal128(12, 2)),
        "d": arr([dt.date.fromordinal(base + int(x)) for x in days], "random", pa.date32()),
        "ts": arr([dt.datetime(1995, 1, 1) + dt.timedelta(seconds=int(s)) for s in seconds],
                  "dense", pa.timestamp("us")),
        "b": arr(rng.random(n) < 0.5, "random", pa.bool_()),
        "s": arr([_STRINGS[i] for i in rng.integers(0, len(_STRINGS), n)], "random", pa.string()),
        "s_hi": arr([f"v{int(x):06d}{'é' if x % 7 == 0 else ''}" for x in rng.integers(0, 10**6, n)],
                    "runs", pa.string()),
        "i_nn": pa.array(rng.integers(0, 20, n).astype(np.int32)),
        "all_null": pa.nulls(n, pa.int32()),
        "all_null_s": pa.nulls(n, pa.string()),
    })
    m = NULLS2_ROWS
    nulls2 = pa.table({
        "id": pa.array(np.arange(m, dtype=np.int64)),
        "k": arr(rng.integers(-3, 45, m).astype(np.int32), "sparse", pa.int32()),
        "v": arr(rng.integers(-1000, 1000, m), "random", pa.int64()),
        "s": arr([_STRINGS[i] for i in rng.integers(0, len(_STRINGS), m)], "alternate", pa.string()),
        "d": arr([dt.date.fromordinal(base + int(x)) for x in rng.integers(0, 2600, m)], "random",
                 pa.date32()),
    })
    return {"nulls": nulls, "nulls2": nulls2}


def build_nulls(path: str, rows_per_page: int = NULLS_ROWS_PER_PAGE) -> None:
    """Write the NULL tables through the table store's writer (schema from the Arrow types)."""
    from hetdb import types as T
    from hetdb.storage import ColumnSpec, Database

    db = Database.open(path, create=True)
    for name, table in nulls_tables().items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=f.name not in ("id", "i_nn"))
                  for f in table.schema]
        with db.create_table(name, schema, rows_per_page=rows_per_page, replace=True) as writer:
            # several appends of odd sizes: page boundaries must not depend on append boundaries
            for start in range(0, table.num_rows, 1000):
                writer.append_arrow(table.slice(start, 1000))


# ---- DuckDB mirror -----------------------------------------------------------------------------------

def load_duckdb(path: str) -> tuple[duckdb.DuckDBPyConnection, dict[str, pa.Schema], dict[str, int]]:
    """An in-memory DuckDB holding every table of the hetdb database at ``path``, read back from hetdb."""
    from hetdb.storage import Database

    db = Database.open(path)
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    schemas: dict[str, pa.Schema] = {}
    counts: dict[str, int] = {}
    for name in db.tables():
        table = db.table(name).arrow()
        schemas[name] = table.schema
        counts[name] = table.num_rows
        con.register("hetdb_src", table)
        con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM hetdb_src')
        con.unregister("hetdb_src")
    return con, schemas, counts


def dataset(root: Path, name: str, build) -> Dataset:
    """Build (or reuse, when ``HETDB_TEST_DATA`` keeps a completed build) one data set."""
    keep = os.environ.get("HETDB_TEST_DATA")
    base = Path(keep) if keep else root
    path = base / name
    if not (keep and (path / _COMPLETE).exists()):
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        build(str(path))
        (path / _COMPLETE).write_text("ok\n")
    con, schemas, counts = load_duckdb(str(path))
    return Dataset(name, str(path), con, schemas, counts)
