"""Claims of a shared scan's back row groups made inside compiled loops (co-processing's CPU share,
exec/coprocess_batch.py) and, with the same atomics, by the scan's Python side (cache/coscan.py).

The claim word holds one past the last position the CPU may still take; ``CLAIMS_STOP`` set in it
means the CPU takes no more (the GPU took the rest, or the query stopped). Every change is one
compare-and-exchange of the whole word, so a worker's claim and the GPU's ``stop_claims`` never both
get a position."""

from __future__ import annotations

from numba import njit

from hetdb.backend.cpu.atomics import atomic_cas, atomic_load, monotonic

CLAIMS_STOP = 1 << 40
CLAIMS_MASK = CLAIMS_STOP - 1


@njit(nogil=True, cache=True)
def claim_one(word, floor, gpu_end, per):
    """The back-most position left at or above ``floor``, claimed; -1 when none is, the claims are
    stopped, or (``gpu_end`` > 0: the GPU's expected end, on the monotonic clock) a row group taking
    ``per`` seconds would end after it."""
    while True:
        old = atomic_load(word, 0)
        if old >= CLAIMS_STOP or old - 1 < floor:
            return -1
        if gpu_end > 0.0 and per > 0.0 and monotonic() + per > gpu_end:
            return -1
        if atomic_cas(word, 0, old, old - 1) == old:
            return old - 1


@njit(nogil=True, cache=True)
def claim_back(word, floor, k):
    """(one past the back-most position, how many were claimed): up to ``k`` of the back-most
    positions left at or above ``floor`` (none once the claims are stopped)."""
    while True:
        old = atomic_load(word, 0)
        if old >= CLAIMS_STOP:
            return old & CLAIMS_MASK, 0
        got = min(k, old - floor)
        if got <= 0:
            return old, 0
        if atomic_cas(word, 0, old, old - got) == old:
            return old, got


@njit(nogil=True, cache=True)
def stop_claims(word):
    """No more claims; returns one past the last position claimed by no one."""
    while True:
        old = atomic_load(word, 0)
        if old >= CLAIMS_STOP:
            return old & CLAIMS_MASK
        if atomic_cas(word, 0, old, old | CLAIMS_STOP) == old:
            return old
