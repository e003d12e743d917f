"""The split of a hot scan larger than the device cache (exec/resident_split.py): the row groups whose
pages the cache holds (one launch) and the rest (streamed), and the cache's eviction guards that make
the copy stream wait for that launch (NumPy values in a real DevicePageCache: no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb import types as T
from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache, PageKey
from hetdb.cache.pages import page_info
from hetdb.column import Column
from hetdb.exec.resident_split import split_resident


@pytest.fixture()
def reader(paged_con):
    return paged_con._get_engine().db.table("t")


def _put(cache, reader, column, rg, fill):
    value = Column(T.INT64, data=np.full(reader.row_group_rows(rg), fill, dtype=np.int64))
    assert cache.put(page_info(reader, column, rg).key, value, value.data.nbytes)


def test_row_groups_with_every_page_cached_go_to_the_launch_the_others_stream(reader) -> None:
    cache = DevicePageCache(DeviceMemoryBudget(1 << 30), capacity_bytes=1 << 30)
    for rg in (0, 1, 3):
        _put(cache, reader, "a", rg, rg)
        _put(cache, reader, "s", rg, 10 + rg)
    _put(cache, reader, "a", 4, 4)  # (row group 4's "s" page is not cached: it streams)
    got = split_resident(cache, reader, ["a", "s"], list(range(5)), False)
    assert (got.row_groups, got.rest) == ([0, 1, 3], [2, 4])
    res = got.resident
    assert len(res.pages) == 3 and res.num_rows == sum(reader.row_group_rows(rg) for rg in (0, 1, 3))
    assert [int(cols["a"].data[0]) for _, cols in res.pages] == [0, 1, 3]
    assert [int(cols["s"].data[0]) for _, cols in res.pages] == [10, 11, 13]
    assert res.keys == [page_info(reader, c, rg).key for rg in (0, 1, 3) for c in ("a", "s")]
    assert res.nbytes == sum(int(cols[c].data.nbytes) for _, cols in res.pages for c in ("a", "s"))
    assert res.derived_key[-1] == (0, 1, 3)  # (the page table's key: another subset, another table)
    assert got.stamp == cache.mutations
    # only the row groups asked for, in their order
    got = split_resident(cache, reader, ["a"], [4, 3, 2], False)
    assert (got.row_groups, got.rest) == ([4, 3], [2])


def test_no_row_group_cached_leaves_everything_to_stream(reader) -> None:
    cache = DevicePageCache(DeviceMemoryBudget(1 << 30), capacity_bytes=1 << 30)
    _put(cache, reader, "a", 0, 0)
    got = split_resident(cache, reader, ["a", "b"], list(range(5)), False)
    assert got.resident is None and got.row_groups == [] and got.rest == [0, 1, 2, 3, 4]


def test_a_guard_runs_once_before_the_first_eviction_and_can_be_dropped() -> None:
    cache = DevicePageCache(DeviceMemoryBudget(10_000), capacity_bytes=300)
    ran = []
    for rg in range(3):
        cache.put(PageKey("t", 1, "a", rg), np.zeros(100, dtype=np.uint8), 100)
    token = cache.guard_evictions(lambda: ran.append(len(cache)))
    dropped = cache.guard_evictions(lambda: ran.append("dropped"))
    cache.unguard(dropped)
    assert cache.put(PageKey("t", 1, "b", 0), np.zeros(100, dtype=np.uint8), 100) is False  # refused: nothing left
    assert ran == []
    assert cache.evict(100) == 100
    assert ran == [3]  # before the entry left
    cache.evict(100)
    assert ran == [3]  # once
    cache.unguard(token)  # (no-op: it ran)
    cache.guard_evictions(lambda: ran.append("clear"))
    cache.clear()
    assert ran == [3, "clear"] and len(cache) == 0
