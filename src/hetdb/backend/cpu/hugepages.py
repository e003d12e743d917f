"""Huge pages for the large arrays Numba kernels allocate.

Numba's runtime allocates through Python's raw allocator (``PyMem_RawMalloc``, i.e. malloc). Where
the kernel's transparent huge pages are "madvise" (the default of many distributions), memory that
nobody advised is faulted in 4 KiB at a time: a kernel's 128 MiB output took ~65-90 ms to allocate
and touch on the 2-core machine against ~7-20 ms with huge pages (NumPy advises its own large
arrays; Numba does not). ``install`` puts a hook in front of the raw allocator that advises every
block of at least 4 MiB (MADV_HUGEPAGE) and otherwise calls the allocator that was there (its
blocks, earlier ones included, are freed by it as before).

The hook's functions are Numba ``cfunc``s cached on disk: they call the previous allocator and
madvise through addresses read at run time from a table passed as the allocator's context, so no
address of this process is compiled into them. They hold no GIL (the raw domain's contract).
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np
from llvmlite import ir
from numba import cfunc, njit, types
from numba.extending import intrinsic

_I64 = ir.IntType(64)
_MADV_HUGEPAGE = 14
_HUGE = np.uint64(1 << 21)
_MIN_BYTES = np.uint64(1 << 22)
_THP = "/sys/kernel/mm/transparent_hugepage/enabled"
# "1": install the hook when the CPU backend is imported (an experiment until measured on 16 cores:
# off, the allocator is left alone)
ENV = "HETDB_HUGEPAGES"


@intrinsic
def _word(typingctx, addr, i):
    """The uint64 at address ``addr`` + 8 ``i``."""
    def codegen(context, builder, sig, args):
        return builder.load(builder.gep(builder.inttoptr(args[0], _I64.as_pointer()), [args[1]]))
    return types.uint64(types.uint64, types.int64), codegen


@intrinsic
def _call2(typingctx, fn, a, b):
    def codegen(context, builder, sig, args):
        fty = ir.FunctionType(_I64, [_I64, _I64])
        return builder.call(builder.inttoptr(args[0], fty.as_pointer()), [args[1], args[2]])
    return types.uint64(types.uint64, types.uint64, types.uint64), codegen


@intrinsic
def _call3(typingctx, fn, a, b, c):
    def codegen(context, builder, sig, args):
        fty = ir.FunctionType(_I64, [_I64, _I64, _I64])
        return builder.call(builder.inttoptr(args[0], fty.as_pointer()), [args[1], args[2], args[3]])
    return types.uint64(types.uint64, types.uint64, types.uint64, types.uint64), codegen


@intrinsic
def _call2_void(typingctx, fn, a, b):
    def codegen(context, builder, sig, args):
        fty = ir.FunctionType(ir.VoidType(), [_I64, _I64])
        builder.call(builder.inttoptr(args[0], fty.as_pointer()), [args[1], args[2]])
        return context.get_dummy_value()
    return types.void(types.uint64, types.uint64, types.uint64), codegen


@intrinsic
def _madvise(typingctx, fn, addr, n):
    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        fty = ir.FunctionType(i32, [_I64, _I64, i32])
        builder.call(builder.inttoptr(args[0], fty.as_pointer()), [args[1], args[2], ir.Constant(i32, _MADV_HUGEPAGE)])
        return context.get_dummy_value()
    return types.void(types.uint64, types.uint64, types.uint64), codegen


# the context table: previous ctx, malloc, calloc, realloc, free, then madvise
_CTX, _MALLOC, _CALLOC, _REALLOC, _FREE, _MADVISE = range(6)


@njit(cache=True, nogil=True, inline="always")
def _advise(table, p, size):
    if size >= _MIN_BYTES and p != 0:
        lo = (p + _HUGE - np.uint64(1)) & ~(_HUGE - np.uint64(1))
        hi = (p + size) & ~(_HUGE - np.uint64(1))
        if hi > lo:
            _madvise(_word(table, _MADVISE), lo, hi - lo)


@cfunc(types.uint64(types.uint64, types.uint64), cache=True, nopython=True)
def _malloc(table, size):
    p = _call2(_word(table, _MALLOC), _word(table, _CTX), size)
    _advise(table, p, size)
    return p


@cfunc(types.uint64(types.uint64, types.uint64, types.uint64), cache=True, nopython=True)
def _calloc(table, count, size):
    p = _call3(_word(table, _CALLOC), _word(table, _CTX), count, size)
    _advise(table, p, count * size)
    return p


@cfunc(types.uint64(types.uint64, types.uint64, types.uint64), cache=True, nopython=True)
def _realloc(table, ptr, size):
    p = _call3(_word(table, _REALLOC), _word(table, _CTX), ptr, size)
    _advise(table, p, size)
    return p


@cfunc(types.void(types.uint64, types.uint64), cache=True, nopython=True)
def _free(table, ptr):
    _call2_void(_word(table, _FREE), _word(table, _CTX), ptr)


class _Allocator(ctypes.Structure):  # PyMemAllocatorEx
    _fields_ = [("ctx", ctypes.c_void_p), ("malloc", ctypes.c_void_p), ("calloc", ctypes.c_void_p),
                ("realloc", ctypes.c_void_p), ("free", ctypes.c_void_p)]


_RAW = 0  # PYMEM_DOMAIN_RAW
_installed: list = []
_lock = threading.Lock()


def installed() -> bool:
    return bool(_installed)


def wanted() -> bool:
    """Whether the hook can help here: Linux x86-64 with huge pages on request ("madvise")."""
    if not sys.platform.startswith("linux") or sys.maxsize < 2**63 - 1:
        return False
    try:
        with open(_THP) as f:
            return "[madvise]" in f.read()
    except OSError:
        return False


def install() -> bool:
    """Put the hook in front of Python's raw allocator (once per process); True when it is there."""
    with _lock:
        if _installed:
            return True
        if not wanted():
            return False
        api = ctypes.pythonapi
        api.PyMem_GetAllocator.argtypes = [ctypes.c_int, ctypes.POINTER(_Allocator)]
        api.PyMem_SetAllocator.argtypes = [ctypes.c_int, ctypes.POINTER(_Allocator)]
        old = _Allocator()
        api.PyMem_GetAllocator(_RAW, ctypes.byref(old))
        madvise = ctypes.cast(ctypes.CDLL(None).madvise, ctypes.c_void_p).value
        table = np.array([old.ctx or 0, old.malloc, old.calloc, old.realloc, old.free, madvise], np.uint64)
        new = _Allocator(table.ctypes.data, _malloc.address, _calloc.address, _realloc.address, _free.address)
        _installed.extend([table, old, new])  # kept alive: the allocator reads them for ever
        api.PyMem_SetAllocator(_RAW, ctypes.byref(new))
        return True
