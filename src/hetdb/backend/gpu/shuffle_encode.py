"""Encoding many value buffers ("segments": every column buffer of every partition of an exchange
batch) on the GPU in hetdb's page encodings, with three launches for all of them together
(kernels/shuffle_encode.cu): block parameters, the per-segment choice of codec with each block's
offset, then the packing into one device buffer at offsets the caller chooses.

The codec of a segment is the smallest of const, plain, frame-of-reference and delta, computed
exactly from the whole segment's block parameters (no sampling needed: the first pass sees every
value), ties to the cheaper decode as ``hetdb.codec.encode`` breaks them, so a section equals
``hetdb.codec.encode(values, GPU_CODECS)`` byte for byte. Run-length and integer dictionaries are
not encoded on the GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.gpu.compile import get_module, grid_for, launch
from hetdb.dist.segments import GPU_CODECS, Segment

__all__ = ["GPU_CODECS", "CODEC_NAMES", "Segment", "SegmentPlan", "encode_segment", "partition_ids"]
CODEC_NAMES = {0: "plain", 1: "const", 2: "for", 3: "delta"}
_CODEC_BITS = {"const": 1 << 1, "for": 1 << 2, "delta": 1 << 3}
_BLOCK = 1024
_THREADS = 256
_MAX_GRID = 1 << 16


def _module():
    return get_module("shuffle_encode.cu")


class SegmentPlan:
    """``dist.segments.HostSegmentPlan``'s contract on the GPU: the codec and encoded size of every segment (``codecs``, ``nbytes``: host values, known after
    the first two launches and one small copy to the host); ``pack`` writes them."""

    def __init__(self, segments: list[Segment]):
        import cupy

        self.segments = segments
        table = np.zeros((len(segments), 8), np.int64)
        first = 0
        for i, s in enumerate(segments):
            width = np.dtype(s.values.dtype).itemsize
            if width not in (1, 4, 8):
                raise ValueError(f"segment {i}: values of {width} bytes (the codecs take 1, 4 or 8)")
            table[i] = (s.values.data.ptr, 0 if s.rows is None else s.rows.data.ptr, s.start, s.n, width,
                        s.mode(), first, 0 if s.plain_only else sum(_CODEC_BITS.values()))
            first += -(-s.n // _BLOCK)
        self.total_blocks = first
        self.table = cupy.asarray(table)
        self.widths = table[:, 4].copy()
        nb = max(first, 1)
        self.for_ref = cupy.empty(nb, cupy.int64)
        self.for_w = cupy.empty(nb, cupy.int32)
        self.d_ref = cupy.empty(nb, cupy.int64)
        self.d_w = cupy.empty(nb, cupy.int32)
        self.base = cupy.empty(nb, cupy.int64)
        self.word_off = cupy.empty(nb, cupy.int64)
        self.seg_out = cupy.zeros(2 * max(len(segments), 1), cupy.int64)
        mod = _module()
        nseg = np.int32(len(segments))
        if first:
            launch(mod.function("shuffle_block_params"), grid_for(first * 32, _THREADS, _MAX_GRID), _THREADS,
                   (self.table, nseg, np.int64(first), self.for_ref, self.for_w, self.d_ref, self.d_w, self.base))
        if len(segments):
            launch(mod.function("shuffle_choose"), min(len(segments), _MAX_GRID), _THREADS,
                   (self.table, nseg, self.for_ref, self.for_w, self.d_w, self.seg_out, self.word_off))
        out = cupy.asnumpy(self.seg_out)[:2 * len(segments)].reshape(-1, 2)
        self.codecs = [CODEC_NAMES[int(c)] for c in out[:, 0]]
        self.nbytes = out[:, 1].copy()

    def pack(self, offsets: np.ndarray, out: Any) -> None:
        """Every segment's encoded bytes into the device uint8 buffer ``out`` at ``offsets[i]`` (8-byte
        aligned; bytes between segments are left as they are)."""
        import cupy

        offsets = np.asarray(offsets, np.int64)
        if np.any(offsets % 8) or np.any(offsets + self.nbytes > out.nbytes):
            raise ValueError("segment offsets must be 8-byte aligned and inside the output buffer")
        if not self.total_blocks:
            return
        launch(_module().function("shuffle_pack"), grid_for(self.total_blocks * 32, _THREADS, _MAX_GRID), _THREADS,
               (self.table, np.int32(len(self.segments)), np.int64(self.total_blocks), self.seg_out,
                cupy.asarray(offsets), self.for_ref, self.for_w, self.d_ref, self.d_w, self.base, self.word_off,
                out))


def encode_segment(values: Any) -> tuple[Any, str]:
    """(device bytes, codec) of one device array: ``hetdb.codec.encode(values, GPU_CODECS)`` on the GPU."""
    import cupy

    plan = SegmentPlan([Segment(values, int(values.shape[0]))])
    out = cupy.zeros(int(plan.nbytes[0]), cupy.uint8)
    plan.pack(np.zeros(1, np.int64), out)
    return out, plan.codecs[0]


def partition_ids(keys: list[Any], valid: list[Any | None], parts: int) -> Any:
    """The exchange partition (int32) of each row of the int64 device key columns ``keys`` (``valid``:
    a bool device array per key, or None): equal to ``hetdb.dist.exchange.partition_ids``."""
    import cupy

    n = int(keys[0].shape[0])
    ids = cupy.empty(n, cupy.int32)
    if not n:
        return ids
    stacked = cupy.stack([cupy.ascontiguousarray(k, dtype=cupy.int64) for k in keys])
    mask = None
    if any(v is not None for v in valid):
        mask = cupy.stack([cupy.ones(n, cupy.uint8) if v is None else v.astype(cupy.uint8) for v in valid])
    launch(_module().function("hash_partition_ids"), grid_for(n, _THREADS, _MAX_GRID), _THREADS,
           (stacked, mask if mask is not None else np.uint64(0), np.int32(len(keys)), np.int64(n),
            np.uint64(parts), ids))
    return ids
