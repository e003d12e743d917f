"""String kernels on offsets (int64, n+1) + chars (uint8 UTF-8): comparison with a literal,
factorization to sorted codes, SUBSTRING in code points and gather.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit, prange

from hetdb.backend.cpu.keys import kernel_threads
from hetdb.errors import UnsupportedError

_COMPARE_OPS = {"=": 0, "<>": 1, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}
_INT64_MAX = (1 << 63) - 1


@njit(cache=True, nogil=True, parallel=True)
def _compare(offsets, chars, lit, op):
    n = offsets.shape[0] - 1
    out = np.empty(n, np.bool_)
    m = lit.shape[0]
    for i in prange(n):
        a = offsets[i]
        size = offsets[i + 1] - a
        common = min(size, m)
        c = 0
        for j in range(common):
            x = chars[a + j]
            y = lit[j]
            if x != y:
                c = -1 if x < y else 1
                break
        if c == 0 and size != m:
            c = -1 if size < m else 1
        if op == 0:
            out[i] = c == 0
        elif op == 1:
            out[i] = c != 0
        elif op == 2:
            out[i] = c < 0
        elif op == 3:
            out[i] = c <= 0
        elif op == 4:
            out[i] = c > 0
        else:
            out[i] = c >= 0
    return out


def compare_string_scalar(offsets: np.ndarray, chars: np.ndarray, literal: str, op: str) -> np.ndarray:
    """Byte-wise (UTF-8) comparison of each string with ``literal``; see ``Backend``."""
    if op not in _COMPARE_OPS:
        raise UnsupportedError(f"string comparison {op!r} is not supported (one of = <> < <= > >=)")
    lit = np.frombuffer(literal.encode("utf-8"), np.uint8).copy()
    return _compare(np.ascontiguousarray(offsets, dtype=np.int64),
                    np.ascontiguousarray(chars, dtype=np.uint8), lit, _COMPARE_OPS[op])


@njit(cache=True, nogil=True, parallel=True)
def _member(offsets, chars, lit_off, lit_chars, prefix):
    n = offsets.shape[0] - 1
    out = np.zeros(n, np.bool_)
    for i in prange(n):
        a = offsets[i]
        b = offsets[i + 1]
        if prefix >= 0:  # the string's first ``prefix`` code points: b is the lead byte after them
            seen = 0
            p = a
            while p < b:
                if (chars[p] & 0xC0) != 0x80:
                    if seen == prefix:
                        break
                    seen += 1
                p += 1
            b = p
        size = b - a
        for j in range(lit_off.shape[0] - 1):
            la = lit_off[j]
            if lit_off[j + 1] - la != size:
                continue
            same = True
            for q in range(size):
                if chars[a + q] != lit_chars[la + q]:
                    same = False
                    break
            if same:
                out[i] = True
                break
    return out


def string_in(offsets: np.ndarray, chars: np.ndarray, literals: tuple[str, ...],
              prefix_chars: int | None = None) -> np.ndarray:
    """Whether each string (its first ``prefix_chars`` code points when given: ``SUBSTRING(s, 1,
    k) IN (...)`` without the substrings) equals one of ``literals``, byte-wise, in one pass (one
    comparison pass per literal took most of TPC-H q22's customer scans)."""
    encoded = [v.encode("utf-8") for v in literals]
    lit_off = np.zeros(len(encoded) + 1, np.int64)
    lit_off[1:] = np.cumsum([len(v) for v in encoded])
    lit_chars = np.frombuffer(b"".join(encoded), np.uint8).copy()
    return _member(np.ascontiguousarray(offsets, dtype=np.int64), np.ascontiguousarray(chars, dtype=np.uint8),
                   lit_off, lit_chars, -1 if prefix_chars is None else int(prefix_chars))


def _arrow_strings(offsets: np.ndarray, chars: np.ndarray) -> pa.LargeStringArray:
    n = offsets.shape[0] - 1
    return pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int64)),
        pa.py_buffer(np.ascontiguousarray(chars, dtype=np.uint8)))


def _arrow_to_offsets_chars(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    arr = arr.cast(pa.large_string()) if arr.type != pa.large_string() else arr
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    start, end = int(off[0]), int(off[-1])
    chars = (np.frombuffer(bufs[2], np.uint8)[start:end].copy() if bufs[2] is not None
             else np.zeros(0, np.uint8))
    return off - start, chars


def factorize_strings(offsets: np.ndarray, chars: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int32 code per string, uniques offsets, uniques chars) with uniques sorted byte-wise."""
    arr = _arrow_strings(offsets, chars)
    encoded = arr.dictionary_encode()
    dictionary = encoded.dictionary
    # Arrow orders strings by their bytes (memcmp, then length), the order the contract asks for.
    order = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(order.shape[0], np.int32)
    rank[order] = np.arange(order.shape[0], dtype=np.int32)
    first_codes = encoded.indices.to_numpy(zero_copy_only=False)
    codes = rank[first_codes] if first_codes.shape[0] else np.zeros(0, np.int32)
    u_off, u_chars = _arrow_to_offsets_chars(dictionary.take(pa.array(order)))
    return np.ascontiguousarray(codes, dtype=np.int32), u_off, u_chars


@njit(cache=True, nogil=True, inline="always")
def _byte_of_codepoint(chars, a, b, cp):
    """Byte offset of code point ``cp`` (0-based) of the string chars[a:b]; b when past the end."""
    seen = -1
    for p in range(a, b):
        if (chars[p] & 0xC0) != 0x80:
            seen += 1
            if seen == cp:
                return p
    return b


@njit(cache=True, nogil=True, parallel=True)
def _substring_bounds(offsets, chars, start, length, has_length):
    n = offsets.shape[0] - 1
    lo = np.empty(n, np.int64)
    hi = np.empty(n, np.int64)
    for i in prange(n):
        a = offsets[i]
        b = offsets[i + 1]
        size = 0
        for p in range(a, b):
            if (chars[p] & 0xC0) != 0x80:
                size += 1
        # DuckDB's rules: start > 0 counts from 1, start < 0 from the end, start == 0 is one
        # character before the first; a negative length extends to the left of start.
        cnt = length
        if start > 0:
            cs = start - 1
        elif start < 0:
            cs = size + start
        else:
            cs = 0
            if has_length:
                cnt = length - 1
        if not has_length:
            ce = size
        elif cnt >= 0:
            ce = cs + cnt if cs <= size else size
        else:
            ce = cs
            cs = cs + cnt
        cs = min(max(cs, 0), size)
        ce = min(max(ce, 0), size)
        if has_length and length == 0 or ce <= cs:
            lo[i] = a
            hi[i] = a
        else:
            lo[i] = _byte_of_codepoint(chars, a, b, cs)
            hi[i] = _byte_of_codepoint(chars, lo[i], b, ce - cs)
    return lo, hi


@njit(cache=True, nogil=True, parallel=True)
def _copy_ranges(chars, lo, hi):
    n = lo.shape[0]
    out_off = np.empty(n + 1, np.int64)
    out_off[0] = 0
    total = 0
    for i in range(n):
        total += hi[i] - lo[i]
        out_off[i + 1] = total
    out = np.empty(total, np.uint8)
    for i in prange(n):
        d = out_off[i]
        # a slice copy (a memcpy-like loop): about twice the byte-at-a-time loop's speed
        out[d:d + hi[i] - lo[i]] = chars[lo[i]:hi[i]]
    return out_off, out


def substring(offsets: np.ndarray, chars: np.ndarray, start: int, length: int | None) -> tuple[np.ndarray, np.ndarray]:
    """SUBSTRING(s, start[, length]) in code points with DuckDB's rules for start <= 0 and negative
    length (start < 0 counts from the end; length < 0 takes characters before start)."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    chars = np.ascontiguousarray(chars, dtype=np.uint8)
    clamp = _INT64_MAX // 2  # keeps start + length inside int64
    s = max(-clamp, min(clamp, int(start)))
    has_length = length is not None
    ln = max(-clamp, min(clamp, int(length))) if has_length else 0
    lo, hi = _substring_bounds(offsets, chars, np.int64(s), np.int64(ln), has_length)
    return _copy_ranges(chars, lo, hi)


@njit(cache=True, nogil=True)
def _gathered_offsets(offsets, idx):
    """Offsets of the strings ``idx`` gathered one after another."""
    n = idx.shape[0]
    out_off = np.empty(n + 1, np.int64)
    out_off[0] = 0
    total = 0
    for i in range(n):
        total += offsets[idx[i] + 1] - offsets[idx[i]]
        out_off[i + 1] = total
    return out_off


@njit(cache=True, nogil=True)
def _gather_ranges(offsets, chars, idx):
    out_off = _gathered_offsets(offsets, idx)
    out = np.empty(out_off[-1], np.uint8)
    for i in range(idx.shape[0]):
        a = offsets[idx[i]]
        b = offsets[idx[i] + 1]
        d = out_off[i]
        out[d:d + b - a] = chars[a:b]
    return out_off, out


@njit(cache=True, nogil=True, parallel=True)
def _gather_ranges_parallel(offsets, chars, idx):
    out_off = _gathered_offsets(offsets, idx)
    out = np.empty(out_off[-1], np.uint8)
    n = idx.shape[0]
    for i in prange(n):
        a = offsets[idx[i]]
        b = offsets[idx[i] + 1]
        d = out_off[i]
        out[d:d + b - a] = chars[a:b]
    return out_off, out


# gathers of at least this many strings copy on every kernel thread (when the caller has several:
# a query's end, not its workers, which run one kernel thread each)
_PARALLEL_GATHER = 1 << 16


def gather_strings(offsets: np.ndarray, chars: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Strings at ``indices`` as a new (offsets starting at 0, chars). One thread inside a query's
    worker threads (a parallel Numba loop there costs more to start than the copy); on every
    kernel thread for a large gather where the caller has several (an operator's end)."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    idx = np.ascontiguousarray(indices, dtype=np.int64)
    if idx.shape[0] >= _PARALLEL_GATHER and kernel_threads() > 1:
        return _gather_ranges_parallel(offsets, np.ascontiguousarray(chars, dtype=np.uint8), idx)
    return _gather_ranges(offsets, np.ascontiguousarray(chars, dtype=np.uint8), idx)
