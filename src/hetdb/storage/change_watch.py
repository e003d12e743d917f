"""Change notices for table directories (Linux inotify), so that a hot query's plan-cache check asks
the kernel once whether anything happened in the directories of the tables it reads instead of a
stat of every table's CURRENT file (tens of microseconds each on the H100 machine's file system,
2-5 per hot SSB query).

A commit renames a new CURRENT into the table's directory, a drop removes it or the directory: each
queues an event on the watch in the kernel before the committing call returns, in this process or
any other on this machine. So a check that finds no event since a validation (a stat that found
CURRENT as it was) knows that CURRENT is still the file it validated. Any event in the directory
(a new version's directory being written too) only sends the check back to the stat: it never
says more than "maybe changed".

Watched only where that holds: directories on local file systems (ext4, xfs, btrfs, tmpfs,
overlayfs, zfs, f2fs; a network file system does not report other machines' changes) reached
without a symbolic link (one pointed elsewhere sends no event), in the process that made the watch
(a forked child makes its own); the directories above a watched one are watched for being moved or
deleted (a database moved aside and another put at its path). A file system mounted over one of
them is not noticed. Elsewhere, or where inotify is missing
or out of watches, ``token`` answers None and the caller stats as before. ``HETDB_TABLE_WATCH=0``
switches the watch off.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_MASK_ADD = 0x01000000, 0x20000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_MASK_ADD)
# the directories above a watched one: moved or deleted, its path names another directory now
ANCESTOR_MASK = IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_MASK_ADD
_GONE = IN_IGNORED | IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF
# watches this process holds at most (the user's inotify watches are shared with every other program)
MAX_WATCHES = 1024
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)

# statfs f_type of file systems whose changes, by any process of this machine, inotify reports
LOCAL_FILE_SYSTEMS = {
    0xEF53: "ext2/3/4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs",
    0x794C7630: "overlayfs", 0x2FC12FC1: "zfs", 0xF2F52010: "f2fs",
}


class DirectoryWatch:
    """One inotify instance for the process: ``token(dir)`` before validating a directory's contents
    some other way, ``unchanged(dir, token)`` later: True only when the directory was watched all
    along and no event has come from it since the token."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._fd: int | None = None
        self._libc = None
        self._poller = None
        self._wd_of: dict[str, int] = {}   # directory -> watch descriptor
        self._path_of: dict[int, str] = {}
        self._above: dict[str, int] = {}   # the directories above them -> watch descriptor
        self._above_path: dict[int, str] = {}
        self._last: dict[int, int] = {}    # watch descriptor -> sequence number of its last event
        self._seq = 0                      # events read so far
        self._overflow = 0                 # sequence number of the last queue overflow (every watch changed)
        self.enabled = os.environ.get("HETDB_TABLE_WATCH", "1") not in ("0", "false", "off")

    def token(self, directory: str) -> int | None:
        """A token for ``unchanged`` taken now (before the caller validates the directory's contents),
        or None when the directory cannot be watched."""
        with self._lock:
            if not self._ready():
                return None
            wd = self._wd_of.get(directory)
            if wd is None and (wd := self._add(directory)) is None:
                return None
            if not self._add_above(directory):
                return None
            self._drain()
            return self._seq

    def unchanged(self, directory: str, token: int | None) -> bool:
        """Whether no event came from ``directory`` since ``token`` (False when it is not watched)."""
        if token is None or self._fd is None:
            return False
        with self._lock:
            if self._poller.poll(0):
                self._drain()
            wd = self._wd_of.get(directory)
            return wd is not None and self._last.get(wd, 0) <= token and self._overflow <= token

    def forked(self) -> None:
        """In a forked child: the parent's instance (its events) is not this process's; the next
        ``token`` makes one."""
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._lock = threading.Lock()
        self._pid = self._fd = self._poller = None

    # ---- inotify -----------------------------------------------------------------------------------
    def _ready(self) -> bool:
        if not self.enabled:
            return False
        if self._pid is not None:
            return self._fd is not None
        self._pid, self._fd = os.getpid(), None
        self._wd_of, self._path_of, self._last, self._above, self._above_path = {}, {}, {}, {}, {}
        try:
            libc = ctypes.CDLL(None, use_errno=True)  # (the process's C library; find_library may run ldconfig)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return False
        if fd < 0:
            return False
        self._libc, self._fd = libc, fd
        self._poller = select.poll()  # (a poll with nothing queued costs a quarter of a failing read)
        self._poller.register(fd, select.POLLIN)
        return True

    def _add(self, directory: str) -> int | None:
        if os.path.realpath(directory) != os.path.abspath(directory):
            return None  # (a symbolic link on the way: pointed elsewhere, it sends no event we watch)
        if not _local_file_system(self._libc, directory) or len(self._path_of) + len(self._above_path) >= MAX_WATCHES:
            return None
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(directory), MASK)
        if wd < 0:
            return None
        self._wd_of[directory], self._path_of[wd] = wd, directory
        self._last[wd] = self._seq + 1  # (the caller validates after this: nothing before counts)
        self._seq += 1
        return wd

    def _add_above(self, directory: str) -> bool:
        """Watch every directory above ``directory`` for being moved or deleted (a database moved
        aside and another put at its path: no event comes from the table directories themselves)."""
        path = os.path.dirname(os.path.abspath(directory))
        while path not in self._above:
            if len(self._path_of) + len(self._above_path) >= MAX_WATCHES:
                return False
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), ANCESTOR_MASK)
            if wd < 0:
                return False
            self._above[path], self._above_path[wd] = wd, path
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        return True

    def _drain(self) -> None:
        while self._poller.poll(0):
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            off = 0
            while off + _EVENT.size <= len(data):
                wd, mask, _, n = _EVENT.unpack_from(data, off)
                off += _EVENT.size + n
                self._seq += 1
                if wd < 0 or mask & IN_Q_OVERFLOW:
                    self._overflow = self._seq
                    continue
                self._last[wd] = self._seq
                if not mask & _GONE:
                    continue
                path = self._path_of.pop(wd, None)  # (watched no more: the next token adds it again)
                if path is not None and self._wd_of.get(path) == wd:
                    del self._wd_of[path]
                above = self._above_path.pop(wd, None)
                if above is not None:  # every path below it may name other directories now
                    self._overflow = self._seq
                    if self._above.get(above) == wd:
                        del self._above[above]
                if (path is not None or above is not None) and not mask & IN_IGNORED:
                    self._libc.inotify_rm_watch(self._fd, wd)  # (a moved directory's watch goes with it)


def _local_file_system(libc, path: str) -> bool:
    buf = ctypes.create_string_buffer(512)  # struct statfs (120 bytes on 64-bit Linux); f_type first
    try:
        if libc.statfs(os.fsencode(path), buf) != 0:
            return False
    except AttributeError:
        return False
    return struct.unpack_from("l", buf.raw, 0)[0] & 0xFFFFFFFF in LOCAL_FILE_SYSTEMS


WATCH = DirectoryWatch()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCH.forked)
