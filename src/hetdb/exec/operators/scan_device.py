"""Stored-table scans on the GPU: zone maps decide which row groups are read at all (before any I/O),
then one ``PageStreamer`` per scan delivers the surviving row groups of the needed columns: pages the
connection's ``DevicePageCache`` holds stay in GPU memory, pages in the process-wide pinned host tier
(``HostPageCache``) are copied straight out of it, the rest are read with O_DIRECT (into the host tier
when it has room) and copied asynchronously. Pushed filters run on the device.

The driver runs GPU pipelines with one worker, so morsels (row groups) arrive in the order the
streamer delivers them.
"""

from __future__ import annotations

from typing import Any

from hetdb.column import Batch
from hetdb.exec.columns import filter_batch
from hetdb.exec.operators.base import ExecContext


class DeviceScanState:
    """The streamer of one scan (created at the first read) and the zone-map verdicts."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.verdicts: dict[int, str] = {}
        self.streamer = None
        self.iterator = None
        self.seen = (0,) * 6  # streamer counters already added to the statistics (see _account)

    def close(self) -> None:
        if self.streamer is not None:
            self.streamer.close()
            self.streamer = None
            self.iterator = None


def plan_device_scan(op: Any, ctx: ExecContext, state: DeviceScanState) -> list[int]:
    """The row groups to stream: those zone maps cannot rule out (pruned pages are never read)."""
    keep = []
    skipped = 0
    for rg in range(state.reader.num_row_groups):
        v = op.verdict(ctx, state.reader, rg)
        if v == "skip":
            skipped += len(op.scan.fields)
            continue
        state.verdicts[rg] = v
        keep.append(rg)
    if skipped:
        ctx.add(op.op_id, pages_skipped=skipped)
    return keep


def _start(op: Any, ctx: ExecContext, state: DeviceScanState, row_groups: list[int]) -> None:
    from hetdb.backend.gpu.stream import PageStreamer

    columns = list(dict.fromkeys(op.scan.column_names))
    state.streamer = PageStreamer(state.reader, columns, row_groups, budget=ctx.device.budget,
                                  cache=ctx.device.cache, host_cache=ctx.device.host_tier(ctx.options))
    state.iterator = iter(state.streamer)


def read_device_scan(op: Any, ctx: ExecContext, rg: int, state: DeviceScanState,
                     apply_filters: bool = True) -> list[Batch]:
    """Row group ``rg`` on the device; pushed filters applied unless a fused kernel evaluates them."""
    from hetdb.exec.operators.scan import conjunction, split_batches

    if state.iterator is None:
        _start(op, ctx, state, sorted(state.verdicts))
    got, batch = next(state.iterator)
    if got != rg:
        raise AssertionError(f"device scan of {op.scan.table} expected row group {rg}, streamer gave {got}")
    _account(op, ctx, state)
    scan = op.scan
    cols = {f.cid: batch.columns[name] for f, name in zip(scan.fields, scan.column_names)}
    out = Batch(cols, batch.num_rows)
    pred = conjunction(scan.filters)
    if apply_filters and pred is not None and state.verdicts.get(rg) != "all":
        out = filter_batch(ctx.backend, out, ctx.evaluator.predicate(pred, out))
    ctx.add(op.op_id, rows_in=batch.num_rows, rows_out=out.num_rows)
    return split_batches(ctx, out) if out.num_rows else []


def _account(op: Any, ctx: ExecContext, state: DeviceScanState) -> None:
    st = state.streamer.stats
    now = (st.pages_read, st.bytes_read, st.pages_cached, st.bytes_h2d, st.pages_host, st.bytes_host)
    d = [a - b for a, b in zip(now, state.seen)]
    state.seen = now
    # On the GPU a page is "read" when it is brought to the device, from storage or from the pinned
    # host tier; bytes_read counts storage bytes only, so a page served by the host tier shows as a
    # page read without bytes read (the connection's DeviceResources counts them apart too).
    ctx.add(op.op_id, pages_read=d[0] + d[4], bytes_read=d[1], pages_cached=d[2], bytes_host_to_device=d[3])
    ctx.device.count_host_tier(pages=d[4], nbytes=d[5])
