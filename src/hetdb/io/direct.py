"""One aligned read: O_DIRECT into a 4096-aligned buffer, buffered read where O_DIRECT is refused.

O_DIRECT bypasses the kernel page cache, so a scan larger than memory does not evict everything else
and the bytes land once, in the buffer we chose (later a pinned buffer the GPU can DMA from). It needs
the file offset, the length and the buffer address aligned (4096 covers every common block size).
tmpfs and some network file systems refuse O_DIRECT with EINVAL; then we read through the page cache.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from hetdb.errors import CorruptDataError

ALIGN = 4096

Alloc = Callable[[int], Any]

_HAS_O_DIRECT = hasattr(os, "O_DIRECT")


def aligned_empty(nbytes: int) -> np.ndarray:
    """A writable uint8 array of ``nbytes`` whose address is a multiple of ALIGN."""
    raw = np.empty(nbytes + ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + nbytes]


def _as_uint8(buf: Any, nbytes: int) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise ValueError("read buffers must be contiguous")
        arr = buf.reshape(-1).view(np.uint8)
    else:
        arr = np.frombuffer(buf, dtype=np.uint8)
    if arr.shape[0] < nbytes:
        raise ValueError(f"alloc returned {arr.shape[0]} bytes, {nbytes} needed")
    return arr[:nbytes]


def _is_aligned(arr: np.ndarray, offset: int, length: int) -> bool:
    return arr.ctypes.data % ALIGN == 0 and offset % ALIGN == 0 and length % ALIGN == 0


# Linux's limit on the buffers of one preadv (IOV_MAX)
MAX_IOV = 1024


def _preadv_all(fd: int, buffers: list[np.ndarray], offset: int) -> int:
    """Fill ``buffers`` (in order) from ``offset`` with as few ``preadv`` calls as the kernel allows
    (one, for an O_DIRECT read: the device then has every request of it in flight at once); returns
    the bytes read (less than their sum only at end of file)."""
    views = [memoryview(b) for b in buffers if b.shape[0]]
    done = i = 0
    while i < len(views):
        n = os.preadv(fd, views[i:i + MAX_IOV], offset + done)
        if n == 0:
            break
        done += n
        while n > 0:
            size = len(views[i])
            if n < size:
                views[i] = views[i][n:]
                break
            n -= size
            i += 1
    return done


def read_into(path: str, offset: int, buffers: list[np.ndarray], direct: bool = True) -> int:
    """Read consecutive bytes of ``path`` from ``offset`` into ``buffers`` (contiguous uint8 arrays,
    filled in order) as one request: O_DIRECT when ``direct`` and the offset and every buffer's
    address and length are 4096-aligned (buffered where the file system refuses it). Returns the
    bytes read: less than the buffers hold only where the file ends first."""
    got = -1
    if direct and _HAS_O_DIRECT and offset % ALIGN == 0 and all(_is_aligned(b, 0, b.shape[0]) for b in buffers):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
        else:
            try:
                got = _preadv_all(fd, buffers, offset)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                got = -1  # this file system accepts the flag at open but not the read
            finally:
                os.close(fd)
    if got < 0:
        fd = os.open(path, os.O_RDONLY)
        try:
            got = _preadv_all(fd, buffers, offset)
        finally:
            os.close(fd)
    return got


def read_range(path: str, offset: int, length: int, out: Any | None = None,
               alloc: Alloc | None = None) -> np.ndarray:
    """Read bytes [offset, offset+length) of ``path`` into a uint8 array (``out``, else from ``alloc``,
    else a fresh aligned array). Raises CorruptDataError naming the file if it ends early."""
    if out is None:
        out = alloc(length) if alloc is not None else aligned_empty(length)
    buf = _as_uint8(out, length)
    got = read_into(path, offset, [buf])
    if got < length:
        raise CorruptDataError(f"file {path} is truncated: needed {length} bytes at offset {offset}, "
                               f"found {got}")
    return buf


def runs_crc32(runs: list[np.ndarray], length: int) -> int:
    """The CRC-32 of the first ``length`` bytes of ``runs`` (consecutive buffers, in order)."""
    import zlib

    crc, left = 0, length
    for run in runs:
        if left <= 0:
            break
        n = min(left, run.shape[0])
        crc = zlib.crc32(memoryview(run[:n]), crc)
        left -= n
    return crc & 0xFFFFFFFF


def read_verified(path: str, offset: int, runs: list[np.ndarray], length: int, checksum: int,
                  where: str) -> None:
    """Read consecutive bytes of ``path`` from ``offset`` into ``runs`` (in order, each filled; one
    request) and check that the CRC-32 of the first ``length`` of them is ``checksum``;
    CorruptDataError naming ``where`` otherwise (or when the file is missing or short)."""
    need = sum(int(r.shape[0]) for r in runs)
    try:
        got = read_into(path, offset, runs)
    except FileNotFoundError:
        raise CorruptDataError(f"{where}: column file is missing (was this version removed by a later "
                               "commit? reopen the table)") from None
    if got < need:
        raise CorruptDataError(f"{where}: file {path} is truncated: needed {need} bytes at offset {offset}, "
                               f"found {got}")
    if runs_crc32(runs, length) != checksum:
        raise CorruptDataError(f"{where}: checksum mismatch (data is damaged)")


def will_need(path: str) -> None:
    """Ask the kernel to start reading ``path`` into the page cache (asynchronous readahead) for a
    buffered read of it soon; quietly nothing where that is not possible."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # (the read that follows reports a missing file)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)
