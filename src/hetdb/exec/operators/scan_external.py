"""Scans of data read in place (files in FROM, registered Python objects): morsel by morsel, each
morsel read by its own reader (thread-safe), Parquet row groups and files pruned by statistics and
partition values, only the needed columns read, pushed filters evaluated right after the read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hetdb.column import Batch
from hetdb.exec.columns import filter_batch
from hetdb.exec.hostutil import batch_to_device, note_host_step
from hetdb.exec.operators.base import ExecContext, Source, Timer
from hetdb.exec.operators.scan import _prune_fn, conjunction, split_batches
from hetdb.plan.logical import Scan
from hetdb.storage.external import lookup_source


@dataclass
class ExternalScanState:
    source: Any
    morsels: list


@dataclass(frozen=True)
class ExternalScan(Source):
    scan: Scan = None

    def describe(self) -> str:
        f = f" filters=[{' AND '.join(map(str, self.scan.filters))}]" if self.scan.filters else ""
        return f"ExternalScan {self.scan.table} [{', '.join(self.scan.column_names)}]{f}"

    def init_global(self, ctx: ExecContext) -> ExternalScanState:
        scan = self.scan
        source = lookup_source(scan.path)
        cid_of = {f.cid: n for f, n in zip(scan.fields, scan.column_names)}
        prune = _prune_fn() if ctx.options.zone_maps else None
        plan = source.plan(list(dict.fromkeys(scan.column_names)), scan.filters, cid_of, prune)
        ctx.add(self.op_id, files_read=plan.files_total - plan.files_skipped, files_skipped=plan.files_skipped,
                row_groups_read=plan.row_groups_total - plan.row_groups_skipped,
                row_groups_skipped=plan.row_groups_skipped, pages_skipped=plan.row_groups_skipped)
        return ExternalScanState(source, plan.morsels)

    def morsels(self, ctx: ExecContext, state: ExternalScanState) -> list:
        return list(range(len(state.morsels)))

    def read(self, ctx: ExecContext, index: int, state: ExternalScanState) -> list[Batch]:
        with Timer(ctx, self.op_id):
            scan = self.scan
            arrays = state.source.read(state.morsels[index], list(dict.fromkeys(scan.column_names)))
            n = len(next(iter(arrays.values()))) if arrays else 0
            dtypes = {f.cid: f.dtype for f in scan.fields}
            table = pa.table({f.cid: arrays[c] for f, c in zip(scan.fields, scan.column_names)}) \
                if scan.fields else pa.table({})
            host = Batch.from_arrow(table, dtypes) if scan.fields else Batch({}, n)
            note_host_step(ctx.backend, "reading files in place (pyarrow)")
            batch = batch_to_device(ctx.backend, host)
            pred = conjunction(scan.filters)
            if pred is not None and batch.num_rows:
                batch = filter_batch(ctx.backend, batch, ctx.evaluator.predicate(pred, batch))
            ctx.add(self.op_id, rows_in=n, rows_out=batch.num_rows, pages_read=1,
                    bytes_read=sum(a.nbytes for a in arrays.values()))
            return split_batches(ctx, batch) if batch.num_rows else []
