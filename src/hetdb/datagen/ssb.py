"""Star Schema Benchmark generator (own NumPy generator following shared/benchmarks/ssb.md).

Data is generated in chunks (lineorder: a fixed number of orders per chunk), each seeded from its index,
so the result is the same for any number of workers; chunks are generated in worker processes and
written in order, a bounded number at a time (SF 100 = 600M lineorder rows in bounded memory).

Types: keys and small integers int32 (lo_orderkey int64), dates as yyyymmdd int32, money as integer
cents in int32 (every value fits; sums are int64), strings as STRING (dictionary-encoded where the
cardinality is low).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.datagen import ssb_dims as D
from hetdb.datagen import strings as S
from hetdb.datagen.chunks import (
    Field,
    Progress,
    chunk_ranges,
    ordered_map,
    resolve_workers,
    rng_for,
    worker_pool,
    write_table,
)
from hetdb.errors import InputError

SEED = 19920101
TABLE_LINEORDER = 0
ORDERS_PER_CHUNK = 1 << 18  # ~1M lineorder rows per chunk
DIM_ROWS_PER_CHUNK = 1 << 20
ORDER_DAYS = 2406  # 1992-01-01 … 1998-08-02
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
SHIPMODES = ("REG AIR", "AIR", "RAIL", "TRUCK", "MAIL", "FOB", "SHIP")
TABLES = ("date", "part", "supplier", "customer", "lineorder")

LINEORDER_SCHEMA = (
    Field("lo_orderkey", T.INT64), Field("lo_linenumber", T.INT32), Field("lo_custkey", T.INT32),
    Field("lo_partkey", T.INT32), Field("lo_suppkey", T.INT32), Field("lo_orderdate", T.INT32),
    Field("lo_orderpriority", T.STRING), Field("lo_shippriority", T.STRING), Field("lo_quantity", T.INT32),
    Field("lo_extendedprice", T.INT32), Field("lo_ordtotalprice", T.INT32), Field("lo_discount", T.INT32),
    Field("lo_revenue", T.INT32), Field("lo_supplycost", T.INT32), Field("lo_tax", T.INT32),
    Field("lo_commitdate", T.INT32), Field("lo_shipmode", T.STRING),
)
SCHEMAS = {"date": D.DATE_SCHEMA, "part": D.PART_SCHEMA, "supplier": D.SUPPLIER_SCHEMA,
           "customer": D.CUSTOMER_SCHEMA, "lineorder": LINEORDER_SCHEMA}


@dataclass(frozen=True)
class Sizes:
    """Cardinalities of one scale factor (lineorder is random: ~4 lines per order)."""

    orders: int
    customer: int
    supplier: int
    part: int
    partkey_range: int  # lo_partkey is uniform in 1..partkey_range (<= part)
    date: int = D.NUM_DAYS

    @property
    def lineorder_expected(self) -> int:
        return self.orders * 4


def sizes(sf: float) -> Sizes:
    """Table sizes at scale factor ``sf`` (ssb.md: part uses log2, lo_partkey's range uses ln;
    below SF 1 every table but date scales linearly)."""
    if not sf > 0 or not math.isfinite(sf):
        raise InputError(f"SSB scale factor must be a positive number, got {sf!r}")

    def scaled(base: int) -> int:
        return max(1, round(base * sf))

    if sf >= 1:
        part = 200_000 * math.floor(1 + math.log2(sf))
        partkey_range = 200_000 * (math.floor(math.log(sf)) + 1)
    else:
        part = partkey_range = scaled(200_000)
    return Sizes(orders=scaled(1_500_000), customer=scaled(30_000), supplier=scaled(2_000), part=part,
                 partkey_range=partkey_range)


def rprice(partkey: np.ndarray) -> np.ndarray:
    """Retail price of a part in cents: 90000 + (pk/10) % 20001 + 100 * (pk % 1000)."""
    pk = np.asarray(partkey, dtype=np.int64)
    return 90_000 + (pk // 10) % 20_001 + 100 * (pk % 1_000)


def lineorder_batch(sf: float, chunk: int, start: int, stop: int) -> Batch:
    """The lines of orders start+1 … stop."""
    sz = sizes(sf)
    rng = rng_for(SEED, TABLE_LINEORDER, chunk)
    n = stop - start
    order = np.arange(start + 1, stop + 1, dtype=np.int64)
    lines = rng.integers(1, 8, n)
    cust = rng.integers(1, sz.customer + 1, n)
    # Keys divisible by 3 never order: move to a neighbour (either side, at random), so the others
    # stay equally likely.
    up = rng.random(n) < 0.5
    mortal = cust % 3 == 0
    cust = np.where(mortal, np.where(up & (cust + 1 <= sz.customer), cust + 1, cust - 1), cust)
    day = rng.integers(0, ORDER_DAYS, n)
    priority = rng.integers(0, len(PRIORITIES), n)

    total = int(lines.sum())
    first_line = np.zeros(n, dtype=np.int64)
    np.cumsum(lines[:-1], out=first_line[1:])
    owner = np.repeat(np.arange(n), lines)
    linenumber = np.arange(total, dtype=np.int64) - first_line[owner] + 1
    partkey = rng.integers(1, sz.partkey_range + 1, total)
    suppkey = rng.integers(1, sz.supplier + 1, total)
    quantity = rng.integers(1, 51, total)
    discount = rng.integers(0, 11, total)
    tax = rng.integers(0, 9, total)
    commit_lag = rng.integers(30, 91, total)
    shipmode = rng.integers(0, len(SHIPMODES), total)

    price = rprice(partkey)
    extended = price * quantity
    revenue = extended * (100 - discount) // 100
    supplycost = 6 * price // 10
    ordtotal = np.add.reduceat(revenue * (100 + tax) // 100, first_line) if n else np.zeros(0, np.int64)

    keys = D.datekeys()
    line_day = day[owner]

    def i32(a: np.ndarray) -> Column:
        return Column(T.INT32, data=a.astype(np.int32))

    columns = {
        "lo_orderkey": Column(T.INT64, data=((order >> 3) << 5 | (order & 7))[owner]),
        "lo_linenumber": i32(linenumber),
        "lo_custkey": i32(cust[owner]),
        "lo_partkey": i32(partkey),
        "lo_suppkey": i32(suppkey),
        "lo_orderdate": Column(T.INT32, data=keys[line_day]),
        "lo_orderpriority": S.dict_column(priority[owner], PRIORITIES),
        "lo_shippriority": S.dict_column(np.zeros(total, dtype=np.int32), ("0",)),
        "lo_quantity": i32(quantity),
        "lo_extendedprice": i32(extended),
        "lo_ordtotalprice": i32(ordtotal[owner]),
        "lo_discount": i32(discount),
        "lo_revenue": i32(revenue),
        "lo_supplycost": i32(supplycost),
        "lo_tax": i32(tax),
        "lo_commitdate": Column(T.INT32, data=keys[line_day + commit_lag]),
        "lo_shipmode": S.dict_column(shipmode, SHIPMODES),
    }
    return Batch(columns, total)


def _date_task() -> Batch:
    return D.date_batch()


def _tasks(sf: float, table: str) -> list[tuple[Any, tuple]]:
    """(function, arguments) per chunk of ``table``; functions are module-level so workers can run them."""
    sz = sizes(sf)
    if table == "date":
        return [(_date_task, ())]
    if table == "lineorder":
        ranges = chunk_ranges(sz.orders, ORDERS_PER_CHUNK)
        return [(lineorder_batch, (sf, k, s, e)) for k, (s, e) in enumerate(ranges)]
    fn, count = {"part": (D.part_batch, sz.part), "supplier": (D.supplier_batch, sz.supplier),
                 "customer": (D.customer_batch, sz.customer)}[table]
    return [(fn, (SEED, k, s, e)) for k, (s, e) in enumerate(chunk_ranges(count, DIM_ROWS_PER_CHUNK))]


def _call(fn: Any, args: tuple) -> Batch:
    return fn(*args)


def batches(sf: float, table: str, workers: int | None = 1, pool: Any = None) -> Iterator[Batch]:
    """The batches of one SSB table at ``sf``, in key order (same data for any ``workers``)."""
    if table not in SCHEMAS:
        raise InputError(f"unknown SSB table {table!r}; the tables are {', '.join(TABLES)}")
    tasks = _tasks(sf, table)
    nworkers = resolve_workers(workers)
    if pool is None and nworkers > 1:
        with worker_pool(nworkers) as own:
            yield from ordered_map(_call, tasks, nworkers, own)
        return
    yield from ordered_map(_call, tasks, nworkers, pool)


def generate(db: Any, sf: float, workers: int | None = None, progress: bool = False,
             rows_per_page: int = 1 << 20, compression: str = "auto") -> dict[str, int]:
    """Generate every SSB table at scale factor ``sf`` into ``db`` (replacing existing ones).

    Tables: lineorder, part, supplier, customer, date. Returns rows written per table. Each table is
    published atomically when complete; if generation fails, the failing table keeps its old version
    and tables finished before it hold the new data.
    """
    sizes(sf)  # validate before touching the database
    nworkers = resolve_workers(workers)
    rows: dict[str, int] = {}
    with Progress(progress) as bars, worker_pool(nworkers) as pool:
        for table in TABLES:
            bars.add(table, len(_tasks(sf, table)))
        for table in TABLES:
            rows[table] = write_table(db, table, SCHEMAS[table], batches(sf, table, nworkers, pool),
                                      rows_per_page, on_batch=lambda t=table: bars.advance(t),
                                      compression=compression)
    return rows
