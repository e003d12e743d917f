"""Ceiling measurements run (their values are never asserted, only that they were measured)."""

from __future__ import annotations

import os

from hetdb.bench.ceilings import MiB, measure_disk_read, measure_host_memcpy, named_ceilings, relevant_ceiling
from hetdb.bench.environment import drop_os_cache


def test_disk_read_measures_and_cleans_up(tmp_path):
    r = measure_disk_read(str(tmp_path), 16 * MiB, threads=2, block_sizes=(1 * MiB, 4 * MiB))
    assert r["bytes_per_s"] > 0
    assert r["method"] in ("O_DIRECT", "buffered after posix_fadvise(DONTNEED)")
    assert set(r["by_block_bytes"]) == {str(MiB), str(4 * MiB)}
    assert os.listdir(tmp_path) == []


def test_host_memcpy():
    r = measure_host_memcpy(8 * MiB, repeats=2, threads=2)
    assert r["bytes_per_s"] >= r["single_thread_bytes_per_s"] > 0


def test_relevant_ceiling_by_device_and_mode():
    ceilings = {"disk_read": {"bytes_per_s": 2e9}, "host_memcpy": {"bytes_per_s": 1e10},
                "gpu": {"available": True, "h2d_pinned_gbps": 50.0, "h2d_pageable_gbps": 8.0,
                        "d2h_pinned_gbps": 50.0, "d2d_gbps": 1500.0}}
    named = named_ceilings(ceilings)
    assert named["H2D pinned"] == 50e9 and named["GPU memory (read+write)"] == 3000e9
    assert relevant_ceiling(ceilings, "cpu", "hot") == ("host memcpy", 1e10)
    assert relevant_ceiling(ceilings, "cpu", "cold") == ("disk read", 2e9)
    assert relevant_ceiling(ceilings, "gpu", "warm") == ("H2D pinned", 50e9)
    assert relevant_ceiling(ceilings, "gpu", "hot") == ("GPU memory (read+write)", 3000e9)
    no_gpu = {**ceilings, "gpu": {"available": False}}
    assert relevant_ceiling(no_gpu, "gpu", "hot") == ("GPU memory (read+write)", None)


def test_drop_os_cache_reports_what_it_did(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 8192)
    r = drop_os_cache([str(tmp_path)])
    assert r["method"]
    assert r["permitted"] or r["files_evicted"] == 1


def test_the_disk_test_file_is_larger_when_a_cold_run_is_judged_by_it():
    from hetdb.bench.ceilings import MiB, disk_test_bytes

    assert disk_test_bytes(["hot", "cold"]) == 1024 * MiB
    assert disk_test_bytes(["hot", "warm"]) == 256 * MiB
    assert disk_test_bytes(["cold"], 16 * MiB) == 16 * MiB
