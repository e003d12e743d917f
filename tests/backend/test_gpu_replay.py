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
                         [(320, False, True), (192, False, False), (192, True, True), (96, True, False)])
def test_replayed_link_bytes_match_the_gpu(ssb_path, limit_mib, compressed, per_run):
    """Each query three times on one connection (hot), traced with the device bytes the GPU cache
    holds under the connection's ``gpu_compressed_cache`` (pages as stored when on: the same link
    bytes, fewer device bytes), and replayed with each run's working memory as the GPU reported it
    (the operators' peak device reservation: hash tables, aggregation state); fused state not
    reused, so every run scans the dimension tables as the replay does.

    Decoded pages at 320 MiB and compressed ones at 192 MiB: room to spare, every run moves what the
    replay says (s7-start, H100: compressed at 192 MiB moved 84.6 MB, what the compressed trace
    replays; the decoded trace said 116 MB). Decoded at 192 MiB and compressed at 96 MiB the cache
    evicts, and the working memory evicts more mid-query (decoded at 192 MiB: 146 MB measured where
    the replay without working memory said 116 MB); the replay holds a run's peak for the whole fact
    scan, so the nine runs' totals are compared there."""
    from dataclasses import replace

    import hetdb
    from hetdb.bench.suites import load_queries
    from hetdb.cache.replay import replay
    from hetdb.cache.trace import suite_trace

    queries = [(q.name, q.sql) for q in load_queries("ssb") if q.name in ("q1.1", "q2.1", "q4.1")]
    with hetdb.connect(ssb_path, device="cpu") as cpu:
        trace = suite_trace(cpu, queries, compressed)
    limit = limit_mib << 20
    measured, working = [], []
    # gpu_batch_bytes=0: pages delivered row group by row group, as the replay models them (a batched
    # delivery holds up to a quarter of the budget at once and evicts more)
    with hetdb.connect(ssb_path, device="gpu", gpu_memory_limit=limit, reuse_fused_state=False,
                       gpu_batch_bytes=0, gpu_compressed_cache=compressed) as con:
        memory = con._get_engine().device.memory
        for _name, sql in queries:
            for _ in range(3):
                res = con.sql(sql)
                res.fetchall()
                measured.append(int(res.stats["bytes_host_to_device"]))
                working.append(int(memory.peak))
        runs = [replace(q, working=w) for q, w in zip((q for q in trace for _ in range(3)), working)]
        predicted = replay(runs, limit, "benefit").link_bytes
        without = replay([replace(q, working=0) for q in runs], limit, "benefit").link_bytes
        if per_run:
            wrong = [i for i, (got, want) in enumerate(zip(measured, predicted))
                     if got != pytest.approx(want, rel=0.1, abs=1 << 16)]
        else:
            wrong = [] if sum(measured) == pytest.approx(sum(predicted), rel=0.1) else [0]
        # on a mismatch, the GPU's pages by path for the first query that differs
        detail = con.explain(queries[wrong[0] // 3][1], analyze=True) if wrong else ""
    assert len(measured) == len(predicted) == 9
    table = "\n".join(f"{q.name}: measured {got:,} replayed {want:,} (without working memory {w0:,}; "
                      f"operators' peak {q.working:,})"
                      for got, want, w0, q in zip(measured, predicted, without, runs))
    table += f"\ntotal: measured {sum(measured):,} replayed {sum(predicted):,} without working memory {sum(without):,}"
    print(table)
    assert not wrong, f"{table}\n{detail}"
