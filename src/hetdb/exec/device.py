"""GPU execution support: the device memory a connection owns, operator reservations against it,
spill partitions in pinned host memory, and the after-query check that no device memory is left.

Imported only when the backend is the GPU (it imports CuPy lazily through ``backend/gpu``).

One ``DeviceResources`` lives on a QueryEngine (so on a connection): a ``DeviceMemoryBudget`` of
``gpu_memory_limit`` (default 80% of the free device memory), the ``DevicePageCache`` that keeps
pages on the device between queries, the accounting of operator state, and the connection's use of
the process-wide pinned host page tier (``cache/host_cache.py``), which outlives connections. Operators keep calling
the ``MemoryManager`` interface (``exec/memory.py``); on the GPU it is a ``DeviceMemoryManager`` whose
refusals make joins and aggregations partition and spill, here into pinned host memory.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np

from hetdb.column import Batch, Column
from hetdb.errors import GpuOutOfMemoryError
from hetdb.exec.memory import MemoryManager
from hetdb.types import DataType

# Operator state may hold at most this share of gpu_memory_limit: the rest stays for pages in flight
# (the streamer's ring) and the page cache, so a large hash table never starves the scans feeding it.
OPERATOR_SHARE = 0.5
# The page cache may hold most of the budget: query work takes what it needs back on demand (a
# refused reservation evicts the shortfall, lowest benefit first: ``DevicePageCache.make_room``), and
# a streaming scan admits pages only while its own deliveries' room stays free (the ``headroom`` of
# its admissions). At 0.5 a working set of 67% of the budget could never stay (H100, SSB SF 20 at a
# 10% budget of 833 MiB: q1.1's 561.6 MiB kept 94 MiB resident and copied 467.5 MiB every hot run).
CACHE_SHARE = 0.8
DEFAULT_LIMIT_FRACTION = 0.8
# keep_compressed takes the catalog's stamp again after this long (other processes' commits)
KEEP_COMPRESSED_TTL_S = 1.0
_BUDGET_CLASS: list = []  # _budget_class's (a class statement per connection cost its first query ~8 us)


def _budget_class():
    if _BUDGET_CLASS:
        return _BUDGET_CLASS[0]
    from hetdb.backend.gpu.memory import DeviceMemoryBudget

    class QueryBudget(DeviceMemoryBudget):
        """The connection's budget; its watermark restarts per query (``peak_gpu_bytes``)."""

        def reset_peak(self) -> None:
            with self._lock:
                self._peak = self._used

    _BUDGET_CLASS.append(QueryBudget)
    return QueryBudget


class DeviceMemoryManager(MemoryManager):
    """The ``MemoryManager`` over the connection's device budget. A refused reservation first evicts
    cached pages (re-reading a page is cheaper than spilling state); forced reservations that the
    budget cannot grant are counted as over the limit (``over_bytes``) instead of failing, since their
    owners have no spill path."""

    def __init__(self, budget: Any, cache: Any, share: float = OPERATOR_SHARE):
        super().__init__(int(budget.limit_bytes * share))
        self.budget = budget
        self.cache = cache
        self._over = 0
        self._peak_over = 0

    @property
    def over_bytes(self) -> int:
        return self._over

    @property
    def peak_over(self) -> int:
        """Most bytes held over the operators' share at once (forced state without a spill path)."""
        return self._peak_over

    def reset_peak(self) -> None:
        with self._lock:
            self._peak, self._peak_over = self._used, self._over

    def _acquire(self, nbytes: int) -> bool:
        if self.budget.try_reserve(nbytes):
            return True
        if self.cache is not None:
            self.cache.make_room(nbytes)
        return self.budget.try_reserve(nbytes)

    def _force(self, nbytes: int) -> None:
        # within the operators' share only: state beyond it must not take the room that pages in
        # flight need, so it is counted as over the limit instead
        if self._used + nbytes > self.limit or not self._acquire(nbytes):
            self._over += nbytes
            self._peak_over = max(self._peak_over, self._over)

    def _give_back(self, nbytes: int) -> None:
        from_over = min(self._over, nbytes)
        self._over -= from_over
        if nbytes - from_over:
            self.budget.release(nbytes - from_over)

    def reserve(self, nbytes: int, what: str) -> None:
        """Reserve or raise GpuOutOfMemoryError (which the engine answers by retrying the query)."""
        if not self.try_reserve(nbytes):
            raise GpuOutOfMemoryError(self._refusal(int(nbytes), what))

    def _refusal(self, nbytes: int, what: str) -> str:
        return (f"{what} needs {nbytes:,} bytes of GPU memory but only {self.limit - self._used:,} of the "
                f"{self.limit:,} bytes operators may use under gpu_memory_limit={self.budget.limit_bytes:,} "
                "are free; raise gpu_memory_limit or run on the CPU (device='cpu')")


# (database path, catalog_stamp) -> decoded bytes of every table: keep_compressed's memo, shared by
# the connections of the process
_DECODED_DB_BYTES: dict[tuple, int] = {}
# database path -> (catalog epoch, when its stamp was taken, (stamp, decoded bytes)): the last stamp
# a connection of the process took, which others take within KEEP_COMPRESSED_TTL_S as their own
_KEEP_CHECKED: dict[str, tuple] = {}


class DeviceResources:
    """Device memory of one connection: budget, page cache, operator accounting, H2D counters."""

    def __init__(self, limit_bytes: int | None):
        import cupy

        self.pool = cupy.get_default_memory_pool()
        if limit_bytes is None:
            free, _total = cupy.cuda.runtime.memGetInfo()
            # blocks CuPy's pool keeps from earlier queries or connections are free to this one too
            limit_bytes = int((free + self.pool.free_bytes()) * DEFAULT_LIMIT_FRACTION)
        from hetdb.cache import DevicePageCache

        self.budget = _budget_class()(int(limit_bytes))
        self.cache = DevicePageCache(self.budget, share=CACHE_SHARE)
        self.memory = DeviceMemoryManager(self.budget, self.cache)
        self._cupy = cupy
        self._host_tier: Any = None
        self._host_tier_resolved = False
        from hetdb.exec.lookup_tables import LookupTables

        self.luts = LookupTables()  # compiled kernels' dictionary lookups, kept between queries
        self._cache_bytes_at: tuple[Any, int] = (None, 0)  # ((cache mutations, luts version), bytes) memo
        self._decoded_db_bytes: tuple[tuple, int] | None = None  # keep_compressed's memo
        self._keep_checked: tuple[tuple, float] | None = None  # ((catalog epoch, db path), when its stamp was taken)
        self._table_names: tuple[tuple, list[str]] | None = None  # (tables dir identity, names)
        self.host_tier_pages = 0   # pages this connection's scans copied out of the host tier
        # (table, version) -> columns a fused GPU scan read (gpu_cache_admission='reuse', scan_device.first_scan)
        self.scanned_columns: dict[tuple[str, int], set[str]] = {}
        self.host_tier_bytes = 0
        # the columns kept decoded while pages stay compressed (exec/device_placement.py): the
        # connection's cache.placement.DecodedPlacement and its choice per table
        self.placement: Any = None
        self.placement_map: dict[str, frozenset[str]] = {}

    def keep_compressed(self, option: Any, db: Any) -> bool:
        """The ``gpu_compressed_cache`` a query runs with: True/False as set; "auto": True only when
        every table's pages, decoded, would not fit in the device cache beside its kept entries
        (decoded pages are scanned faster; compressed ones make a tight budget hold more). Decided
        per database state, not per scan, so every scan and kernel of a query agrees and a page the
        cache holds is kept as later scans of the same data expect it."""
        if isinstance(option, bool):
            return option
        from hetdb.cache.pages import column_device_bytes
        from hetdb.storage.versions import catalog_epoch

        # The stamp costs a stat per table (tens of microseconds each on the H100 machine's file
        # system, every query): it is taken again when this process changed the catalog, or after
        # KEEP_COMPRESSED_TTL_S for other processes' changes (the answer is a placement choice:
        # a moment's lag costs at most cache misses, never a wrong result).
        now = time.monotonic()
        got = self._decoded_db_bytes
        checked = getattr(self, "_keep_checked", None)
        path = getattr(db, "path", None)
        epoch = catalog_epoch()
        if got is not None and checked is not None and checked[0] == (epoch, path) \
                and 0 <= now - checked[1] < KEEP_COMPRESSED_TTL_S:
            return got[1] > self.cache.capacity_bytes - self.cache.kept_bytes()
        # a fresh connection takes the stamp another connection of the process took within the
        # moment (a fresh connection per query paid catalog_stamp's stats at the head of every query)
        shared = _KEEP_CHECKED.get(path) if isinstance(path, str) else None
        if shared is not None and shared[0] == epoch and 0 <= now - shared[1] < KEEP_COMPRESSED_TTL_S:
            self._keep_checked = ((epoch, path), shared[1])
            got = self._decoded_db_bytes = shared[2]
            return got[1] > self.cache.capacity_bytes - self.cache.kept_bytes()
        self._keep_checked = ((epoch, path), now)
        stamp, self._table_names = catalog_stamp(db, getattr(self, "_table_names", None))
        if stamp is None or got is None or got[0] != stamp:
            # (a fresh connection finds the total another connection of the process computed for the
            # same database state: it would look every table up again)
            shared = _DECODED_DB_BYTES.get((getattr(db, "path", None), stamp)) if stamp is not None else None
            if shared is not None:
                got = self._decoded_db_bytes = (stamp, shared)
            else:
                readers = [db.table(name) for name in db.tables()]
                total = sum(column_device_bytes(r, c, False) for r in readers for c in (s.name for s in r.schema))
                key = stamp if stamp is not None else tuple((r.name, r.version) for r in readers)
                got = self._decoded_db_bytes = (key, total)
                if stamp is not None:
                    if len(_DECODED_DB_BYTES) >= 64:
                        _DECODED_DB_BYTES.clear()
                    _DECODED_DB_BYTES[(getattr(db, "path", None), stamp)] = total
        if stamp is not None and isinstance(path, str):
            if len(_KEEP_CHECKED) >= 64:
                _KEEP_CHECKED.clear()
            _KEEP_CHECKED[path] = (epoch, now, got)
        return got[1] > self.cache.capacity_bytes - self.cache.kept_bytes()

    def host_tier(self, options: Any) -> Any:
        """The process-wide pinned host page tier for this connection's scans, or None when the
        ``host_cache_limit`` connection option is 0. The option (bytes; default half the RAM) sets the
        shared tier's limit."""
        if not self._host_tier_resolved:
            from hetdb.cache.host_cache import shared_host_cache

            self._host_tier = shared_host_cache(getattr(options, "host_cache_limit", None))
            self._host_tier_resolved = True
        return self._host_tier

    def count_host_tier(self, pages: int, nbytes: int) -> None:
        self.host_tier_pages += pages
        self.host_tier_bytes += nbytes

    def cache_device_bytes(self) -> int:
        """Device bytes (pool blocks, rounded as allocated) held by the page cache's entries and the
        kept dictionary lookups."""
        cache = self.cache
        mutations = getattr(cache, "mutations", None)
        stamp = None if mutations is None else (mutations, self.luts.version)
        if stamp is not None and self._cache_bytes_at[0] == stamp:
            return self._cache_bytes_at[1]  # no entry came or went: a hot query walks no pages
        seen: dict[int, int] = {}
        with cache._lock:  # read-only walk; the cache exposes no iterator over values
            values = [e.value for e in cache._entries.values()]
            # what is derived from them (set_derived) and holds device memory of its own: a fused
            # kernel's page table keeps its device copy (codegen/runtime.PageTable)
            derived = [v for _, v in getattr(cache, "_derived", {}).values()]
        for v in derived:
            values += [x for x in (v if isinstance(v, tuple) else (v,)) if hasattr(x, "device_arrays")]
        values += list(self.luts.arrays())
        if stamp is not None:
            stamp = (mutations, self.luts.version)  # (after arrays(): it drops dead dictionaries' tables)
        for v in values:
            for arr in _arrays(v):
                mem = getattr(getattr(arr, "data", None), "mem", None)
                if mem is not None:
                    seen[id(mem)] = int(mem.size)
        total = sum(seen.values())
        self._cache_bytes_at = (stamp, total)
        return total

    def kept_device_bytes(self) -> int:
        """Device bytes kept across queries: the page cache's (``cache_device_bytes``) and the
        process's LIKE patterns kept for launches (backend/gpu/codegen/runtime.kept_pattern_bytes)."""
        from hetdb.backend.gpu.codegen.runtime import kept_pattern_bytes

        return self.cache_device_bytes() + kept_pattern_bytes()

    def snapshot(self) -> tuple[int, int]:
        """(pool bytes in use, of which kept across queries: ``kept_device_bytes``) at the start of a query."""
        self._cupy.cuda.get_current_stream().synchronize()
        self.budget.reset_peak()
        self.memory.reset_peak()
        kept = self.kept_device_bytes()  # (first: it drops dead dictionaries' tables, freeing their blocks)
        return int(self.pool.used_bytes()), kept

    def leaked_bytes(self, before: tuple[int, int]) -> int:
        """Device bytes the query left allocated, beyond what is now kept across queries (the page
        cache, the kept LIKE patterns: ``kept_device_bytes``)."""
        self._cupy.cuda.get_current_stream().synchronize()
        used0, cache0 = before

        def leak() -> int:
            # kept first: it drops the tables of dictionaries that died with the query (LookupTables
            # .arrays), freeing their blocks; the pool's bytes read before would count them as a
            # leak, and a collection (0.1-0.3 ms) ran only to read them again
            kept = self.kept_device_bytes() - cache0
            return int(self.pool.used_bytes()) - used0 - kept

        left = leak()
        # Arrays kept alive only by reference cycles are not leaks: collect, the young generations
        # first: a full collection walks every object of the process, which grows with what the
        # process caches, and a query that made a cycle would pay it every time
        for generation in (1, 2):
            if left <= 0:
                break
            gc.collect(generation)
            left = leak()
        # Freed blocks stay in CuPy's pool for the next query (a page stream allocates one block per
        # page: cudaMalloc/cudaFree per page would cost a good part of the PCIe time). The pool gives
        # them back itself when an allocation would otherwise fail.
        return max(0, left)

    def close(self) -> None:
        """Drop this connection's cached pages; their blocks stay in CuPy's pool, for the next
        connection of the process (``free_pool_blocks`` returns them to the device)."""
        self.cache.clear()
        self.luts.clear()

    def free_pool_blocks(self) -> None:
        """Return every unused block of CuPy's pool to the device."""
        self.pool.free_all_blocks()


def catalog_stamp(db: Any, names: tuple | None) -> tuple[tuple | None, tuple | None]:
    """(stamp, names memo): the stamp changes when a table of ``db`` is created, dropped or
    committed (it holds the tables directory's identity, for its entries, and each table's CURRENT
    file's, which every commit replaces by a rename): a stat per table instead of reading every
    table's CURRENT and manifest (keep_compressed's memo, per query). ``names`` is the previous
    call's memo of the directory's entries. The stamp is None when it cannot be read."""
    import os

    from hetdb.storage.format import CURRENT, TABLES_DIR

    path = getattr(db, "path", None)
    if not isinstance(path, str):
        return None, names
    tables = os.path.join(path, TABLES_DIR)
    try:
        st = os.stat(tables)
        listing = (st.st_ino, st.st_mtime_ns)
        if names is None or names[0] != listing:
            names = (listing, sorted(e for e in os.listdir(tables) if not e.startswith(".")))
        stamp: list = [listing]
        for name in names[1]:
            try:
                c = os.stat(os.path.join(tables, name, CURRENT))
            except FileNotFoundError:
                continue  # (a table being created: nothing committed yet)
            stamp.append((name, c.st_ino, c.st_mtime_ns, c.st_size))
    except OSError:
        return None, names
    return tuple(stamp), names


def _arrays(value: Any):
    if isinstance(value, Column):
        yield from value.held_arrays()
        if value.dictionary is not None:
            yield from _arrays(value.dictionary)
    elif hasattr(value, "device_arrays"):  # a composite entry (cache/fused_state.py)
        for a in value.device_arrays():
            yield from _arrays(a)
    elif value is not None and hasattr(value, "data"):
        yield value


def is_device_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is CUDA/CuPy running out of device memory, or hetdb's GPU budget refusing a
    reservation that nothing could spill (both answered by a retry with less device memory held)."""
    if isinstance(exc, GpuOutOfMemoryError):
        return True
    try:
        import cupy
    except ImportError:
        return False
    if isinstance(exc, cupy.cuda.memory.OutOfMemoryError):
        return True
    return "cudaErrorMemoryAllocation" in str(exc) or "out of memory" in str(exc).lower()


class PinnedSpill:
    """One spill partition kept in pinned host memory (the GPU counterpart of ``SpillFile``): batches
    are copied device -> pinned host when written and back when read; host bytes are accounted
    against host_memory_limit."""

    def __init__(self, host_memory: Any, dtypes: dict[str, DataType]):
        from hetdb.exec.memory import Reservation

        self.dtypes = dtypes
        self.batches: list[Batch] = []
        self.num_rows = 0
        self.nbytes = 0
        self._reservation = Reservation(host_memory)

    def write(self, backend, batch: Batch) -> None:
        if batch.num_rows == 0:
            return
        cols = {k: _column_to_pinned(backend, c) for k, c in batch.columns.items()}
        nbytes = sum(_host_nbytes(c) for c in cols.values())
        self._reservation.force_grow(nbytes)
        self.batches.append(Batch(cols, batch.num_rows))
        self.num_rows += batch.num_rows
        self.nbytes += nbytes

    def close_writer(self) -> None:
        """Nothing to flush (kept for the SpillFile interface)."""

    def read_all(self, backend) -> list[Batch]:
        from hetdb.exec.columns import concat_batches

        if not self.batches:
            return []
        device = [Batch({k: _column_to_device(backend, c) for k, c in b.columns.items()}, b.num_rows)
                  for b in self.batches]
        return [concat_batches(backend, device)]

    def iter_batches(self, backend, max_rows: int | None = None):
        """The partition's batches back on the device one at a time (at most ``max_rows`` rows)."""
        from hetdb.exec.columns import slice_batch

        for b in self.batches:
            device = Batch({k: _column_to_device(backend, c) for k, c in b.columns.items()}, b.num_rows)
            step = max_rows or b.num_rows
            for lo in range(0, b.num_rows, step):
                yield device if step >= b.num_rows else slice_batch(backend, device, lo, lo + step)

    def remove(self) -> None:
        self.batches = []
        self._reservation.close()


def _to_pinned(arr: Any) -> Any:
    from hetdb.backend.gpu.memory import pinned_empty

    out = pinned_empty(arr.shape, arr.dtype)
    arr.get(out=out)
    return out


def _column_to_pinned(backend, col: Column) -> Column:
    # a dictionary is the table's (or an encoder's) shared object: it stays on the device, so spilled
    # codes keep pointing at the same dictionary and partitions concatenate without decoding
    return Column(col.dtype,
                  data=None if col.data is None else _to_pinned(col.data),
                  validity=None if col.validity is None else _to_pinned(col.validity),
                  dictionary=col.dictionary,
                  offsets=None if col.offsets is None else _to_pinned(col.offsets),
                  chars=None if col.chars is None else _to_pinned(col.chars))


def _column_to_device(backend, col: Column) -> Column:
    return Column(col.dtype,
                  data=None if col.data is None else backend.asarray(col.data),
                  validity=None if col.validity is None else backend.asarray(col.validity),
                  dictionary=col.dictionary,
                  offsets=None if col.offsets is None else backend.asarray(col.offsets),
                  chars=None if col.chars is None else backend.asarray(col.chars))


def _host_nbytes(col: Column) -> int:
    return sum(int(np.asarray(a).nbytes) for a in (col.data, col.validity, col.offsets, col.chars)
               if a is not None)
