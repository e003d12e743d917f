"""One worker: runs stages of a distributed plan with hetdb's own physical planner and engine over
its share of the data, and cuts the stage's output into the partitions of its exchange."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any

import numpy as np
import pyarrow as pa

from hetdb.column import Batch
from hetdb.dist.collective_exchange import ReceivedSource
from hetdb.dist.exchange import ShardScan, exchange_scan, hash_partition, partition_ids, range_ids
from hetdb.dist.lowering import ExchangeInput, Stage
from hetdb.dist.shuffle_codec import EncodedBatch, _few_distinct, decode_batch, encode_batch
from hetdb.errors import HetdbError
from hetdb.exec.physical import PhysicalPlan, PhysicalPlanner, _Open
from hetdb.plan import logical as L
from hetdb.plan.expr import ColumnRef, Field

# Exchange batches of fewer rows go uncompressed (their layout would outweigh what the codecs save).
COMPRESS_MIN_ROWS = 64


def _sizes(message: list) -> tuple[int, int, int]:
    """(rows, raw bytes, bytes on the wire) of one message; a batch it carries for several
    destinations (a broadcast to a relay) is one object, serialized and counted once."""
    rows = raw = wire = 0
    seen: set[int] = set()
    for _, item in message:
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, EncodedBatch):
            rows, raw, wire = rows + item.num_rows, raw + item.raw_bytes, wire + item.nbytes
        else:
            rows, raw, wire = rows + item.num_rows, raw + item.nbytes, wire + item.nbytes
    return rows, raw, wire


def _ray_get(refs: list[Any]) -> list[Any]:
    import ray

    return ray.get(refs)


def _receive(index: int, inputs: dict[int, list[Any]], fetch: Any = _ray_get
             ) -> tuple[dict[int, list[pa.Table]], float]:
    """The tables addressed to worker ``index`` in the messages of ``inputs`` (``fetch``: references
    -> messages; Ray's object store by default), compressed ones decoded, and the seconds decoding
    took."""
    tables: dict[int, list[pa.Table]] = {}
    seconds = 0.0
    for sid, refs in inputs.items():
        got = []
        for message in fetch(list(refs)):
            for d, item in message:
                if d != index:
                    continue
                if isinstance(item, EncodedBatch):
                    t0 = time.perf_counter()
                    item = decode_batch(item)
                    seconds += time.perf_counter() - t0
                got.append(item)
        tables[sid] = got
    return tables, seconds


class StagePlanner(PhysicalPlanner):
    """hetdb's physical planner with the two leaves of a stage: received exchange data (Arrow tables
    from the object store, or batches on the worker's backend from a collective exchange:
    ``received``), and this worker's share of a stored table."""

    def __init__(self, share: int, shares: int, inputs: dict[int, list[pa.Table]],
                 received: dict[int, list[Batch]] | None = None):
        super().__init__()
        self.share, self.shares, self.inputs = share, shares, inputs
        self.received = received or {}

    def _build(self, node: L.Node) -> _Open:
        if isinstance(node, ExchangeInput) and node.stage in self.received:
            return _Open(ReceivedSource(stage=node.stage, kind=node.kind, fields=node.fields,
                                        batches=tuple(self.received[node.stage]), op_id=self._id()))
        if isinstance(node, ExchangeInput):
            return _Open(exchange_scan(node.stage, node.kind, node.fields, tuple(self.inputs.get(node.stage, ())),
                                       self._id()))
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


def plan_stage(stage: Stage, share: int, shares: int, inputs: dict[int, list[pa.Table]],
               received: dict[int, list[Batch]] | None = None) -> PhysicalPlan:
    """The physical plan of ``stage`` on worker ``share``; a single-worker stage reads whole tables
    (a query that falls back to one worker runs as such a stage)."""
    if stage.single:
        share, shares = 0, 1
    return StagePlanner(share, shares, inputs, received).plan(stage_output(stage))


def partition_order(table: pa.Table, keys: list[str], parts: int, key_range: tuple[int, int] | None
                    ) -> tuple[np.ndarray, list[int]]:
    """(rows ordered by partition, partition bounds) of ``table`` cut as ``hash_partition`` cuts it."""
    ids = partition_ids(table, keys, parts) if key_range is None else range_ids(table, keys[0], parts, *key_range)
    order = np.argsort(ids, kind="stable")
    return order, [0, *np.cumsum(np.bincount(ids, minlength=parts)).tolist()]


def _exchange_inputs(node: L.Node) -> list[ExchangeInput]:
    if isinstance(node, ExchangeInput):
        return [node]
    return [x for k in node.inputs() for x in _exchange_inputs(k)]


def _with_dictionaries(table: pa.Table) -> pa.Table:
    """String columns whose sample has few distinct values dictionary-encoded (their codes are what
    a GPU encodes; other strings are encoded on the host)."""
    for i, name in enumerate(table.column_names):
        col = table.column(name)
        if (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) and table.num_rows \
                and _few_distinct(col.combine_chunks()):
            table = table.set_column(i, name, col.combine_chunks().dictionary_encode())
    return table


class Worker:
    """A worker reading the database directory at ``path`` (shared storage). Each call says which
    worker of how many it is for that query (a query retried after a worker loss has fewer)."""

    def __init__(self, path: str, options: dict[str, Any], gpu: bool = False):
        from hetdb.connection import _make_options
        from hetdb.exec.engine import QueryEngine
        from hetdb.storage import Database

        if gpu:  # Ray gave this worker one GPU (CUDA_VISIBLE_DEVICES): its stages run on it
            from hetdb.backend.gpu import GpuBackend

            backend, device = GpuBackend(), "gpu"
        else:
            from hetdb.backend.cpu import CpuBackend

            backend, device = CpuBackend(), "cpu"
        self.db = Database.open(path, create=False)
        self.engine = QueryEngine(self.db, backend, _make_options(device, options))
        self.comm: Any = None  # the communicator of collective exchanges (join_group)
        self.query = ""
        self.received: dict[int, list[Batch]] = {}  # stage id -> batches of the running query
        self.collective_stages: set[int] = set()  # its stages whose exchange was collective
        # how messages are fetched (Ray's object store) and what a stage's engine run holds (nothing):
        # the one-process runner (dist/local.py) passes messages themselves and serialises engines
        self.fetch: Any = _ray_get
        # a GPU stage reads what came through the object store as device batches too (the exchange
        # scan of Arrow tables is the CPU engine's); tests turn it on for CPU workers
        self.batch_inputs = gpu
        self.compute_lock: Any = contextlib.nullcontext()

    def nccl_id(self) -> tuple:
        """A new NCCL id (worker 0 makes it for the group)."""
        from hetdb.dist.nccl import unique_id

        return unique_id()

    def join_group(self, kind: str, workers: int, rank: int, token: Any) -> bool:
        """Becomes rank ``rank`` of a collective group of ``workers``: NCCL (``token`` the id of
        ``nccl_id``; every worker of the group must call this at once) or a Ray mailbox (``token``
        the mailbox actor)."""
        from hetdb.dist.collective import MailboxMember
        from hetdb.dist.nccl import NcclExchange

        if self.comm is not None:
            self.comm.close()
            self.comm = None
        self.comm = NcclExchange(workers, rank, token) if kind == "nccl" else MailboxMember(token, workers, rank)
        return True

    def _on_device(self, stage: Stage, tables: dict[int, list[pa.Table]]) -> dict[int, list[Batch]]:
        """The received Arrow tables of each input stage as batches on this worker's device (string
        columns with few distinct values dictionary-coded, one dictionary per column)."""
        from hetdb.dist.collective_exchange import share_dictionaries
        from hetdb.exec.hostutil import batch_to_device

        backend = self.engine.backend
        dtypes = {f.cid: f.dtype for node in _exchange_inputs(stage.plan) for f in node.fields}
        return {sid: share_dictionaries(backend, [
            batch_to_device(backend, Batch.from_arrow(_with_dictionaries(t), dtypes), {}) for t in got if t.num_rows])
            for sid, got in tables.items()}

    def _collective(self, index: int, workers: int, stage: Stage, output: L.Output, table: pa.Table,
                    compress: bool) -> tuple[list, float]:
        """This worker's side of the collective exchange of ``stage``: the batches it received are
        kept for the next stages; returns the messages it sent and the seconds the exchange took."""
        from hetdb.dist.collective_exchange import CollectiveExchange
        from hetdb.exec.hostutil import batch_to_device

        if self.comm is None or self.comm.workers != workers or self.comm.rank != index:
            raise HetdbError(f"worker {index} has no collective group of {workers} workers for stage {stage.sid}")
        t0 = time.perf_counter()
        backend = self.engine.backend
        keys = [f.cid for f in output.fields[len(stage.fields):]]
        data = _with_dictionaries(table.drop_columns(keys))
        dtypes = {f.cid: f.dtype for f in stage.fields}
        batch = batch_to_device(backend, Batch.from_arrow(data, dtypes), {})
        exchange = CollectiveExchange(self.comm, backend, compress)
        if stage.exchange == "hash":
            order, bounds = partition_order(table, keys, workers, stage.key_range)
            got, messages = exchange.exchange(batch, backend.xp.asarray(order), bounds)
        else:
            got, messages = exchange.exchange(batch)
        self.received[stage.sid] = got
        self.collective_stages.add(stage.sid)
        return messages, time.perf_counter() - t0

    def info(self) -> tuple[int, str]:
        """(process id, Ray node id) of this worker."""
        import os

        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def run(self, index: int, workers: int, stage: Stage, inputs: dict[int, list[Any]],
            route: list[tuple[int, list[int]]], compress: list[int], analyze: bool = False,
            query: str = "", collective: bool = False) -> tuple:
        """Runs ``stage`` as worker ``index`` of ``workers`` on the exchange messages of ``inputs``
        (stage id -> references to the messages addressed to this worker; for a stage whose exchange
        was collective, what this worker received is kept here); returns one message per ``route``
        entry (recipient, the destinations whose rows it carries), then the statistics. Rows for the
        destinations in ``compress`` are sent as encoded batches. ``collective``: the stage's
        exchange goes through this worker's collective group (every worker of the query runs it),
        its messages are empty. ``query`` names the query (received batches of another are dropped)."""
        t0 = time.perf_counter()
        if query != self.query:
            self.query, self.received, self.collective_stages = query, {}, set()
        tables, decode_seconds = _receive(index, inputs, self.fetch)
        received = {}
        for sid in inputs:
            if sid in self.collective_stages:
                if sid not in self.received:
                    raise HetdbError(f"stage {stage.sid} reads the collective exchange of stage {sid}, which "
                                     f"another stage of the query already took on worker {index}")
                received[sid] = self.received.pop(sid)
        if self.batch_inputs:
            received.update(self._on_device(stage, {sid: t for sid, t in tables.items() if sid not in received}))
            tables = {}
        physical = plan_stage(stage, index, workers, tables, received)
        output = stage_output(stage)
        with self.compute_lock:
            table, stats, physical = self.engine.run_plan(output, physical)
        if collective:
            sent, seconds = self._collective(index, workers, stage, output, table, bool(compress))
            info = {"stage": stage.sid, "worker": index, "rows": table.num_rows, "messages": sent,
                    "collective": type(self.comm).__name__, "exchange_seconds": seconds,
                    "encode_seconds": 0.0, "decode_seconds": decode_seconds,
                    "seconds": time.perf_counter() - t0, "bytes_read": stats["bytes_read"],
                    "plan": physical.format(stats["operators"]) if analyze else ""}
            return (*([] for _ in route), info)
        n = workers
        if stage.exchange == "hash":
            parts = hash_partition(table, [f.cid for f in output.fields[len(stage.fields):]], n, stage.key_range)
        else:
            parts = [table] * n
        encoded: dict[int, Any] = {}
        encode_seconds = 0.0
        messages = []
        for _, dests in route:
            items = []
            for d in dests:
                if d != index and d in compress and parts[d].num_rows >= COMPRESS_MIN_ROWS:
                    key = d if stage.exchange == "hash" else -1  # one table sent to all: encoded once
                    if key not in encoded:
                        batch = encode_batch(parts[d])
                        encode_seconds += batch.encode_seconds
                        # a batch its layout makes larger goes as it is
                        encoded[key] = batch if batch.nbytes < parts[d].nbytes else parts[d]
                    items.append((d, encoded[key]))
                else:
                    items.append((d, parts[d]))
            messages.append(items)
        info = {"stage": stage.sid, "worker": index, "rows": table.num_rows,
                "messages": [(r, 1, *_sizes(m)) for (r, _), m in zip(route, messages) if r != index],
                "encode_seconds": encode_seconds,
                "decode_seconds": decode_seconds, "seconds": time.perf_counter() - t0,
                "bytes_read": stats["bytes_read"],
                "plan": physical.format(stats["operators"]) if analyze else ""}
        return (*messages, info)

    def relay(self, index: int, sid: int, refs: list[Any], dests: list[int]) -> tuple:
        """Second level of a two-level exchange: the messages of this host's workers regrouped into
        one message per destination this worker relays for (encoded batches are forwarded as they
        are), then the statistics."""
        import ray

        t0 = time.perf_counter()
        by_dest: dict[int, list] = {d: [] for d in dests}
        for message in ray.get(list(refs)):
            for d, item in message:
                by_dest[d].append((d, item))
        out = [by_dest[d] for d in dests]
        info = {"stage": sid, "worker": index, "relay": True,
                "messages": [(d, 2, *_sizes(m)) for d, m in zip(dests, out) if d != index],
                "seconds": time.perf_counter() - t0}
        return (*out, info)

    def close(self) -> None:
        if self.comm is not None:
            self.comm.close()
        self.engine.close()
