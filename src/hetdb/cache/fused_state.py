"""FusedStateStore: what a fused pipeline derived from its dimension tables, kept between queries.

A fused star-join kernel needs, besides the fact table's pages, a few small device objects built from
the dimension side of the query: dense join tables (key -> build row), their payload columns,
compacted group-key ranks, dictionary lookups. Building them means scanning and filtering every
dimension table, hash-building it and compacting keys: several milliseconds of launches and host
round trips per query, more than the fused kernel itself on a hot fact table. They depend only on the
plan and on the committed versions of the tables it reads, so they are kept per (physical plan,
pipeline): the plan cache hands out the same physical plan object for as long as every table it reads
is at the version it was planned against, and a new version means a new physical plan (new key; the
old entry ages out).

On the GPU an entry lives in the connection's ``DevicePageCache`` (its bytes are a reservation
against ``gpu_memory_limit``, evicted least-recently-used with the pages; pinned while a query uses
it). Without a device (CPU tests of the fusion planner) a small LRU dictionary keeps the entries.

Nothing here imports CuPy or knows what the stored plan contains: the entry says which arrays it
holds (``device_arrays``) so the owner of the cache can account for them.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from hetdb.column import Column

HOST_ENTRIES = 64
# What losing an entry costs, in host->GPU link bytes, for the device cache's placement (an entry's
# worth is the link time one access saves, per byte held): its query rebuilds it, scanning and
# filtering the dimension tables and building their join tables again (~1 ms a dimension on the H100,
# s16: 64 MB at its 50 GB/s is a low bound). Judged by its own bytes (kilobytes to a few MB), it was the cheapest thing in the
# cache: a hot query under a budget evicted its own fused state to admit a fact page, rebuilt it at
# its next run and evicted pages to keep it again, run after run (CPU stand-in, SSB SF 0.01 at
# 700 KB: q4.1 admitted ~33 and evicted ~35 entries every run).
REBUILD_LINK_BYTES = 64 << 20


@dataclass
class FusedState:
    """One fused pipeline's reusable plan: ``plan`` (exec.fusion.FusionPlan), the text EXPLAIN shows,
    the pipelines whose work it contains (``inputs``: their results are baked into it), and the
    device arrays it holds."""

    physical: Any                 # the physical plan it belongs to (kept alive: the key uses its id)
    pid: int
    plan: Any
    why: str
    inputs: frozenset[int] = frozenset()
    swapped: frozenset[int] = frozenset()  # of ``inputs``: deferred pipelines of a swapped-join chain
    arrays: list[Any] = field(default_factory=list, repr=False)
    extra_bytes: int = 0  # device bytes it may come to hold beyond ``arrays`` (a hash table made on demand)

    def device_arrays(self) -> list[Any]:
        """Arrays (or Columns) this entry keeps alive (for the device-memory accounting), with those
        its plan made since it was stored (a kept build's hash table made on demand)."""
        out = list(self.arrays)
        made = getattr(self.plan, "table_arrays", None) if self.extra_bytes else None
        if callable(made):
            out += made()
        return out

    @property
    def nbytes(self) -> int:
        seen: dict[int, int] = {}  # allocation -> bytes (views share their allocation's bytes)
        for a in self.arrays:
            for arr in _leaves(a):
                mem = getattr(getattr(arr, "data", None), "mem", None)  # a CuPy allocation
                if mem is not None:
                    seen[id(mem)] = int(mem.size)
                    continue
                root = arr
                while hasattr(getattr(root, "base", None), "nbytes"):
                    root = root.base
                seen[id(root)] = int(root.nbytes)
        return sum(seen.values()) + self.extra_bytes


def _leaves(a: Any):
    if isinstance(a, Column):
        yield from a.held_arrays()
        if a.dictionary is not None:
            yield from _leaves(a.dictionary)
    elif a is not None:
        yield a


class FusedStateStore:
    """FusedState entries per (physical plan, pipeline id); ``device_cache`` (a DevicePageCache) holds
    them on the GPU, else a bounded LRU dictionary."""

    def __init__(self, device_cache: Any = None, max_entries: int = HOST_ENTRIES) -> None:
        self.device_cache = device_cache
        self.max_entries = max_entries
        self._host: OrderedDict[tuple, FusedState] = OrderedDict()
        self.hits = 0
        self.stores = 0

    @staticmethod
    def _key(physical: Any, pid: int) -> tuple:
        return ("fused-state", id(physical), pid)

    def get(self, physical: Any, pid: int) -> tuple[FusedState, tuple] | None:
        """(entry, pin) for the pipeline when stored, else None; pass ``pin`` to ``release`` when the
        query is done (an entry in use is never evicted)."""
        key = self._key(physical, pid)
        if self.device_cache is None:
            entry = self._host.get(key)
            if entry is None or entry.physical is not physical:
                return None
            self._host.move_to_end(key)
            self.hits += 1
            return entry, ()
        got = self.device_cache.peek_many([key])
        if got is None or got[0].physical is not physical:
            return None
        self.device_cache.hold(key)  # marks it recently used (lazily); pinned until release
        self.hits += 1
        return got[0], (key,)

    def hold_many(self, physical: Any, keys: list) -> tuple[list[FusedState], tuple] | None:
        """``get`` of the entries of ``physical`` at ``keys`` (``key_of``'s, the same list object each
        time: the device cache counts their accesses as one lazy group) at once: (entries, pin), or
        None (nothing pinned) when one is not stored. On the GPU only."""
        got = self.device_cache.hold_many(keys)
        if got is None:
            return None
        if any(e.physical is not physical for e in got):
            self.device_cache.unpin_many(keys)
            return None
        self.hits += len(got)
        return got, tuple(keys)

    key_of = _key

    def put(self, entry: FusedState) -> bool:
        """Keep ``entry`` (False when the device cache has no room for it: then it is dropped)."""
        key = self._key(entry.physical, entry.pid)
        self.stores += 1
        if self.device_cache is None:
            self._host[key] = entry
            self._host.move_to_end(key)
            while len(self._host) > self.max_entries:
                self._host.popitem(last=False)
            return True
        # (worth to the cache what rebuilding it costs, not what copying its bytes would)
        return bool(self.device_cache.put(key, entry, entry.nbytes, link_bytes=max(entry.nbytes, REBUILD_LINK_BYTES)))

    def release(self, pin: tuple) -> None:
        if pin:
            self.device_cache.unpin_many(pin)

    def __len__(self) -> int:
        if self.device_cache is None:
            return len(self._host)
        return self.stores
