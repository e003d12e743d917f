"""Partial aggregation states whose plain-string group keys are still join-build row numbers.

A compiled CPU loop groups a plain-string build column by the build row it read the string from
(backend/cpu/codegen/pipeline_py.Input.rows). Turning every worker's groups back into strings
gathered each group's strings once per worker, and the final merge then hashed and compared strings
over all of them (TPC-H q10 at SF 10 on 16 threads: 4 string keys, ~300k groups a worker, 266 ms
of serial merge). Instead the aggregation keeps such partial states as they are (the key an INT64
row number) and merges them by row number, which can only split a group in two, never join two:
rows with the same number hold the same string. The strings are gathered once, for the merged
groups, and the result is merged again by the strings, which joins groups whose rows differ but
whose strings are equal (a cheap merge: it groups by the other keys and checks that the strings
follow them, see exec/group_fd.py).
"""

from __future__ import annotations

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.columns import take, take_batch


def with_strings(backend, part: Batch, names: dict[int, str], rows_of: dict[int, Column]) -> Batch:
    """``part`` with each row-number key ``names[i]`` replaced by the strings of build column
    ``rows_of[i]`` at those rows (NULL where the key is NULL). The groups are put in the order of
    their first such key, so the strings are read in build order (random reads of them took about
    five times as long)."""
    if not rows_of:
        return part
    first = part.columns[names[min(rows_of)]]
    if part.num_rows > 1:
        part = take_batch(backend, part, np.argsort(first.data, kind="stable"))
    cols = dict(part.columns)
    for i, source in rows_of.items():
        key = cols[names[i]]
        rows = key.data if key.validity is None else np.where(key.validity, key.data, -1)
        cols[names[i]] = take(backend, source, rows, missing=key.validity is not None)
    return Batch(cols, part.num_rows)


def row_numbers(rows: np.ndarray, valid: np.ndarray) -> Column:
    """A row-number key column (``valid`` False: a NULL key)."""
    return Column(T.INT64, data=rows.copy(), validity=None if valid.all() else valid.copy())


def follows_rows(col: Column, gid: np.ndarray, first: np.ndarray) -> bool:
    """Whether every row of the row-number key ``col`` holds its group's first row's number (or
    NULL as that row does): the key is fixed by the keys that made ``gid``."""
    rep = first[gid]
    if col.validity is None:
        return bool(np.array_equal(col.data, col.data[rep]))
    valid = col.validity
    same = (col.data == col.data[rep]) | ~valid
    return bool(np.array_equal(valid, valid[rep]) and same.all())
