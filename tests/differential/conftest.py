"""Session fixtures of the differential suites: hetdb databases and DuckDB mirrors of the same data.

Sizes: the full differential runs on SSB and TPC-H at SF 0.1 (pages of 64Ki rows, so several row
groups and real zone-map pruning); the configuration matrix and the random queries run on small
versions (SF 0.002, pages of 1000 rows) and on the NULL tables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest
from diff_data import Dataset, build_nulls, build_ssb, build_tpch, dataset, load_duckdb
from diff_fuzzdata import build_fuzz
from diff_fuzzgen import sample_values

import hetdb

FULL_SF = 0.1
SMALL_SF = 0.002
FULL_ROWS_PER_PAGE = 1 << 16
SMALL_ROWS_PER_PAGE = 1000


@pytest.fixture(scope="session")
def ssb_full(tmp_path_factory) -> Dataset:
    root = tmp_path_factory.mktemp("diff-ssb")
    return dataset(root, f"ssb-sf{FULL_SF}-p{FULL_ROWS_PER_PAGE}",
                   lambda p: build_ssb(p, FULL_SF, FULL_ROWS_PER_PAGE))


@pytest.fixture(scope="session")
def tpch_full(tmp_path_factory) -> Dataset:
    root = tmp_path_factory.mktemp("diff-tpch")
    return dataset(root, f"tpch-sf{FULL_SF}-p{FULL_ROWS_PER_PAGE}",
                   lambda p: build_tpch(p, FULL_SF, FULL_ROWS_PER_PAGE))


@pytest.fixture(scope="session")
def ssb_small(tmp_path_factory) -> Dataset:
    root = tmp_path_factory.mktemp("diff-ssb-small")
    return dataset(root, f"ssb-sf{SMALL_SF}-p{SMALL_ROWS_PER_PAGE}",
                   lambda p: build_ssb(p, SMALL_SF, SMALL_ROWS_PER_PAGE))


@pytest.fixture(scope="session")
def tpch_small(tmp_path_factory) -> Dataset:
    root = tmp_path_factory.mktemp("diff-tpch-small")
    return dataset(root, f"tpch-sf{SMALL_SF}-p{SMALL_ROWS_PER_PAGE}",
                   lambda p: build_tpch(p, SMALL_SF, SMALL_ROWS_PER_PAGE))


@pytest.fixture(scope="session")
def nulls_db(tmp_path_factory) -> Dataset:
    root = tmp_path_factory.mktemp("diff-nulls")
    return dataset(root, "nulls", build_nulls)


@pytest.fixture(scope="session")
def fuzz_db(tmp_path_factory) -> Dataset:
    """The tiny edge-value tables of the fuzz suites (diff_fuzzdata)."""
    return dataset(tmp_path_factory.mktemp("diff-fuzz"), "fuzz", build_fuzz)


@pytest.fixture(scope="session")
def fuzz_db_plain(tmp_path_factory) -> Dataset:
    """The fuzz tables written with compression off (every page plain)."""
    return dataset(tmp_path_factory.mktemp("diff-fuzz-plain"), "fuzz-plain",
                   lambda path: build_fuzz(path, compression="none"))


@pytest.fixture(scope="session")
def fuzz_samples(fuzz_db) -> dict:
    """Literal values the fuzz generator draws from (values occurring in the data)."""
    return sample_values(fuzz_db.duck)


@pytest.fixture(scope="session")
def fuzz_reference_cache() -> dict:
    """DuckDB's answers to fuzz queries, shared by every configuration (same cases in each)."""
    return {}


def gpu_available() -> bool:
    try:
        from hetdb.backend.gpu.device import gpu_available as probe
    except ImportError:
        return False
    try:
        return bool(probe())
    except Exception:
        return False


DEVICES = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """The device a differential test runs on; gpu is skipped where no GPU is visible."""
    if request.param == "gpu" and not gpu_available():
        pytest.skip("no GPU visible to CuPy")
    return request.param


class HetdbRunner:
    """Runs SQL on one hetdb connection; keeps the statistics of the last query."""

    def __init__(self, path: str, device: str, options: dict):
        self.last_stats: dict = {}
        if os.environ.get("HETDB_DIFF_SELF_CHECK"):
            # Harness check: DuckDB (1 thread) stands in for hetdb, so every comparison, ordering
            # contract and tolerance of the suites can be validated before the engine exists.
            self._duck, _, _ = load_duckdb(path)
            self._duck.execute("SET threads TO 1")
            self._con = None
        else:
            self._duck = None
            self._con = hetdb.connect(path, device=device, **options)

    def __call__(self, sql: str) -> pa.Table:
        if self._duck is not None:
            return self._duck.sql(sql).to_arrow_table()
        result = self._con.sql(sql)
        self.last_stats = dict(result.stats or {})
        return result.arrow()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()


@pytest.fixture
def hetdb_runner() -> Iterator[Callable[..., HetdbRunner]]:
    """Factory: ``open(path, device="cpu", **options)`` -> a HetdbRunner (closed when the test ends)."""
    opened: list[HetdbRunner] = []

    def open_runner(path: str, device: str = "cpu", **options) -> HetdbRunner:
        runner = HetdbRunner(path, device, options)
        opened.append(runner)
        return runner

    yield open_runner
    for runner in opened:
        runner.close()


@pytest.fixture(scope="session")
def expected_answers() -> dict[str, dict[str, pa.Table]]:
    """DuckDB's answers per data set and query, shared by every configuration of the matrix."""
    return {}
