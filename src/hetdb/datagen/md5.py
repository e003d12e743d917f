"""MD5 hex digests of the decimal text of integers, compiled with Numba (RFC 1321).

hashlib costs a Python call per row; the scan table needs hundreds of millions of digests. Every message
here (at most 20 decimal digits) fits one 64-byte MD5 block, so one compression per row suffices.
"""

from __future__ import annotations

import numba
import numpy as np

# Per-round shift amounts and the sine-derived constants of RFC 1321.
_SHIFTS = np.array([7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4,
                   dtype=np.uint64)
_K = np.floor(np.abs(np.sin(np.arange(1, 65, dtype=np.float64))) * 2.0**32).astype(np.uint64)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).copy()
_MASK = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _md5_decimal_hex(values: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    mask = np.uint64(0xFFFFFFFF)
    text = np.empty(20, dtype=np.uint8)
    words = np.empty(16, dtype=np.uint64)
    for row in range(values.shape[0]):
        v = values[row]
        negative = v < 0
        if negative:
            v = -v
        length = 0
        while True:  # digits, least significant first
            text[length] = 48 + v % 10
            v //= 10
            length += 1
            if v == 0:
                break
        if negative:
            text[length] = 45  # '-'
            length += 1
        for k in range(16):
            words[k] = 0
        for k in range(length):
            words[k >> 2] |= np.uint64(text[length - 1 - k]) << np.uint64(8 * (k & 3))
        words[length >> 2] |= np.uint64(0x80) << np.uint64(8 * (length & 3))
        words[14] = np.uint64(length * 8)
        a0 = np.uint64(0x67452301)
        b0 = np.uint64(0xEFCDAB89)
        c0 = np.uint64(0x98BADCFE)
        d0 = np.uint64(0x10325476)
        a, b, c, d = a0, b0, c0, d0
        for i in range(64):
            if i < 16:
                f = (b & c) | ((~b & mask) & d)
                g = i
            elif i < 32:
                f = (d & b) | ((~d & mask) & c)
                g = (5 * i + 1) & 15
            elif i < 48:
                f = b ^ c ^ d
                g = (3 * i + 5) & 15
            else:
                f = c ^ (b | (~d & mask))
                g = (7 * i) & 15
            f = (f + a + _K[i] + words[g]) & mask
            a = d
            d = c
            c = b
            s = _SHIFTS[i]
            b = (b + (((f << s) | (f >> (np.uint64(32) - s))) & mask)) & mask
        digest = ((a0 + a) & mask, (b0 + b) & mask, (c0 + c) & mask, (d0 + d) & mask)
        pos = row * 32
        for w in digest:
            for j in range(4):
                byte = (w >> np.uint64(8 * j)) & np.uint64(0xFF)
                out[pos] = _HEX[byte >> np.uint64(4)]
                out[pos + 1] = _HEX[byte & np.uint64(15)]
                pos += 2


def md5_hex_of_decimal(values: np.ndarray) -> np.ndarray:
    """uint8 array of 32 * len(values) bytes: the lowercase hex md5 of each value's decimal text."""
    ints = np.ascontiguousarray(values, dtype=np.int64)
    out = np.empty(len(ints) * 32, dtype=np.uint8)
    _md5_decimal_hex(ints, out)
    return out
