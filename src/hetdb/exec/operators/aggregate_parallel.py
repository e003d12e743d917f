"""The final merge of a hash aggregation's partial states, partitioned over the worker threads.

Each worker of an aggregating pipeline hands over partial states that, with many groups, hold most of
the groups again (TPC-H q13: ~1M customers in each of 16 workers' states at SF 10). Merged as one
batch, their 16M rows went through group numbering and scatter-add kernels that run on one thread
(first-appearance numbering) or few (a chunk's accumulator row per group must fit): ~250 ms after
the workers on the 2-core machine at 16 threads, the query's largest serial phase.

Here the state rows are cut by a hash of their group keys into partitions (one task per batch on the
connection's worker pool), then every partition is merged on its own (one task per partition, each
with single-threaded kernels): a group's rows all land in one partition, so the partitions' results
are the groups, each once. The hash reads the non-string keys only (equal keys have equal non-string
parts; string keys would need a shared encoder, which the workers must not share); aggregations
whose keys are all strings keep the one merge.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numba import njit

from hetdb.backend.cpu import tuning
from hetdb.column import Batch
from hetdb.exec.columns import coalesce_batches, concat_batches, take_batch

# (backend/cpu/tuning.py) parallel_merge_rows: a final merge of fewer state rows keeps the one merge
# (its kernels' thread pool is cheaper); merge_parts_per_thread: partitions per worker thread (two: their
# sizes vary, the pool balances them; each costs a gather per batch and column and a merge's calls,
# Python that holds the GIL); merge_part_rows: rows behind each partition beyond one per thread
_POOL_PREFIX = "hetdb-worker"


@njit(cache=True, nogil=True)
def _order(part, nparts):
    """Row numbers grouped by partition (stable) and each partition's start in them."""
    n = part.shape[0]
    starts = np.zeros(nparts + 1, np.int64)
    for i in range(n):
        starts[part[i] + 1] += 1
    for p in range(nparts):
        starts[p + 1] += starts[p]
    pos = starts[:-1].copy()
    order = np.empty(n, np.int64)
    for i in range(n):
        p = part[i]
        order[pos[p]] = i
        pos[p] += 1
    return order, starts


@njit(cache=True, nogil=True)
def _by_hash(hashes, nparts):
    part = np.empty(hashes.shape[0], np.int64)
    for i in range(hashes.shape[0]):
        part[i] = np.int64((hashes[i] >> np.uint64(32)) % np.uint64(nparts))
    return _order(part, nparts)


@njit(cache=True, nogil=True)
def _by_range(values, lo, span, nparts):
    """Partition by the value's place in [lo, lo + span): each partition's keys then span a
    ``nparts``-th of the range, which the merge's dense numbering (a slot per value) needs."""
    part = np.empty(values.shape[0], np.int64)
    for i in range(values.shape[0]):
        p = (np.int64(values[i]) - lo) * nparts // span
        part[i] = min(max(p, 0), nparts - 1)
    return _order(part, nparts)


def _run_all(pool: Any, fn: Any, items: list) -> list:
    """``fn`` of every item on the pool, results in item order; the first error once all stopped."""
    futures = [pool.submit(fn, x) for x in items]
    out, errors = [], []
    for f in futures:
        try:
            out.append(f.result())
        except BaseException as e:  # noqa: BLE001 - re-raised below after every task stopped
            errors.append(e)
    if errors:
        raise errors[0]
    return out


def parallel_final(op: Any, ctx: Any, g: Any, batches: list[Batch]) -> list[Batch] | None:
    """The final values of ``op`` (a HashAggregate) from the partial states ``batches``, merged a
    partition at a time on the connection's workers; None when the one merge is the way (a GPU or
    single-threaded connection, few rows, raw rows, no non-string group key)."""
    pool, threads = getattr(ctx, "pool", None), int(getattr(ctx, "threads", 1) or 1)
    if pool is None or threads < 2 or ctx.device is not None or op.raw_mode or not op.keys:
        return None
    if threading.current_thread().name.startswith(_POOL_PREFIX):
        return None  # (a task of the pool waiting for the pool's other tasks could wait forever)
    batches = [b for b in batches if b.num_rows]
    if len(batches) < 2 or sum(b.num_rows for b in batches) < tuning.get("parallel_merge_rows"):
        return None
    hashed = [i for i, (_, e) in enumerate(op.keys) if e.dtype.kind != "string"]
    if not hashed:
        return None
    from hetdb.exec.operators.aggregate import _g

    be = ctx.backend
    rows = sum(b.num_rows for b in batches)
    # a partition's fixed cost (a gather per batch and column, a merge's calls) wants rows behind it
    nparts = max(threads, min(threads * tuning.get("merge_parts_per_thread"), rows // tuning.get("merge_part_rows")))
    names = list(op._state_dtypes())
    encoders = [g.encoders[i] for i in hashed]

    def keys_of(b: Batch) -> list[Any]:
        be.set_kernel_threads(1)
        return op._key_arrays(ctx, g, [b.columns[_g(i)] for i in hashed], b.num_rows, local=True,
                              encoders=encoders)

    keys = _run_all(pool, keys_of, batches)
    # integer first key: by its range (bounds over every batch), else by a hash of the keys
    ranged = all(k[0].dtype.kind in "iu" for k in keys)
    if ranged:
        lo = min(int(k[0].min()) for k in keys)
        span = max(int(k[0].max()) for k in keys) - lo + 1
        # (v - lo) * nparts stays in int64; a narrow range (the high half of a HUGEINT key, a flag)
        # would leave most partitions empty: hashed then
        ranged = 4 * nparts <= span < (1 << 55)
        if ranged and len(op.keys) == 1 and span < tuning.get("merge_small_domain"):
            # at most `span` groups: the one merge numbers them densely in a cache-sized table, faster
            # than the partitions' gathers and calls (TPC-H q15 at SF 10: 1.2M state rows of 100k
            # suppliers, 13 ms one merge against 28 partitioned on the 2-core machine at 16 threads)
            return None

    def split(k: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        be.set_kernel_threads(1)
        if ranged:
            return _by_range(k[0], np.int64(lo), np.int64(span), np.int64(nparts))
        return _by_hash(be.hash_keys(k), np.int64(nparts))

    cuts = _run_all(pool, split, keys)
    keys = []

    def merge(p: int) -> Batch | None:
        be.set_kernel_threads(1)
        pieces = [take_batch(be, b, order[starts[p]:starts[p + 1]])
                  for b, (order, starts) in zip(batches, cuts) if starts[p + 1] > starts[p]]
        if not pieces:
            return None
        return op._outputs(ctx, op._merge(ctx, g, concat_batches(be, pieces, names)))

    outs = [b for b in _run_all(pool, merge, list(range(nparts))) if b is not None]
    # (TPC-H q15's 100k groups came as 17 batches of 6k rows, read twice: 34 morsels)
    return coalesce_batches(be, outs, tuning.get("result_morsel_rows"), lambda fn, xs: _run_all(pool, fn, xs))
