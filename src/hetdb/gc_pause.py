"""No full cyclic collection while a short statement runs.

CPython's cyclic garbage collector collects its oldest generation once enough younger collections have
passed; that pass visits every tracked object of the process. In a process that has imported CuPy,
Numba and pyarrow and run queries, that was 264k objects and one such pass, landing inside a warm
SSB q1.1 of ~13 ms, took 176-218 ms (H100, SF 20, s23 f/ and g/: 8 such passes in 208 runs of the
process). The young generations' collections stay on (they find the cycles a statement makes
itself, and cost ~0.1 ms); the oldest generation's threshold is lifted while any statement of the
process runs and put back when the last one ends, so a full pass, if one is due, happens on an
allocation after the statement instead of inside it.

Only for the first HOLD_SECONDS: a long statement's objects that outlive the young collections (a
delivery held while its kernels run) are collected only by full passes, and one in a reference cycle
holding device memory would hold it until the statement ends; so once a statement of the process has
run that long, the threshold is put back at the next collection (``_watch``) and full passes run as
usual.

Process-wide (the collector's thresholds are): statements of several connections or threads nest
in one count. A threshold the user set while a statement ran is kept, not overwritten; thresholds
with automatic collection off (0) are left alone.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Iterator

# The oldest generation's threshold while a statement runs (collections of the middle generation
# between full passes): in effect never.
_HELD = 1 << 30
# How long into the statement (the earliest of those running) full passes stay held off.
HOLD_SECONDS = 2.0
# False: thresholds left alone (A/B).
ENABLED = True

_lock = threading.RLock()  # (a collection's callback may run inside _enter/_exit, on the same thread)
_depth = 0
_saved: tuple[int, ...] | None = None  # the thresholds to put back, while they are held
_since = 0.0


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
    global _depth, _saved, _since
    with _lock:
        if _depth == 0:
            now = gc.get_threshold()
            # (threshold 0 of the youngest generation: the user turned automatic collection off)
            if now[0] > 0 and len(now) >= 3 and now[2] < _HELD:
                _saved, _since = now, time.monotonic()
                gc.set_threshold(now[0], now[1], _HELD)
                gc.callbacks.append(_watch)
            else:
                _saved = None
        _depth += 1


def _exit() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            _release()
            # (not from the callback itself: the collector is walking the list then)
            with contextlib.suppress(ValueError):
                gc.callbacks.remove(_watch)


def _release() -> None:
    """Put the saved thresholds back, unless the user changed them since."""
    global _saved
    if _saved is not None:
        now = gc.get_threshold()
        if now[:2] == _saved[:2] and now[2] == _HELD:
            gc.set_threshold(*_saved)
        _saved = None


def _watch(phase: str, info: dict) -> None:
    """gc callback while thresholds are held: past HOLD_SECONDS, put them back."""
    if phase == "start" and _saved is not None and time.monotonic() - _since > HOLD_SECONDS:
        with _lock:
            _release()
