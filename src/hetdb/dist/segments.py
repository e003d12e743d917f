"""Segments of an exchange batch: every column buffer of every partition, encoded together. The GPU
encodes them with ``backend.gpu.shuffle_encode.SegmentPlan``; ``HostSegmentPlan`` is the same
contract computed by the host codecs (CPU workers of a collective exchange, and the reference the
GPU's bytes are compared with): a section equals ``hetdb.codec.encode(values, GPU_CODECS)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.codec import PLAIN, encode

# the codecs the GPU encodes (run-length and integer dictionaries are host-only)
GPU_CODECS = ("const", "for", "delta")


@dataclass(frozen=True)
class Segment:
    """``n`` values of the 1-D array ``values`` (1, 4 or 8 bytes each) from row ``start``; with
    ``rows`` (int64) the values are ``values[rows[start:start + n]]`` (a partition gathered as it is
    encoded). ``sign_word``: the segment is the high words of 16-byte decimals whose low words are
    the int64 ``values`` (each value's ``v >> 63``). ``plain_only``: stored as is (no codec)."""

    values: Any
    n: int
    start: int = 0
    rows: Any = None
    sign_word: bool = False
    plain_only: bool = False

    def mode(self) -> int:
        """How the kernels read a value: 0 unsigned byte, 1 signed, 2 the sign word."""
        if self.sign_word:
            return 2
        dt = np.dtype(self.values.dtype)
        return 0 if dt.itemsize == 1 and dt.kind in "bu" else 1


class HostSegmentPlan:
    """Every segment's codec and bytes from the host encoder (NumPy arrays); ``pack`` copies them
    into ``out`` at the given offsets, as ``SegmentPlan.pack`` does on the device."""

    def __init__(self, segments: list[Segment]):
        self.data: list[np.ndarray] = []
        self.codecs: list[str] = []
        for s in segments:
            v = s.values[s.start:s.start + s.n] if s.rows is None else s.values[s.rows[s.start:s.start + s.n]]
            if s.sign_word:
                v = v >> 63
            data, codec = (np.ascontiguousarray(v), PLAIN) if s.plain_only else encode(v, GPU_CODECS)
            self.data.append(data.view(np.uint8).reshape(-1))
            self.codecs.append(codec)
        self.nbytes = np.array([d.shape[0] for d in self.data], np.int64)

    def pack(self, offsets: np.ndarray, out: np.ndarray) -> None:
        for at, d in zip(offsets, self.data):
            if at % 8:
                raise ValueError("segment offsets must be 8-byte aligned")
            out[at:at + d.shape[0]] = d
