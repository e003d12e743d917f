"""The SSB + TPC-H differential with plain pages (``compression="none"``) next to the default
compressed pages of the other suites: both must give DuckDB's answers, on every device."""

from __future__ import annotations

import pytest
from diff_data import Dataset, dataset
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

from hetdb.storage import Database

SUITE_SIZE = 13 + 22
# the small data of conftest.py (not imported: several test folders have a conftest module)
SMALL_SF = 0.002
SMALL_ROWS_PER_PAGE = 1000


def _generate(suite: str, path: str) -> None:
    from hetdb.datagen import ssb, tpch

    gen = ssb if suite == "ssb" else tpch
    gen.generate(Database.open(path, create=True), SMALL_SF, workers=1, rows_per_page=SMALL_ROWS_PER_PAGE,
                 compression="none")


@pytest.fixture(scope="module")
def plain_data(tmp_path_factory) -> dict[str, Dataset]:
    root = tmp_path_factory.mktemp("diff-plain")
    return {suite: dataset(root, f"{suite}-sf{SMALL_SF}-p{SMALL_ROWS_PER_PAGE}-plain",
                           lambda p, s=suite: _generate(s, p)) for suite in ("ssb", "tpch")}


def _codecs(path: str) -> set[str]:
    db = Database.open(path)
    out = set()
    for name in db.tables():
        r = db.table(name)
        out |= {r.page_codec(c.name, rg) for c in r.schema for rg in range(r.num_row_groups)}
    return out


def test_default_data_is_compressed_and_plain_data_is_not(ssb_small, tpch_small, plain_data) -> None:
    for data in (ssb_small, tpch_small):
        assert {"for", "delta"} <= _codecs(data.path)
    assert "lz4" in _codecs(tpch_small.path)  # comments: plain-string pages in LZ4 chunks
    for data in plain_data.values():
        assert _codecs(data.path) == {"plain"}


def test_suites_on_plain_pages(device, plain_data, hetdb_runner) -> None:
    ssb, tpch = plain_data["ssb"], plain_data["tpch"]
    reports = [run_suite("SSB small [plain pages]", ssb, load_queries("ssb"), SSB_ORDERING,
                         hetdb_runner(ssb.path, device=device)),
               run_suite("TPC-H small [plain pages]", tpch, load_queries("tpch"), TPCH_ORDERING,
                         hetdb_runner(tpch.path, device=device), TPCH_TOLERANCE)]
    failures = reports[0].failures + reports[1].failures
    if failures:
        pytest.fail(f"{len(failures)} of {SUITE_SIZE} queries failed on plain pages\n\n" + "\n\n".join(failures),
                    pytrace=False)
    assert reports[0].compared + reports[1].compared == SUITE_SIZE
