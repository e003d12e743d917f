"""Writer locks: the writers of one table serialise; readers never lock.

A writer holds ``fcntl.flock`` on ``<table dir>/LOCK`` from before it numbers its version until after
it published CURRENT and removed old versions. The kernel releases the lock when the process dies (a
SIGKILLed writer blocks nobody), and the descriptor is close-on-exec, so a child process never keeps
it. Inside one process a second writer of the same table waits for the first when it runs on another
thread; on the same thread it would wait forever, so it is refused with CatalogError.
"""

from __future__ import annotations

import fcntl
import os
import threading

from hetdb.errors import CatalogError

LOCK_FILE = "LOCK"

_held: dict[str, int] = {}  # lock file path -> ident of the thread holding it (this process)
_held_changed = threading.Condition()


class TableLock:
    """An exclusive lock of one table's writers; ``release()`` (or process death) frees it."""

    def __init__(self, table_dir: str, table: str) -> None:
        self.path = os.path.join(table_dir, LOCK_FILE)
        self._fd: int | None = None
        me = threading.get_ident()
        with _held_changed:
            while self.path in _held:
                if _held[self.path] == me:
                    raise CatalogError(f"table '{table}' already has an open writer on this thread: "
                                       "commit or abort it before writing the table again")
                _held_changed.wait()
            _held[self.path] = me
        try:
            self._fd = _lock_file(table_dir, self.path)
        except BaseException:
            self._forget()
            raise

    def release(self) -> None:
        if self._fd is None:
            return
        os.close(self._fd)  # closing the descriptor drops the flock
        self._fd = None
        self._forget()

    def _forget(self) -> None:
        with _held_changed:
            _held.pop(self.path, None)
            _held_changed.notify_all()


def _lock_file(table_dir: str, path: str) -> int:
    """An open descriptor of ``path`` holding LOCK_EX, for the file that is at ``path`` now: a drop may
    have renamed the table directory away while this writer waited, so the lock is taken again on the
    file found at the path until the two are the same."""
    while True:
        os.makedirs(table_dir, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            continue  # the directory was dropped between makedirs and open
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)
