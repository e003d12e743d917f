"""Atomic read-modify-write of array elements inside Numba kernels (LLVM ``atomicrmw``), for loops
over ``prange`` that set bits several threads may share (a runtime join filter's words)."""

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
