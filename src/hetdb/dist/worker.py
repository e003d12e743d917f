"""One worker: runs stages of a distributed plan with hetdb's own physical planner and engine over
its share of the data, and cuts the stage's output into the partitions of its exchange."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pyarrow as pa

from hetdb.dist.exchange import ExchangeSource, ShardScan, hash_partition
from hetdb.dist.lowering import ExchangeInput, Stage
from hetdb.exec.physical import PhysicalPlan, PhysicalPlanner, _Open
from hetdb.plan import logical as L
from hetdb.plan.expr import ColumnRef, Field


class StagePlanner(PhysicalPlanner):
    """hetdb's physical planner with the two leaves of a stage: received exchange data, and this
    worker's share of a stored table."""

    def __init__(self, share: int, shares: int, inputs: dict[int, list[pa.Table]]):
        super().__init__()
        self.share, self.shares, self.inputs = share, shares, inputs

    def _build(self, node: L.Node) -> _Open:
        if isinstance(node, ExchangeInput):
            return _Open(ExchangeSource(stage=node.stage, kind=node.kind, fields=node.fields,
                                        tables=tuple(self.inputs.get(node.stage, ())), op_id=self._id()))
        if isinstance(node, L.Scan) and node.source == "table" and self.shares > 1:
            return _Open(ShardScan(scan=node, share=self.share, shares=self.shares, op_id=self._id()))
        return super()._build(node)


def stage_output(stage: Stage) -> L.Output:
    """The stage's plan with its hash keys appended as columns; output columns named by cid."""
    node = stage.plan
    fields = tuple(dataclasses.replace(f, name=f.cid) for f in stage.fields)
    if stage.exchange == "hash":
        keys = tuple((Field(f"__dist_key{i}", f"__dist_key{i}", e.dtype, True), e) for i, e in enumerate(stage.keys))
        passthrough = tuple((f, ColumnRef(f.dtype, f.cid, f.nullable)) for f in fields)
        node = L.Project(node, passthrough + keys)
        fields = fields + tuple(f for f, _ in keys)
    return L.Output(node, fields)


def plan_stage(stage: Stage, share: int, shares: int, inputs: dict[int, list[pa.Table]]) -> PhysicalPlan:
    """The physical plan of ``stage`` on worker ``share``; a single-worker stage reads whole tables
    (a query that falls back to one worker runs as such a stage)."""
    if stage.single:
        share, shares = 0, 1
    return StagePlanner(share, shares, inputs).plan(stage_output(stage))


class Worker:
    """Worker ``index`` of ``workers``, reading the database directory at ``path`` (shared storage)."""

    def __init__(self, path: str, index: int, workers: int, options: dict[str, Any]):
        from hetdb.backend.cpu import CpuBackend
        from hetdb.connection import _make_options
        from hetdb.exec.engine import QueryEngine
        from hetdb.storage import Database

        self.index, self.workers = index, workers
        self.db = Database.open(path, create=False)
        self.engine = QueryEngine(self.db, CpuBackend(), _make_options("cpu", options))

    def run(self, stage: Stage, inputs: dict[int, list[Any]], analyze: bool = False) -> tuple:
        """Runs ``stage`` on the exchange data of ``inputs`` (stage id -> one object reference per
        producing worker); returns one table per destination worker, then the statistics."""
        import ray

        t0 = time.perf_counter()
        received: dict[int, int] = {}
        tables: dict[int, list[pa.Table]] = {}
        for sid, refs in inputs.items():
            got = ray.get(list(refs))
            tables[sid] = got
            # bytes from other workers (what a worker keeps for itself crosses no link)
            received[sid] = sum(t.nbytes for p, t in enumerate(got) if p != self.index)
        physical = plan_stage(stage, self.index, self.workers, tables)
        output = stage_output(stage)
        table, stats, physical = self.engine.run_plan(output, physical)
        n = self.workers
        if stage.exchange == "hash":
            parts = hash_partition(table, [f.cid for f in output.fields[len(stage.fields):]], n)
        elif stage.exchange == "broadcast":
            parts = [table] * n
        else:
            empty = table.slice(0, 0)
            parts = [table] + [empty] * (n - 1)
        sent = sum(t.nbytes for p, t in enumerate(parts) if p != self.index)
        info = {"stage": stage.sid, "worker": self.index, "rows": table.num_rows, "bytes_sent": sent,
                "bytes_received": received, "seconds": time.perf_counter() - t0,
                "bytes_read": stats["bytes_read"],
                "plan": physical.format(stats["operators"]) if analyze else ""}
        return (*parts, info)

    def close(self) -> None:
        self.engine.close()
