"""Lightweight compression of column pages: constant, frame-of-reference + bit-packing in independent
blocks, delta, run-length and integer dictionaries (``encodings``), built on blocked, lane-interleaved
bit-packing (``bitpack``). Format: docs/storage-format.md.

CPU coders are Numba functions compiled ``nogil`` that run on the calling thread: the scans' worker
threads decode different pages in parallel (one parallel region per page measured 50-100x slower than
this on a loaded machine; one core unpacks 20-30 GB/s of decoded values). GPU decoders are in
``backend/gpu/kernels/decode.cuh`` (same byte layout)."""

from hetdb.codec.encodings import CODECS, PLAIN, CodecError, decode, decode_into, encode, encode_as

__all__ = ["CODECS", "PLAIN", "CodecError", "decode", "decode_into", "encode", "encode_as"]
