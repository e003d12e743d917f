"""Result tables as text: columns addressed by position (names may repeat), numbers right-aligned,
NULL shown as NULL, middle columns and rows hidden when the result is wider or longer than shown."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from typing import Any

import pyarrow as pa

from hetdb.result import sql_type_name

_MAX_CELL = 40


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _text(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, list):  # a LIST value, as DuckDB shows it: [1, NULL, abc]
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if isinstance(v, dt.time) and v.microsecond:
        return v.isoformat().rstrip("0")
    return str(v)


def _cell(v: Any) -> str:
    s = _text(v)
    return s if len(s) <= _MAX_CELL else s[:_MAX_CELL - 1] + "…"


def _columns(table: pa.Table, rows: int) -> list[list[str]]:
    return [[_cell(v) for v in table.column(i).slice(0, rows).to_pylist()] for i in range(table.num_columns)]


def render_text(table: pa.Table, max_rows: int = 50, width: int | None = None) -> str:
    """A box table of ``table``: the first and last columns that fit ``width`` (the terminal's by
    default), the first ``max_rows`` rows, and a line saying what was left out."""
    width = width or shutil.get_terminal_size((120, 24)).columns
    n = table.num_rows
    shown = min(n, max_rows)
    cells = _columns(table, shown)
    names = list(table.column_names)
    types = [sql_type_name(f).lower() for f in table.schema]
    widths = [max([len(names[i]), len(types[i])] + [len(c) for c in cells[i]]) for i in range(len(names))]
    order = list(range(len(names)))

    def total(idx: list[int]) -> int:
        return sum(widths[i] + 3 for i in idx) + 1

    hidden = 0
    if total(order) > width and len(order) > 2:
        left, right = [], []
        lo, hi = 0, len(order) - 1
        while lo <= hi:
            cand = left + [lo]
            if total(cand + right) + 4 > width and left:
                break
            left = cand
            lo += 1
            if lo > hi:
                break
            cand = [hi] + right
            if total(left + cand) + 4 > width:
                break
            right = cand
            hi -= 1
        hidden = len(order) - len(left) - len(right)
        order = left + ([-1] if hidden else []) + right
    numeric = [_is_numeric(f.type) for f in table.schema]

    def fmt(i: int, text: str) -> str:
        if i < 0:
            return "…"
        return text.rjust(widths[i]) if numeric[i] else text.ljust(widths[i])

    def line(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * ((widths[i] if i >= 0 else 1) + 2) for i in order) + right

    out = [line("┌", "┬", "┐")]
    out.append("│" + "│".join(f" {fmt(i, names[i]) if i >= 0 else '…'} " for i in order) + "│")
    out.append("│" + "│".join(f" {fmt(i, types[i]) if i >= 0 else ' '} " for i in order) + "│")
    out.append(line("├", "┼", "┤"))
    for r in range(shown):
        out.append("│" + "│".join(f" {fmt(i, cells[i][r]) if i >= 0 else '…'} " for i in order) + "│")
    out.append(line("└", "┴", "┘"))
    notes = []
    if n > shown:
        notes.append(f"{n - shown:,} more rows (use --max-rows or .maxrows to see more)")
    if hidden:
        notes.append(f"{hidden} columns hidden in the middle (use --format csv or a wider terminal)")
    return "\n".join(out + notes)


def render_csv(table: pa.Table, sep: str = ",") -> str:
    """CSV with a header; column names may repeat."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, delimiter=sep, lineterminator="\n")
    w.writerow(table.column_names)
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    for row in zip(*cols):
        w.writerow(["" if v is None else v for v in row])
    return buf.getvalue()


def render_json(table: pa.Table) -> str:
    """One JSON object per row; a repeated column name gets DuckDB's suffix (a, a_1)."""
    from hetdb.storage.external import dedup_names

    names = dedup_names(list(table.column_names))
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return "".join(json.dumps(dict(zip(names, row)), default=str) + "\n" for row in zip(*cols))
