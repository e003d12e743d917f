"""The device's choice, per query, of the columns its page cache keeps decoded while the database's
pages stay compressed there (cache/placement.py decides; this module feeds it and applies it).

A GPU query with ``gpu_compressed_cache`` resolved to compressed ("auto": the decoded database does
not fit the device cache) records the columns its scans read, asks the connection's
``DecodedPlacement`` for the columns to keep decoded, and, when that choice changes, evicts the
cached compressed pages of the columns it now keeps decoded (their next scan copies them from the
host tier again and decodes them on arrival: once). Its scans get the choice per table
(``ExecContext.decoded_columns``: stream.py ``PageStreamer(decoded=)``); the fused kernels read such
pages as value arrays (codegen/runtime.py ``FusedPipeline.variant``).
"""

from __future__ import annotations

from typing import Any

from hetdb.cache.base import PageKey
from hetdb.cache.pages import column_device_bytes, memoized
from hetdb.cache.placement import ColumnForm, DecodedPlacement, column_cost

_SCANS: dict[int, tuple[Any, tuple]] = {}  # id(physical plan) -> (plan, ((table, columns), ...))


def plan_scans(physical: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(table, stored column names) of every table scan of a physical plan (once per plan object)."""
    from hetdb.exec.operators.scan import TableScan

    hit = _SCANS.get(id(physical))
    if hit is None or hit[0] is not physical:
        scans = tuple((op.scan.table, tuple(op.scan.column_names)) for p in physical.pipelines
                      for op in p.operators() if isinstance(op, TableScan))
        if len(_SCANS) >= 256:
            _SCANS.clear()
        hit = _SCANS[id(physical)] = (physical, scans)
    return hit[1]


def column_form(reader: Any, column: str) -> ColumnForm:
    """The device bytes of a column of ``reader``'s version kept compressed and decoded, and its
    decode cost (once per table version)."""

    def compute() -> ColumnForm:
        rows: dict[str, int] = {}
        for rg in range(reader.num_row_groups):
            codec = reader.page_codec(column, rg) if hasattr(reader, "page_codec") else "plain"
            rows[codec] = rows.get(codec, 0) + reader.row_group_rows(rg)
        return ColumnForm((reader.name, column), column_device_bytes(reader, column, True),
                          column_device_bytes(reader, column, False), column_cost(rows))

    return memoized(reader, ("column form", column), compute)


def place_decoded(device: Any, db: Any, physical: Any) -> dict[str, frozenset[str]]:
    """Record the query's columns and return the columns kept decoded, per table (see the module
    docstring); evicts the cached compressed pages of columns the choice has just made decoded."""
    placement: DecodedPlacement | None = device.placement
    if placement is None:
        placement = device.placement = DecodedPlacement()
    readers = {}
    keys, costly = [], []
    for table, columns in plan_scans(physical):
        reader = readers.get(table)
        if reader is None:
            reader = readers[table] = db.table(table)
        for c in columns:
            keys.append((reader.name, c))
            form = column_form(reader, c)
            if form.extra and form.cost:
                costly.append(form.key)
    placement.record(keys)
    if placement.decoded.issuperset(costly):
        return device.placement_map  # every column it reads that decoding would speed up is decoded
    forms = []
    for name, column in {k for k in placement.known() if placement.weight(k) > 0}:
        reader = readers.get(name)
        if reader is None:
            try:
                reader = readers[name] = db.table(name)
            except Exception:  # noqa: BLE001 - a table dropped since: its columns no longer count
                continue
        try:
            forms.append(column_form(reader, column))
        except Exception:  # noqa: BLE001 - a column dropped since
            continue
    cache = device.cache
    before = placement.decoded
    decoded = placement.choose(forms, cache.capacity_bytes - cache.kept_bytes())
    if decoded != before:
        by_table: dict[str, set[str]] = {}
        for name, column in decoded:
            by_table.setdefault(name, set()).add(column)
        device.placement_map = {name: frozenset(cols) for name, cols in by_table.items()}
        now = decoded - before
        if now:
            cache.evict_matching(lambda key, value: isinstance(key, PageKey) and (key.table, key.column) in now
                                 and getattr(value, "device_page", None) is not None)
    return device.placement_map
