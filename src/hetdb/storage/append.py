"""Appends: which row groups of the current version an append keeps as they are.

An append (SQL INSERT) writes a new table version that references the current version's row groups
unchanged and adds row groups for the new rows only. So that many small appends do not leave a
tiny row group each, the trailing row groups that are still small are merged with the appended
rows, tiered like a binary counter:

- a row group of at least ``sealed_rows(rows_per_page)`` rows (1/8 of a full one, 131,072 rows by
  default; DuckDB's row groups hold 122,880) is sealed: an append never rewrites it;
- walking back from the last row group, a small one is merged while its rows are fewer than twice
  the rows merged so far (the appended rows plus the small groups already taken).

Each small trailing group is then more than twice the size of the one after it, so a table has at
most ~log2(sealed rows) ≈ 17 small row groups, and a row is rewritten about once per doubling of
its group (appending n equal batches of k rows rewrites O(n·k·log(sealed/k)) rows, not O(n²·k)).
``VACUUM`` rewrites a table into full row groups.
"""

from __future__ import annotations

from hetdb.storage.reader import TableReader

SEALED_FRACTION = 8


def sealed_rows(rows_per_page: int) -> int:
    """Row groups with at least this many rows are never rewritten by an append."""
    return max(1, rows_per_page // SEALED_FRACTION)


def kept_row_groups(reader: TableReader, new_rows: int) -> int:
    """How many leading row groups of ``reader``'s version an append of ``new_rows`` rows keeps as
    they are; the rest (small trailing groups) are rewritten together with the new rows."""
    sealed = sealed_rows(reader.rows_per_page)
    merged = max(0, int(new_rows))
    keep = reader.num_row_groups
    while keep > 0:
        rows = reader.row_group_rows(keep - 1)
        if rows >= sealed or rows >= 2 * merged:
            break
        merged += rows
        keep -= 1
    return keep


def fragmented(reader: TableReader) -> bool:
    """Whether the table has more row groups than its rows need (what VACUUM rewrites)."""
    needed = -(-reader.num_rows // reader.rows_per_page)
    return reader.num_row_groups > max(1, needed)
