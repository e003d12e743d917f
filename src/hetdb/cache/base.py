"""The page-cache interface every tier implements (GPU memory, pinned host memory).

A page is identified by *what* it is, never by where it lives: (table, table version, column, row group,
part). Versions are immutable, so a key's bytes never change and a cached copy is never stale; a new
commit simply produces new keys and old ones age out. ``part`` separates objects derived from one
column that are cached on their own (the page itself, a column's shared string dictionary).

Each tier implements the same interface and decides what it keeps with the benefit policy
(``cache/policy.py``); the router (``cache/router.py``, HetCache-style: route each page by where copies
of it already live) decides each page's path. The host tier adds a load protocol (acquire / commit /
abort) so pages are read straight into its memory.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

PAGE = "page"
DICTIONARY = "dictionary"
NO_ROW_GROUP = -1  # for objects shared by every row group of a column (dictionaries)


@dataclass(frozen=True, eq=False)
class PageKey:
    """Identity of one cached object: a column page of a committed table version (or a column's
    dictionary, with ``part == DICTIONARY`` and ``row_group == NO_ROW_GROUP``).

    Its hash is computed once (the tiers look a key up several times per page access: a dataclass'
    own hash builds a tuple each time), and equality compares it first."""

    table: str
    version: int
    column: str
    row_group: int
    part: str = PAGE
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.table, self.version, self.column, self.row_group,
                                                self.part)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PageKey):
            return NotImplemented
        return (self._hash == other._hash and self.row_group == other.row_group
                and self.column == other.column and self.version == other.version
                and self.table == other.table and self.part == other.part)

    @staticmethod
    def dictionary(table: str, version: int, column: str) -> PageKey:
        return PageKey(table, version, column, NO_ROW_GROUP, DICTIONARY)


@dataclass
class CacheStats:
    """Counters since creation (or the last ``reset``); bytes are the cached objects' sizes."""

    hits: int = 0
    misses: int = 0
    hit_bytes: int = 0
    inserted_bytes: int = 0
    evictions: int = 0
    evicted_bytes: int = 0
    rejected: int = 0  # puts that did not fit (everything else pinned or the budget exhausted)
    admitted: int = 0  # entries that got in
    bypassed: int = 0  # pages the policy refused: worth less than what they would have displaced

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"hits": self.hits, "misses": self.misses, "hit_bytes": self.hit_bytes,
                "inserted_bytes": self.inserted_bytes, "evictions": self.evictions,
                "evicted_bytes": self.evicted_bytes, "rejected": self.rejected,
                "admitted": self.admitted, "bypassed": self.bypassed, "hit_rate": self.hit_rate}


class PageCache(ABC):
    """A bounded cache of page objects in one memory tier.

    Pinning: a pinned entry is in use (a kernel may be reading it) and is never evicted; every
    ``get(..., pin=True)`` / ``put(..., pin=True)`` must be matched by one ``unpin``.
    """

    tier: str  # "gpu", "host", ...

    @abstractmethod
    def get(self, key: PageKey, pin: bool = False) -> Any | None:
        """The cached object or None (a miss); either way the access is counted for placement."""

    @abstractmethod
    def put(self, key: PageKey, value: Any, nbytes: int, pin: bool = False, reserved: bool = False) -> bool:
        """Cache ``value`` (``nbytes`` of this tier's memory), evicting unpinned entries as needed.
        With ``reserved`` the caller already holds a ``reserve(nbytes)`` that the entry takes over.
        False when it cannot fit (then nothing is kept and a ``reserved`` reservation is returned);
        putting an existing key keeps the existing entry and returns True."""

    @abstractmethod
    def reserve(self, nbytes: int) -> bool:
        """Reserve room for an object about to be allocated (evicting unpinned entries); False if it
        cannot fit. Hand the reservation to ``put(reserved=True)`` or give it back with ``release``."""

    @abstractmethod
    def release(self, nbytes: int) -> None:
        """Give back a ``reserve`` that did not become an entry."""

    @abstractmethod
    def unpin(self, key: PageKey) -> None:
        """Undo one pin of ``key``."""

    @abstractmethod
    def evict(self, nbytes: int) -> int:
        """Evict unpinned entries, lowest benefit first, until ``nbytes`` are freed (or nothing
        unpinned is left); returns the bytes freed."""

    @abstractmethod
    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is cached (does not count as a hit or change recency)."""

    @abstractmethod
    def clear(self) -> None:
        """Drop every unpinned entry and return its memory (pinned entries stay until unpinned)."""

    @property
    @abstractmethod
    def used_bytes(self) -> int:
        """Bytes held by cached entries."""

    @property
    @abstractmethod
    def stats(self) -> CacheStats:
        """Hit/miss/eviction counters."""
