"""Numba helpers the generated CPU pipeline functions call (all ``inline="always"`` where they sit
on the per-row path): SQL comparisons of doubles, key bits, dates, checked int64 arithmetic and the
per-worker group hash table with its growth."""

from __future__ import annotations

import numpy as np
from numba import njit

from hetdb.backend.cpu.keys import CANONICAL_NAN_BITS, splitmix64

SEED = np.uint64(0x2545F4914F6CDD1D)
I64_MIN = np.int64(-(2**63))
I64_MAX = np.int64(2**63 - 1)
_SQRT_MAX = np.int64(3037000499)  # floor(sqrt(2**63 - 1))


# ---- doubles in DuckDB's total order (NaN = NaN, NaN above everything, -0.0 = 0.0) ---------------------
@njit(cache=True, nogil=True, inline="always")
def f_eq(x, y):
    return x == y or (x != x and y != y)


@njit(cache=True, nogil=True, inline="always")
def f_lt(x, y):
    return x < y or (x == x and y != y)


@njit(cache=True, nogil=True, inline="always")
def f_le(x, y):
    return x <= y or y != y


@njit(cache=True, nogil=True, inline="always")
def fbits(x):
    """Key bits of a double (as backend/cpu/keys.key_bits: -0.0 -> 0.0, every NaN one key)."""
    if x != x:
        return CANONICAL_NAN_BITS
    if x == 0.0:
        return np.int64(0)
    return np.array([x], np.float64).view(np.int64)[0]


@njit(cache=True, nogil=True, inline="always")
def bits_float(b):
    return np.array([b], np.int64).view(np.float64)[0]


# ---- exact int64 arithmetic: (result, overflowed) -----------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def add_ovf(x, y):
    r = np.int64(np.uint64(x) + np.uint64(y))
    return r, ((x ^ r) & (y ^ r)) < 0


@njit(cache=True, nogil=True, inline="always")
def sub_ovf(x, y):
    r = np.int64(np.uint64(x) - np.uint64(y))
    return r, ((x ^ y) & (x ^ r)) < 0


@njit(cache=True, nogil=True, inline="always")
def mul_ovf(x, y):
    if -_SQRT_MAX <= x <= _SQRT_MAX and -_SQRT_MAX <= y <= _SQRT_MAX:
        return x * y, False  # |x * y| < 2**63: the common case needs no division
    if x == 0 or y == 0:
        return np.int64(0), False
    if (x == -1 and y == I64_MIN) or (y == -1 and x == I64_MIN):
        return I64_MIN, True
    r = np.int64(np.uint64(x) * np.uint64(y))
    return r, r // y != x or (r % y) != 0


@njit(cache=True, nogil=True, inline="always")
def round_div(x, d):
    """x / d rounded half away from zero (d > 0), as the operators' decimal rescale."""
    q = (abs(x) + d // 2) // d
    return -q if x < 0 else q


# ---- dates (days since 1970-01-01), Hinnant's civil_from_days like exec/functions_datetime ---------------
@njit(cache=True, nogil=True, inline="always")
def civil(days):
    z = np.int64(days) + 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


# ---- per-worker group hash table ----------------------------------------------------------------------
# slots: int64 group number or -1; gk/gv: (keys, capacity) key bits and validity per group;
# ia/fa: (int accumulators, capacity) int64 and (float accumulators, capacity) float64, zeroed.
@njit(cache=True, nogil=True, inline="always")
def key_hash(kb, kv):
    h = SEED
    for j in range(kb.shape[0]):
        h = splitmix64(h ^ np.uint64(kb[j] if kv[j] else 0))
        h = splitmix64(h ^ np.uint64(kv[j]))
    return h


@njit(cache=True, nogil=True)
def grow(slots, gk, gv, ia, fa, ng):
    cap = gk.shape[1] * 2
    nslots = cap * 2
    s2 = np.full(nslots, -1, np.int64)
    gk2 = np.zeros((gk.shape[0], cap), np.int64)
    gv2 = np.zeros((gv.shape[0], cap), np.bool_)
    ia2 = np.zeros((ia.shape[0], cap), np.int64)
    fa2 = np.zeros((fa.shape[0], cap), np.float64)
    gk2[:, :ng] = gk[:, :ng]
    gv2[:, :ng] = gv[:, :ng]
    ia2[:, :ng] = ia[:, :ng]
    fa2[:, :ng] = fa[:, :ng]
    mask = nslots - 1
    for g in range(ng):
        s = np.int64(key_hash(gk2[:, g], gv2[:, g]) & np.uint64(mask))
        while s2[s] != -1:
            s = (s + 1) & mask
        s2[s] = g
    return s2, gk2, gv2, ia2, fa2


@njit(cache=True, nogil=True, inline="always")
def find_group(slots, gk, gv, kb, kv, ng):
    """The group number of key (kb, kv); ``ng`` (a new group, keys stored) when it is not there."""
    mask = slots.shape[0] - 1
    s = np.int64(key_hash(kb, kv) & np.uint64(mask))
    while True:
        g = slots[s]
        if g == -1:
            slots[s] = ng
            for j in range(kb.shape[0]):
                gk[j, ng] = kb[j] if kv[j] else 0
                gv[j, ng] = kv[j]
            return ng
        same = True
        for j in range(kb.shape[0]):
            if gv[j, g] != kv[j] or (kv[j] and gk[j, g] != kb[j]):
                same = False
                break
        if same:
            return g
        s = (s + 1) & mask


def new_state(num_keys: int, num_int: int, num_float: int, capacity: int = 64) -> tuple:
    """(slots, gk, gv, ia, fa, ng) of an empty group table."""
    return (np.full(2 * capacity, -1, np.int64), np.zeros((num_keys, capacity), np.int64),
            np.zeros((num_keys, capacity), np.bool_), np.zeros((num_int, capacity), np.int64),
            np.zeros((num_float, capacity), np.float64), 0)
