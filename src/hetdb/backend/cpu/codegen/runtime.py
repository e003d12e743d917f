"""Numba helpers the generated CPU pipeline functions call (all ``inline="always"`` where they sit
on the per-row path): SQL comparisons of doubles, key bits, dates, checked int64 arithmetic and the
per-worker group hash table with its growth."""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from hetdb.backend.cpu import tuning
from hetdb.backend.cpu.keys import CANONICAL_NAN_BITS, splitmix64

SEED = np.uint64(0x2545F4914F6CDD1D)
I64_MIN = np.int64(-(2**63))
I64_MAX = np.int64(2**63 - 1)
_SQRT_MAX = np.int64(3037000499)  # floor(sqrt(2**63 - 1))


# ---- memory ---------------------------------------------------------------------------------------------
@intrinsic
def prefetch(typingctx, arr, idx):
    """Ask for the cache line of ``arr``'s element at flat index ``idx`` (a C-contiguous array) to
    be loaded for reading, without waiting for it: a probe loop issues these for a block of rows
    before it reads them, so the rows' hash-table misses overlap instead of following one another."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p],
                                              ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        # read (0), high locality (3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, idx), codegen


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
def neg_zero(x):
    """x is -0.0 (a group's key bits say 0.0; this keeps the sign of its first value)."""
    return x == 0.0 and np.array([x], np.float64).view(np.int64)[0] < 0


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


# ---- per-worker group hash table (probed inline by the generated loop, grown between calls) -----------
# slots: group number + 1, 0 = empty (zeroed memory: pages the hash never reaches are never touched);
# gk/gv: (keys, capacity) key bits and validity per group; ia/fa: (int accumulators, capacity) int64 and
# (float accumulators, capacity) float64, zeroed. The loop never grows the table (a reassigned array
# inside it costs reference counting on every row): it stops before a row that may not fit and the
# caller grows the table (``reserve``) and resumes at that row.
@njit(cache=True, nogil=True, inline="always")
def key_hash(kb, kv):
    """Hash of a group's key bits (0 for a NULL key: NULL and 0 share a hash, told apart by the
    validity the probe compares, which is cheaper than hashing the validity of every row)."""
    h = SEED
    for j in range(kb.shape[0]):
        h = splitmix64(h ^ np.uint64(kb[j] if kv[j] else 0))
    return h


@njit(cache=True, nogil=True)
def _rehash(slots, gk, gv, ng):
    mask = slots.shape[0] - 1
    for g in range(ng):
        s = np.int64(key_hash(gk[:, g], gv[:, g]) & np.uint64(mask))
        while slots[s] != 0:
            s = (s + 1) & mask
        slots[s] = g + 1


# tables of at least this many cells are zeroed by a Numba loop that holds no GIL: NumPy's zeros memset
# recycled heap memory with the GIL held, and pipeline workers make these tables as they go (a key-run
# table per morsel, each doubling of a group table): on 16 threads their memsets ran one at a time
# (backend/cpu/tuning.py: nogil_zero_cells)


@njit(cache=True, nogil=True)
def _fill_zero(a):
    for i in range(a.shape[0]):
        a[i] = 0


def zeros(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """``np.zeros(shape, dtype)`` (int64, float64 or bool), zeroed without the GIL when large."""
    if math.prod(shape) < tuning.get("nogil_zero_cells"):  # (np.prod: ~5 us of GIL-held Python a call)
        return np.zeros(shape, dtype)
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    _fill_zero(flat.view(np.uint8) if out.dtype == np.bool_ else flat.view(np.int64))
    return out


def new_state(num_keys: int, num_int: int, num_float: int, capacity: int = 64, slots: bool = True) -> tuple:
    """(slots, gk, gv, ia, fa, ng) of an empty group table for ``capacity`` groups; ``slots=False``: a
    one-slot placeholder (a table over key runs or direct slots hashes nothing, so its capacity need
    not be a power of two: a key-run table is made for its morsel's runs exactly). The key bits and
    validity are not zeroed: the loops write a group's keys when they make it and nothing reads past
    the groups made (only slots and accumulators must start at zero)."""
    cap = max(64, 1 << (int(capacity) - 1).bit_length()) if slots else max(64, int(capacity))
    return (zeros((2 * cap,), np.int64) if slots else np.zeros(1, np.int64), np.empty((num_keys, cap), np.int64),
            np.empty((num_keys, cap), np.bool_), zeros((num_int, cap), np.int64),
            zeros((num_float, cap), np.float64), 0)


def reserve(state: tuple, groups: int, rehash: bool = True) -> tuple:
    """``state`` with room for ``groups`` groups (itself when it has it); ``rehash=False``: the
    groups are not entered in the new slots (a loop over key runs uses none)."""
    slots, gk, gv, ia, fa, ng = state
    if groups <= gk.shape[1]:
        return state
    out = new_state(gk.shape[0], ia.shape[0], fa.shape[0], groups, slots=rehash)
    out[1][:, :ng] = gk[:, :ng]
    out[2][:, :ng] = gv[:, :ng]
    out[3][:, :ng] = ia[:, :ng]
    out[4][:, :ng] = fa[:, :ng]
    if rehash:
        _rehash(out[0], out[1], out[2], ng)
    return (*out[:5], ng)
