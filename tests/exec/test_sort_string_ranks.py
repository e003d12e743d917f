"""Sort keys of dictionary strings ranked through the dictionary (operators/sort.string_ranks) order
rows exactly as the strings do: unsorted dictionaries with duplicate and unused entries, NULL rows
whose codes are arbitrary, a dictionary larger than the column (the per-row path)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.backend.cpu.strings import _arrow_to_offsets_chars
from hetdb.column import Column
from hetdb.exec.operators.sort import string_ranks


def _strings(values: list[str]) -> Column:
    offsets, chars = _arrow_to_offsets_chars(pa.array(values, pa.string()))
    return Column(T.STRING, offsets=offsets, chars=chars)


@pytest.mark.parametrize("rows", [0, 1, 7, 500])
@pytest.mark.parametrize("nulls", [False, True])
def test_ranks_order_like_the_strings(rows: int, nulls: bool) -> None:
    rng = np.random.default_rng(rows + nulls)
    words = ["pear", "", "apple", "Zed", "é", "apple", "appl", "zz", "b"]  # unsorted, a duplicate
    d = _strings(words)
    codes = rng.integers(0, len(words), rows).astype(np.int32)
    valid = rng.random(rows) > 0.3 if nulls else None
    if valid is not None:
        codes = np.where(valid, codes, rng.integers(0, len(words), rows)).astype(np.int32)  # any code under NULL
    col = Column(T.STRING, data=codes, validity=valid, dictionary=d)
    ranks = np.asarray(string_ranks(CpuBackend(), col))
    assert ranks.shape == (rows,)
    keep = np.ones(rows, bool) if valid is None else valid
    strings = [words[c].encode() for c in codes[keep]]
    got = ranks[keep]
    for i in range(len(strings)):
        for j in range(len(strings)):
            assert (got[i] < got[j]) == (strings[i] < strings[j]) and (got[i] == got[j]) == (strings[i] == strings[j])


def test_a_dictionary_larger_than_the_column_and_plain_strings() -> None:
    be = CpuBackend()
    d = _strings([f"w{i:03d}" for i in range(50, 0, -1)])
    col = Column(T.STRING, data=np.array([3, 0, 49], np.int32), dictionary=d)
    assert np.asarray(string_ranks(be, col)).argsort().tolist() == [2, 0, 1]  # w047 > w050 > w001 reversed
    plain = _strings(["b", "a", "c", "a"])
    r = np.asarray(string_ranks(be, plain))
    assert r[1] == r[3] and r[1] < r[0] < r[2]


def test_a_host_dictionary_is_ranked_once_while_it_lives() -> None:
    """A dictionary larger than the rows sorted is ranked whole once and its ranks kept
    (dictionary_memo.SORT_RANKS) until it is collected; the rows still order like their strings."""
    import gc

    from hetdb.exec.dictionary_memo import SORT_RANKS

    be = CpuBackend()
    words = [f"w{(i * 37) % 1000:03d}" for i in range(1000)]
    d = _strings(words)
    calls = []
    real = be.factorize_strings
    be.factorize_strings = lambda o, c: calls.append(len(o) - 1) or real(o, c)
    for codes in ([5, 999, 0, 5], [17, 3]):
        col = Column(T.STRING, data=np.array(codes, np.int32), dictionary=d)
        ranks = np.asarray(string_ranks(be, col))
        assert [words[c] for c in np.array(codes)[np.argsort(ranks, kind="stable")]] == sorted(words[c] for c in codes)
    assert calls == [1000]  # the dictionary once, no row's string gathered
    assert SORT_RANKS.get(d) is not None
    before = len(SORT_RANKS)
    del d, col
    gc.collect()
    assert len(SORT_RANKS) == before - 1



def test_a_new_dictionary_of_the_same_strings_takes_the_ranks_made_for_another() -> None:
    """A fresh connection copies its device dictionaries to the host anew (new objects): the ranks
    an earlier copy of the same strings got are found by content (dictionary_memo.ContentMemo), not
    made again; other strings are ranked for themselves."""
    be = CpuBackend()
    words = [f"v{(i * 53) % 700:03d}" for i in range(700)]
    calls = []
    real = be.factorize_strings
    be.factorize_strings = lambda o, c: calls.append(len(o) - 1) or real(o, c)
    for d in (_strings(words), _strings(list(words)), _strings(words[::-1])):
        col = Column(T.STRING, data=np.array([3, 600, 42], np.int32), dictionary=d)
        ranks = np.asarray(string_ranks(be, col))
        strings = [d.to_arrow()[c].as_py() for c in (3, 600, 42)]
        assert [strings[i] for i in np.argsort(ranks, kind="stable")] == sorted(strings)
    assert calls == [700, 700]  # the first and the reversed dictionary; the copy took the first's
