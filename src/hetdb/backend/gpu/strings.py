"""String kernels on (offsets int64[n+1], chars uint8) columns (kernels in strings.cu)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.gpu.compile import BLOCK, get_module, grid_for, launch

_COMPARE_OPS = {"=": 0, "==": 0, "<>": 1, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}


def _mod():
    return get_module("strings.cu")


def _device_bytes(text: str) -> Any:
    import cupy

    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    # A one-byte dummy keeps the pointer valid for empty patterns/literals.
    return cupy.asarray(data if data.size else np.zeros(1, np.uint8)), int(data.size)


def _num(offsets: Any) -> int:
    return int(offsets.shape[0]) - 1


def like(offsets: Any, chars: Any, pattern: str, case_insensitive: bool = False) -> Any:
    import cupy

    n = _num(offsets)
    out = cupy.empty(n, dtype=cupy.bool_)
    if n == 0:
        return out
    ascii_fold = 0
    if case_insensitive:
        # Lower-case like the CPU backend: ASCII folding in the kernel; other text through Arrow's
        # Unicode lower on the host (rare, and exact agreement between backends matters more).
        pattern = pattern.lower()
        if chars.shape[0] and int(chars.max()) >= 0x80:
            offsets, chars = _unicode_lower(offsets, chars)
        else:
            ascii_fold = 1
    pat, plen = _device_bytes(pattern)
    launch(_mod().function("like_kernel"), grid_for(n), BLOCK,
           (offsets, _chars(chars), np.int64(n), pat, np.int32(plen), np.int32(ascii_fold), out))
    return out


def _unicode_lower(offsets: Any, chars: Any) -> tuple[Any, Any]:
    import cupy
    import pyarrow as pa
    import pyarrow.compute as pc

    host_off, host_chars = cupy.asnumpy(offsets), cupy.asnumpy(chars)
    n = host_off.shape[0] - 1
    low = pc.utf8_lower(pa.LargeStringArray.from_buffers(n, pa.py_buffer(host_off), pa.py_buffer(host_chars)))
    bufs = low.buffers()
    new_off = np.frombuffer(bufs[1], np.int64, count=n + 1, offset=low.offset * 8)
    new_chars = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return cupy.asarray(new_off - new_off[0]), cupy.asarray(new_chars[new_off[0]:new_off[-1]])


def compare_string_scalar(offsets: Any, chars: Any, literal: str, op: str) -> Any:
    import cupy

    if op not in _COMPARE_OPS:
        raise ValueError(f"unknown comparison {op!r}")
    n = _num(offsets)
    out = cupy.empty(n, dtype=cupy.bool_)
    if n:
        lit, llen = _device_bytes(literal)
        launch(_mod().function("compare_scalar_kernel"), grid_for(n), BLOCK,
               (offsets, _chars(chars), np.int64(n), lit, np.int64(llen), np.int32(_COMPARE_OPS[op]), out))
    return out


def _chars(chars: Any) -> Any:
    import cupy

    # Kernels take a pointer even when there are no bytes (every string empty).
    return chars if chars.shape[0] else cupy.zeros(1, dtype=cupy.uint8)


def copy_ranges(chars: Any, begin: Any, lengths: Any) -> tuple[Any, Any]:
    """New (offsets, chars) holding chars[begin[i] : begin[i] + lengths[i]] for every i."""
    import cupy

    n = int(begin.shape[0])
    offsets = cupy.zeros(n + 1, dtype=cupy.int64)
    if n:
        cupy.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    out = cupy.empty(total, dtype=cupy.uint8)
    if total:
        launch(_mod().function("copy_ranges"), grid_for(n * 32), BLOCK,
               (_chars(chars), cupy.ascontiguousarray(begin, dtype=cupy.int64), offsets, np.int64(n), out))
    return offsets, out


def gather_strings(offsets: Any, chars: Any, indices: Any) -> tuple[Any, Any]:
    import cupy

    indices = cupy.asarray(indices, dtype=cupy.int64)
    begin = offsets[indices]
    return copy_ranges(chars, begin, offsets[indices + 1] - begin)


def substring(offsets: Any, chars: Any, start: int, length: int | None) -> tuple[Any, Any]:
    import cupy

    n = _num(offsets)
    begin = cupy.empty(n, dtype=cupy.int64)
    end = cupy.empty(n, dtype=cupy.int64)
    if n:
        launch(_mod().function("substring_bounds"), grid_for(n), BLOCK,
               (offsets, _chars(chars), np.int64(n), np.int64(start), np.int32(length is not None),
                np.int64(length or 0), begin, end))
    return copy_ranges(chars, begin, end - begin)


def _dense_rank(rank: Any, key: Any) -> tuple[Any, int]:
    """Dense rank of the pairs (rank, key) in lexicographic order, and the number of distinct pairs."""
    import cupy

    n = int(rank.shape[0])
    perm = cupy.lexsort(cupy.stack([key, rank]))
    sr, sk = rank[perm], key[perm]
    new = cupy.empty(n, dtype=cupy.int64)
    new[0] = 0
    new[1:] = ((sr[1:] != sr[:-1]) | (sk[1:] != sk[:-1])).astype(cupy.int64)
    dense = cupy.cumsum(new)
    out = cupy.empty(n, dtype=cupy.int64)
    out[perm] = dense
    return out, int(dense[-1]) + 1


# Up to this many strings are numbered on the host: the rank refinement below costs a sort and a
# device->host sync per 8 bytes of the longest string, which for a few thousand strings (a top-N's
# keys, a small join's payload) takes milliseconds where copying them to the host and back does not.
HOST_FACTORIZE_ROWS = 1 << 15


def _factorize_on_host(offsets: Any, chars: Any) -> tuple[Any, Any, Any]:
    import cupy

    from hetdb.backend.cpu.strings import factorize_strings as host_factorize

    host_offsets = cupy.asnumpy(offsets).astype(np.int64, copy=False)
    host_chars = cupy.asnumpy(chars[:int(host_offsets[-1])]) if host_offsets[-1] else np.zeros(0, np.uint8)
    codes, u_offsets, u_chars = host_factorize(host_offsets, host_chars)
    return cupy.asarray(codes), cupy.asarray(u_offsets), cupy.asarray(u_chars)


def factorize_strings(offsets: Any, chars: Any) -> tuple[Any, Any, Any]:
    """Codes ordered like the strings (byte-wise): rank refinement over 8-byte big-endian chunks,
    then by length (so a string sorts before its extensions even when they add NUL bytes)."""
    import cupy

    n = _num(offsets)
    if n == 0:
        return cupy.empty(0, dtype=cupy.int32), cupy.zeros(1, dtype=cupy.int64), cupy.empty(0, cupy.uint8)
    if n <= HOST_FACTORIZE_ROWS:
        return _factorize_on_host(offsets, chars)
    lengths = offsets[1:] - offsets[:-1]
    num_chunks = -(-int(lengths.max()) // 8)
    rank = cupy.zeros(n, dtype=cupy.int64)
    chunk = cupy.empty(n, dtype=cupy.int64)
    fn = _mod().function("string_chunk")
    distinct = 1
    for c in range(num_chunks):
        launch(fn, grid_for(n), BLOCK, (offsets, _chars(chars), np.int64(n), np.int64(c), chunk))
        rank, distinct = _dense_rank(rank, chunk)
        if distinct == n:
            break
    if distinct < n:
        rank, distinct = _dense_rank(rank, lengths.astype(cupy.int64))
    representative = cupy.empty(distinct, dtype=cupy.int64)
    representative[rank] = cupy.arange(n, dtype=cupy.int64)  # any row of a code will do: all are equal
    u_offsets, u_chars = gather_strings(offsets, chars, representative)
    return rank.astype(cupy.int32), u_offsets, u_chars
