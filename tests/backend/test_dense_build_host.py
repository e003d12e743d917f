"""Small dense-join builds and key compaction done on the host (codegen/runtime.py ``_host_build``,
codegen/groups.py ``compact_host``), checked without a GPU against the array-module path the device
runs (``dense_build`` and ``compact`` over NumPy arrays): the same table, the same refusals, the same
ranks; keyed payloads made from the host build's (slot, row) pairs equal the masked ones."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.gpu.codegen.dense_tables import DENSE_MAX_SLOTS, DenseJoinTable, _host_build, dense_build
from hetdb.backend.gpu.codegen.groups import compact, compact_host
from hetdb.errors import UnsupportedError


@pytest.mark.parametrize("n,masked", [(1, False), (7, True), (1000, False), (5000, True)])
def test_host_build_equals_the_device_path(n, masked):
    rng = np.random.default_rng(n)
    keys = (rng.permutation(3 * n) + 17)[:n].astype(np.int32)  # unique, gaps between them
    mask = rng.random(n) < 0.6 if masked else None
    want = dense_build(keys, [keys * 2], mask=mask)
    got, (slots, src) = _host_build(keys, mask, DENSE_MAX_SLOTS)
    assert (got.lo, got.size, got.num_rows) == (want.lo, want.size, want.num_rows)
    np.testing.assert_array_equal(got.rows, want.rows)
    # keyed payloads through the (slot, build row) pairs, as after the copy to the device
    table = DenseJoinTable(got.rows, got.lo, got.size, [keys * 2], got.num_rows, hits=(slots, src))
    np.testing.assert_array_equal(table.keyed_payload()[0], want.keyed_payload()[0])


def test_host_build_refuses_what_the_device_path_refuses():
    keys = np.array([5, 9, 5, 11], np.int64)
    with pytest.raises(UnsupportedError, match="not unique"):
        dense_build(keys)
    with pytest.raises(UnsupportedError, match="not unique"):
        _host_build(keys, None, DENSE_MAX_SLOTS)
    # the repeat masked out: built
    mask = np.array([True, True, False, True])
    got, _ = _host_build(keys, mask, DENSE_MAX_SLOTS)
    np.testing.assert_array_equal(got.rows, dense_build(keys, mask=mask).rows)
    with pytest.raises(UnsupportedError, match="larger than"):
        _host_build(np.array([0, 1 << 40], np.int64), None, DENSE_MAX_SLOTS)
    empty, hits = _host_build(keys, np.zeros(4, bool), DENSE_MAX_SLOTS)
    assert (empty.size, empty.num_rows, hits[0].shape[0]) == (0, 0, 0)
    # a range past HOST_BUILD_SLOTS: left to the device
    assert _host_build(np.array([0, 1 << 21], np.int64), None, DENSE_MAX_SLOTS) is None


@pytest.mark.parametrize("spread", [3, 100000], ids=["dense-codes", "sparse"])
def test_host_compaction_equals_unique(spread):
    rng = np.random.default_rng(spread)
    for n in (1, 50, 4000):
        values = (rng.integers(0, spread, n) * 7 - 3).astype(np.int32)
        uniq, inverse = compact_host(values)
        want_u, want_i = np.unique(values, return_inverse=True)
        np.testing.assert_array_equal(uniq, want_u)
        np.testing.assert_array_equal(inverse, want_i.reshape(-1))
        assert inverse.dtype == np.int32 and uniq.dtype == values.dtype
        domain, ranks = compact(np, values)  # (the array-module path, as on the device)
        np.testing.assert_array_equal(domain.values, uniq)
        np.testing.assert_array_equal(ranks, inverse)


def test_a_kept_table_accounts_for_its_host_builds_index_arrays():
    """A table filled on the device from a host build's (slot, build row) pairs (SCATTER_ON_DEVICE on) holds
    them in an allocation of their own: held_arrays (the device-memory accounting of kept fused state,
    exec/fusion_reuse.py) names them, else the engine's leak check found them (H100: 512 bytes a query)."""
    keys = np.array([7, 3, 9], np.int64)
    got, (slots, src) = _host_build(keys, None, DENSE_MAX_SLOTS)
    table = DenseJoinTable(got.rows, got.lo, got.size, [keys * 2], got.num_rows, hits=(slots, src))
    held = table.held_arrays()
    assert any(a is slots for a in held) and any(a is src for a in held) and any(a is got.rows for a in held)
    plain = dense_build(keys)
    assert len(plain.held_arrays()) == 1  # (a device build: its rows only)
