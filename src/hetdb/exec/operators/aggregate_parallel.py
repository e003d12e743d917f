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
whose keys are all strings keep the one merge. The states are laid end to end once and each partition
gathers its rows from them (a gather per column, not per batch and column). Plain-string keys that follow the other
keys (a key and the columns describing it) are not gathered at all: each partition checks them in
place and takes its groups' strings only.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numba import njit

from hetdb.backend.cpu import tuning
from hetdb.column import Batch
from hetdb.exec.columns import coalesce_batches, concat_batches, take, take_batch

# (backend/cpu/tuning.py) parallel_merge_rows: a final merge of fewer state rows keeps the one merge
# (its kernels' thread pool is cheaper); merge_parts_per_thread: partitions per worker thread (two: their
# sizes vary, the pool balances them; each costs a merge's calls, Python that holds the GIL);
# merge_part_rows: rows behind each partition beyond one per thread
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
    # the states end to end (copies on every kernel thread); a partition gathers its rows from them:
    # one gather per column instead of one per batch and column (Python that holds the GIL)
    state = concat_batches(be, batches, names)
    order, starts = _global_order(cuts, [b.num_rows for b in batches], nparts)
    outs = _merge_following(op, ctx, g, state, order, starts)
    if outs is None:
        outs = _run_all(pool, lambda p: _merge_part(op, ctx, g, state, order, starts, p), list(range(nparts)))
    outs = [b for b in outs if b is not None]
    # (TPC-H q15's 100k groups came as 17 batches of 6k rows, read twice: 34 morsels)
    return coalesce_batches(be, outs, tuning.get("result_morsel_rows"), lambda fn, xs: _run_all(pool, fn, xs))


@njit(cache=True, nogil=True)
def _combine(orders, order_starts, cut_starts, bases, nparts):
    """One order over the states end to end, rows of partition p together at [starts[p], starts[p+1]):
    batch k's order is orders[order_starts[k]:order_starts[k+1]] with partition starts cut_starts[k]."""
    nb = bases.shape[0]
    out = np.empty(orders.shape[0], np.int64)
    starts = np.zeros(nparts + 1, np.int64)
    at = 0
    for p in range(nparts):
        starts[p] = at
        for k in range(nb):
            lo = order_starts[k] + cut_starts[k, p]
            hi = order_starts[k] + cut_starts[k, p + 1]
            for j in range(lo, hi):
                out[at] = orders[j] + bases[k]
                at += 1
    starts[nparts] = at
    return out, starts


def _global_order(cuts: list, sizes: list[int], nparts: int) -> tuple[np.ndarray, np.ndarray]:
    orders = np.concatenate([o for o, _ in cuts])
    order_starts = np.cumsum([0] + [int(o.shape[0]) for o, _ in cuts]).astype(np.int64)
    cut_starts = np.stack([st for _, st in cuts]).astype(np.int64)
    bases = np.cumsum([0] + sizes[:-1]).astype(np.int64)
    return _combine(orders, order_starts, cut_starts, bases, np.int64(nparts))


def _merge_part(op: Any, ctx: Any, g: Any, state: Batch, order: np.ndarray, starts: np.ndarray,
                p: int) -> Batch | None:
    be = ctx.backend
    be.set_kernel_threads(1)
    lo, hi = int(starts[p]), int(starts[p + 1])
    if hi == lo:
        return None
    return op._outputs(ctx, op._merge(ctx, g, take_batch(be, state, order[lo:hi])))


class _NotFollowing(Exception):
    """A plain-string group key did not follow the other keys in some partition."""


def _merge_following(op: Any, ctx: Any, g: Any, state: Batch, order: np.ndarray,
                     starts: np.ndarray) -> list[Batch | None] | None:
    """The partitions' merge when the group keys include plain strings, without moving the strings:
    each partition groups its rows by the other keys and checks that every string key follows them
    (exec/group_fd.py: a key and the columns describing it, TPC-H q10's c_custkey, c_name, c_address,
    c_comment), then takes the strings of its groups only. None (nothing merged) when there is no
    plain-string key or one does not follow the others.

    Gathering every state row's strings into its partition (then the groups' strings again) copied
    most of the states' bytes twice: at SF 10 on 16 threads q10's partitioned merge lost to the one
    merge (365/418 vs 274 ms a query); at SF 2 with 16 threads on 2 cores the partitions' gathers took
    as much CPU time as the merges themselves."""
    from hetdb.exec.group_fd import follows_groups_at, plain_string
    from hetdb.exec.operators.aggregate import _g

    strings = {i: state.columns[_g(i)] for i in range(len(op.keys)) if plain_string(state.columns[_g(i)])}
    if not strings:
        return None
    be = ctx.backend
    moved = Batch({n: c for n, c in state.columns.items() if n not in {_g(i) for i in strings}}, state.num_rows)
    others = [i for i in range(len(op.keys)) if i not in strings]
    encoders = [g.encoders[i] for i in others]

    def merge(p: int) -> Batch | None:
        be.set_kernel_threads(1)
        lo, hi = int(starts[p]), int(starts[p + 1])
        if hi == lo:
            return None
        rows = order[lo:hi]
        part = take_batch(be, moved, rows)
        keycols = [part.columns[_g(i)] for i in others]
        gid, ng, first = be.group_ids(op._key_arrays(ctx, g, keycols, hi - lo, local=True, encoders=encoders))
        if not all(follows_groups_at(c, rows, gid, first) for c in strings.values()):
            raise _NotFollowing
        reps = rows[first]
        cols = {_g(i): take(be, strings[i], reps) if i in strings else take(be, part.columns[_g(i)], first)
                for i in range(len(op.keys))}
        for j, (_, a) in enumerate(op.aggs):
            cols.update(op._merge_states(ctx, j, a, part, gid, ng))
        return op._outputs(ctx, Batch(cols, ng))

    try:
        return _run_all(ctx.pool, merge, list(range(len(starts) - 1)))
    except _NotFollowing:
        return None
