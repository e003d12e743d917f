"""The trace replay (cache/replay.py) against the GPU: the bytes each run of a query moves to the
device under a gpu_memory_limit, measured (hetdb's statistics) and replayed through the same cache
policy without a GPU, agree. If they do, the replay's comparisons of policies stand for the GPU."""

from __future__ import annotations

import pytest

from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]


@pytest.fixture(scope="module")
def ssb_path(tmp_path_factory):
    from hetdb.datagen import ssb
    from hetdb.storage import Database

    path = str(tmp_path_factory.mktemp("gpu-replay") / "db")
    ssb.generate(Database.open(path, create=True), 1, workers=4)  # lineorder: 6 row groups
    return path


@pytest.mark.parametrize("limit_mib,compressed,per_run",
                         [(320, False, True), (192, True, True), (96, True, False)])
def test_replayed_link_bytes_match_the_gpu(ssb_path, limit_mib, compressed, per_run):
    """Each query three times on one connection (hot), traced with the device bytes the GPU cache
    holds under the connection's ``gpu_compressed_cache`` (pages as stored when on: the same link
    bytes, fewer device bytes); fused state not reused, so every run scans the dimension tables as
    the replay does.

    Decoded pages at 320 MiB and compressed ones at 192 MiB: room to spare, every run moves what the
    replay says (the decoded trace at 192 MiB replays 116 MB where an H100 moved 84.6 MB with
    compressed pages: the replay must trace the sizes the cache holds). Compressed at 96 MiB the
    cache evicts; the query's working memory (hash tables, transient pages) may evict more,
    mid-query, which the replay does not model: there the nine runs' totals are compared."""
    import hetdb
    from hetdb.bench.suites import load_queries
    from hetdb.cache.replay import replay
    from hetdb.cache.trace import suite_trace

    queries = [(q.name, q.sql) for q in load_queries("ssb") if q.name in ("q1.1", "q2.1", "q4.1")]
    with hetdb.connect(ssb_path, device="cpu") as cpu:
        trace = suite_trace(cpu, queries, compressed)
    limit = limit_mib << 20
    runs = [q for q in trace for _ in range(3)]
    predicted = replay(runs, limit, "benefit").link_bytes
    measured = []
    # gpu_batch_bytes=0: pages delivered row group by row group, as the replay models them (a batched
    # delivery holds up to a quarter of the budget at once and evicts more)
    with hetdb.connect(ssb_path, device="gpu", gpu_memory_limit=limit, reuse_fused_state=False,
                       gpu_batch_bytes=0, gpu_compressed_cache=compressed) as con:
        for _name, sql in queries:
            for _ in range(3):
                res = con.sql(sql)
                res.fetchall()
                measured.append(int(res.stats["bytes_host_to_device"]))
        if per_run:
            wrong = [i for i, (got, want) in enumerate(zip(measured, predicted))
                     if got != pytest.approx(want, rel=0.1, abs=1 << 16)]
        else:
            wrong = [] if sum(measured) == pytest.approx(sum(predicted), rel=0.1) else [0]
        # on a mismatch, the GPU's pages by path for the first query that differs
        detail = con.explain(queries[wrong[0] // 3][1], analyze=True) if wrong else ""
    assert len(measured) == len(predicted) == 9
    table = "\n".join(f"{q.name}: measured {got:,} replayed {want:,}"
                       for got, want, q in zip(measured, predicted, runs))
    assert not wrong, f"{table}\n{detail}"
