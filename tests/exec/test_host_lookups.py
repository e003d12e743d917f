"""Dictionary lookups of small dictionaries evaluated on the host (exec/host_lookups.py), without a
GPU: the table over a dictionary's strings equals the same expression evaluated over the strings
themselves (another path of the evaluator), for predicates and a value; a string-valued expression
and a dictionary past the bound are left to the device."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec import host_lookups
from hetdb.exec.host_lookups import _host_evaluator, lookup_on_host
from hetdb.plan.expr import Call, ColumnRef, Literal

CITIES = ["UNITED KI1", "UNITED KI5", "PERU     0", "CHINA    3", "UNITED ST7", ""]  # (a dictionary holds no NULL)


def _strings(values) -> Column:
    return Column.from_arrow(pa.array(values, pa.string()), T.STRING)


@pytest.mark.parametrize("expr", [
    Call(T.BOOL, "eq", (ColumnRef(T.STRING, "c"), Literal(T.STRING, "UNITED KI1"))),
    Call(T.BOOL, "or", (Call(T.BOOL, "eq", (ColumnRef(T.STRING, "c"), Literal(T.STRING, "UNITED KI1"))),
                        Call(T.BOOL, "eq", (ColumnRef(T.STRING, "c"), Literal(T.STRING, "UNITED KI5"))))),
    Call(T.BOOL, "like", (ColumnRef(T.STRING, "c"), Literal(T.STRING, "UNITED%"))),
    Call(T.INT64, "length", (ColumnRef(T.STRING, "c"),)),
], ids=["eq", "or", "like", "length"])
def test_a_lookup_over_the_dictionary_equals_the_expression_over_its_strings(expr):
    dictionary = _strings(CITIES)
    got = lookup_on_host(expr, "c", dictionary)
    assert got is not None
    values, valid = got
    ev = _host_evaluator()
    want = ev.cast(ev.evaluate(expr, Batch({"c": dictionary}, len(CITIES))), expr.dtype)
    want_valid = np.ones(len(CITIES), bool) if want.validity is None else want.validity
    np.testing.assert_array_equal(valid[:len(CITIES)], want_valid)
    np.testing.assert_array_equal(values[:len(CITIES)][want_valid], np.asarray(want.data)[want_valid])


def test_string_values_and_large_dictionaries_stay_on_the_device(monkeypatch):
    upper = Call(T.STRING, "upper", (ColumnRef(T.STRING, "c"),))
    assert lookup_on_host(upper, "c", _strings(CITIES)) is None
    monkeypatch.setattr(host_lookups, "HOST_LOOKUP_VALUES", 3)
    eq = Call(T.BOOL, "eq", (ColumnRef(T.STRING, "c"), Literal(T.STRING, "x")))
    assert lookup_on_host(eq, "c", _strings(CITIES)) is None


def test_a_scans_device_dictionary_is_read_from_the_host_strings_it_was_moved_from():
    from hetdb.exec.host_lookups import host_dictionary

    host = _strings(CITIES)

    class _Device:  # a device array: reading it back would be a copy (and a wait)
        def __init__(self, a):
            self.a, self.shape = a, a.shape

        def get(self):
            raise AssertionError("copied back")

    moved = Column(T.STRING, offsets=_Device(host.offsets), chars=_Device(host.chars))
    moved.host_source = host  # (as the streamer's _dictionary sets it)
    assert host_dictionary(moved) is host


def test_a_lookup_over_a_scans_host_dictionary_is_evaluated_once(monkeypatch):
    """A fresh connection's scan moves the same host dictionary (the table version's) again: its
    lookups are kept with it, each connection gets its own device copy; a dictionary copied back
    from the device is evaluated every time."""
    from hetdb.backend.gpu.codegen import runtime

    host = _strings(CITIES)
    calls = []
    real = host_lookups.lookup_on_host
    monkeypatch.setattr(host_lookups, "lookup_on_host", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(runtime, "arrays_to_device", lambda arrays: [a.copy() for a in arrays])
    eq = Call(T.BOOL, "eq", (ColumnRef(T.STRING, "c"), Literal(T.STRING, "UNITED KI5")))
    got = []
    for _ in range(3):
        moved = Column(T.STRING, offsets=host.offsets, chars=host.chars)
        moved.host_source = host
        got.append(host_lookups.device_lookup(eq, "c", moved))
    assert len(calls) == 1
    assert got[0][0] is not got[1][0]
    for values, valid in got:
        np.testing.assert_array_equal(values[:len(CITIES)], [c == "UNITED KI5" for c in CITIES])
        assert valid[:len(CITIES)].all()
    copied = Column(T.STRING, offsets=host.offsets, chars=host.chars)  # (no host_source: copied back)
    host_lookups.device_lookup(eq, "c", copied)
    assert len(calls) == 2
    monkeypatch.setattr(host_lookups, "LOOKUP_MEMO_ENTRIES", 2)
    for city in CITIES[:4]:  # (ever new constants: the oldest lookups go)
        other = Call(T.BOOL, "eq", (ColumnRef(T.STRING, "c"), Literal(T.STRING, city)))
        host_lookups.device_lookup(other, "c", moved)
    assert len(host.__dict__["_host_lookups"]) == 2
