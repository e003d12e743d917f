"""Chunked, deterministic, parallel generation and writing into the table store.

Every generator splits a table into fixed chunks (the split never depends on the number of workers) and
seeds each chunk from (base seed, table, chunk index), so the data is the same with 1 or N workers.
Chunks are generated in worker processes and written in order by the calling process; only a bounded
number of chunks is ever in flight, so memory stays bounded at any scale factor.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.column import Batch
from hetdb.config import usable_cpus
from hetdb.types import DataType


@dataclass(frozen=True)
class Field:
    """One column of a generated table's schema."""

    name: str
    dtype: DataType
    nullable: bool = False


def rng_for(seed: int, table: int, chunk: int) -> np.random.Generator:
    """The random stream of one chunk of one table (independent of every other chunk)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, table, chunk])))


def chunk_ranges(total: int, per_chunk: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of ``per_chunk`` items (the last one shorter) covering 0..total."""
    return [(s, min(s + per_chunk, total)) for s in range(0, total, per_chunk)]


def resolve_workers(workers: int | None) -> int:
    """``workers`` or, when None, the number of CPUs this process may use."""
    return usable_cpus() if workers is None else max(1, int(workers))


def ordered_map(fn: Callable[..., Any], tasks: Iterable[tuple], workers: int,
                pool: ProcessPoolExecutor | None = None) -> Iterator[Any]:
    """Yield ``fn(*task)`` for each task, in task order; with a pool at most workers + 2 tasks are in
    flight (running or finished but not yet consumed), which bounds memory."""
    if pool is None or workers <= 1:
        for task in tasks:
            yield fn(*task)
        return
    pending: deque[Future] = deque()
    limit = workers + 2  # every worker busy while the caller writes the oldest result
    try:
        for task in tasks:
            pending.append(pool.submit(fn, *task))
            if len(pending) >= limit:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """A process pool of ``workers`` (None for 1: generate in this process)."""
    if workers <= 1:
        yield None
        return
    # fork, not spawn/forkserver: those re-import the caller's __main__, which breaks every script and
    # notebook without an `if __name__ == "__main__"` guard. Forked workers only run NumPy/Numba chunk
    # functions (never Arrow or storage code), so locks held by the parent's threads are not touched.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class Progress:
    """A rich progress display with one bar per table, or nothing when disabled."""

    def __init__(self, enabled: bool):
        self._bars = None
        self._tasks: dict[str, Any] = {}
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bars = RichProgress(TextColumn("{task.description:<10}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn())

    def __enter__(self) -> Progress:
        if self._bars is not None:
            self._bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bars is not None:
            self._bars.stop()

    def add(self, name: str, total: int) -> None:
        if self._bars is not None:
            self._tasks[name] = self._bars.add_task(name, total=total)

    def advance(self, name: str) -> None:
        if self._bars is not None:
            self._bars.advance(self._tasks[name])


def write_table(db: Any, name: str, schema: Sequence[Field], batches: Iterable[Batch],
                rows_per_page: int, on_batch: Callable[[], None] | None = None,
                compression: str = "auto") -> int:
    """Write ``batches`` as table ``name`` (replacing it) and publish it atomically; return its rows.

    On any failure the partly written version is aborted, so readers keep seeing the old table.
    """
    from hetdb.storage import ColumnSpec

    specs = [ColumnSpec(f.name, f.dtype, nullable=f.nullable) for f in schema]
    writer = db.create_table(name, specs, rows_per_page=rows_per_page, replace=True, compression=compression)
    rows = 0
    try:
        for batch in batches:
            writer.append(batch)
            rows += batch.num_rows
            if on_batch is not None:
                on_batch()
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return rows
