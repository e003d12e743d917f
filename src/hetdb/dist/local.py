"""The workers of a distributed plan in this process, without Ray: one ``Worker`` object per worker
(on the CPU, or each on the GPU with the GPU executor), a thread per worker of a stage, messages
passed as they are, and hash and broadcast exchanges through a ``LocalGroup`` (device buffers
between GPU workers, decoded on the device). The worker code is the Ray runtime's; only the transport
and the placement differ. Used by tests and to run the GPU workers' path on a machine without Ray."""

from __future__ import annotations

import functools
import threading
import uuid
from typing import Any

import pyarrow as pa

from hetdb.dist.collective import LocalGroup
from hetdb.dist.lowering import BROADCAST_ROWS, DistPlan
from hetdb.dist.runtime import plan_query
from hetdb.dist.worker import Worker


class LocalRunner:
    """``workers`` workers on the database at ``path``; ``gpu``: each runs its stages on the GPU;
    ``collective``: hash and broadcast exchanges through the group (else as messages, the object
    store's way); ``compress``: exchanged batches are encoded."""

    def __init__(self, path: str, workers: int, options: dict[str, Any] | None = None, gpu: bool = False,
                 collective: bool = True, compress: bool = True, broadcast_rows: int = BROADCAST_ROWS):
        opts = dict(options or {})
        opts.setdefault("threads", 1)
        self.workers = [Worker(path, opts, gpu) for _ in range(workers)]
        self.collective = collective and workers > 1
        self.compress = compress
        self.broadcast_rows = broadcast_rows
        self.group = LocalGroup(workers)
        lock = threading.Lock()  # the engines run one at a time (their caches are per process)
        for rank, w in enumerate(self.workers):
            w.fetch = list
            w.compute_lock = lock
            w.comm = self.group.member(rank) if self.collective else None

    def plan(self, sql: str) -> DistPlan:
        return plan_query(self.workers[0].engine, sql, len(self.workers), self.broadcast_rows)

    def sql(self, sql: str) -> tuple[pa.Table, list[dict]]:
        """The result of ``sql`` and the statistics of every worker's stage run."""
        return self.run(self.plan(sql))

    def run(self, dplan: DistPlan) -> tuple[pa.Table, list[dict]]:
        n = len(self.workers)
        query = uuid.uuid4().hex
        single_fed = {sid for s in dplan.stages if s.single for sid in s.inputs}
        outs: dict[int, dict[int, list]] = {}
        infos: list[dict] = []
        for stage in dplan.stages:
            runs_on = [0] if stage.single else list(range(n))
            collective = self.collective and stage.exchange in ("hash", "broadcast") and not stage.single \
                and stage.sid not in single_fed
            route = [(0, [0])] if stage.exchange in ("gather", "result") else [(d, [d]) for d in range(n)]
            results = self._each(runs_on, functools.partial(self._run_stage, stage, outs, route, query, collective))
            inbox: dict[int, list] = {d: [] for d in range(n)}
            for res in results:
                for (recipient, _), message in zip(route, res[:-1]):
                    inbox[recipient].append(message)
                infos.append(res[-1])
            outs[stage.sid] = inbox
        table = pa.concat_tables([item for m in outs[dplan.result.sid][0] for _, item in m])
        fields = dplan.output.fields
        return pa.Table.from_arrays([table.column(f.cid) for f in fields], names=[f.name for f in fields]), infos

    def _run_stage(self, stage: Any, outs: dict, route: list, query: str, collective: bool, w: int) -> tuple:
        n = len(self.workers)
        return self.workers[w].run(w, n, stage, {sid: outs[sid][w] for sid in stage.inputs}, route,
                                   [d for d in range(n) if d != w] if self.compress else [], False, query,
                                   collective)

    def _each(self, ranks: list[int], fn) -> list:
        """``fn(rank)`` for every rank at once (a collective exchange needs them all), in rank order;
        the first error is raised after the others stopped (a failed rank breaks the group's wait)."""
        results: list = [None] * len(ranks)
        errors: list[BaseException] = []

        def one(i: int, rank: int) -> None:
            try:
                results[i] = fn(rank)
            except BaseException as e:  # noqa: BLE001 - re-raised below, in the caller's thread
                errors.append(e)
                self.group._barrier.abort()

        threads = [threading.Thread(target=one, args=(i, r)) for i, r in enumerate(ranks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.group = LocalGroup(len(self.workers))  # a broken group is not reused
            for rank, w in enumerate(self.workers):
                w.comm = self.group.member(rank) if self.collective else None
            raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
        return results

    def close(self) -> None:
        for w in self.workers:
            w.engine.close()
