"""No full cyclic collection while a statement runs.

CPython's cyclic garbage collector collects its oldest generation once enough younger collections have
passed; that pass visits every tracked object of the process. In a process that has imported CuPy,
Numba and pyarrow and run queries, that was 264k objects and one such pass, landing inside a warm
SSB q1.1 of ~13 ms, took 176 ms (H100, SF 20, s23 f/: the query took 187 ms; 8 such passes in 208
runs of the process). The young generations' collections stay on (they find the cycles a
statement makes itself, and cost ~0.1 ms); the oldest generation's threshold is lifted while any
statement of the process runs and put back when the last one ends, so a full pass, if one is due,
happens on an allocation after the statement instead of inside it.

Process-wide (the collector's thresholds are): statements of several connections or threads nest
in one count. A threshold the user set while a statement ran is kept, not overwritten.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

# The oldest generation's threshold while a statement runs (collections of the middle generation
# between full passes): in effect never.
_HELD = 1 << 30
# False: thresholds left alone (A/B).
ENABLED = True

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] | None = None


@contextlib.contextmanager
def no_full_collection() -> Iterator[None]:
    """Hold the collector's full passes off while the block runs (see the module docstring)."""
    if not ENABLED:
        yield
        return
    _enter()
    try:
        yield
    finally:
        _exit()


def _enter() -> None:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            now = gc.get_threshold()
            # (threshold 0 of the youngest generation: the user turned automatic collection off)
            if now[0] > 0 and len(now) >= 3 and now[2] < _HELD:
                _saved = now
                gc.set_threshold(now[0], now[1], _HELD)
            else:
                _saved = None
        _depth += 1


def _exit() -> None:
    global _depth, _saved
    with _lock:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            now = gc.get_threshold()
            if now[:2] == _saved[:2] and now[2] == _HELD:  # (unchanged since: put the user's back)
                gc.set_threshold(*_saved)
            _saved = None
