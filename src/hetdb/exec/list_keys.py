"""``list_sort_key(l)``: a LIST value as a VARCHAR whose byte order is DuckDB's order of lists, so
that sorting, grouping, joining, partitioning and comparing lists reuse the engine's string paths
(sql/list_keys.py puts it in place of LIST keys).

DuckDB's order: lexicographic by element, a list before every longer list it starts, NULL elements
after every value (and equal to each other); -0.0 equals 0.0 and NaN is the largest double. The
encoding: per element 0x02 + the value's order-preserving text, or 0x03 for NULL; 0x01 ends the
list. Numbers are fixed-width hex (integers and scaled decimals offset by 2**127, doubles by their
order-preserving bit pattern), dates/timestamps/times their integer counts, strings with 0x00 and
0x01 escaped and 0x01 0x01 at their end (so a string sorts before its extensions).
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import pyarrow as pa

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.plan.expr import Call
from hetdb.types import DataType

_EPOCH = dt.datetime(1970, 1, 1)
_UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _int(v: int) -> str:
    return format(v + 2**127, "032x")


def _float(v: float) -> str:
    if math.isnan(v):
        return "f" * 16
    bits = struct.unpack(">Q", struct.pack(">d", v + 0.0))[0]  # (-0.0 + 0.0 is 0.0)
    return format(bits ^ (0xFFFFFFFFFFFFFFFF if bits >> 63 else 1 << 63), "016x")


def _scalar(v, t: DataType) -> str:
    k = t.kind
    if k == "string":
        return v.replace("\x01", "\x01\x03").replace("\x00", "\x01\x02") + "\x01\x01"
    if k == "float64":
        return _float(v)
    if k == "decimal":
        return _int(int(Decimal(v).scaleb(t.scale)))
    if k == "date":
        return _int(v.toordinal())
    if k == "timestamp":
        delta = v - (_UTC_EPOCH if v.tzinfo is not None else _EPOCH)
        return _int(delta // dt.timedelta(microseconds=1))
    if k == "time":
        return _int(((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond)
    return _int(int(v))  # integers, booleans


def encode(lst: list, elem: DataType) -> str:
    parts = []
    for v in lst:
        if v is None:
            parts.append("\x03")
        else:
            parts.append("\x02" + (encode(v, elem.elem) if elem.kind == "list" else _scalar(v, elem)))
    parts.append("\x01")
    return "".join(parts)


def list_sort_key(ev, expr: Call, batch: Batch) -> Column:
    from hetdb.exec.hostutil import column_to_device, note_host_step
    from hetdb.exec.lists import rows_of

    note_host_step(ev.backend, "list_sort_key (host)")
    elem = expr.args[0].dtype.elem
    keys = [None if v is None else encode(v, elem) for v in rows_of(ev.backend, ev.evaluate(expr.args[0], batch))]
    return column_to_device(ev.backend, Column.from_arrow(pa.array(keys, pa.string()), T.STRING))
