"""The driver of distributed queries on Ray: places the workers, lowers each query and submits its
stages; exchange data moves between workers through Ray's object store (Arrow buffers)."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from hetdb.dist.lowering import BROADCAST_ROWS, DistPlan, lower
from hetdb.dist.worker import Worker, plan_stage
from hetdb.errors import HetdbError
from hetdb.exec.engine import plan_tables


class DistributedError(HetdbError):
    """A worker of a distributed query failed (the message names the worker and stage)."""


def _ray():
    try:
        import ray
    except ImportError:
        raise HetdbError("workers=N needs Ray: pip install 'hetdb[dist]'") from None
    return ray


class DistRuntime:
    """``workers`` worker actors on a Ray cluster: joins the one this process already started
    (``ray.init``), connects to ``cluster`` (an address such as ``ray://host:10001``), or starts a
    local one (shut down again by ``close``)."""

    def __init__(self, path: str, workers: int, cluster: str | None = None,
                 options: dict[str, Any] | None = None):
        if not isinstance(workers, int) or workers < 1:
            raise HetdbError(f"workers must be a positive integer, not {workers!r}")
        ray = _ray()
        self.workers = workers
        self.broadcast_rows = BROADCAST_ROWS  # build sides estimated at most this many rows are broadcast
        self._owns_ray = False
        if not ray.is_initialized():
            if cluster:
                ray.init(address=cluster)
            else:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
                self._owns_ray = True
        opts = {k: v for k, v in (options or {}).items() if k != "device"}
        opts.setdefault("threads", 1)
        # CPU workers ask Ray for no CPU slot so N of them fit on any cluster; with GPUs each
        # worker will hold one GPU (num_gpus=1) instead.
        actor = ray.remote(num_cpus=0)(Worker)
        self.actors = [actor.options(scheduling_strategy="SPREAD").remote(path, i, workers, opts)
                       for i in range(workers)]

    def plan(self, engine, sql: str) -> DistPlan:
        plan = engine.logical_plan(sql)
        counts = {}
        for name in plan_tables(plan) or ():
            counts[name] = engine.db.table(name).num_rows
        return lower(plan, self.workers, self.broadcast_rows, counts)

    def run(self, dplan: DistPlan, analyze: bool = False) -> tuple[pa.Table, dict[str, Any]]:
        ray = _ray()
        t0 = time.perf_counter()
        n = self.workers
        outs: dict[int, dict[int, list]] = {}
        infos = []
        for stage in dplan.stages:
            runs_on = [0] if stage.single else list(range(n))
            outs[stage.sid] = {}
            for w in runs_on:
                inputs = {sid: [outs[sid][p][w] for p in sorted(outs[sid])] for sid in stage.inputs}
                refs = self.actors[w].run.options(num_returns=n + 1).remote(stage, inputs, analyze)
                outs[stage.sid][w] = refs[:n]
                infos.append((w, stage.sid, refs[n]))
        stats = []
        for w, sid, ref in infos:
            try:
                stats.append(ray.get(ref))
            except ray.exceptions.RayError as e:
                cause = getattr(e, "cause", None)
                if isinstance(cause, HetdbError):
                    raise cause from None
                raise DistributedError(f"worker {w} failed in stage {sid}: "
                                       f"{type(cause or e).__name__}: {cause or e}") from None
        table = ray.get(outs[dplan.result.sid][0][0])
        fields = dplan.output.fields
        table = pa.Table.from_arrays([table.column(f.cid) for f in fields], names=[f.name for f in fields])
        return table, {"exec_seconds": time.perf_counter() - t0, "rows": table.num_rows,
                       "workers": n, "stages": stats, "dist_fallback": dplan.fallback,
                       "bytes_read": sum(s["bytes_read"] for s in stats),
                       "bytes_shuffled": sum(s["bytes_sent"] for s in stats)}

    def sql(self, engine, sql: str) -> tuple[pa.Table, dict[str, Any]]:
        t0 = time.perf_counter()
        if plan_tables(engine.logical_plan(sql)) is None:
            # files and registered frames in FROM live in this process: the workers cannot read them
            table, stats = engine.execute(sql)
            stats.update(workers=1, stages=[], bytes_shuffled=0,
                         dist_fallback="reads a file or registered frame: runs in this process")
            return table, stats
        dplan = self.plan(engine, sql)
        plan_seconds = time.perf_counter() - t0
        table, stats = self.run(dplan)
        stats["plan_seconds"] = plan_seconds
        return table, stats

    def explain(self, engine, sql: str, analyze: bool = False) -> str:
        dplan = self.plan(engine, sql)
        if not analyze:
            return format_plan(dplan)
        table, stats = self.run(dplan, analyze=True)
        return format_plan(dplan, stats) + f"\nTotal: {table.num_rows:,} rows in " \
            f"{stats['exec_seconds'] * 1000:.1f} ms on {self.workers} worker(s); " \
            f"bytes sent between workers={stats['bytes_shuffled']:,}"

    def close(self) -> None:
        ray = _ray()
        for a in self.actors:
            ray.kill(a)
        self.actors = []
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()


def _stage_header(dplan: DistPlan, stage) -> str:
    where = "worker 0" if stage.single else f"each of {dplan.workers} workers"
    if stage.exchange == "result":
        out = "result"
    elif stage.exchange == "hash":
        out = "hash exchange on [" + ", ".join(map(str, stage.keys)) + "]"
    else:
        out = f"{stage.exchange} exchange"
    note = f" ({stage.note})" if stage.note else ""
    return f"Stage {stage.sid} on {where} -> {out}{note}"


def format_plan(dplan: DistPlan, stats: dict[str, Any] | None = None) -> str:
    """EXPLAIN of a distributed plan: every stage's pipelines; with ``stats`` (EXPLAIN ANALYZE) each
    stage's operator counters from worker 0 and the bytes each worker sent and received."""
    lines = [f"Distributed plan: {dplan.workers} worker(s), {len(dplan.stages)} stage(s)"]
    if dplan.fallback:
        lines.append(f"Runs on one worker: {dplan.fallback}")
    by_stage: dict[int, list[dict]] = {}
    for s in (stats or {}).get("stages", []):
        by_stage.setdefault(s["stage"], []).append(s)
    received: dict[tuple[int, int], int] = {}
    for s in (stats or {}).get("stages", []):
        for sid, b in s["bytes_received"].items():
            received[(sid, s["worker"])] = received.get((sid, s["worker"]), 0) + b
    for stage in dplan.stages:
        lines.append(_stage_header(dplan, stage))
        runs = sorted(by_stage.get(stage.sid, []), key=lambda s: s["worker"])
        if runs:
            text = runs[0]["plan"]
        else:
            text = plan_stage(stage, 0, dplan.workers, {}).format()
        lines.extend("  " + ln for ln in text.splitlines())
        for s in runs:
            lines.append(f"  worker {s['worker']}: rows out={s['rows']:,} bytes sent={s['bytes_sent']:,} "
                         f"time={s['seconds'] * 1000:.1f} ms")
        if runs and stage.exchange != "result":
            recv = ", ".join(f"worker {w}={b:,}" for (sid, w), b in sorted(received.items()) if sid == stage.sid)
            lines.append(f"  exchange bytes received: {recv or 'none'}")
    return "\n".join(lines)

