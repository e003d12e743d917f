"""Things derived from a string dictionary (a Column object), kept while the dictionary lives.

A hot query's small result reaches the host with the same device dictionaries every run (the fused
pipelines' plans keep them), so its host copy and its sort ranks need not be made again: the host
tail of an SSB query copied p_brand1's dictionary and factorized its rows' strings on every run.
Entries hold their dictionary weakly (a cache must not keep device memory alive past the plans
that own it: the engine's leak check counts it) and go when it does.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any


class DictionaryMemo:
    """id(dictionary) -> (dictionary, value), the interface of ``hostutil.batch_to_host``'s
    ``dict_cache``, with the dictionaries held weakly: an entry is dropped when its dictionary is
    collected (so an id is never answered for another object)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}
        self._lock = threading.Lock()

    def __contains__(self, key: int) -> bool:
        got = self._entries.get(key)
        return got is not None and got[0]() is not None

    def __getitem__(self, key: int) -> tuple[Any, Any]:
        ref, value = self._entries[key]
        source = ref()
        if source is None:
            raise KeyError(key)
        return source, value

    def __setitem__(self, key: int, item: tuple[Any, Any]) -> None:
        source, value = item
        memo = weakref.ref(self)

        def gone(ref: weakref.ref, key: int = key) -> None:
            owner = memo()
            if owner is not None:
                with owner._lock:
                    if owner._entries.get(key, (None,))[0] is ref:
                        del owner._entries[key]

        with self._lock:
            self._entries[key] = (weakref.ref(source, gone), value)

    def __len__(self) -> int:
        return sum(1 for ref, _ in list(self._entries.values()) if ref() is not None)

    def get(self, source: Any) -> Any:
        """The value remembered for the dictionary ``source``, or None."""
        got = self._entries.get(id(source))
        return got[1] if got is not None and got[0]() is source else None

    def put(self, source: Any, value: Any) -> None:
        self[id(source)] = (source, value)


class ContentMemo:
    """Values derived from a small host dictionary, keyed by its strings (a digest of its offsets and
    characters), so that a fresh connection, whose query copies its device dictionaries to the host
    anew (new objects: ``DictionaryMemo`` misses), finds what an earlier connection derived from the
    same strings. At most MAX_ENTRIES, of dictionaries of at most MAX_BYTES characters."""

    MAX_ENTRIES = 256
    MAX_BYTES = 1 << 20

    def __init__(self) -> None:
        self._entries: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def key(cls, source: Any) -> tuple | None:
        offsets, chars = getattr(source, "offsets", None), getattr(source, "chars", None)
        if offsets is None or chars is None or getattr(source, "dictionary", None) is not None \
                or getattr(source, "validity", None) is not None or hasattr(chars, "get"):
            return None  # (host strings only, without NULLs)
        if int(chars.nbytes) > cls.MAX_BYTES:
            return None
        import hashlib

        import numpy as np

        h = hashlib.blake2b(digest_size=16)
        h.update(np.ascontiguousarray(offsets).view(np.uint8))
        h.update(np.ascontiguousarray(chars).view(np.uint8))
        return (str(getattr(source, "dtype", "")), int(offsets.shape[0]), h.digest())

    def get(self, source: Any) -> Any:
        key = self.key(source)
        return None if key is None else self._entries.get(key)

    def put(self, source: Any, value: Any) -> None:
        key = self.key(source)
        if key is None:
            return
        with self._lock:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[key] = value


class DictionaryDerived:
    """``DictionaryMemo`` by object, then ``ContentMemo`` by strings: what a dictionary's strings
    alone decide (its sort ranks, its Arrow strings), made once per process and set of strings."""

    def __init__(self) -> None:
        self.by_object = DictionaryMemo()
        self.by_content = ContentMemo()

    def get(self, source: Any) -> Any:
        got = self.by_object.get(source)
        if got is None:
            got = self.by_content.get(source)
            if got is not None:
                self.by_object.put(source, got)
        return got

    def put(self, source: Any, value: Any) -> None:
        self.by_object.put(source, value)
        self.by_content.put(source, value)

    def __len__(self) -> int:
        """Entries held for live dictionary objects."""
        return len(self.by_object)


# host dictionary -> its strings' ranks (exec/operators/sort.py string_ranks)
SORT_RANKS = DictionaryDerived()
# host dictionary -> its strings as an Arrow string array (exec/hostutil.py to_arrow_table)
ARROW_STRINGS = DictionaryDerived()
