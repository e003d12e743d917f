"""Warm paged deliveries handed out lazily (backend/gpu/paged_parts.py) on the GPU: SSB with
``gpu_compressed_cache=True`` on fresh connections (each query's scan passes the device cache by,
its pages hits of the pinned host tier) against DuckDB, every fused page table made from a delivery's
layout equal to the one made from its Columns (pointers, tiles, rows, codec ids and page classes),
and the same answers with the lazy deliveries switched off."""

from __future__ import annotations

import numpy as np
import pytest
from diff_queries import SSB_ORDERING, load_queries
from diff_suite import run_suite

import hetdb
from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no GPU visible to CuPy")]


def _warm(path: str):
    def run(sql: str):
        for _ in range(2):  # the first loads the host tier; the second is the warm run
            con = hetdb.connect(path, device="gpu", create=False, gpu_compressed_cache=True)
            try:
                got = con.sql(sql).arrow()
            finally:
                con.close()
        return got
    return run


@pytest.mark.parametrize("lazy", [True, False])
def test_warm_paged_deliveries_read_through_their_layout(ssb_full, monkeypatch, lazy) -> None:
    from hetdb.backend.gpu import stream_batch
    from hetdb.exec import fusion_run

    monkeypatch.setattr(stream_batch, "LAZY_PAGED", lazy)
    made: list = []
    orig = fusion_run._layout_table

    def spy(fp, batches):
        first = getattr(batches, "page_table", None) is None
        table = orig(fp, batches)
        if table is not None and first:
            # the same delivery's Columns made, and the page table made from them
            want = fp.page_table([(b.num_rows, b.columns) for b in batches.batches()])
            assert np.array_equal(table.host, want.host)
            assert (table.num_pages, table.num_tiles, table.num_rows, table.codecs) == \
                   (want.num_pages, want.num_tiles, want.num_rows, want.codecs)
            made.append(table.num_pages)
        return table

    monkeypatch.setattr(fusion_run, "_layout_table", spy)
    queries = load_queries("ssb")
    report = run_suite(f"ssb SF0.1 gpu warm paged (lazy {lazy})", ssb_full, queries, SSB_ORDERING,
                       _warm(ssb_full.path))
    if report.failures:
        pytest.fail(f"{len(report.failures)} mismatches\n\n" + "\n\n".join(report.failures), pytrace=False)
    assert report.compared == len(queries) > 0
    if lazy:
        assert made and sum(made) > len(made), made  # (deliveries of several row groups read by layout)
    else:
        assert not made
