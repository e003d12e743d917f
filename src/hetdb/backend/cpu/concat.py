"""Concatenation of host arrays on every kernel thread.

An operator's end (a hash build's rows, an aggregation's partial states) concatenates what the
workers made: ``np.concatenate`` copies on one thread while the others wait (TPC-H q10's customer
build at SF 10: ~200 MB of strings, most of the build's 49 ms after its 16 workers). Large
concatenations copy each piece in chunks on every kernel thread instead; small ones, and calls from
a pipeline worker (one kernel thread), stay with NumPy.

All pieces are copied by one kernel (their addresses, the chunks of every piece one parallel loop): a kernel per piece woke the sleeping kernel threads once per piece, and a build after a
pipeline's workers concatenates one piece per morsel and column (TPC-H q09 at SF 2: 147 kernels per
query; at SF 10 several hundred in the serial phase).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, njit, prange, types
from numba.extending import intrinsic

from hetdb.backend.cpu.keys import kernel_threads

# concatenations of at least this many bytes copy on several threads
PARALLEL_BYTES = 1 << 22
_CHUNK_BYTES = 1 << 18  # bytes one thread copies at a time


@intrinsic
def _bytes_at(typingctx, addr):
    """A uint8 pointer to the integer address ``addr``."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())
    return types.CPointer(types.uint8)(types.int64), codegen


@njit(cache=True, nogil=True, parallel=True)
def _copy_parts(dst, addrs, at, item_part, item_lo, item_hi):
    """Chunk t is bytes [item_lo[t], item_hi[t]) of the piece at address addrs[item_part[t]], copied
    into the bytes ``dst`` at that piece's offset ``at``."""
    for t in prange(item_part.shape[0]):
        p = item_part[t]
        lo = item_lo[t]
        hi = item_hi[t]
        src = carray(_bytes_at(addrs[p] + lo), (hi - lo,))
        o = at[p] + lo
        dst[o:o + hi - lo] = src


def concatenate(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)`` of 1-d arrays of one dtype, copied on every kernel thread when large."""
    if len(parts) < 2:
        return np.concatenate(parts)
    dtype = parts[0].dtype
    total = sum(int(p.shape[0]) for p in parts)
    if dtype == np.dtype(object) or total * dtype.itemsize < PARALLEL_BYTES or kernel_threads() < 2 \
            or any(p.dtype != dtype or p.ndim != 1 for p in parts):
        return np.concatenate(parts)
    out = np.empty(total, dtype)
    pieces = [np.ascontiguousarray(p) for p in parts if p.shape[0]]
    # (the pieces stay referenced here while the kernel reads them through their addresses)
    addrs = np.array([p.ctypes.data for p in pieces], np.int64)
    sizes = np.array([p.nbytes for p in pieces], np.int64)
    at = np.zeros(len(pieces), np.int64)
    np.cumsum(sizes[:-1], out=at[1:])
    per = (sizes + _CHUNK_BYTES - 1) // _CHUNK_BYTES
    item_part = np.repeat(np.arange(len(pieces), dtype=np.int64), per)
    first = np.repeat(np.cumsum(per) - per, per)
    item_lo = (np.arange(item_part.shape[0], dtype=np.int64) - first) * _CHUNK_BYTES
    item_hi = np.minimum(item_lo + _CHUNK_BYTES, sizes[item_part])
    _copy_parts(out.view(np.uint8), addrs, at, item_part, item_lo, item_hi)
    return out
