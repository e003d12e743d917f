"""Decoding compressed page data sections on the GPU (kernels in decode.cu / decode.cuh).

Used where a whole page is needed as a device array: decode-on-arrival into the device page cache
(``stream.py``) and operator-at-a-time paths. The bytes were checksum-verified on the host when the
page was read, so the kernels trust the header and directory (the CPU decoder checks them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.gpu.compile import get_module, launch
from hetdb.codec import PLAIN

_CTYPES = {1: "unsigned char", 4: "int", 8: "long long"}
DECODE_NAMES = tuple(f"decode_page<{t}>" for t in _CTYPES.values())
_THREADS = 256
_TILE = 256 * 4  # DECODE_THREADS * DECODE_ITEMS in decode.cu
_MAX_GRID = 1 << 16


def decode_device(data: Any, codec: str, n: int, dtype: Any) -> Any:
    """A new device array of ``n`` values of ``dtype`` decoded from the device bytes ``data`` (a CuPy
    uint8 array holding the page's data section encoded in ``codec``)."""
    import cupy

    dtype = np.dtype(dtype)
    if codec == PLAIN:
        return data.view(dtype)[:n]
    out = cupy.empty(n, dtype=dtype)
    if n == 0:
        return out
    target = out.view(np.int64) if dtype == np.float64 else out.view(np.uint8) if dtype == np.bool_ else out
    ctype = _CTYPES[dtype.itemsize]
    fn = get_module("decode.cu", DECODE_NAMES).function(f"decode_page<{ctype}>")
    launch(fn, min(-(-n // _TILE), _MAX_GRID), _THREADS, (cupy.ascontiguousarray(data), target, np.int64(n)))
    return out
