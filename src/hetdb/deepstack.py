"""Run a query's work so that deep nesting gives an answer or a typed error, never a crash.

Parsing (sqlglot), binding, the optimizer passes and the expression compilers walk trees recursively,
so a long AND/OR chain or a deeply parenthesised expression exceeds Python's recursion limit (1,000
frames) on the caller's thread. ``run_guarded`` first runs the work as usual; only when that raises
RecursionError does it run it again on a thread with a large C stack and a recursion limit sized to
that stack (so a deep recursion ends in RecursionError, not in a segfault). What is still too deep
there is refused with UnsupportedError. ``MemoryError`` becomes the typed OutOfMemoryError.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from hetdb.errors import OutOfMemoryError, UnsupportedError

R = TypeVar("R")

# Virtual size of the deep thread's stack; pages are committed only as the recursion touches them.
DEEP_STACK_BYTES = 512 << 20
# One unit of Python's recursion limit costs at most ~700 bytes of C stack when every frame goes
# through C (measured on CPython 3.11: ~150,000 levels of C-level recursion overflow 64 MiB);
# 2 KiB per unit keeps a margin of ~3x.
_STACK_BYTES_PER_LEVEL = 2048
DEEP_RECURSION_LIMIT = DEEP_STACK_BYTES // _STACK_BYTES_PER_LEVEL
# SQL texts longer than this go to the deep-stack thread at once: a failed shallow attempt at a long
# AND/OR chain costs as much as the successful deep one.
DEEP_SQL_CHARS = 20_000

# sys.setrecursionlimit is per interpreter: one deep run at a time raises it, and restores it after.
_deep_lock = threading.Lock()


def run_guarded(what: str, fn: Callable[[], R], deep: bool = False) -> R:
    """``fn()``; on RecursionError, ``fn()`` again on a deep-stack thread (see the module docstring).
    ``deep``: go to the deep-stack thread at once (the caller expects deep nesting, e.g. from the
    length of the SQL text). ``what`` names the work in error messages ("query")."""
    if deep:
        return run_deep(what, fn)
    try:
        return _oom_typed(fn)
    except RecursionError:
        pass  # leave the except block first: the shallow stack unwinds before the retry
    return run_deep(what, fn)


def run_deep(what: str, fn: Callable[[], R]) -> R:
    """``fn()`` on a thread with a DEEP_STACK_BYTES stack and a DEEP_RECURSION_LIMIT recursion limit;
    UnsupportedError when it still recurses too deeply."""
    result: list = []
    error: list[BaseException] = []

    def body() -> None:
        try:
            result.append(_oom_typed(fn))
        except RecursionError:
            error.append(UnsupportedError(
                f"the {what} is nested too deeply (over {DEEP_RECURSION_LIMIT:,} levels of recursion "
                "while compiling it): split long AND/OR chains or deeply nested expressions"))
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread below
            error.append(e)

    with _deep_lock:
        old_limit = sys.getrecursionlimit()
        old_size = threading.stack_size()
        try:
            threading.stack_size(DEEP_STACK_BYTES)
            worker = threading.Thread(target=body, name="hetdb-deep-stack")
            sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
            try:
                worker.start()
            except RuntimeError:  # no address space for the stack (e.g. under ulimit -v)
                raise OutOfMemoryError(
                    f"the {what} is nested too deeply for the default stack and there is no memory "
                    f"for a {DEEP_STACK_BYTES >> 20} MiB stack to compile it") from None
            finally:
                threading.stack_size(old_size)
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


def _oom_typed(fn: Callable[[], R]) -> R:
    try:
        return fn()
    except MemoryError as e:
        raise OutOfMemoryError(
            "out of host memory" + (f" ({e})" if str(e) else "") + ": lower the data size or set "
            "host_memory_limit so operators spill before the process runs out") from None
