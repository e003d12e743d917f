"""Scan-benchmark table ``t`` (shared/benchmarks/scan.md): the PG-Strom / NVMe-Strom workload.

    t(id int not null, x double not null, y double not null, z double not null, memo text)
    id = 1..N; x, y, z uniform in [0, 1000); memo = md5 of id's decimal text (32 lowercase hex chars)

Scale: SF 1 = 10,000,000 rows (~ 0.6 GB of column data), so N = round(10M * sf); the published 700M-row
reference point is SF 70. Chunks of rows are seeded by their index: same data for any number of workers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
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
from hetdb.datagen.md5 import md5_hex_of_decimal
from hetdb.errors import InputError

SEED = 20160101
TABLE_T = 10
ROWS_PER_SF = 10_000_000
ROWS_PER_CHUNK = 1 << 20
MAX_ROWS = 2**31 - 1  # id is a 32-bit int
SCHEMA = (Field("id", T.INT32), Field("x", T.FLOAT64), Field("y", T.FLOAT64), Field("z", T.FLOAT64),
          Field("memo", T.STRING, nullable=True))


def num_rows(sf: float) -> int:
    """Rows of ``t`` at scale factor ``sf`` (SF 1 = 10M rows)."""
    if not sf > 0 or not math.isfinite(sf):
        raise InputError(f"scan-table scale factor must be a positive number, got {sf!r}")
    n = max(1, round(ROWS_PER_SF * sf))
    if n > MAX_ROWS:
        raise InputError(f"scale factor {sf} gives {n} rows, but id is a 32-bit int (at most {MAX_ROWS}); "
                         f"use sf <= {MAX_ROWS / ROWS_PER_SF:.1f}")
    return n


def t_batch(chunk: int, start: int, stop: int) -> Batch:
    """Rows with id start+1 … stop."""
    rng = rng_for(SEED, TABLE_T, chunk)
    n = stop - start
    ids = np.arange(start + 1, stop + 1, dtype=np.int64)
    xyz = rng.random((3, n)) * 1000.0  # uniform in [0, 1000)
    memo = Column(T.STRING, offsets=np.arange(n + 1, dtype=np.int64) * 32, chars=md5_hex_of_decimal(ids))
    return Batch({"id": Column(T.INT32, data=ids.astype(np.int32)), "x": Column(T.FLOAT64, data=xyz[0]),
                  "y": Column(T.FLOAT64, data=xyz[1]), "z": Column(T.FLOAT64, data=xyz[2]), "memo": memo}, n)


def _call(chunk: int, start: int, stop: int) -> Batch:
    return t_batch(chunk, start, stop)


def batches(sf: float, workers: int | None = 1, pool: Any = None) -> Iterator[Batch]:
    """The batches of ``t`` at ``sf`` in id order (same data for any ``workers``)."""
    tasks = [(k, s, e) for k, (s, e) in enumerate(chunk_ranges(num_rows(sf), ROWS_PER_CHUNK))]
    nworkers = resolve_workers(workers)
    if pool is None and nworkers > 1:
        with worker_pool(nworkers) as own:
            yield from ordered_map(_call, tasks, nworkers, own)
        return
    yield from ordered_map(_call, tasks, nworkers, pool)


def generate(db: Any, sf: float, workers: int | None = None, progress: bool = False,
             rows_per_page: int = 1 << 20, table: str = "t", compression: str = "auto") -> dict[str, int]:
    """Generate the scan table at ``sf`` (SF 1 = 10M rows) into ``db`` as ``table``, replacing it.

    Returns {table: rows}. The table is published atomically when complete.
    """
    n = num_rows(sf)
    nworkers = resolve_workers(workers)
    with Progress(progress) as bars, worker_pool(nworkers) as pool:
        bars.add(table, len(chunk_ranges(n, ROWS_PER_CHUNK)))
        rows = write_table(db, table, SCHEMA, batches(sf, nworkers, pool), rows_per_page,
                           on_batch=lambda: bars.advance(table), compression=compression)
    return {table: rows}
