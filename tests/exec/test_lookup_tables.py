"""Dictionary lookups kept between queries (exec/lookup_tables.py): per expression and dictionary
object, dropped with their dictionary, never for volatile or unhashable expressions."""

from __future__ import annotations

import gc

import numpy as np

from hetdb import types as T
from hetdb.column import Column
from hetdb.exec.lookup_tables import MAX_ENTRIES, LookupTables
from hetdb.plan.expr import Call, ColumnRef, Literal


def _dictionary(values: list[str]) -> Column:
    return Column(T.STRING, data=np.array(values, dtype=object))


def _like(pattern: str) -> Call:
    return Call(T.BOOL, "like", (ColumnRef(T.STRING, "c1"), Literal(T.STRING, pattern)))


def test_kept_per_expression_and_dictionary_object() -> None:
    kept = LookupTables()
    d, other = _dictionary(["a", "b"]), _dictionary(["a", "b"])
    values, valid = np.array([True, False]), np.array([True, True])
    kept.put(_like("a%"), d, values, valid)
    got = kept.get(_like("a%"), d)
    assert got is not None and got[0] is values and got[1] is valid
    assert kept.get(_like("b%"), d) is None  # another literal: another table
    assert kept.get(_like("a%"), other) is None  # an equal but different dictionary object
    version = kept.version
    assert sum(1 for _ in kept.arrays()) == 2
    del d
    gc.collect()
    assert list(kept.arrays()) == [] and len(kept) == 0 and kept.version > version


def test_volatile_and_unhashable_expressions_are_not_kept() -> None:
    kept = LookupTables()
    d = _dictionary(["x"])
    one = (np.array([True]), np.array([True]))
    rnd = Call(T.BOOL, "lt", (Call(T.FLOAT64, "random", ()), Literal(T.FLOAT64, 0.5)))
    kept.put(Call(T.BOOL, "and", (_like("x"), rnd)), d, *one)
    unhashable = Call(T.BOOL, "in_list", (ColumnRef(T.STRING, "c1"), Literal(T.STRING, ["x"])))
    kept.put(unhashable, d, *one)
    assert len(kept) == 0 and kept.get(unhashable, d) is None


def test_bounded() -> None:
    kept = LookupTables()
    dicts = [_dictionary([str(i)]) for i in range(MAX_ENTRIES + 5)]
    for i, d in enumerate(dicts):
        kept.put(_like(str(i)), d, np.array([True]), np.array([True]))
    assert len(kept) == MAX_ENTRIES
    assert kept.get(_like("0"), dicts[0]) is None and kept.get(_like(str(MAX_ENTRIES + 4)), dicts[-1]) is not None


def test_bytes_bounded(monkeypatch) -> None:
    import hetdb.exec.lookup_tables as LT

    monkeypatch.setattr(LT, "MAX_BYTES", 100)
    kept = LookupTables()
    dicts = [_dictionary(["x"] * 40) for _ in range(3)]
    for i, d in enumerate(dicts):
        kept.put(_like(str(i)), d, np.zeros(40, bool), np.ones(40, bool))  # 80 bytes each
    assert len(kept) == 1 and kept.nbytes == 80 and kept.get(_like("2"), dicts[2]) is not None
    kept.put(_like("big"), dicts[0], np.zeros(60, bool), np.ones(60, bool))  # 120 > the bound: not kept
    assert kept.get(_like("big"), dicts[0]) is None and kept.nbytes == 80
    kept.clear()
    assert kept.nbytes == 0 and len(kept) == 0
