"""Host-side parts of the GPU backend that run without a GPU: imports, sources, cache keys, budget."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hetdb.backend.gpu.compile import KERNEL_DIR, cache_key, load_source
from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.errors import OutOfMemoryError


def test_import_does_not_load_cupy():
    code = ("import sys, hetdb, hetdb.backend.gpu, hetdb.backend.gpu.backend; "
            "hetdb.backend.gpu.gpu_available(); print('cupy' in sys.modules and not "
            "hetdb.backend.gpu.gpu_available())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_sources_inline_headers_once():
    sources = sorted(p.name for p in KERNEL_DIR.glob("*.cu"))
    assert len(sources) >= 4
    including = 0
    for name in sources:
        raw = (KERNEL_DIR / name).read_text()
        text = load_source(name)
        assert '#include "' not in text
        if '#include "' in raw:  # (a self-contained source, e.g. window.cu, includes nothing)
            including += 1
            assert text.count("__device__ __forceinline__ u64 splitmix64") == 1, name
    assert including >= 4


def test_cache_key_covers_every_input():
    base = ("src", ("-std=c++17",), ("k<int>",), "90", (13, 0))
    keys = {cache_key(*base)}
    variants = [("src2",) + base[1:], base[:1] + (("-O3",),) + base[2:], base[:2] + (("k<long long>",),) + base[3:],
                base[:3] + ("100",) + base[4:], base[:4] + ((13, 1),)]
    for v in variants:
        keys.add(cache_key(*v))
    assert len(keys) == 1 + len(variants)


def test_device_memory_budget():
    budget = DeviceMemoryBudget(1000)
    budget.reserve(600, "hash table")
    assert not budget.try_reserve(500)
    with pytest.raises(OutOfMemoryError, match="hash table"):
        budget.reserve(401, "hash table")
    with budget.reservation(400):
        assert budget.available_bytes == 0
    budget.release(600)
    assert budget.used_bytes == 0 and budget.peak_bytes == 1000
    with pytest.raises(ValueError):
        budget.release(1)
