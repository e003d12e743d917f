"""Dictionary lookups of compiled GPU kernels kept between a connection's queries.

A compiled kernel reads a string predicate (``p_type LIKE '%BRASS'``, ``r_name = 'EUROPE'``) as a
lookup table over the column's dictionary: the expression evaluated once per dictionary string by the
operator kernels (exec/compiled_rows.dictionary_lookups). A hot query reads the same cached pages, so
the same dictionary objects, every run: the tables are kept while their dictionary lives (a weak
reference) instead of being evaluated again (several launches and a host round trip each) per run.
They are keyed by the expression (with its column id) and the dictionary object, what the values are
a function of on one connection (its options are fixed); not by kernel, since kernels that differ
only in a lookup's literal have the same text. At most MAX_BYTES are kept (outside the memory
budget, like the dictionaries they index); their device bytes count as the connection's in the
after-query leak check (exec/device.py), like the page cache's.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

MAX_ENTRIES = 256
MAX_BYTES = 64 << 20  # kept outside the memory budget: a few dictionaries' worth at most
VOLATILE = frozenset({"random"})


class LookupTables:
    """expression -> (dictionary, values, valid) of the last dictionary it was evaluated over."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Any, tuple[weakref.ref, Any, Any]] = OrderedDict()
        self.version = 0  # bumped whenever a table comes or goes
        self.nbytes = 0

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
        try:
            hash(key)
        except TypeError:
            return
        if _volatile(key):
            return  # (evaluated again per query, as before)
        size = _nbytes(values) + _nbytes(valid)
        if size > MAX_BYTES:
            return
        self._prune()
        old = self._entries.pop(key, None)
        if old is not None:
            self.nbytes -= _nbytes(old[1]) + _nbytes(old[2])
        self._entries[key] = (weakref.ref(dictionary), values, valid)
        self.nbytes += size
        while len(self._entries) > MAX_ENTRIES or self.nbytes > MAX_BYTES:
            _, (_, v, m) = self._entries.popitem(last=False)
            self.nbytes -= _nbytes(v) + _nbytes(m)
        self.version += 1

    def _prune(self) -> None:
        dead = [k for k, (ref, _, _) in self._entries.items() if ref() is None]
        for k in dead:
            _, v, m = self._entries.pop(k)
            self.nbytes -= _nbytes(v) + _nbytes(m)
        self.version += bool(dead)

    def arrays(self) -> Iterator[Any]:
        """The device arrays the kept tables hold (those of dictionaries still alive)."""
        self._prune()
        for _, values, valid in self._entries.values():
            yield values
            yield valid

    def clear(self) -> None:
        self._entries.clear()
        self.nbytes = 0
        self.version += 1

    def __len__(self) -> int:
        return len(self._entries)


def _nbytes(a: Any) -> int:
    return int(getattr(a, "nbytes", 0))


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
