"""Dictionary lookups of compiled GPU kernels kept between a connection's queries.

A compiled kernel reads a string predicate (``p_type LIKE '%BRASS'``, ``r_name = 'EUROPE'``) as a
lookup table over the column's dictionary: the expression evaluated once per dictionary string by the
operator kernels (exec/compiled_rows.dictionary_lookups). A hot query reads the same cached pages, so
the same dictionary objects, every run: the tables are kept per (kernel, lookup) while their dictionary
lives (a weak reference), instead of being evaluated again (several launches and a host round trip
each) per run. They are keyed by the expression (with its column id) and the dictionary object: what
the values are a function of, on one connection (its options are fixed). Their device bytes count as kept by the connection (exec/device.py), like the page
cache's, so the after-query leak check does not count them.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

MAX_ENTRIES = 256
VOLATILE = frozenset({"random"})
MAX_DICTIONARY_ROWS = 1 << 20  # a larger dictionary's table is made per query, as before


class LookupTables:
    """expression -> (dictionary, values, valid) of the last dictionary it was evaluated over."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Any, tuple[weakref.ref, Any, Any]] = OrderedDict()
        self.version = 0  # bumped whenever a table comes or goes

    def get(self, key: Any, dictionary: Any) -> tuple[Any, Any] | None:
        """(values, valid) made for ``dictionary`` (the same object), else None."""
        try:
            entry = self._entries.get(key)
        except TypeError:  # an unhashable literal in the expression: not kept
            return None
        if entry is None or entry[0]() is not dictionary:
            return None
        self._entries.move_to_end(key)
        return entry[1], entry[2]

    def put(self, key: Any, dictionary: Any, values: Any, valid: Any) -> None:
        if len(dictionary) > MAX_DICTIONARY_ROWS:
            return
        try:
            hash(key)
        except TypeError:
            return
        if _volatile(key):
            return  # (evaluated again per query, as before)
        self._prune()
        self._entries[key] = (weakref.ref(dictionary), values, valid)
        self._entries.move_to_end(key)
        while len(self._entries) > MAX_ENTRIES:
            self._entries.popitem(last=False)
        self.version += 1

    def _prune(self) -> None:
        dead = [k for k, (ref, _, _) in self._entries.items() if ref() is None]
        for k in dead:
            del self._entries[k]
        self.version += bool(dead)

    def arrays(self) -> Iterator[Any]:
        """The device arrays the kept tables hold (those of dictionaries still alive)."""
        self._prune()
        for _, values, valid in self._entries.values():
            yield values
            yield valid

    def clear(self) -> None:
        self._entries.clear()
        self.version += 1

    def __len__(self) -> int:
        return len(self._entries)


def _volatile(expr: Any) -> bool:
    """Whether ``expr`` calls a function whose value is not a function of its arguments."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if getattr(e, "op", None) in VOLATILE:
            return True
        children = getattr(e, "children", None)
        if callable(children):
            stack.extend(children())
    return False
