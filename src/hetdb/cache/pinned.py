"""Page-locked host memory for the pinned host page tier (cache/host_cache.py ``pinned_allocate``): the
memory every warm scan's host->device copies read, so how it is allocated is how fast the GPU's copy
engines can read it.

KIND picks the allocation (process-wide; A/B through scripts/warm_timeline.py's ``tiermem`` switch):

* "hostalloc" (default): cudaHostAlloc, through CuPy's PinnedMemory;
* "registered": anonymous memory advised into transparent huge pages (2 MiB), page-locked with
  cudaHostRegister: the GPU maps it in fewer, larger pages where the kernel gave huge ones;
* "node": cudaHostAlloc made by a thread bound to the CPUs of the GPU's NUMA node, so the pages lie in
  the memory attached to the GPU's PCIe root (as "hostalloc" where the GPU names no node).

Nothing here runs at import; CuPy is imported by the allocating call.
"""

from __future__ import annotations

import mmap
import os
import threading
from typing import Any

import numpy as np

from hetdb.io import ALIGN

KIND = "hostalloc"
KINDS = ("hostalloc", "registered", "node")
_HUGE = 2 << 20


def allocate(nbytes: int) -> np.ndarray:
    """``nbytes`` of page-locked host memory as a 4096-aligned uint8 array (KIND's allocation); the
    memory goes back to the system when the array and every view of it are gone."""
    if KIND == "registered":
        return _registered(nbytes)
    if KIND == "node":
        cpus = gpu_node_cpus()
        if cpus:
            return _on_cpus(nbytes, cpus)
    return _hostalloc(nbytes)


def _hostalloc(nbytes: int) -> np.ndarray:
    import cupy

    mem = cupy.cuda.PinnedMemory(nbytes + ALIGN)
    raw = np.frombuffer(cupy.cuda.PinnedMemoryPointer(mem, 0), dtype=np.uint8, count=nbytes + ALIGN)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + nbytes]


class _RegisteredMap(mmap.mmap):
    """An anonymous mapping page-locked with cudaHostRegister; unregistered before it is unmapped."""

    registered = 0

    def __del__(self) -> None:
        if self.registered:
            try:
                import cupy

                cupy.cuda.runtime.hostUnregister(self.registered)
            except Exception:  # noqa: BLE001 - at interpreter exit CUDA may be gone already
                pass
            self.registered = 0


def _registered(nbytes: int) -> np.ndarray:
    import cupy

    span = -(-nbytes // _HUGE) * _HUGE
    mm = _RegisteredMap(-1, span + _HUGE)
    raw = np.frombuffer(mm, dtype=np.uint8)
    start = (-raw.ctypes.data) % _HUGE
    try:
        mm.madvise(mmap.MADV_HUGEPAGE, start, span)
    except (AttributeError, OSError, ValueError):
        pass  # (no transparent huge pages here: plain pages, still page-locked)
    view = raw[start:start + nbytes]
    address = int(view.ctypes.data)
    cupy.cuda.runtime.hostRegister(address, span, 3)  # portable | mapped (kernels may read it in place)
    mm.registered = address
    return view


def _on_cpus(nbytes: int, cpus: set[int]) -> np.ndarray:
    """cudaHostAlloc made by a thread of its own bound to ``cpus`` (the pages are placed by the node
    of the thread that touches them first: the driver's, when it locks them)."""
    import cupy

    device = cupy.cuda.Device().id
    got: dict[str, Any] = {}

    def run() -> None:
        try:
            os.sched_setaffinity(0, cpus)
            with cupy.cuda.Device(device):
                got["memory"] = _hostalloc(nbytes)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            got["error"] = e

    t = threading.Thread(target=run, name="hetdb-pinned-alloc")
    t.start()
    t.join()
    if "error" in got:
        raise got["error"]
    return got["memory"]


_node_cpus: dict[int, set[int]] = {}


def gpu_node_cpus() -> set[int]:
    """The CPUs (of this process's) on the current GPU's NUMA node; empty when the system names none."""
    import cupy

    device = cupy.cuda.Device()
    hit = _node_cpus.get(device.id)
    if hit is not None:
        return hit
    cpus: set[int] = set()
    try:
        with open(f"/sys/bus/pci/devices/{device.pci_bus_id.lower()}/numa_node") as f:
            node = int(f.read().strip())
        if node >= 0:
            with open(f"/sys/devices/system/node/node{node}/cpulist") as f:
                cpus = parse_cpu_list(f.read()) & os.sched_getaffinity(0)
    except (OSError, ValueError, AttributeError):
        cpus = set()
    _node_cpus[device.id] = cpus
    return cpus


def parse_cpu_list(text: str) -> set[int]:
    """A kernel CPU list ("0-3,8,10-11") as a set."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
