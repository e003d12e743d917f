"""The workers' path in one process (LocalRunner, no Ray): TPC-H joins and aggregations lowered for
2-3 workers, hash and broadcast exchanges through a LocalGroup, answers identical to DuckDB. On CPU
workers here; on GPU workers (the GPU executor per worker, device buffers exchanged and decoded on
the device) gpu-marked."""

from __future__ import annotations

import pytest
from diff_check import run_differential
from diff_queries import TPCH_ORDERING, TPCH_TOLERANCE, load_queries

from hetdb.dist.local import LocalRunner

QUERIES = ("q03", "q05", "q12", "q18")


def _check(data, runner: LocalRunner, names: tuple[str, ...] = QUERIES) -> list[dict]:
    queries = {k: v for k, v in load_queries("tpch").items() if k in names}
    assert len(queries) == len(names)
    compared, failures, infos = 0, [], []

    def run(sql: str):
        table, stage_infos = runner.sql(sql)
        infos.extend(stage_infos)
        return table

    for name, sql in queries.items():
        outcome = run_differential(f"local {name}", sql, run, data.reference(sql), TPCH_ORDERING[name],
                                   TPCH_TOLERANCE.get(name, 1e-9))
        compared += outcome.compared
        if outcome.failure:
            failures.append(outcome.failure)
    assert not failures, "\n".join(map(str, failures))
    assert compared == len(names)
    return infos


@pytest.mark.parametrize("workers,collective", [(3, True), (2, False)])
def test_tpch_on_cpu_workers_in_one_process(tpch_dist, workers: int, collective: bool) -> None:
    runner = LocalRunner(tpch_dist.path, workers, {"batch_rows": 5000}, collective=collective, broadcast_rows=0)
    for w in runner.workers:  # without the collective: object-store messages read as batches, as on a GPU
        w.batch_inputs = not collective
    try:
        infos = _check(tpch_dist, runner)
    finally:
        runner.close()
    through_group = [i for i in infos if i.get("collective")]
    assert bool(through_group) == collective
    assert all(i["collective"] == "LocalMember" for i in through_group)
    assert sum(m[4] for i in infos for m in i["messages"]) > 0


@pytest.mark.gpu
@pytest.mark.parametrize("collective", [True, False])
def test_tpch_on_gpu_workers_in_one_process(tpch_dist, collective: bool) -> None:
    pytest.importorskip("cupy")
    runner = LocalRunner(tpch_dist.path, 2, gpu=True, collective=collective, broadcast_rows=0)
    try:
        assert all(w.engine.backend.name == "gpu" for w in runner.workers)
        infos = _check(tpch_dist, runner, ("q03", "q12"))
    finally:
        runner.close()
    assert bool([i for i in infos if i.get("collective")]) == collective


def test_transport_of_hash_and_broadcast_exchanges() -> None:
    """NCCL when every worker of the query holds a GPU; with a CPU worker among them the object store
    (or the mailbox group when asked for); never with one worker or exchange="object_store"."""
    from hetdb.dist.runtime import DistRuntime

    rt = object.__new__(DistRuntime)
    rt.actors = [object(), object(), object()]
    cases = [([True, True, True], "auto", "nccl"), ([True, False, True], "auto", "object store"),
             ([True, False, True], "collective", "mailbox"), ([True, True, True], "object_store", "object store"),
             ([False, False, False], "collective", "mailbox")]
    for gpus, exchange, want in cases:
        rt.gpus, rt.exchange = gpus, exchange
        assert rt.transport(rt.actors) == want, (gpus, exchange)
        assert rt.transport(rt.actors[:1]) == "object store"
    rt.gpus, rt.exchange = [True, False, True], "auto"
    assert rt.transport([rt.actors[0], rt.actors[2]]) == "nccl"  # a retry on the GPU workers left


def test_device_share_of_a_table_streams_only_its_row_groups(tmp_path) -> None:
    """On the GPU a worker's share of a table is its row groups, and the device scan's streamer (which
    streams the row groups of the scan's verdicts in order) is given only those."""
    import numpy as np
    import pyarrow as pa

    from hetdb import types as T
    from hetdb.dist.exchange import ShardScan
    from hetdb.exec.operators.scan_device import DeviceScanState
    from hetdb.plan.expr import Field
    from hetdb.plan.logical import Scan
    from hetdb.storage import ColumnSpec, Database

    db = Database.open(str(tmp_path / "db"), create=True)
    with db.create_table("t", [ColumnSpec("a", T.INT64, nullable=False)], rows_per_page=100) as w:
        w.append_arrow(pa.table({"a": pa.array(np.arange(450), pa.int64())}))
    reader = db.table("t")
    assert reader.num_row_groups == 5

    class Options:
        zone_maps = True

    class Ctx:
        device = object()
        options = Options()

        def add(self, *a, **k) -> None:
            pass

    scan = Scan("t", (Field("a", "a", T.INT64, False),), ("a",))
    for share, want in ((0, [0, 2, 4]), (1, [1, 3])):
        state = DeviceScanState(reader)
        got = ShardScan(scan=scan, share=share, shares=2).morsels(Ctx(), state)
        assert got == want and sorted(state.verdicts) == want
