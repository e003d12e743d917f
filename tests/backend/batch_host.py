"""Carrying out a batched delivery plan (backend/gpu/batch_plan.py) with NumPy: the copies into one
buffer, then what each kernel of kernels/batch_decode.cu does, descriptor by descriptor
(decode_pages through the CPU codec, unpack_validity, rebase_offsets). Shared by the plan's tests and the streamer's CPU tests."""

from __future__ import annotations

import ctypes

import numpy as np

from hetdb import codec
from hetdb.codec.encodings import CODEC_IDS

_NAMES = {v: k for k, v in CODEC_IDS.items()}
_BY_SIZE = {1: np.uint8, 4: np.int32, 8: np.int64}  # decode_pages writes int64 images at the value size


def run_plan_on_host(plan, fetch, dtypes, copies=None):
    """``fetch(column, page, offset, nbytes)``: those bytes of a page. Returns the buffer and, per
    column, its arrays by name (data, validity, offsets, chars, encoded) as views of the buffer; for a paged
    plan per column a list of those, one per page. ``copies``: (host address, buffer offset, bytes)
    to carry out instead of the plan's copies through ``fetch`` (what run_delivery queues)."""
    buf = np.zeros(max(plan.nbytes, 1), np.uint8)
    buf[:plan.desc.nbytes] = plan.desc.view(np.uint8)
    if copies is not None:
        for src, dst, n in copies:
            assert 0 <= dst and dst + n <= plan.nbytes
            ctypes.memmove(buf.ctypes.data + dst, src, n)
    for ci, pi, off, n, dst in plan.copies if copies is None else ():
        buf[dst:dst + n] = fetch(ci, pi, off, n)
    desc = plan.desc
    if plan.decode:
        for j in range(plan.decode.pages):
            at = plan.decode.start + 4 * j
            src, dst, n, size = (int(x) for x in desc[at:at + 4])
            values = codec.decode(buf[src:], _NAMES[int(buf[src])], n, _BY_SIZE[size])
            buf[dst:dst + n * size] = values.view(np.uint8)
    if plan.unpack:
        for j in range(plan.unpack.pages):
            at = plan.unpack.start + 3 * j
            src, dst, n = (int(x) for x in desc[at:at + 3])
            buf[dst:dst + n] = 1 if src < 0 else np.unpackbits(buf[src:src + (n + 7) // 8], count=n,
                                                                bitorder="little")
    if plan.rebase:
        for j in range(plan.rebase.pages):
            at = plan.rebase.start + 5 * j
            src, dst, n, chars, last = (int(x) for x in desc[at:at + 5])
            page = buf[src:src + 8 * (n + 1)].view(np.int64)
            end = n + 1 if last else n
            buf[dst:dst + 8 * end] = (page[:end] - page[0] + chars).view(np.uint8)
    if plan.pages:
        return buf, [[_arrays(buf, cp, dtype) for cp in col] for col, dtype in zip(plan.pages, dtypes)]
    return buf, [_arrays(buf, cp, dtype) for cp, dtype in zip(plan.columns, dtypes)]


def _arrays(buf, cp, dtype):
    got = {}
    if cp.data is not None:
        off, ln = cp.data
        got["data"] = buf[off:off + ln].view(dtype)
    if cp.encoded is not None:
        off, ln = cp.encoded
        got["encoded"] = buf[off:off + ln]
    if cp.validity is not None:
        off, ln = cp.validity
        got["validity"] = buf[off:off + ln].view(np.bool_)
    if cp.offsets is not None:
        off, ln = cp.offsets
        coff, cln = cp.chars
        got["offsets"], got["chars"] = buf[off:off + ln].view(np.int64), buf[coff:coff + cln]
    return got
