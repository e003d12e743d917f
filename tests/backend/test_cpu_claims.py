"""Claims of a shared scan's back made in compiled code (backend/cpu/claims.py) and the atomics under
them (backend/cpu/atomics.py): threads racing for positions while the GPU's side stops them get
every position exactly once between them."""

from __future__ import annotations

import threading
import time

import numpy as np
from numba import njit

from hetdb.backend.cpu.atomics import array_at, atomic_cas, atomic_load, monotonic
from hetdb.backend.cpu.claims import CLAIMS_STOP, claim_back, claim_one, stop_claims
from hetdb.cache.coscan import SharedScan
from hetdb.cache.router import PageRouter


@njit(nogil=True)
def _claim_all(word, floor, out):
    """Claims until none is left; each claimed position counted in ``out``; returns how many."""
    got = 0
    while True:
        h = claim_one(word, floor, 0.0, 0.0)
        if h < 0:
            return got
        out[h] += 1
        got += 1
        for _ in range(200):  # (some work between claims, so the threads interleave)
            pass


@njit(nogil=True)
def _atomics(w, a):
    old = atomic_load(w, 0)
    first = atomic_cas(w, 0, old, old + 5)   # succeeds: returns the old value
    second = atomic_cas(w, 0, old, old + 7)  # fails: the value is no longer ``old``
    view = array_at(a.ctypes.data + a.itemsize, 3, a)
    return first, second, w[0], view.sum(), monotonic()


def test_compare_and_exchange_load_clock_and_arrays_at_addresses():
    w = np.array([40], np.int64)
    a = np.arange(10, dtype=np.int32)
    before = time.perf_counter()
    first, second, now, total, clock = _atomics(w, a)
    after = time.perf_counter()
    assert (first, second, now, total) == (40, 45, 45, 1 + 2 + 3)
    assert before <= clock <= after  # (the clock time.perf_counter reads)


def test_claims_stop_at_the_floor_and_at_the_stop():
    word = np.array([10], np.int64)
    assert claim_one(word, 8, 0.0, 0.0) == 9
    assert claim_one(word, 8, 0.0, 0.0) == 8
    assert claim_one(word, 8, 0.0, 0.0) == -1  # (the floor)
    assert tuple(claim_back(word, 0, 3)) == (8, 3)
    assert tuple(claim_back(word, 6, 3)) == (5, 0)  # (nothing at or above the floor)
    assert stop_claims(word) == 5
    assert word[0] == 5 | CLAIMS_STOP
    assert claim_one(word, 0, 0.0, 0.0) == -1
    assert tuple(claim_back(word, 0, 2)) == (5, 0)
    assert stop_claims(word) == 5  # (stopping twice leaves it as it is)


def test_a_claim_that_would_end_after_the_gpu_is_refused():
    word = np.array([10], np.int64)
    assert claim_one(word, 0, time.perf_counter() + 0.001, 10.0) == -1
    assert claim_one(word, 0, time.perf_counter() + 10.0, 0.001) == 9


def test_threads_racing_for_claims_while_they_are_stopped_take_each_position_once():
    for trial in range(20):
        n, floor = 4000, 1000
        word = np.array([n], np.int64)
        counts = [np.zeros(n, np.int64) for _ in range(4)]
        threads = [threading.Thread(target=_claim_all, args=(word, floor, c)) for c in counts]
        _claim_all(np.array([1], np.int64), 0, np.zeros(1, np.int64))  # (compiled first)
        for t in threads:
            t.start()
        time.sleep(0.0002 * (trial % 5))
        rest = stop_claims(word)
        for t in threads:
            t.join()
        taken = sum(counts)
        assert taken.max() <= 1
        assert not taken[:max(rest, floor)].any()  # (below the floor, or left to the GPU)
        assert taken[max(rest, floor):].all()


def _scan(n: int) -> SharedScan:
    return SharedScan(list(range(100, 100 + n)), [1 << 20] * n, 4, PageRouter("auto"), mode="auto")


def test_the_shared_scan_with_claims_in_compiled_code():
    s = _scan(10)
    assert s.open_claims() is None  # (nothing reserved)
    s.reserve(4)
    word, floor = s.open_claims()
    assert floor == 6 and word[0] == 10
    assert claim_one(word, floor, 0.0, 0.0) == 9
    s.batch_taken([9])
    assert s.cpu_taken == [109] and s.remaining() == 9
    assert s._claim(2) == [108, 107]  # (a Python-side claim goes through the same word)
    assert word[0] == 7
    assert s.take_front(list(range(10))) == [0, 1, 2, 3, 4, 5]  # (the GPU stops before the back)
    assert s.take_rest() == [106]  # (stops the compiled claims too)
    assert claim_one(word, floor, 0.0, 0.0) == -1
    assert s.open_claims() is None
