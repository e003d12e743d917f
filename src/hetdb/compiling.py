"""What is being compiled right now — Numba functions (CPU kernels) and CUDA sources (NVRTC) — so
a progress line can say "compiling …" during a first run's kernel compiles (seconds each)."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_active: dict[int, str] = {}   # token -> what is compiling
_tokens = itertools.count()
_numba_installed = False


@contextlib.contextmanager
def compiling(what: str) -> Iterator[None]:
    """Mark ``what`` (e.g. "CUDA fused.cu") as compiling while the block runs."""
    token = next(_tokens)
    with _lock:
        _active[token] = what
    try:
        yield
    finally:
        with _lock:
            _active.pop(token, None)


def current() -> str | None:
    """The most recently started compile still running, or None."""
    with _lock:
        return _active[max(_active)] if _active else None


def watch_numba() -> None:
    """Report Numba compiles through ``compiling`` (a Numba event listener, installed once)."""
    global _numba_installed
    with _lock:
        if _numba_installed:
            return
        _numba_installed = True
    try:
        from numba.core import event
    except ImportError:
        return

    class _Listener(event.Listener):
        def __init__(self) -> None:
            self._open = threading.local()

        def on_start(self, ev) -> None:
            dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", "a kernel")
            cm = compiling(f"Numba {name}")
            cm.__enter__()
            self._stack().append(cm)

        def on_end(self, ev) -> None:
            stack = self._stack()
            if stack:
                stack.pop().__exit__(None, None, None)

        def _stack(self) -> list:
            if not hasattr(self._open, "stack"):
                self._open.stack = []
            return self._open.stack

    event.register("numba:compile", _Listener())
