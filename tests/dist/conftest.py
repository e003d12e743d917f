"""Fixtures of the distributed tests: one local Ray cluster for the whole module (2 CPUs), and the
SSB / TPC-H data of the differential suites at SF 0.01 with small pages (several row groups, so
every worker gets a share). Without Ray (the GPU machine) only the modules that need no Ray cluster
are collected."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "differential"))

from diff_data import build_ssb, build_tpch, dataset  # noqa: E402

SF = 0.01
ROWS_PER_PAGE = 8192

try:
    import ray
except ImportError:
    ray = None
    RAY_FREE = {"test_dist_hash.py", "test_dist_lowering.py", "test_nccl.py", "test_shuffle_codec.py",
                "test_gpu_shuffle.py", "test_gpu_exchange.py", "test_dist_local.py"}
    collect_ignore = [p.name for p in Path(__file__).parent.glob("test_*.py") if p.name not in RAY_FREE]


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def ssb_dist(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("dist-ssb"), f"ssb-sf{SF}-p{ROWS_PER_PAGE}",
                   lambda p: build_ssb(p, SF, ROWS_PER_PAGE))


@pytest.fixture(scope="session")
def tpch_dist(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("dist-tpch"), f"tpch-sf{SF}-p{ROWS_PER_PAGE}",
                   lambda p: build_tpch(p, SF, ROWS_PER_PAGE))
