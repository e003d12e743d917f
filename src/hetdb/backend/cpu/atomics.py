"""Atomics inside Numba kernels: read-modify-write of array elements (LLVM ``atomicrmw``) for loops
over ``prange`` that set bits several threads may share (a runtime join filter's words); compare and
exchange and atomic reads for claims several threads race for (co-processing's CPU share,
exec/coprocess_batch.py); the monotonic clock and arrays at raw addresses for loops that run without
the interpreter lock over many pages."""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def atomic_or(typingctx, arr, idx, val):
    """``arr[idx] |= val`` as one atomic operation (relaxed ordering: the kernel's end orders it)."""
    if not isinstance(arr, types.Array) or not isinstance(arr.dtype, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        ary = context.make_array(aryty)(context, builder, args[0])
        index = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [index])
        builder.atomic_rmw("or", ptr, context.cast(builder, args[2], valty, aryty.dtype), "monotonic")
        return context.get_dummy_value()

    return types.void(arr, idx, val), codegen


@intrinsic
def atomic_cas(typingctx, arr, idx, expected, new):
    """``arr[idx]``'s old value, replaced by ``new`` when it was ``expected`` (one atomic compare and
    exchange, sequentially consistent: claims several threads race for)."""
    if not isinstance(arr, types.Array) or not isinstance(arr.dtype, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty, expty, newty = sig.args
        ary = context.make_array(aryty)(context, builder, args[0])
        index = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [index])
        exp = context.cast(builder, args[2], expty, aryty.dtype)
        new = context.cast(builder, args[3], newty, aryty.dtype)
        pair = builder.cmpxchg(ptr, exp, new, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)

    return arr.dtype(arr, idx, expected, new), codegen


@intrinsic
def atomic_load(typingctx, arr, idx):
    """``arr[idx]`` read atomically (sequentially consistent: a flag or counter other threads change
    while the loop runs, which a plain read could have hoisted out of it)."""
    if not isinstance(arr, types.Array) or not isinstance(arr.dtype, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty = sig.args
        ary = context.make_array(aryty)(context, builder, args[0])
        index = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [index])
        width = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
        return builder.load_atomic(ptr, "seq_cst", width)

    return arr.dtype(arr, idx), codegen


@intrinsic
def monotonic(typingctx):
    """The monotonic clock in seconds, the one ``time.perf_counter`` reads on Linux
    (``clock_gettime(CLOCK_MONOTONIC)``), inside a compiled loop that holds no interpreter lock."""
    from llvmlite import ir

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        ts_t = ir.LiteralStructType([i64, i64])
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), ts_t.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        ts = cgutils.alloca_once(builder, ts_t)
        builder.call(fn, [ir.Constant(ir.IntType(32), 1), ts])  # CLOCK_MONOTONIC
        sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
        nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
        dbl = ir.DoubleType()
        return builder.fadd(builder.sitofp(sec, dbl), builder.fmul(builder.sitofp(nsec, dbl), ir.Constant(dbl, 1e-9)))

    return types.float64(), codegen


@intrinsic
def array_at(typingctx, address, n, like):
    """A 1-D array of ``n`` elements of ``like``'s type at ``address`` (an int: the data pointer of
    an array the caller keeps alive while the loop reads it)."""
    if not isinstance(like, types.Array) or not isinstance(address, types.Integer):
        return None
    out = types.Array(like.dtype, 1, "C")

    def codegen(context, builder, sig, args):
        addr, count = args[0], context.cast(builder, args[1], sig.args[1], types.intp)
        ary = context.make_array(out)(context, builder)
        itemsize = context.get_abi_sizeof(context.get_data_type(out.dtype))
        data = builder.inttoptr(addr, context.get_data_type(out.dtype).as_pointer())
        context.populate_array(ary, data=data, shape=cgutils.pack_array(builder, [count]),
                               strides=cgutils.pack_array(builder, [context.get_constant(types.intp, itemsize)]),
                               itemsize=context.get_constant(types.intp, itemsize), meminfo=None)
        return ary._getvalue()

    return out(address, n, like), codegen
