"""cache/pinned.py without a GPU (a stand-in CuPy): each kind of the host tier's page-locked memory is
a writable, 4096-aligned array of the size asked; "registered" memory is 2 MiB-aligned, registered
once with CUDA (portable, mapped) and unregistered when the last view of it is gone; "node" memory is
allocated by a thread of its own bound to the GPU node's CPUs; the tier grows its pool from it."""

from __future__ import annotations

import gc
import os
import sys
import threading
import types

import numpy as np
import pytest

from hetdb.cache import pinned
from hetdb.cache.base import PageKey
from hetdb.cache.host_cache import HostPageCache, pinned_allocate


class _Device:
    id = 0
    pci_bus_id = "0000:00:00.0"

    def __init__(self, *args) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


@pytest.fixture
def fake_cupy(monkeypatch):
    log: list = []

    def pinned_memory(n):
        log.append(("alloc", n, threading.current_thread().name))
        return bytearray(n)

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(
        PinnedMemory=pinned_memory,
        PinnedMemoryPointer=lambda mem, off: mem,
        Device=_Device,
        runtime=types.SimpleNamespace(hostRegister=lambda a, n, f: log.append(("register", a, n, f)),
                                      hostUnregister=lambda a: log.append(("unregister", a))))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(pinned, "_node_cpus", {})
    return log


@pytest.mark.parametrize("kind", pinned.KINDS)
def test_each_kind_gives_aligned_writable_memory(fake_cupy, monkeypatch, kind):
    monkeypatch.setattr(pinned, "KIND", kind)
    monkeypatch.setattr(pinned, "gpu_node_cpus", lambda: set(os.sched_getaffinity(0)))
    n = (3 << 20) + 4096
    mem = pinned_allocate(n)
    assert mem.dtype == np.uint8 and mem.shape == (n,)
    assert mem.ctypes.data % 4096 == 0
    mem[:] = 7
    mem[-1] = 9
    assert int(mem.sum()) == 7 * (n - 1) + 9


def test_registered_memory_is_registered_once_and_unregistered_at_its_end(fake_cupy, monkeypatch):
    monkeypatch.setattr(pinned, "KIND", "registered")
    mem = pinned.allocate(5 << 20)
    address = mem.ctypes.data
    assert address % (2 << 20) == 0
    regs = [e for e in fake_cupy if e[0] == "register"]
    assert regs == [("register", address, 6 << 20, 3)]  # (whole huge pages, portable | mapped)
    view = mem[100:200]
    del mem
    gc.collect()
    assert not [e for e in fake_cupy if e[0] == "unregister"]  # a view still holds it
    del view
    gc.collect()
    assert [e for e in fake_cupy if e[0] == "unregister"] == [("unregister", address)]


def test_node_memory_is_allocated_by_a_thread_of_its_own(fake_cupy, monkeypatch):
    monkeypatch.setattr(pinned, "KIND", "node")
    monkeypatch.setattr(pinned, "gpu_node_cpus", lambda: set(os.sched_getaffinity(0)))
    pinned.allocate(1 << 20)
    assert [e[2] for e in fake_cupy if e[0] == "alloc"] == ["hetdb-pinned-alloc"]
    monkeypatch.setattr(pinned, "gpu_node_cpus", lambda: set())  # no node named: as hostalloc
    pinned.allocate(1 << 20)
    assert fake_cupy[-1][2] == threading.current_thread().name


def test_the_tier_grows_out_of_registered_memory(fake_cupy, monkeypatch):
    monkeypatch.setattr(pinned, "KIND", "registered")
    tier = HostPageCache(64 << 20, chunk_bytes=8 << 20)
    data = np.arange(300_000, dtype=np.uint8)
    assert tier.put(PageKey("t", 1, "c", 0), data, data.nbytes)
    assert tier.get(PageKey("t", 1, "c", 0)).tobytes() == data.tobytes()
    assert [e[0] for e in fake_cupy].count("register") == 1


def test_cpu_lists():
    assert pinned.parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert pinned.parse_cpu_list("") == set()
