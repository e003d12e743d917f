"""Hot and warm table scans of compiled GPU pipelines (exec/compiled.py) without the page streamer.

When the device cache holds every page of the scan (hot), or the pinned host tier holds them and the
whole scan fits in the device cache (warm: ``warm_fill`` copies them back to back first), the row
groups' batches are made straight from the cached Columns, as the dense fused path's one launch over
every cached page does (``scan_device.resident_pages``), instead of a streamer delivering each row
group (~150 us of Python per row group at TPC-H SF 10: 9 ms for lineitem's 58). The pages stay
pinned in the cache until the pipeline's kernels are queued, since its sink may make room in the
device memory budget meanwhile. A page kept compressed is handed out as a fresh EncodedColumn
(stream_pages._delivered), so what a consumer decodes from it (a batch cut to ``batch_rows`` slices
its values) goes with the batch instead of staying in the cache's entry.
"""

from __future__ import annotations

from typing import Any

from hetdb.column import Batch
from hetdb.exec.compiled_features import off
from hetdb.exec.operators.base import ExecContext, Timer
from hetdb.exec.operators.scan import TableScan, split_batches


class ResidentScan:
    """The cached pages of a scan's row groups, handed out as batches per morsel."""

    def __init__(self, ctx: ExecContext, src: TableScan, resident: Any, fill: Any, positions: dict[int, int]) -> None:
        self.ctx, self.src = ctx, src
        self.resident, self.fill = resident, fill
        self.positions = positions  # morsel index -> position among the resident row groups
        self.pinned: list = []
        try:
            ctx.device.cache.pin_many(resident.keys)  # (all or none)
        except BaseException:
            self.close()
            raise
        self.pinned = list(resident.keys)

    def batches(self, index: int) -> list[Batch]:
        """The batches of morsel ``index`` (its row group, cut to ``batch_rows``)."""
        from hetdb.backend.gpu.stream_pages import _delivered

        rows, cols = self.resident.pages[self.positions[index]]
        scan = self.src.scan
        batch = Batch({f.cid: _delivered(cols[name]) for f, name in zip(scan.fields, scan.column_names)}, rows)
        return split_batches(self.ctx, batch) if rows else []

    def cid_pages(self) -> list[tuple[int, dict[str, Any]]]:
        """(rows, {cid: Column}) of every row group, in scan order (a paged kernel's pages)."""
        from hetdb.backend.gpu.stream_pages import _delivered

        scan = self.src.scan
        return [(rows, {f.cid: _delivered(cols[name]) for f, name in zip(scan.fields, scan.column_names)})
                for rows, cols in self.resident.pages]

    def close(self) -> None:
        """Call once the kernels reading the pages are queued: unpins them (and the host tier's)."""
        cache = self.ctx.device.cache
        try:
            self.resident.release()
        finally:
            pinned, self.pinned = self.pinned, []
            if pinned:
                cache.unpin_many(pinned)
            if self.fill is not None:
                self.fill.close()
                self.fill = None


def resident_scan(ctx: ExecContext, src: Any, gsrc: Any, morsels: list[tuple[int, Any]]) -> ResidentScan | None:
    """A ResidentScan over ``morsels`` (row groups) of the table scan ``src``, or None when its pages
    must be streamed (not all in the device cache, nor all in the host tier with room to fill)."""
    from hetdb.exec.operators.scan_device import resident_or_warm

    if ctx.device is None or not morsels or not isinstance(src, TableScan) or off("resident_scans"):
        return None
    row_groups = [rg for _, rg in morsels]
    names = list(dict.fromkeys(src.scan.column_names))
    with Timer(ctx, src.op_id):
        got = resident_or_warm(src, ctx, gsrc, row_groups, names)
    if got is None:
        return None
    resident, fill = got
    return ResidentScan(ctx, src, resident, fill, {index: k for k, (index, _) in enumerate(morsels)})
