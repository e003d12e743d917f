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


@pytest.mark.parametrize("n,masked", [(1, False), (7, True), (1000, False), (5000, True)])
def test_host_planned_forms_equal_the_device_path(n, masked, monkeypatch):
    """A table planned on the host (``host_planned``) has the probe forms, bounds and table the
    array-module path makes, its rows, payload and hits only put on the "device" at their first
    read (one upload)."""
    from hetdb.backend.gpu.codegen import dense_tables

    uploads = []
    monkeypatch.setattr(dense_tables, "_to_device", lambda arrays: uploads.append(len(arrays)) or list(arrays))
    rng = np.random.default_rng(n)
    keys = (rng.permutation(3 * n) + 17)[:n].astype(np.int32)
    mask = rng.random(n) < 0.6 if masked else None
    ranks = rng.integers(0, 100, n).astype(np.int32)
    extra = np.arange(3, dtype=np.int64)
    for form, bound in (("bits", None), ("code8", 100), ("code16", None)):
        payload = [] if form == "bits" else [ranks]
        want = dense_build(keys, payload, mask=mask)
        uploads.clear()
        table, (up,) = dense_tables.host_planned(keys, mask, payload, lambda t, f=form, b=bound: [(f, b)], extra=[extra])
        assert uploads == [2] and table.pending is not None and table.nbytes == 0
        np.testing.assert_array_equal(up, extra)
        np.testing.assert_array_equal(table.probe_arrays(form), want.probe_arrays(form))
        assert uploads == [2] and table.held_arrays() == [table.forms[form]]
        assert (table.lo, table.size, table.num_rows, table.payload_columns) == \
            (want.lo, want.size, want.num_rows, len(payload))
        np.testing.assert_array_equal(table.rows, want.rows)  # (the first read: one upload)
        assert uploads == [2, 3 + len(payload)] and table.pending is None
        np.testing.assert_array_equal(table.keyed_payload()[0] if payload else table.rows,
                                      want.keyed_payload()[0] if payload else want.rows)


def test_probe_forms_with_known_bounds():
    """Compacted ranks need no range check (``bound``); a bound past the form is refused; forms of a
    table built by the array-module path equal those of its rows."""
    keys = np.array([40, 3, 17, 9], np.int64)
    table = dense_build(keys, [np.array([0, 2, 1, 2], np.int32)])
    got = table.probe_arrays("code8", bound=3)
    want = np.full(table.size, -1, np.int8)
    want[keys - table.lo] = [0, 2, 1, 2]
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="do not fit"):
        dense_build(keys, [np.zeros(4, np.int32)]).probe_arrays("code8", bound=200)
    bits = dense_build(keys, []).probe_arrays("bits")
    assert [int(bits[(k - 3) // 32]) >> ((k - 3) % 32) & 1 for k in range(3, 41)] == [int(k in keys) for k in range(3, 41)]


def test_a_narrow_probe_launch_leaves_a_host_planned_table_on_the_host(monkeypatch):
    """The launch arguments of a probe in a narrow form are its forms: a host-planned table's rows
    and payload are not uploaded for them; a "rows" probe uploads them once."""
    from types import SimpleNamespace

    from hetdb import types as T
    from hetdb.backend.gpu.codegen import dense_tables
    from hetdb.backend.gpu.codegen.runtime import FusedPipeline
    from hetdb.backend.gpu.codegen.spec import DenseProbe
    from hetdb.plan.expr import ColumnRef

    uploads = []
    monkeypatch.setattr(dense_tables, "_to_device", lambda arrays: uploads.append(len(arrays)) or list(arrays))
    keys = np.array([4, 9, 7], np.int32)
    ranks = np.array([1, 0, 1], np.int32)
    key = ColumnRef(T.INT32, "k", False)
    for form, want_uploads in (("code8", [1]), ("rows", [4])):
        uploads.clear()
        table, _ = dense_tables.host_planned(keys, None, [ranks], lambda t, f=form: [] if f == "rows" else [(f, 2)])
        probe = DenseProbe(key, (("r@rank", T.INT32),), False, form)
        args = FusedPipeline._probe_args(SimpleNamespace(spec=SimpleNamespace(probes=(probe,))), [], [table])
        assert uploads == want_uploads
        assert (table.pending is None) == (form == "rows")
        assert args[-2:] == [np.int64(4), np.int64(6)] if form != "rows" else args[1:3] == [np.int64(4), np.int64(6)]


def _reference(keys, mask, ranks, form):
    """What a host build of ``keys`` (where ``mask``) holds, by NumPy scatters written out here: (lo,
    size, rows, slots, build rows) and the probe form ``form`` of payload ``ranks``."""
    src = np.arange(keys.shape[0]) if mask is None else np.flatnonzero(mask)
    ks = keys[src].astype(np.int64)
    lo = int(ks.min())
    size = int(ks.max()) - lo + 1
    slots = ks - lo
    rows = np.full(size, -1, dtype=np.int32)
    rows[slots] = src
    if form == "bits":
        hit = np.zeros(-(-size // 32) * 32, dtype=bool)
        hit[slots] = True
        got = np.packbits(hit, bitorder="little").view("<u4").tolist()
    elif form in ("code8", "code16"):
        codes = np.full(size, -1, dtype=np.int64)
        codes[slots] = ranks[src]
        got = codes.tolist()
    else:
        got = None
    return lo, size, rows.tolist(), slots.tolist(), src.tolist(), got


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.int16])
@pytest.mark.parametrize("masked", [False, True])
def test_host_builds_and_forms_equal_numpy_scatters(dtype, masked):
    """The Numba loops of host builds and forms (codegen/dense_host.py) make the tables, hits and
    forms that NumPy scatters make, and refuse a repeated key."""
    from hetdb.backend.gpu.codegen import dense_tables

    rng = np.random.default_rng(int(masked) + np.dtype(dtype).itemsize)
    n = 3000
    keys = (rng.permutation(4 * n)[:n] + (0 if np.dtype(dtype).kind == "u" else -5000)).astype(dtype)
    mask = rng.random(n) < 0.7 if masked else None
    ranks = rng.integers(0, 100, n).astype(np.int32)
    table, hits = _host_build(keys, mask, DENSE_MAX_SLOTS)
    lo, size, rows, slots, src, _ = _reference(keys, mask, ranks, "rows")
    assert (table.lo, table.size, table.rows.tolist(), hits[0].tolist(), hits[1].tolist()) == \
        (lo, size, rows, slots, src)
    for form in ("bits", "code8", "code16", "rows"):
        planned, _ = dense_tables.host_planned(
            keys, mask, [] if form == "bits" else [ranks],
            lambda t, f=form: [] if f == "rows" else [(f, 100)], to_device=list)
        *_, want = _reference(keys, mask, ranks, form)
        assert sorted(planned.forms) == ([] if form == "rows" else [form])
        if want is not None:
            assert planned.forms[form].tolist() == want
        assert planned.rows.tolist() == rows and [h.tolist() for h in planned.hits] == [slots, src]
    repeated = keys.copy()
    repeated[-1] = repeated[0]
    if mask is not None:
        mask2 = mask.copy()
        mask2[[0, -1]] = True
    with pytest.raises(UnsupportedError, match="not unique"):
        _host_build(repeated, None if mask is None else mask2, DENSE_MAX_SLOTS)
    for form in ("bits", "code8", "rows"):  # (found by the first form made, or the rows)
        with pytest.raises(UnsupportedError, match="not unique"):
            dense_tables.host_planned(repeated, None if mask is None else mask2,
                                      [] if form == "bits" else [ranks],
                                      lambda t, f=form: [] if f == "rows" else [(f, 100)], to_device=list)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int16, np.uint32, np.uint8])
def test_host_compaction_by_dtype_equals_unique(dtype):
    rng = np.random.default_rng(3)
    for n in (1, 7, 5000):
        for spread in (3, 1000):  # (a presence table, then a sort)
            values = (rng.integers(0, spread * n + 5, n) + (0 if np.dtype(dtype).kind == "u" else -40))
            values = values.astype(dtype)
            uniq, inverse = compact_host(values)
            want_u, want_i = np.unique(values, return_inverse=True)
            np.testing.assert_array_equal(uniq, want_u)
            np.testing.assert_array_equal(inverse, want_i.reshape(-1))
            assert inverse.dtype == np.int32 and uniq.dtype == values.dtype
