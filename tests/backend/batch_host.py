"""Carrying out a batched delivery plan (backend/gpu/batch_plan.py) with NumPy: the copies into one
buffer, then what each kernel of kernels/batch_decode.cu does (decode_pages through the CPU codec,
unpack_validity, rebase_offsets). Shared by the plan's tests and the streamer's CPU tests."""

from __future__ import annotations

import numpy as np

from hetdb import codec
from hetdb.codec.encodings import CODEC_IDS

_NAMES = {v: k for k, v in CODEC_IDS.items()}


def run_plan_on_host(plan, fetch, dtypes):
    """``fetch(column, page, offset, nbytes)``: those bytes of a page. Returns the buffer and, per
    column, its arrays by name (data, validity, offsets, chars) as views of the buffer."""
    buf = np.zeros(max(plan.nbytes, 1), np.uint8)
    buf[:plan.desc.nbytes] = plan.desc.view(np.uint8)
    for ci, pi, off, n, dst in plan.copies:
        buf[dst:dst + n] = fetch(ci, pi, off, n)
    desc = plan.desc
    out = []
    for cp, dtype in zip(plan.columns, dtypes):
        got = {}
        if cp.data is not None:
            off, ln = cp.data
            data = buf[off:off + ln].view(dtype)
            if cp.decode is not None:
                s, k = cp.decode
                for j in range(k):
                    src, row0, n = (int(x) for x in desc[s + 3 * j:s + 3 * j + 3])
                    data[row0:row0 + n] = codec.decode(buf[src:], _NAMES[int(buf[src])], n, dtype)
            got["data"] = data
        if cp.validity is not None:
            off, ln = cp.validity
            valid = buf[off:off + ln].view(np.bool_)
            s, k = cp.unpack
            for j in range(k):
                src, row0, n = (int(x) for x in desc[s + 3 * j:s + 3 * j + 3])
                if src < 0:
                    valid[row0:row0 + n] = True
                else:
                    valid[row0:row0 + n] = np.unpackbits(buf[src:src + (n + 7) // 8], count=n,
                                                         bitorder="little").view(bool)
            got["validity"] = valid
        if cp.offsets is not None:
            off, ln = cp.offsets
            offsets = buf[off:off + ln].view(np.int64)
            s, k = cp.rebase
            for j in range(k):
                src, row0, n, base = (int(x) for x in desc[s + 4 * j:s + 4 * j + 4])
                page = buf[src:src + 8 * (n + 1)].view(np.int64)
                end = n + 1 if j == k - 1 else n
                offsets[row0:row0 + end] = page[:end] - page[0] + base
            coff, cln = cp.chars
            got["offsets"], got["chars"] = offsets, buf[coff:coff + cln]
        out.append(got)
    return buf, out
