"""hash(a[, b, ...]) with DuckDB's values (UBIGINT), computed on the host with NumPy.

DuckDB's rules (read from its documentation and source, re-implemented here; values checked one by
one against DuckDB in tests/sql/test_sql_hash.py):
  mix(x)        x ^= x >> 32; x *= 0xd6e8feb86659fd93; x ^= x >> 32; x *= 0xd6e8feb86659fd93; x ^= x >> 32
  32-bit values (INTEGER, DATE, BOOLEAN, DECIMAL of up to 9 digits): mix of the value's low 32 bits
  64-bit values (BIGINT, TIMESTAMP[TZ], DECIMAL of 10..18 digits, UBIGINT): mix of the 64 bits
  HUGEINT / DECIMAL(19..38): mix(low 64 bits) ^ mix(high 64 bits)
  DOUBLE: -0.0 as 0.0, every NaN as the quiet NaN, then mix of the bits
  VARCHAR: h = 0xe17a1465 ^ (length * 0xc6a4a7935bd1e995); for each 8-byte little-endian block of the
           UTF-8 bytes (the last one zero-padded): h ^= block; h *= 0xd6e8feb86659fd93; then mix(h)
  NULL: 0xbf58476d1ce4e5b9
  several arguments: h = hash(first); for each next value v: h = mix1(h) ^ hash(v), where
           mix1(h) = (h ^ (h >> 32)) * 0xd6e8feb86659fd93
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.hostutil import column_to_host, note_host_step, wide_column_to_device
from hetdb.plan.expr import Call

_MUL = np.uint64(0xD6E8FEB86659FD93)
_STR_SEED = np.uint64(0xE17A1465)
_STR_LEN_MUL = np.uint64(0xC6A4A7935BD1E995)
NULL_HASH = np.uint64(0xBF58476D1CE4E5B9)
_S32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFF_FFFF)
_QUIET_NAN = np.uint64(0x7FF8_0000_0000_0000)


def _mix(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> _S32)
    x = x * _MUL
    x = x ^ (x >> _S32)
    x = x * _MUL
    return x ^ (x >> _S32)


def _as_u64(data: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(data).astype(np.int64, copy=False).view(np.uint64)


def _hash_wide(data: np.ndarray) -> np.ndarray:
    """HUGEINT values (int64, or Python ints past 64 bits): mix(low 64 bits) ^ mix(high 64 bits)."""
    if data.dtype != object:
        low = _as_u64(data)
        high = np.where(data.astype(np.int64) < 0, np.uint64(2**64 - 1), np.uint64(0))
    else:
        ints = [int(v) for v in data.tolist()]
        low = np.array([v & (2**64 - 1) for v in ints], dtype=np.uint64)
        high = np.array([(v >> 64) & (2**64 - 1) for v in ints], dtype=np.uint64)
    return _mix(low) ^ _mix(high)


def _hash_double(data: np.ndarray) -> np.ndarray:
    values = np.asarray(data, dtype=np.float64) + 0.0  # -0.0 + 0.0 is +0.0
    bits = values.view(np.uint64)
    return _mix(np.where(np.isnan(values), _QUIET_NAN, bits))


def _hash_bytes(offsets: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """The string hash of each value given by ``offsets`` into the UTF-8 bytes ``chars``."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    blocks_per_row = (lengths + 7) // 8
    first_block = np.cumsum(blocks_per_row) - blocks_per_row
    padded = np.zeros(int(blocks_per_row.sum()) * 8, dtype=np.uint8)
    n_bytes = int(lengths.sum())
    if n_bytes:
        row = np.repeat(np.arange(len(lengths)), lengths)
        within = np.arange(n_bytes) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        padded[first_block[row] * 8 + within] = np.asarray(chars, dtype=np.uint8)[offsets[row] + within]
    blocks = padded.view("<u8").astype(np.uint64)
    h = _STR_SEED ^ (lengths.astype(np.uint64) * _STR_LEN_MUL)
    for k in range(int(blocks_per_row.max(initial=0))):
        rows = np.flatnonzero(blocks_per_row > k)
        h[rows] = (h[rows] ^ blocks[first_block[rows] + k]) * _MUL
    return _mix(h)


def _hash_strings(col: Column) -> np.ndarray:
    if col.dictionary is not None:
        return _hash_strings(col.dictionary)[np.asarray(col.data, dtype=np.int64)]
    arr = col.to_arrow().cast(pa.large_string())
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    chars = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return _hash_bytes(offsets, chars)


def value_hashes(col: Column) -> np.ndarray:
    """DuckDB's hash of every value of a host column (uint64; NULL rows get NULL_HASH)."""
    t, data = col.dtype, col.data
    if t.kind == "string":
        out = _hash_strings(col)
    elif t == T.UBIGINT:
        out = _mix(_hash_wide_as_u64(data))
    elif t.is_wide:
        out = _hash_wide(np.asarray(data))
    elif t.kind == "float64":
        out = _hash_double(data)
    elif t.kind in ("int32", "date", "bool") or (t.kind == "decimal" and t.precision <= 9):
        out = _mix(_as_u64(np.asarray(data).astype(np.int64)) & _LOW32)
    elif t.kind in ("int64", "timestamp", "decimal"):
        out = _mix(_as_u64(data))
    else:  # the binder refuses every other type
        raise AssertionError(f"hash() of {t}")
    if col.validity is not None:
        out = np.where(np.asarray(col.validity, dtype=bool), out, NULL_HASH)
    return out


def _hash_wide_as_u64(data: np.ndarray) -> np.ndarray:
    """UBIGINT values held as HUGEINT data (int64 or Python ints, all in 0..2**64-1) -> uint64."""
    if data.dtype == object:
        return np.array([int(v) for v in data.tolist()], dtype=np.uint64)
    return _as_u64(data)


def combine(h: np.ndarray, other: np.ndarray) -> np.ndarray:
    return ((h ^ (h >> _S32)) * _MUL) ^ other


def ubigint_column(values: np.ndarray) -> Column:
    """A host UBIGINT column from uint64 values: int64 data while every value fits, else Python ints
    (the HUGEINT layout UBIGINT shares, see hetdb.types)."""
    if values.size == 0 or int(values.max()) < 2**63:
        return Column(T.UBIGINT, data=values.astype(np.int64))
    return Column(T.UBIGINT, data=values.astype(object))


def _hash(ev, expr: Call, batch: Batch) -> Column:
    note_host_step(ev.backend, "hash (host)")
    h = None
    for arg in expr.args:
        col = column_to_host(ev.backend, ev.evaluate(arg, batch))
        hashes = value_hashes(col)
        h = hashes if h is None else combine(h, hashes)
    return wide_column_to_device(ev.backend, ubigint_column(h))


FUNCTIONS = {"hash": _hash}
