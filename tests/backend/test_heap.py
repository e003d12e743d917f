"""backend/cpu/heap.py: with the thresholds set, a freed block of many MiB is reused by the next
allocation of its size instead of being faulted in again from the kernel."""

from __future__ import annotations

import resource
import sys

import numpy as np
import pytest

from hetdb.backend.cpu.heap import keep_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_block_is_reused_without_page_faults(monkeypatch):
    from hetdb.backend.cpu import heap

    monkeypatch.setattr(heap, "_done", None)
    monkeypatch.setenv(heap.ENV, "1")
    assert keep_freed_memory() is True
    assert keep_freed_memory() is True  # once per process; asking again changes nothing
    size = 16 << 20  # 4,096 pages of 4 KiB
    a = np.ones(size, np.uint8)
    del a
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    b = np.ones(size, np.uint8)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert int(b.sum()) == size
    assert faults < 64, faults  # (without the thresholds: 507 on the 2-core machine, huge pages in part)
    assert heap.set_thresholds(heap.DEFAULT_THRESHOLD, heap.DEFAULT_THRESHOLD)


def test_thresholds_are_opt_in(monkeypatch):
    from hetdb.backend.cpu import heap

    monkeypatch.setattr(heap, "_done", None)
    monkeypatch.delenv(heap.ENV, raising=False)
    assert keep_freed_memory() is False
