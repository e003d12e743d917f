"""The driver of distributed queries on Ray: places the workers, lowers each query and submits its
stages; exchange messages move between workers through Ray's object store (Arrow tables, or
batches compressed with hetdb's codecs), in two levels where the workers span hosts."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from hetdb.dist.explain import format_plan
from hetdb.dist.lowering import BROADCAST_ROWS, DistPlan, lower
from hetdb.dist.topology import Topology, parse_worker_hosts
from hetdb.dist.worker import Worker
from hetdb.errors import HetdbError
from hetdb.exec.engine import plan_tables
from hetdb.plan.cardinality import Estimator


class DistributedError(HetdbError):
    """A worker of a distributed query failed (the message names the worker and stage)."""


class WorkerLostError(DistributedError):
    """A worker process died (killed, out of memory, its host lost) while it ran a query."""

    def __init__(self, message: str, workers: list[int]):
        super().__init__(message)
        self.workers = workers


class WorkerTimeoutError(DistributedError):
    """No task of a query finished within ``worker_timeout`` seconds (a hung or overloaded worker)."""

    def __init__(self, message: str, workers: list[int]):
        super().__init__(message)
        self.workers = workers


def _ray():
    try:
        import ray
    except ImportError:
        raise HetdbError("workers=N needs Ray: pip install 'hetdb[dist]'") from None
    return ray


class DistRuntime:
    """``workers`` worker actors on a Ray cluster: joins the one this process already started
    (``ray.init``), connects to ``cluster`` (an address such as ``ray://host:10001``), or starts a
    local one (shut down again by ``close``).

    ``dist_options``: ``shuffle_compression`` (default "across_hosts": batches for workers of
    other hosts are encoded with hetdb's codecs; inside a host Ray's object store is shared memory,
    where encoding only costs time; True: every batch; False: none), ``worker_hosts`` (one logical host label per worker, replacing the Ray node ids:
    a placement option that makes the two-level exchange testable on one machine) and
    ``worker_retries`` (default 1: a query that loses a worker runs again on the remaining ones) and
    ``worker_timeout`` (seconds without any task of a query finishing before it fails; default none)."""

    def __init__(self, path: str, workers: int, cluster: str | None = None,
                 options: dict[str, Any] | None = None, dist_options: dict[str, Any] | None = None):
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise HetdbError(f"workers must be a positive integer, not {workers!r}")
        dist_options = dist_options or {}
        self.compress = dist_options.get("shuffle_compression", "across_hosts")
        if self.compress not in (True, False, "across_hosts"):
            raise HetdbError(f"shuffle_compression must be True, False or 'across_hosts', not {self.compress!r}")
        self.host_labels = parse_worker_hosts(dist_options.get("worker_hosts"), workers)
        self.timeout = dist_options.get("worker_timeout")
        if self.timeout is not None and (isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float))
                                         or self.timeout <= 0):
            raise HetdbError(f"worker_timeout must be a positive number of seconds, not {self.timeout!r}")
        self.retries = dist_options.get("worker_retries", 1)
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise HetdbError(f"worker_retries must be a non-negative integer, not {self.retries!r}")
        gpus = dist_options.get("worker_gpus", "auto")
        if gpus != "auto" and (not isinstance(gpus, int) or isinstance(gpus, bool) or not 0 <= gpus <= workers):
            raise HetdbError(f"worker_gpus must be 'auto' or an integer from 0 to workers ({workers}), not {gpus!r}")
        self.exchange = dist_options.get("exchange", "auto")
        if self.exchange not in ("auto", "object_store", "collective"):
            raise HetdbError(f"exchange must be 'auto', 'object_store' or 'collective', not {self.exchange!r}")
        ray = _ray()
        self.path = path
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
        self._options = opts
        if gpus == "auto":  # one worker per GPU of the cluster, the others on CPUs
            gpus = min(workers, int(ray.cluster_resources().get("GPU", 0)))
        self.gpus = [i < gpus for i in range(workers)]
        self.actors = [self._start(g) for g in self.gpus]
        self._infos: list[tuple[int, str] | None] = [None] * workers
        self._group: tuple | None = None  # the workers of the collective group and its kind

    def _start(self, gpu: bool):
        # CPU workers ask Ray for no CPU slot so N of them fit on any cluster; a GPU worker holds
        # one GPU (Ray sets its CUDA_VISIBLE_DEVICES) and runs its stages with the GPU executor
        ray = _ray()
        return ray.remote(num_cpus=0, num_gpus=1 if gpu else 0, max_restarts=0)(Worker) \
            .options(scheduling_strategy="SPREAD").remote(self.path, self._options, gpu)

    def transport(self, actors: list) -> str:
        """How hash and broadcast exchanges among ``actors`` travel: "nccl" (every worker has a GPU),
        "mailbox" (a collective exchange between CPU workers, asked for by exchange="collective")
        or "object store"."""
        if len(actors) < 2 or self.exchange == "object_store":
            return "object store"
        if all(self.gpus[self._slot(a)] for a in actors):
            return "nccl"
        return "mailbox" if self.exchange == "collective" else "object store"

    def _join_group(self, actors: list, kind: str) -> None:
        """Makes ``actors`` one collective group of ``kind`` (again only when they changed)."""
        ray = _ray()
        key = (kind, tuple(a._actor_id.hex() for a in actors))
        if self._group == key:
            return
        from hetdb.dist.collective import start_mailbox

        n = len(actors)
        token = ray.get(actors[0].nccl_id.remote()) if kind == "nccl" else start_mailbox(n)
        ray.get([a.join_group.remote(kind, n, rank, token) for rank, a in enumerate(actors)])
        self._group = key

    def worker_info(self) -> list[tuple[int, str]]:
        """(process id, Ray node id) of every worker; a worker found dead is replaced."""
        ray = _ray()
        for _ in range(2):
            missing = [i for i, x in enumerate(self._infos) if x is None]
            refs = [self.actors[i].info.remote() for i in missing]
            dead = []
            for i, ref in zip(missing, refs):
                try:
                    self._infos[i] = tuple(ray.get(ref))
                except ray.exceptions.RayActorError:
                    dead.append(self.actors[i])
            if not dead:
                break
            self._replace(dead)
        return list(self._infos)

    def topology(self) -> Topology:
        if self.host_labels is not None:
            return Topology.of(self.host_labels)
        return Topology.of([node for _, node in self.worker_info()])

    def plan(self, engine, sql: str, workers: int | None = None, plan: Any = None) -> DistPlan:
        """The distributed plan of ``sql`` (``plan``: its logical plan, when already made)."""
        return plan_query(engine, sql, workers or self.workers, self.broadcast_rows, plan)

    # ---- running a plan -------------------------------------------------------------------------
    def run(self, dplan: DistPlan, analyze: bool = False, actors: list | None = None,
            topology: Topology | None = None) -> tuple[pa.Table, dict[str, Any]]:
        """Runs ``dplan`` on ``actors`` (default: all workers) placed as ``topology``."""
        import uuid

        ray = _ray()
        t0 = time.perf_counter()
        actors = self.actors if actors is None else actors
        topo = topology or self.topology()
        n = len(actors)
        if dplan.workers != n:
            raise HetdbError(f"plan lowered for {dplan.workers} workers runs on {n}")
        transport = self.transport(actors)
        if transport != "object store":
            self._join_group(actors, transport)
        query = uuid.uuid4().hex
        # a collective exchange needs every worker in it: not for stages on worker 0 alone or feeding one
        single_fed = {sid for s in dplan.stages if s.single for sid in s.inputs}
        # outs[sid][w]: references to the messages addressed to worker w
        outs: dict[int, dict[int, list]] = {}
        infos: list[tuple[int, int, Any]] = []
        for stage in dplan.stages:
            runs_on = [0] if stage.single else list(range(n))
            inbox: dict[int, list] = {d: [] for d in range(n)}
            relay_in: dict[int, list] = {p: [] for p in range(n)}
            collective = transport != "object store" and stage.exchange in ("hash", "broadcast") \
                and not stage.single and stage.sid not in single_fed
            two_level = stage.exchange in ("hash", "broadcast") and topo.two_level and not collective
            for w in runs_on:
                inputs = {sid: outs[sid][w] for sid in stage.inputs}
                route = [(d, [d]) for d in range(n)] if collective else _route(stage.exchange, w, n, topo)
                refs = actors[w].run.options(num_returns=len(route) + 1).remote(
                    w, n, stage, inputs, route, self._encoded_for(w, n, topo), analyze, query, collective)
                infos.append((w, stage.sid, refs[-1]))
                for (recipient, dests), ref in zip(route, refs[:-1]):
                    # relayed: every message of a two-level hash exchange, and a broadcast's one
                    # message per other host (its relay hands it to the workers there)
                    relayed = two_level and (stage.exchange == "hash" or dests != [recipient])
                    (relay_in if relayed else inbox)[recipient].append(ref)
            if two_level:
                for p in range(n):
                    if not relay_in[p] and stage.exchange == "broadcast":
                        continue
                    dests = topo.relayed_by(p) if stage.exchange == "hash" else topo.members(topo.hosts[p])
                    refs = actors[p].relay.options(num_returns=len(dests) + 1).remote(
                        p, stage.sid, relay_in[p], dests)
                    infos.append((p, stage.sid, refs[-1]))
                    for d, ref in zip(dests, refs[:-1]):
                        inbox[d].append(ref)
            outs[stage.sid] = inbox
        stats = self._collect(infos, actors)
        messages = ray.get(outs[dplan.result.sid][0])
        table = pa.concat_tables([item for m in messages for _, item in m])
        fields = dplan.output.fields
        table = pa.Table.from_arrays([table.column(f.cid) for f in fields], names=[f.name for f in fields])
        sent = [m for s in stats for m in s["messages"]]
        return table, {"exec_seconds": time.perf_counter() - t0, "rows": table.num_rows,
                       "workers": n, "hosts": len(set(topo.hosts)), "worker_hosts": topo.hosts,
                       "gpu_workers": sum(self.gpus[self._slot(a)] for a in actors), "exchange": transport,
                       "stages": stats,
                       "dist_fallback": dplan.fallback, "shuffle_compression": self.compress,
                       "bytes_read": sum(s.get("bytes_read", 0) for s in stats),
                       "bytes_shuffled": sum(m[4] for m in sent),
                       "bytes_shuffled_raw": sum(m[3] for m in sent),
                       "messages": len(sent)}

    def _encoded_for(self, w: int, n: int, topo: Topology) -> list[int]:
        """The destinations whose rows worker ``w`` sends compressed."""
        if self.compress == "across_hosts":
            return [d for d in range(n) if not topo.same_host(w, d)]
        return [d for d in range(n) if d != w] if self.compress else []

    def _collect(self, infos: list[tuple[int, int, Any]], actors: list) -> list[dict]:
        """Every task's statistics; the first failure becomes a typed error (a dead worker:
        WorkerLostError naming it), the query's tasks still queued are cancelled."""
        ray = _ray()
        pending = {ref: (w, sid) for w, sid, ref in infos}
        done: dict[Any, dict] = {}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=self.timeout)
            if not ready:
                # the earliest unfinished stage's workers hold the others up
                first = min(sid for _, sid in pending.values())
                stuck = sorted({w for w, sid in pending.values() if sid == first})
                _cancel(pending)
                names = ", ".join(self._describe(actors[i], i) for i in stuck)
                raise WorkerTimeoutError(f"worker {names} finished no task of stage {first} within "
                                         f"worker_timeout={self.timeout} s: the query was stopped and the "
                                         f"worker(s) replaced", stuck)
            ref = ready[0]
            w, sid = pending.pop(ref)
            try:
                done[ref] = ray.get(ref)
            except ray.exceptions.RayError as e:
                _cancel(pending)
                raise self._failure(e, w, sid, actors) from None
        return [done[ref] for _, _, ref in infos]

    def _failure(self, e: Exception, w: int, sid: int, actors: list) -> HetdbError:
        dead = _dead_actors(e, w, actors)
        if dead:
            names = ", ".join(self._describe(actors[i], i) for i in dead)
            return WorkerLostError(f"worker {names} died while the query ran (stage {sid}): killed, out of "
                                   f"memory or its host lost; the other workers are unaffected", dead)
        cause = getattr(e, "cause", None)
        if isinstance(cause, HetdbError):
            return cause
        return DistributedError(f"worker {w} failed in stage {sid}: {type(cause or e).__name__}: {cause or e}")

    def _slot(self, actor) -> int | None:
        return next((i for i, a in enumerate(self.actors) if a is actor), None)

    def _describe(self, actor, i: int) -> str:
        slot = self._slot(actor)
        info = None if slot is None else self._infos[slot]
        return f"{i} (pid {info[0]}, node {info[1][:12]})" if info else str(i)

    def _replace(self, actors: list) -> None:
        """Starts a new worker in place of each of ``actors`` (dead ones) for the next queries."""
        ray = _ray()
        for a in list(actors):
            i = self._slot(a)
            ray.kill(a)
            self.actors[i] = self._start(self.gpus[i])
            self._infos[i] = None
        self._group = None

    def execute(self, engine, sql: str, analyze: bool = False, plan: Any = None
                ) -> tuple[pa.Table, dict[str, Any], DistPlan]:
        """Lowers and runs ``sql``; a query that loses workers runs again (``worker_retries`` times)
        on the remaining ones, exact because it only reads; the dead ones are replaced for the next
        query. With a collective exchange every worker is replaced (the others may wait for the lost
        one inside the collective) and the query runs again on the new ones."""
        self.worker_info()
        actors, topo = list(self.actors), self.topology()
        lost: list[str] = []
        for attempt in range(self.retries + 1):
            dplan = self.plan(engine, sql, len(actors), plan)
            try:
                table, stats = self.run(dplan, analyze, actors, topo)
            except WorkerTimeoutError as e:
                self._replace(actors if self.transport(actors) != "object store" else [actors[i] for i in e.workers])
                raise
            except WorkerLostError as e:
                gone = [actors[i] for i in e.workers]
                lost.append(str(e))
                if self.transport(actors) != "object store":
                    # the others may wait inside a collective exchange for the lost worker (NCCL has
                    # no timeout): the whole group is replaced, and the query runs again on it
                    self._replace(actors)
                    if attempt == self.retries:
                        raise
                    actors, topo = list(self.actors), self.topology()
                    continue
                self._replace(gone)
                if attempt == self.retries or len(gone) == len(actors):
                    raise
                keep = [i for i in range(len(actors)) if i not in e.workers]
                actors = [actors[i] for i in keep]
                topo = Topology.of([topo.hosts[i] for i in keep])
                continue
            stats["workers_lost"] = lost
            return table, stats, dplan
        raise AssertionError("unreachable")

    def sql(self, engine, sql: str) -> tuple[pa.Table, dict[str, Any]]:
        t0 = time.perf_counter()
        plan = engine.logical_plan(sql)
        if plan_tables(plan) is None:
            # files and registered frames in FROM live in this process: the workers cannot read them
            table, stats = engine.execute(sql)
            stats.update(workers=1, stages=[], bytes_shuffled=0,
                         dist_fallback="reads a file or registered frame: runs in this process")
            return table, stats
        table, stats, _ = self.execute(engine, sql, plan=plan)
        stats["seconds"] = time.perf_counter() - t0
        return table, stats

    def explain(self, engine, sql: str, analyze: bool = False) -> str:
        if not analyze:
            return format_plan(self.plan(engine, sql))
        table, stats, dplan = self.execute(engine, sql, analyze=True)
        return format_plan(dplan, stats) + f"\nTotal: {table.num_rows:,} rows in " \
            f"{stats['exec_seconds'] * 1000:.1f} ms on {stats['workers']} worker(s), {stats['hosts']} host(s); " \
            f"bytes sent between workers={stats['bytes_shuffled']:,} " \
            f"(raw {stats['bytes_shuffled_raw']:,}) in {stats['messages']:,} messages"

    def close(self) -> None:
        ray = _ray()
        for a in self.actors:
            ray.kill(a)
        self.actors = []
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()


def plan_query(engine, sql: str, workers: int, broadcast_rows: int = BROADCAST_ROWS, plan: Any = None) -> DistPlan:
    """``sql`` (or its logical ``plan``) lowered for ``workers`` workers."""
    plan = plan if plan is not None else engine.logical_plan(sql)
    counts = {name: engine.db.table(name).num_rows for name in plan_tables(plan) or ()}
    return lower(plan, workers, broadcast_rows, counts, Estimator(engine.db).rows,
                 lambda table, column: _stored_range(engine.db, table, column))


def _stored_range(db, table: str, column: str) -> tuple[int, int] | None:
    """[min, max] of a stored integer column from its zone maps (None where one is missing)."""
    try:
        reader = db.table(table)
        zones = [reader.zone_map(column, rg) for rg in range(reader.num_row_groups)]
    except Exception:  # noqa: BLE001 - statistics steer the plan only; without them: hash partitioning
        return None
    zones = [z for z in zones if z.num_rows > z.null_count]
    if not zones or any(not isinstance(z.min, int) or not isinstance(z.max, int) for z in zones):
        return None
    return min(z.min for z in zones), max(z.max for z in zones)


def _cancel(refs) -> None:
    """Cancels the query's tasks behind ``refs`` that have not run yet."""
    ray = _ray()
    for ref in refs:
        try:
            ray.cancel(ref)
        except (ray.exceptions.RayError, ValueError, TypeError):
            pass  # finished, or its actor is gone


def _dead_actors(e: BaseException, w: int, actors: list) -> list[int]:
    """The workers an error says died: a task's own actor (RayActorError raised for it) or the actor
    named by a RayActorError a task met reading another worker's output."""
    ray = _ray()
    ids = {a._actor_id.hex(): i for i, a in enumerate(actors)}
    seen = set()
    x: BaseException | None = e
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        if isinstance(x, ray.exceptions.RayActorError):
            i = ids.get(getattr(x, "actor_id", None) or "")
            return [i if i is not None else w]
        x = getattr(x, "cause", None) or x.__cause__
    return []


def _route(exchange: str, w: int, n: int, topo: Topology) -> list[tuple[int, list[int]]]:
    """Worker ``w``'s messages of one exchange: (recipient, destinations whose rows it carries)."""
    if exchange in ("gather", "result"):
        return [(0, [0])]
    if exchange == "hash" and topo.two_level:
        host = topo.hosts[w]
        return [(p, [d for d in range(n) if topo.relay(host, d) == p]) for p in topo.members(host)]
    if exchange == "broadcast" and topo.two_level:
        # one message to each worker of its own host, and one per other host: to the worker there
        # with its local index (modulo that host's size), which hands it on to its host's workers
        local = [(d, [d]) for d in topo.members(topo.hosts[w])]
        other = sorted(set(topo.hosts) - {topo.hosts[w]})
        return local + [(topo.relay(h, w), topo.members(h)) for h in other]
    return [(d, [d]) for d in range(n)]
