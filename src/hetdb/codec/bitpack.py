"""Blocked frame-of-reference bit-packing ("BP stream"), the building block of every hetdb encoding.

A BP stream holds ``n`` 64-bit integers in blocks of ``BLOCK = 1024`` values. Each block has its own
reference (the block's minimum, signed) and bit width ``w`` (bits of ``max - min`` as unsigned), so any
block decodes on its own. Layout (little-endian)::

    directory   nb entries of 16 bytes: int64 reference, uint32 word offset, uint32 bit width
    words       uint32 words; block b owns 32 * w_b words starting at its word offset

Inside a block the 1024 values are spread over 32 *lanes* (FastLanes/GPU-FOR style): value ``j`` of
the block is row ``r = j // 32`` of lane ``l = j % 32``. Lane ``l``'s bit stream (32 values of ``w``
bits, row 0 in the lowest bits) is stored in the words ``words[off + k * 32 + l]`` for k < w. For a
fixed row every lane's value starts at the same bit position, so a warp reading row r loads 32
consecutive words (one coalesced 128-byte transaction) and a CPU core unpacks a row with SIMD. Values
past ``n`` in the last block are packed as 0 (the reference). A value is ``reference + packed``
(wrapping 64-bit arithmetic, so int64 extremes are exact).
"""

from __future__ import annotations

import numpy as np
from numba import njit

BLOCK = 1024
LANES = 32
DIR_ENTRY = 16  # bytes per block in the directory


def num_blocks(n: int) -> int:
    return (n + BLOCK - 1) // BLOCK


@njit(cache=True, nogil=True)
def _bit_width(x: np.uint64) -> int:
    w = 0
    while x != np.uint64(0):
        x = x >> np.uint64(1)
        w += 1
    return w


@njit(cache=True, nogil=True, inline="always")
def _block_params_one(v: np.ndarray, b: int, refs: np.ndarray, widths: np.ndarray) -> None:
    n = v.shape[0]
    lo = v[b * BLOCK]
    hi = lo
    for j in range(b * BLOCK + 1, min(n, (b + 1) * BLOCK)):
        x = v[j]
        if x < lo:
            lo = x
        if x > hi:
            hi = x
    refs[b] = lo
    widths[b] = _bit_width(np.uint64(hi) - np.uint64(lo))


@njit(cache=True, nogil=True)
def _block_params_serial(v: np.ndarray, refs: np.ndarray, widths: np.ndarray) -> None:
    for b in range(refs.shape[0]):
        _block_params_one(v, b, refs, widths)


def block_params(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per block of ``v`` (int64): the reference (minimum) and the bit width of max - min."""
    nb = num_blocks(int(v.shape[0]))
    refs = np.empty(nb, np.int64)
    widths = np.empty(nb, np.int64)
    _block_params_serial(v, refs, widths)
    return refs, widths


def stream_size(widths: np.ndarray) -> int:
    """Bytes of a BP stream with these block widths."""
    return DIR_ENTRY * int(widths.shape[0]) + 4 * LANES * int(widths.sum())


@njit(cache=True, nogil=True, inline="always")
def _pack_one(v: np.ndarray, b: int, refs: np.ndarray, widths: np.ndarray, offsets: np.ndarray,
              words: np.ndarray) -> None:
    n = v.shape[0]
    w = widths[b]
    if w == 0:
        return
    ref = np.uint64(refs[b])
    base = offsets[b]
    start = b * BLOCK
    for r in range(LANES):
        pos0 = r * w
        for lane in range(LANES):
            j = start + r * LANES + lane
            if j >= n:
                break
            x = np.uint64(v[j]) - ref
            pos = pos0
            left = w
            while left > 0:
                k = pos >> 5
                s = pos & 31
                take = min(32 - s, left)
                part = (x & ((np.uint64(1) << np.uint64(take)) - np.uint64(1))) << np.uint64(s)
                words[base + k * LANES + lane] |= np.uint32(part)
                x = x >> np.uint64(take)
                pos += take
                left -= take


@njit(cache=True, nogil=True)
def _pack_serial(v, refs, widths, offsets, words) -> None:
    for b in range(refs.shape[0]):
        _pack_one(v, b, refs, widths, offsets, words)


def pack(v: np.ndarray, refs: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """The BP stream bytes of int64 values ``v`` with ``block_params(v)``."""
    nb = int(refs.shape[0])
    offsets = np.zeros(nb, np.int64)
    if nb > 1:
        np.cumsum(widths[:-1] * LANES, out=offsets[1:])
    size = stream_size(widths)
    buf = np.zeros(size, np.uint8)
    directory = buf[:DIR_ENTRY * nb]
    directory.view(np.int64)[0::2] = refs
    meta = directory.view(np.uint32)
    meta[2::4] = offsets
    meta[3::4] = widths
    if nb:
        _pack_serial(v, refs, widths, offsets, buf[DIR_ENTRY * nb:].view(np.uint32))
    return buf


@njit(cache=True, nogil=True, inline="always")
def unpack_block(directory: np.ndarray, words: np.ndarray, b: int, count: int, out: np.ndarray,
                 out_start: int) -> None:
    """Values 0..count-1 of block ``b`` into ``out[out_start:]`` (int64 arithmetic, cast on store)."""
    ref = directory[4 * b] | (np.int64(directory[4 * b + 1]) << np.int64(32))
    base = np.int64(directory[4 * b + 2])
    w = np.int64(directory[4 * b + 3])
    if w == 0:
        for j in range(count):
            out[out_start + j] = ref
        return
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if w == 64 else (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    for r in range((count + LANES - 1) // LANES):
        pos = r * w
        k = pos >> 5
        s = np.uint64(pos & 31)
        row = base + k * LANES
        lanes = min(LANES, count - r * LANES)
        o = out_start + r * LANES
        if np.int64(s) + w <= 32:
            for lane in range(lanes):
                x = (np.uint64(words[row + lane]) >> s) & mask
                out[o + lane] = ref + np.int64(x)
        elif np.int64(s) + w <= 64:
            for lane in range(lanes):
                lo = np.uint64(words[row + lane]) | (np.uint64(words[row + LANES + lane]) << np.uint64(32))
                out[o + lane] = ref + np.int64((lo >> s) & mask)
        else:
            for lane in range(lanes):
                lo = np.uint64(words[row + lane]) | (np.uint64(words[row + LANES + lane]) << np.uint64(32))
                hi = np.uint64(words[row + 2 * LANES + lane]) << (np.uint64(64) - s)
                out[o + lane] = ref + np.int64(((lo >> s) | hi) & mask)


@njit(cache=True, nogil=True)
def _unpack_serial(directory: np.ndarray, words: np.ndarray, n: int, out: np.ndarray) -> None:
    for b in range((n + BLOCK - 1) // BLOCK):
        unpack_block(directory, words, b, min(BLOCK, n - b * BLOCK), out, b * BLOCK)


def unpack_into(directory: np.ndarray, words: np.ndarray, n: int, out: np.ndarray) -> None:
    """Decode a BP stream of ``n`` values into ``out`` (any integer dtype; values are cast on store)."""
    _unpack_serial(directory, words, n, out)


def split(buf: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(directory as uint32, words as uint32, stream byte size) of the BP stream at the start of ``buf``;
    ValueError when ``buf`` is too short for what its directory says."""
    nb = num_blocks(n)
    if buf.shape[0] < DIR_ENTRY * nb:
        raise ValueError("bit-packed stream directory is truncated")
    directory = buf[:DIR_ENTRY * nb].view(np.uint32)
    widths = directory[3::4].astype(np.int64)
    if nb and (widths.max() > 64 or np.any(directory[2::4].astype(np.int64) !=
                                          np.concatenate(([0], np.cumsum(widths[:-1] * LANES))))):
        raise ValueError("bit-packed stream directory is inconsistent")
    size = DIR_ENTRY * nb + 4 * LANES * int(widths.sum())
    if buf.shape[0] < size:
        raise ValueError("bit-packed stream is truncated")
    return directory, buf[DIR_ENTRY * nb:size].view(np.uint32), size
