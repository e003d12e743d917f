"""The window operator's buffered input as one batch, copied by several threads on the CPU: the
batches' fixed-width arrays (values and validity) go into one array per column, each thread copying
whole batches (NumPy copies release the GIL). Strings, object arrays, device arrays and small inputs
take ``concat_batches``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hetdb.column import Batch, Column
from hetdb.exec.columns import concat_batches

_PARALLEL_ROWS = 1 << 20  # below this a single-threaded copy is as fast
_pools: dict[int, ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    pool = _pools.get(threads)
    if pool is None:
        pool = _pools.setdefault(threads, ThreadPoolExecutor(threads, thread_name_prefix="hetdb-window-concat"))
    return pool


def _fixed(col: Column) -> bool:
    return isinstance(col.data, np.ndarray) and col.data.dtype != object and col.dictionary is None \
        and (col.validity is None or isinstance(col.validity, np.ndarray))


def concat(backend, batches: list[Batch], names: list[str], threads: int) -> Batch:
    """One batch of every row of ``batches`` (columns ``names``), as ``concat_batches`` returns it."""
    batches = [b for b in batches if b.num_rows > 0] or batches[:1]
    rows = sum(b.num_rows for b in batches)
    if backend.name != "cpu" or threads <= 1 or len(batches) < 2 or rows < _PARALLEL_ROWS:
        return concat_batches(backend, batches, names)
    parallel = [n for n in names if all(_fixed(b.columns[n]) for b in batches)]
    rest = concat_batches(backend, batches, [n for n in names if n not in parallel]) if len(parallel) < len(names) \
        else None
    starts = np.cumsum([0] + [b.num_rows for b in batches]).tolist()
    out: dict[str, Column] = {}
    jobs = []
    for n in parallel:
        cols = [b.columns[n] for b in batches]
        data = np.empty(rows, dtype=cols[0].data.dtype)
        validity = np.empty(rows, dtype=bool) if any(c.validity is not None for c in cols) else None
        out[n] = Column(cols[0].dtype, data=data, validity=validity)
        jobs.append((data, validity, cols))
    pool = _pool(threads)

    def copy(i: int) -> None:
        a, b = starts[i], starts[i + 1]
        for data, validity, cols in jobs:
            c = cols[i]
            data[a:b] = c.data
            if validity is not None:
                validity[a:b] = True if c.validity is None else c.validity

    list(pool.map(copy, range(len(batches))))
    if rest is not None:
        out.update(rest.columns)
    return Batch({n: out[n] for n in names}, rows)
