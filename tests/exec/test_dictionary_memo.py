"""exec/dictionary_memo.py: values derived from a dictionary kept while it lives, answered only for
that object; results of dictionary strings reach Arrow through the memoized dictionary strings
(hostutil.to_arrow_table) exactly as through the column's own conversion, NULL rows included."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.backend.cpu.strings import _arrow_to_offsets_chars
from hetdb.column import Batch, Column
from hetdb.exec.dictionary_memo import ARROW_STRINGS, DictionaryMemo
from hetdb.exec.hostutil import to_arrow_table
from hetdb.plan.expr import Field


def _strings(values: list[str]) -> Column:
    offsets, chars = _arrow_to_offsets_chars(pa.array(values, pa.string()))
    return Column(T.STRING, offsets=offsets, chars=chars)


def test_dictionary_memo_answers_an_id_only_for_its_object() -> None:
    memo = DictionaryMemo()
    a = _strings(["x"])
    memo[id(a)] = (a, "copy of a")
    assert id(a) in memo and memo[id(a)] == (a, "copy of a") and memo.get(a) == "copy of a"
    other = _strings(["y"])
    assert memo.get(other) is None and id(other) not in memo
    key = id(a)
    del a
    gc.collect()
    assert key not in memo and len(memo) == 0


def test_dictionary_strings_reach_arrow_through_the_memo() -> None:
    words = ["b", "", "é", "a", "b"]
    d = _strings(words)
    rng = np.random.default_rng(5)
    for rows, nulls in ((0, False), (9, False), (40, True)):
        codes = rng.integers(0, len(words), rows).astype(np.int32)
        valid = rng.random(rows) > 0.4 if nulls else None
        if valid is not None:
            codes[~valid] = 1000  # a NULL row's code may be anything
        col = Column(T.STRING, data=codes, validity=valid, dictionary=d)
        field = Field("s#1", "s", T.STRING)
        got = to_arrow_table(CpuBackend(), Batch({field.cid: col}, rows), [field])
        want = [None if valid is not None and not valid[i] else words[c] for i, c in enumerate(codes)]
        assert got.column(0).to_pylist() == want and got.schema.field(0).type == pa.string()
    if rows:
        assert ARROW_STRINGS.get(d) is not None  # made once, kept while the dictionary lives
