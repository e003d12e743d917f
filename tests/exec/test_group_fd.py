"""Plain-string group keys fixed by the other keys are grouped without numbering the strings; the
answer must be the same as grouping by every key, whether the dependency holds or not."""

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.column import Column
from hetdb.exec.group_fd import follows_groups, follows_groups_at


def _strings(values: list[str | None]) -> Column:
    arr = pa.array(values, pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[: len(values) + 1].copy()
    chars = np.frombuffer(arr.buffers()[2], dtype=np.uint8).copy() if arr.buffers()[2] else np.zeros(0, np.uint8)
    validity = np.array([v is not None for v in values])
    return Column(T.STRING, offsets=offsets, chars=chars, validity=None if validity.all() else validity)


@pytest.mark.parametrize("values,expected", [
    (["ab", "x", "ab", "x", "ab"], True),
    (["ab", "x", "ac", "x", "ab"], False),      # same length, one byte differs
    (["ab", "x", "abc", "x", "ab"], False),     # a longer string in the group
    ([None, "x", None, "x", None], True),
    ([None, "x", "", "x", None], False),        # NULL and '' differ
    (["", "", "", "", ""], True),
])
def test_follows_groups(values, expected) -> None:
    gid = np.array([0, 1, 0, 1, 0], dtype=np.int64)
    first = np.array([0, 1], dtype=np.int64)
    assert follows_groups(np, _strings(values), gid, first) is expected


@pytest.mark.parametrize("values,expected", [
    (["ab", "x", "ab", "x", "ab"], True),
    (["ab", "x", "ac", "x", "ab"], False),
    (["ab", "x", "abc", "x", "ab"], False),
    ([None, "x", None, "x", None], True),
    ([None, "x", "", "x", None], False),
])
def test_follows_groups_at_rows_elsewhere(values, expected) -> None:
    """The same verdicts when the rows' strings are rows ``rows`` of a larger column."""
    col = _strings(["pad"] + values[::-1] + ["pad"])
    rows = np.array([5 - i for i in range(5)], dtype=np.int64)
    gid = np.array([0, 1, 0, 1, 0], dtype=np.int64)
    first = np.array([0, 1], dtype=np.int64)
    assert follows_groups_at(col, rows, gid, first) is expected
    assert follows_groups_at(col, rows[:0], gid[:0], first[:0])


def test_follows_groups_in_chunks(monkeypatch) -> None:
    import hetdb.exec.group_fd as fd

    monkeypatch.setattr(fd, "CHUNK_CHARS", 7)  # several chunks, rows longer than a chunk
    values = ["abcdefghij", "k", "abcdefghij", "k", "abcdefghiX"]
    gid = np.array([0, 1, 0, 1, 0], dtype=np.int64)
    first = np.array([0, 1], dtype=np.int64)
    assert fd.follows_groups(np, _strings(values[:4] + ["abcdefghij"]), gid, first)
    assert not fd.follows_groups(np, _strings(values), gid, first)


@pytest.mark.parametrize("threads", [1, 4])
def test_group_by_key_and_its_strings_matches_duckdb(tmp_path, threads, monkeypatch) -> None:
    import hetdb.exec.operators.aggregate as agg

    verdicts = []
    real = agg.follows_groups
    monkeypatch.setattr(agg, "follows_groups", lambda *a: verdicts.append(real(*a)) or verdicts[-1])
    rng = np.random.default_rng(7)
    n = 20_000
    k = rng.integers(0, 2000, n)
    names = np.array([f"name-{i:04d}-" + "x" * (i % 37) for i in range(2000)], dtype=object)
    broken = names[k].copy()
    broken[rng.integers(0, n, 3)] = "odd one out"          # the dependency fails in a few rows
    nulls = np.where(k % 11 == 0, None, names[k])
    table = pa.table({"k": k, "name": names[k], "broken": broken, "maybe": nulls, "v": rng.integers(0, 100, n)})
    duck = duckdb.connect()
    duck.register("t", table)
    queries = ["SELECT k, name, sum(v) AS s, count(*) AS c FROM t GROUP BY k, name",
               "SELECT k, broken, sum(v) AS s FROM t GROUP BY k, broken",
               "SELECT maybe, k, name, min(v) AS m FROM t GROUP BY maybe, k, name"]
    with hetdb.connect(str(tmp_path / "db"), device="cpu", threads=threads, batch_rows=3000) as con:
        con.register("t", table)  # an Arrow table: plain (not dictionary-encoded) strings
        for sql in queries:
            got = con.sql(sql + " ORDER BY ALL").arrow()
            want = duck.sql(sql + " ORDER BY ALL").fetch_arrow_table()
            assert got.num_rows == want.num_rows > 1000
            assert got.to_pylist() == want.to_pylist()
    assert True in verdicts and False in verdicts  # both ways were taken


@pytest.mark.parametrize("broken_row", [None, 0, 40_000, 99_999])
def test_follows_groups_on_several_kernel_threads(broken_row) -> None:
    """The host check over chunks of rows on several kernel threads (from _PARALLEL_ROWS rows): a
    row that breaks the dependency is found in any chunk, the first and the last included."""
    from hetdb.backend.cpu.keys import kernel_threads, set_kernel_threads

    n, groups = 100_000, 3_000
    rng = np.random.default_rng(3)
    gid = rng.integers(0, groups, n)
    gid[:groups] = np.arange(groups)  # each group's first row among the first rows
    first = np.arange(groups, dtype=np.int64)
    values = [f"v{g}" if g % 11 else None for g in gid]
    if broken_row is not None:
        values[broken_row] = "broken"
    before = kernel_threads()
    set_kernel_threads(2)
    try:
        assert follows_groups(np, _strings(values), gid.astype(np.int64), first) is (broken_row is None)
    finally:
        set_kernel_threads(before)
