"""Hash join build and probe on the CPU (Numba).

The table (``hashtable.py``) holds one entry per *distinct* build key; each key id knows its lowest
build row and its row count; when some key has several rows, the rows are grouped by key in ascending
row order (CSR: ``start``/``order``), which gives the promised output order without sorting. Probing
is two passes: find each probe row's key id (parallel), then size the output from the counts and fill
it (parallel).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu import tuning
from hetdb.backend.cpu.groupby import int_ranges
from hetdb.backend.cpu.hashtable import HashTable, build, csr, lookup
from hetdb.backend.cpu.join_direct import direct_build_parallel
from hetdb.backend.cpu.join_filter import KeyFilter, filter_of, might_match
from hetdb.backend.cpu.keys import (
    hash_rows,
    kernel_threads,
    key_bits,
    key_matrix,
    row_hash,
    same_key,
    slot_of,
)
from hetdb.errors import UnsupportedError

# Direct indexing pays while the key range is about the build size (or cache-sized).
_DIRECT_MIN_RANGE = 1 << 16
_DIRECT_MAX_RANGE = 1 << 27
# Several integer keys whose ranges multiply to less than this are packed into one int64 key.
_PACK_MAX_CODES = 1 << 62
JOIN_KINDS = ("inner", "semi", "anti", "mark", "left", "build_matched")


@dataclass
class CpuJoinTable:
    """Opaque build-side state for ``join_probe``."""

    keys: np.ndarray        # (num_keys, num_rows) int64 key bits
    table: HashTable        # key ids are sparse; key_rep of an id is its lowest build row
    num_rows: int
    # Direct-indexed ("perfect hash") variant for one small-range integer key: key id = direct[key - lo].
    direct: np.ndarray | None = None
    direct_lo: int = 0
    # Several integer keys packed into one (``keys`` then holds the code): (mins, sizes, strides).
    pack: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    # Every build key occurs once (a primary key): inner/semi probes need no chain walk.
    unique: bool = False
    # Otherwise build rows grouped by key id, ascending within a key (CSR): the rows of key id k
    # are order[start[k]:start[k] + key_count[k]], read sequentially instead of chained.
    start: np.ndarray | None = None
    order: np.ndarray | None = None
    # Runtime join filter (``join_filter.py``), built on the first ``join_might_match``.
    key_filter: KeyFilter | None = None
    # Largest row count of one key (-1: not computed yet; see ``join_max_matches``).
    max_matches: int = -1
    # Build columns copied in CSR order, by cid (codegen/probe_py.clustered_payload), made on first use.
    clustered: dict | None = None
    # Whether the CSR order is far from the build rows' order (codegen/probe_py.scattered; None: not known).
    scattered: bool | None = None

    @property
    def num_keys(self) -> int:
        return int(self.pack[0].shape[0]) if self.pack is not None else int(self.keys.shape[0])

    @property
    def nbytes(self) -> int:
        t = self.table
        extra = 0 if self.direct is None else self.direct.nbytes
        if self.order is not None:
            extra += self.start.nbytes + self.order.nbytes
        return extra + sum(a.nbytes for a in (self.keys, t.slots, t.key_rep, t.key_count, t.next_row,
                                              t.row_key))


@njit(cache=True, nogil=True)
def _direct_build(key, lo, size):
    n = key.shape[0]
    direct = np.full(size, -1, np.int32)  # key ids < n < 2**31: half the memory of int64
    key_rep = np.empty(n, np.int64)
    key_count = np.zeros(n, np.int64)
    next_row = np.empty(n, np.int64)
    row_key = np.empty(n, np.int64)
    nid = 0
    # Descending + prepend keeps chains ascending, as in the hash build.
    for i in range(n - 1, -1, -1):
        c = key[i] - lo
        k = direct[c]
        if k == -1:
            direct[c] = nid
            key_rep[nid] = i
            key_count[nid] = 1
            next_row[i] = -1
            row_key[i] = nid
            nid += 1
        else:
            next_row[i] = key_rep[k]
            key_rep[k] = i
            key_count[k] += 1
            row_key[i] = k
    return direct, key_rep, key_count, next_row, row_key


@njit(cache=True, nogil=True, parallel=True)
def _direct_fill(key, lo, direct):
    """``direct`` with each row's slot set to its row (on all kernel threads); how many rows do
    not find themselves there (another row has their key)."""
    n = key.shape[0]
    size = direct.shape[0]
    for c in prange(size):
        direct[c] = -1
    for i in prange(n):
        direct[key[i] - lo] = i
    clashes = 0
    for i in prange(n):
        if direct[key[i] - lo] != i:
            clashes += 1
    return clashes


def _direct_build_unique(key: np.ndarray, lo: np.int64, size: int) -> tuple:
    """``_direct_build``'s arrays when every key is on one row (a dimension's primary key): key id =
    row, filled in parallel (the serial build was most of the single-threaded time of a 16-thread
    query's dimension builds, SSB q4.1's 320k parts at SF 10: 13 ms); Nones otherwise."""
    direct = np.empty(size, np.int32)
    clashes = _direct_fill(key, lo, direct)
    if clashes:
        return None, None, None, None, None
    n = key.shape[0]
    rows = np.arange(n, dtype=np.int64)
    return direct, rows, np.ones(n, np.int64), np.empty(0, np.int64), rows.copy()


@njit(cache=True, nogil=True, parallel=True)
def _direct_lookup(direct, lo, key):
    n = key.shape[0]
    out = np.empty(n, np.int64)
    size = direct.shape[0]
    for i in prange(n):
        c = key[i] - lo
        out[i] = direct[c] if 0 <= c < size else -1
    return out


@njit(cache=True, nogil=True)
def _direct_probe_unique(direct, lo, key, key_rep, want_pairs):
    """Inner/semi probe of a direct table whose keys are unique, in one pass: (probe rows with a
    match, their build rows); build rows are only written when ``want_pairs``."""
    n = key.shape[0]
    size = direct.shape[0]
    pidx = np.empty(n, np.int64)
    bidx = np.empty(n if want_pairs else 0, np.int64)
    cnt = 0
    for i in range(n):
        c = np.int64(key[i]) - lo
        if 0 <= c < size:
            k = direct[c]
            if k >= 0:
                pidx[cnt] = i
                if want_pairs:
                    bidx[cnt] = key_rep[k]
                cnt += 1
    return pidx[:cnt], bidx[:cnt]


@njit(cache=True, nogil=True)
def _hash_probe_unique(table_keys, slots, shift, key_rep, probe_keys, want_pairs):
    """``_direct_probe_unique`` for a hash table: hashing, lookup and output in one pass."""
    n = probe_keys.shape[1]
    mask = slots.shape[0] - 1
    pidx = np.empty(n, np.int64)
    bidx = np.empty(n if want_pairs else 0, np.int64)
    cnt = 0
    for i in range(n):
        h = row_hash(probe_keys, i)
        hb = np.int64(h)
        s = slot_of(h, shift)
        while True:
            k = slots[s, 1]
            if k == -1:
                break
            if slots[s, 0] == hb and same_key(table_keys, key_rep[k], probe_keys, i):
                pidx[cnt] = i
                if want_pairs:
                    bidx[cnt] = key_rep[k]
                cnt += 1
                break
            s = (s + 1) & mask
    return pidx[:cnt], bidx[:cnt]


def _probe_unique(table: CpuJoinTable, keys: list[np.ndarray], want_pairs: bool):
    t = table.table
    if table.direct is not None:
        key = np.ascontiguousarray(keys[0])
        if key.dtype.kind not in "iu":
            key = key_bits(key)
        return _direct_probe_unique(table.direct, np.int64(table.direct_lo), key, t.key_rep, want_pairs)
    return _hash_probe_unique(table.keys, t.slots, t.shift, t.key_rep, key_matrix(keys), want_pairs)


@njit(cache=True, nogil=True, parallel=True)
def _pack_probe(km, mins, sizes, strides):
    """Probe keys packed like the build keys; -1 (matches nothing) where a key is out of range."""
    n = km.shape[1]
    out = np.empty(n, np.int64)
    for i in prange(n):
        c = np.int64(0)
        for j in range(km.shape[0]):
            v = km[j, i] - mins[j]
            if v < 0 or v >= sizes[j]:
                c = -1
                break
            c += v * strides[j]
        out[i] = c
    return out


def _pack_plan(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(mins, sizes, strides) packing several integer keys into one int64, or None."""
    ranges = int_ranges(keys)
    if ranges is None:
        return None
    sizes = [hi - lo + 1 for lo, hi in ranges]
    total = 1
    for z in sizes:
        total *= z
    if total >= _PACK_MAX_CODES:
        return None
    strides = np.empty(len(keys), np.int64)
    acc = 1
    for j in range(len(keys) - 1, -1, -1):
        strides[j] = acc
        acc *= sizes[j]
    return np.array([lo for lo, _ in ranges], np.int64), np.array(sizes, np.int64), strides


def join_build(keys: list[np.ndarray]) -> CpuJoinTable:
    """Hash table over the build keys (see module docstring); one integer key whose range is a few
    times the build size gets a direct-indexed table instead (no hashing, one memory access per
    probe). Several integer keys are packed into one first when their ranges allow."""
    pack = _pack_plan(keys) if len(keys) > 1 else None
    if pack is not None:
        keys = [_pack_probe(key_matrix(keys), *pack)]
    km = key_matrix(keys)
    n = int(km.shape[1])
    ranges = int_ranges(keys) if len(keys) == 1 else None
    if ranges is not None:
        lo, hi = ranges[0]
        size = hi - lo + 1
        if size <= max(_DIRECT_MIN_RANGE, min(tuning.get("direct_range_per_row") * n, _DIRECT_MAX_RANGE)):
            direct, rep, count, nxt, row_key = _direct_build_unique(km[0], np.int64(lo), size)
            if direct is None and n >= tuning.get("direct_parallel_rows") and kernel_threads() > 1:  # repeated keys: by slot ranges
                direct, table = direct_build_parallel(km[0], np.int64(lo), size)
                return _with_layout(CpuJoinTable(km, table, n, direct, lo, pack=pack,
                                                 unique=_all_unique(table.key_count, n, table.distinct)))
            if direct is None:  # (few rows) chains, built in one pass
                direct, rep, count, nxt, row_key = _direct_build(km[0], np.int64(lo), size)
            table = HashTable(np.empty((0, 2), np.int64), np.uint64(0), rep, count, nxt, row_key)
            return _with_layout(CpuJoinTable(km, table, n, direct, lo, pack=pack,
                                             unique=_all_unique(count, n)))
    # ascending, no chain: a key's first row is its lowest, and keys with several rows get the CSR
    # layout (a chain through the rows cost a random write per row that nothing read)
    table = build(km, hash_rows(km), descending=False, chain=False, row_keys=False)
    return _with_layout(CpuJoinTable(km, table, n, pack=pack, unique=_all_unique(table.key_count, n, table.distinct)))


@njit(cache=True, nogil=True)
def _pair_starts(match, key_count, left):
    """Where each probe row's output pairs start (prefix sum of its match count; an unmatched row
    of a left join gets one pair)."""
    n = match.shape[0]
    starts = np.empty(n + 1, np.int64)
    starts[0] = 0
    total = 0
    for i in range(n):
        k = match[i]
        total += key_count[k] if k >= 0 else (1 if left else 0)
        starts[i + 1] = total
    return starts


@njit(cache=True, nogil=True, parallel=True)
def _expand_csr(match, key_count, start, order, left):
    """``_expand`` over the CSR layout: each probe row's build rows are one contiguous run."""
    n = match.shape[0]
    starts = _pair_starts(match, key_count, left)
    pidx = np.empty(starts[n], np.int64)
    bidx = np.empty(starts[n], np.int64)
    for i in prange(n):
        pos = starts[i]
        k = match[i]
        if k < 0:
            if left:
                pidx[pos] = i
                bidx[pos] = -1
            continue
        s = start[k]
        for j in range(key_count[k]):
            pidx[pos + j] = i
            bidx[pos + j] = order[s + j]
    return pidx, bidx


@njit(cache=True, nogil=True, parallel=True)
def _fill_row_keys(key_rep, key_count, start, order, out):
    for k in prange(key_count.shape[0]):
        if start.shape[0] == 0:  # unique keys: one row each
            if key_count[k]:
                out[key_rep[k]] = k
        else:
            for m in range(start[k], start[k] + key_count[k]):
                out[order[m]] = k


def _row_keys(table: CpuJoinTable) -> np.ndarray:
    """Each build row's key id: made from the layout when the build left it out (hashtable.build's
    ``row_keys``), then kept."""
    t = table.table
    if t.row_key.shape[0] != table.num_rows:
        out = np.empty(table.num_rows, np.int64)
        empty = np.empty(0, np.int64)
        _fill_row_keys(t.key_rep, t.key_count, empty if table.start is None else table.start,
                       empty if table.order is None else table.order, out)
        t.row_key = out
    return t.row_key


def _with_layout(table: CpuJoinTable) -> CpuJoinTable:
    if not table.unique:
        table.start, table.order = csr(table.table)
    table.table.ranges = None  # (only the layout needed them)
    return table


def _all_unique(key_count: np.ndarray, n: int, distinct: int = -1) -> bool:
    """Every row has its own key: as many used key ids (``distinct`` when the build counted them) as rows."""
    return (distinct if distinct >= 0 else int(np.count_nonzero(key_count))) == n


@njit(cache=True, nogil=True, parallel=True)
def _expand_unique(match, key_rep, key_count, left):
    """(probe_idx, build_idx) pairs for inner (left=False) or left joins of a table whose keys each
    have one row, written in one allocation."""
    n = match.shape[0]
    starts = _pair_starts(match, key_count, left)
    pidx = np.empty(starts[n], np.int64)
    bidx = np.empty(starts[n], np.int64)
    for i in prange(n):
        pos = starts[i]
        k = match[i]
        if k < 0:
            if left:
                pidx[pos] = i
                bidx[pos] = -1
            continue
        pidx[pos] = i
        bidx[pos] = key_rep[k]
    return pidx, bidx


@njit(cache=True, nogil=True, parallel=True)
def _build_matched(match, row_key, num_keys):
    hit = np.zeros(num_keys, np.bool_)
    for i in prange(match.shape[0]):
        k = match[i]
        if k >= 0:
            hit[k] = True  # every writer stores the same value: the race is benign
    out = np.empty(row_key.shape[0], np.bool_)
    for r in prange(row_key.shape[0]):
        out[r] = hit[row_key[r]]
    return out


def join_probe(table: CpuJoinTable, keys: list[np.ndarray], kind: str):
    """Probe ``table``; output per kind as documented in ``Backend.join_probe``."""
    if kind not in JOIN_KINDS:
        raise UnsupportedError(f"join kind {kind!r} is not supported (one of {', '.join(JOIN_KINDS)})")
    if len(keys) != table.num_keys:
        raise ValueError(f"probe has {len(keys)} key columns, build has {table.num_keys}")
    if table.direct is not None and table.pack is None and np.asarray(keys[0]).dtype.kind == "f":
        raise ValueError("probe key is float64 but the build key is an integer")
    if table.pack is not None:
        keys = [_pack_probe(key_matrix(keys), *table.pack)]
    if table.unique and kind in ("inner", "semi"):
        pidx, bidx = _probe_unique(table, keys, kind == "inner")
        return (pidx, bidx) if kind == "inner" else pidx
    pk = key_matrix(keys)
    t = table.table
    if table.direct is not None:
        if np.asarray(keys[0]).dtype.kind == "f":
            raise ValueError("probe key is float64 but the build key is an integer")
        match = _direct_lookup(table.direct, np.int64(table.direct_lo), pk[0])
    else:
        match = lookup(table.keys, t.slots, t.shift, t.key_rep, pk, hash_rows(pk))
    if kind == "inner" or kind == "left":
        if table.order is not None:
            return _expand_csr(match, t.key_count, table.start, table.order, kind == "left")
        return _expand_unique(match, t.key_rep, t.key_count, kind == "left")  # (no CSR: unique keys)
    if kind == "mark":
        return match >= 0
    if kind == "semi":
        return np.flatnonzero(match >= 0).astype(np.int64, copy=False)
    if kind == "anti":
        return np.flatnonzero(match < 0).astype(np.int64, copy=False)
    return _build_matched(match, _row_keys(table), t.key_rep.shape[0])


def join_max_matches(table: CpuJoinTable) -> int:
    """The most build rows one probe row can match (the largest key's row count)."""
    if table.unique:
        return 1
    if table.max_matches < 0:
        counts = table.table.key_count
        table.max_matches = int(counts.max()) if counts.shape[0] else 0
    return table.max_matches


def join_match_counts(table: CpuJoinTable, keys: list[np.ndarray]) -> np.ndarray:
    """Build rows matching each probe row (int64, 0 for none): what an inner probe would output,
    known before the pairs are made, so a caller can bound the pairs it asks for."""
    if table.pack is not None:
        keys = [_pack_probe(key_matrix(keys), *table.pack)]
    pk = key_matrix(keys)
    t = table.table
    if table.direct is not None:
        match = _direct_lookup(table.direct, np.int64(table.direct_lo), pk[0])
    else:
        match = lookup(table.keys, t.slots, t.shift, t.key_rep, pk, hash_rows(pk))
    return _counts_of(match, t.key_count)


@njit(cache=True, nogil=True, parallel=True)
def _counts_of(match, key_count):
    out = np.empty(match.shape[0], np.int64)
    for i in prange(match.shape[0]):
        k = match[i]
        out[i] = key_count[k] if k >= 0 else 0
    return out


def join_might_match(table: CpuJoinTable, keys: list[np.ndarray]) -> np.ndarray:
    """Bool per probe row, False only where the key certainly has no build row (a runtime filter
    a scan applies before it gathers its other columns)."""
    if table.pack is not None:
        keys = [_pack_probe(key_matrix(keys), *table.pack)]
    return might_match(filter_of(table), keys)
