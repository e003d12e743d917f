"""Lightweight compression of column pages: constant, frame-of-reference + bit-packing in independent
blocks, delta, run-length and integer dictionaries (``encodings``), built on blocked, lane-interleaved
bit-packing (``bitpack``). CPU decoders are parallel Numba; GPU decoders are in
``backend/gpu/kernels/decode.cuh`` (same byte layout). Format: docs/storage-format.md."""

from hetdb.codec.encodings import CODECS, PLAIN, CodecError, decode, decode_into, encode, encode_as

__all__ = ["CODECS", "PLAIN", "CodecError", "decode", "decode_into", "encode", "encode_as"]
