"""runtime.zeros (the group tables' zeroing outside the GIL) gives NumPy's zeros, over recycled memory too."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu.codegen import runtime


@pytest.mark.parametrize("shape, dtype", [((1 << 16,), np.int64), ((3, 40_001), np.bool_), ((2, 50_000), np.float64),
                                          ((0, 70_000), np.int64), ((5,), np.int64), ((1, 1 << 15), np.float64)])
def test_zeros_equal_numpy(shape, dtype) -> None:
    for _ in range(3):  # freed blocks of the same size come back from the heap holding old values
        junk = np.full(shape, 7, dtype)
        del junk
        z = runtime.zeros(shape, dtype)
        want = np.zeros(shape, dtype)
        assert z.shape == want.shape and z.dtype == want.dtype and z.flags.c_contiguous
        assert np.array_equal(z, want) and not np.signbit(z).any()


def test_new_state_tables_are_empty() -> None:
    """Slots and accumulators start at zero (the key bits and validity are written per group made)."""
    slots, gk, gv, ia, fa, ng = runtime.new_state(2, 3, 1, 100_000)
    assert ng == 0 and slots.shape == (262_144,) and gk.shape == gv.shape == (2, 131_072)
    assert not (slots.any() or ia.any() or fa.any())


def test_key_run_tables_have_no_slots_and_their_exact_capacity() -> None:
    """A table over key runs (or direct slots) hashes nothing: a one-slot placeholder, the capacity
    asked for (not rounded up to a power of two), and growing it keeps no slots either."""
    slots, gk, gv, ia, fa, ng = runtime.new_state(1, 2, 1, 100_001, slots=False)
    assert slots.shape == (1,) and gk.shape == gv.shape == (1, 100_001) and ia.shape == (2, 100_001)
    assert not (slots.any() or ia.any() or fa.any())
    gk[0, :5], ia[1, :5] = np.arange(5), 7
    grown = runtime.reserve((slots, gk, gv, ia, fa, 5), 150_000, rehash=False)
    assert grown[0].shape == (1,) and grown[1].shape == (1, 150_000) and grown[5] == 5
    assert np.array_equal(grown[1][0, :5], np.arange(5)) and grown[3][1, :6].tolist() == [7] * 5 + [0]
