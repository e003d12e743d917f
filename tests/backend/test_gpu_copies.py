"""backend/gpu/copies.py without a GPU: a delivery's copies queued through a stand-in CuPy whose
memcpyAsync copies host memory at once (ctypes.memmove) land every byte where it belongs, in ascending
host-address order when SORTED, in the plan's order when not; with BATCH_CALL they go to the batch
entry point as one call (sorted, at their device addresses), and one by one when it refuses them."""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest

from hetdb.backend.gpu import copies


@pytest.fixture
def fake(monkeypatch):
    log: list = []

    def memcpy(dst, src, n, kind, stream_ptr):
        assert kind == 1 and stream_ptr == 77
        log.append((src, n))
        ctypes.memmove(dst, src, n)

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(memcpyAsync=memcpy),
                                      Device=lambda *a: types.SimpleNamespace(id=0))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return log, types.SimpleNamespace(ptr=77)


def _case(seed: int = 0):
    rng = np.random.default_rng(seed)
    host = rng.integers(0, 256, 4 << 20, dtype=np.uint8)
    # (source offset, buffer offset, bytes), not in host-address order
    spec = [(2 << 20, 8192, (1 << 20) + 123), (0, 0, 5000), (12288, 2 << 20, 300_000), (5000, 7000, 17)]
    expected = np.zeros(4 << 20, np.uint8)
    for s, d, n in spec:
        expected[d:d + n] = host[s:s + n]
    return host, [(host.ctypes.data + s, d, n) for s, d, n in spec], expected


@pytest.mark.parametrize("ordered", [True, False])
def test_copies_land_where_they_belong(fake, monkeypatch, ordered):
    log, stream = fake
    monkeypatch.setattr(copies, "SORTED", ordered)
    monkeypatch.setattr(copies, "BATCH_CALL", False)
    host, todo, expected = _case()
    buf = np.zeros(4 << 20, np.uint8)
    copies.queue_copies(todo, buf.ctypes.data, stream)
    assert np.array_equal(buf, expected)
    assert log == ([(s, n) for s, _, n in sorted(todo)] if ordered else [(s, n) for s, _, n in todo])


@pytest.mark.parametrize("accepted", [True, False])
def test_batch_call_gets_the_sorted_copies_or_falls_back(fake, monkeypatch, accepted):
    log, stream = fake
    calls = []

    def batch(dsts, srcs, sizes, stream_ptr):
        calls.append((list(dsts), list(srcs), list(sizes), stream_ptr))
        if accepted:
            for d, s, n in zip(dsts, srcs, sizes):
                ctypes.memmove(d, s, n)
        return accepted

    monkeypatch.setattr(copies, "SORTED", True)
    monkeypatch.setattr(copies, "BATCH_CALL", True)
    monkeypatch.setattr(copies, "_batch", batch)
    host, todo, expected = _case(1)
    buf = np.zeros(4 << 20, np.uint8)
    base = buf.ctypes.data
    copies.queue_copies(todo, base, stream)
    assert np.array_equal(buf, expected)
    order = sorted(todo)
    assert calls == [([base + d for _, d, _ in order], [s for s, _, _ in order], [n for _, _, n in order], 77)]
    assert log == ([] if accepted else [(s, n) for s, _, n in order])


def test_one_copy_and_none(fake, monkeypatch):
    log, stream = fake
    monkeypatch.setattr(copies, "_batch", lambda *a: pytest.fail("one copy needs no batch"))
    monkeypatch.setattr(copies, "BATCH_CALL", True)
    copies.queue_copies([], 0, stream)
    src = np.arange(100, dtype=np.uint8)
    dst = np.zeros(100, np.uint8)
    copies.queue_copies([(src.ctypes.data, 0, 100)], dst.ctypes.data, stream)
    assert np.array_equal(src, dst) and len(log) == 1


def test_without_a_driver_the_batch_call_is_none(monkeypatch):
    def no_driver(name):
        raise OSError(name)

    monkeypatch.setattr(copies, "_batch", None)
    monkeypatch.setattr(copies.ctypes, "CDLL", no_driver)
    assert copies._batch_call() is None
    assert copies._batch is False  # (looked up once)
