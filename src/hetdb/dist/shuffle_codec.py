"""Compressed exchange batches: an Arrow table as one contiguous byte payload of sections, each a
column buffer encoded with hetdb's lightweight codecs (``hetdb.codec``: constant, frame-of-reference
+ bit-packing, delta, run-length, integer dictionary), the codec chosen per buffer by encoding a
sample of it; strings with few distinct values in a sample are dictionary-encoded first (their codes
then go through the codecs too).

The payload is one uint8 array whose sections start at 8-byte offsets, described by a small picklable
layout (``EncodedBatch.columns``), so one batch is one message: Ray's object store carries it
between CPU workers, and the NCCL path sends the payload as one device buffer and decodes each section
where it lands, passing its own ``decode`` to ``decode_arrays`` (``backend.gpu.decode.decode_device``
takes exactly (device bytes, codec, n, dtype) and reads the same byte layout)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hetdb.codec import CODECS, PLAIN, decode, encode, encode_as

# Codec choice by sampling: buffers longer than SAMPLE_MIN values are sampled as SAMPLE_RUNS runs of
# SAMPLE_RUN consecutive values (run-length and delta coding depend on neighbours).
SAMPLE_RUN = 1024
SAMPLE_RUNS = 8
SAMPLE_MIN = 4 * SAMPLE_RUN * SAMPLE_RUNS
# The integer dictionary codec is chosen only where the sample's next best encoding is more than this
# many times larger (its encoder is the slowest: TPC-H l_quantity 75 MB/s against 300+ MB/s for
# frame-of-reference).
DICT_MIN_GAIN = 2.5
# A string column is dictionary-encoded when a sample of it has at most this share of distinct values.
STRING_DICT_SAMPLE = 4096
STRING_DICT_SHARE = 0.5

_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


@dataclass(frozen=True)
class Section:
    """``nbytes`` bytes at ``offset`` of the payload: ``n`` values of ``dtype`` encoded in ``codec``."""

    offset: int
    nbytes: int
    codec: str
    n: int
    dtype: str


@dataclass(frozen=True)
class ColumnLayout:
    """How one column is stored: ``kind`` is fixed (values, plus ``hi`` words of 16-byte decimals),
    bool, string (offsets, data), dict (codes, and the dictionary's own layout) or ipc (an Arrow IPC
    stream of any other type); ``validity`` is a section of bool bytes where the column has NULLs."""

    kind: str
    type: pa.DataType
    length: int
    null_count: int
    sections: dict[str, Section]
    dictionary: ColumnLayout | None = None


@dataclass
class EncodedBatch:
    schema: pa.Schema
    num_rows: int
    columns: tuple[ColumnLayout, ...]
    payload: np.ndarray   # uint8
    raw_bytes: int        # the Arrow table's size
    encode_seconds: float = 0.0

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: the payload and its pickled layout."""
        return int(self.payload.nbytes) + len(pickle.dumps((self.schema, self.columns)))


class _Payload:
    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.size = 0

    def add(self, data: np.ndarray, codec: str, n: int, dtype: np.dtype) -> Section:
        data = data.view(np.uint8).reshape(-1)
        sec = Section(self.size, int(data.shape[0]), codec, n, np.dtype(dtype).str)
        self.parts.append(data)
        pad = -data.shape[0] % 8
        if pad:
            self.parts.append(np.zeros(pad, np.uint8))
        self.size += data.shape[0] + pad
        return sec

    def values(self, values: np.ndarray, compress: bool) -> Section:
        if values.dtype.itemsize == 2:  # the codecs take 1-, 4- and 8-byte values
            values = values.astype(np.int32)
        data, codec = choose_encoding(values) if compress else (values, PLAIN)
        return self.add(data, codec, int(values.shape[0]), values.dtype)

    def array(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, np.uint8)


def choose_encoding(values: np.ndarray) -> tuple[np.ndarray, str]:
    """(bytes, codec) of ``values``: the codec the smallest encoding of a sample uses, applied to the
    whole buffer; plain where that is not smaller (or the sampled codec does not fit the rest)."""
    n = int(values.shape[0])
    plain = np.ascontiguousarray(values)
    if n < SAMPLE_MIN:
        return encode(plain)
    starts = np.linspace(0, n - SAMPLE_RUN, SAMPLE_RUNS).astype(np.int64)
    sample = np.concatenate([plain[s:s + SAMPLE_RUN] for s in starts])
    best, codec = encode(sample)
    if codec == "dict":
        # the integer dictionary encodes at ~75 MB/s, the others at 300+ MB/s: it must save enough
        other, other_codec = encode(sample, tuple(c for c in CODECS if c != "dict"))
        if other.nbytes <= DICT_MIN_GAIN * best.nbytes:
            codec = other_codec
    if codec == PLAIN:
        return plain, PLAIN
    try:
        data = encode_as(plain, codec)
    except ValueError:  # a constant or dictionary sample whose buffer is not
        return encode(plain)
    return (data, codec) if data.shape[0] < plain.nbytes else (plain, PLAIN)


def _fixed_values(arr: pa.Array) -> np.ndarray:
    width = arr.type.bit_width // 8
    if width == 16:
        raw = np.frombuffer(arr.buffers()[1], np.int64)
        return raw[2 * arr.offset:2 * (arr.offset + len(arr))].reshape(-1, 2)
    return np.frombuffer(arr.buffers()[1], _INT[width])[arr.offset:arr.offset + len(arr)]


def _string_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    off_t = np.int64 if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], off_t)[arr.offset:arr.offset + len(arr) + 1]
    lo, hi = int(offsets[0]), int(offsets[-1])
    buf = arr.buffers()[2]
    data = np.frombuffer(buf, np.uint8)[lo:hi] if buf is not None else np.zeros(0, np.uint8)
    return offsets - off_t(lo), data


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t)


def _few_distinct(arr: pa.Array) -> bool:
    step = max(1, len(arr) // STRING_DICT_SAMPLE)
    sample = arr.take(pa.array(np.arange(0, len(arr), step)))
    return len(pc.unique(sample)) <= STRING_DICT_SHARE * len(sample)


def _encode_column(arr: pa.Array, out: _Payload, compress: bool, dict_ok: bool = True) -> ColumnLayout:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t, n = arr.type, len(arr)
    sections: dict[str, Section] = {}
    if n == 0 or pa.types.is_null(t):
        return _ipc_column(arr, out)
    if arr.null_count:
        sections["validity"] = out.values(np.asarray(arr.is_valid()), compress)
    if pa.types.is_boolean(t):
        sections["values"] = out.values(np.asarray(arr.fill_null(False)), compress)
        return ColumnLayout("bool", t, n, arr.null_count, sections)
    if _is_string(t):
        if compress and dict_ok and n >= SAMPLE_RUN and _few_distinct(arr):
            enc = pc.dictionary_encode(arr)
            sections["codes"] = out.values(_fixed_values(enc.indices), compress)
            return ColumnLayout("dict", t, n, arr.null_count, sections,
                                _encode_column(enc.dictionary, out, compress, dict_ok=False))
        offsets, data = _string_parts(arr)
        sections["offsets"] = out.values(offsets, compress)
        sections["data"] = out.add(data, PLAIN, int(data.shape[0]), np.uint8)
        return ColumnLayout("string", t, n, arr.null_count, sections)
    if pa.types.is_primitive(t) and t.bit_width in (8, 16, 32, 64) or pa.types.is_decimal128(t):
        values = _fixed_values(arr)
        if values.ndim == 2:
            sections["values"] = out.values(np.ascontiguousarray(values[:, 0]), compress)
            sections["hi"] = out.values(np.ascontiguousarray(values[:, 1]), compress)
        else:
            sections["values"] = out.values(values, compress)
        return ColumnLayout("fixed", t, n, arr.null_count, sections)
    return _ipc_column(arr, out)


def _ipc_column(arr: pa.Array, out: _Payload) -> ColumnLayout:
    sink = pa.BufferOutputStream()
    table = pa.table({"c": arr})
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = np.frombuffer(sink.getvalue(), np.uint8)
    return ColumnLayout("ipc", arr.type, len(arr), arr.null_count, {"data": out.add(data, PLAIN, int(data.shape[0]), np.uint8)})


def encode_batch(table: pa.Table, compress: bool = True) -> EncodedBatch:
    """``table`` as one payload; ``compress=False`` stores every buffer plain (same layout)."""
    import time

    t0 = time.perf_counter()
    out = _Payload()
    cols = tuple(_encode_column(c.combine_chunks() if c.num_chunks != 1 else c.chunk(0), out, compress)
                 for c in table.columns)
    return EncodedBatch(table.schema, table.num_rows, cols, out.array(), int(table.nbytes),
                        time.perf_counter() - t0)


Decoder = Callable[[Any, str, int, np.dtype], Any]


def _cpu_decode(buf: np.ndarray, codec: str, n: int, dtype: np.dtype) -> np.ndarray:
    return decode(buf, codec, n, dtype)


def decode_arrays(batch: EncodedBatch, payload: Any = None, decode_fn: Decoder = _cpu_decode) -> list[dict]:
    """Per column, its decoded buffers by section name (``dictionary``: the dictionary's own dict).
    ``payload`` and ``decode_fn`` default to the host payload and the CPU decoders; the GPU path
    passes the device copy of the payload and ``decode_device``."""
    payload = batch.payload if payload is None else payload

    def column(layout: ColumnLayout) -> dict:
        got = {name: decode_fn(payload[s.offset:s.offset + s.nbytes], s.codec, s.n, np.dtype(s.dtype))
               for name, s in layout.sections.items()}
        if layout.dictionary is not None:
            got["dictionary"] = column(layout.dictionary)
        return got

    return [column(c) for c in batch.columns]


def _arrow_column(layout: ColumnLayout, bufs: dict) -> pa.Array:
    t, n = layout.type, layout.length
    validity = None
    if "validity" in bufs:
        validity = pa.py_buffer(np.packbits(bufs["validity"].astype(bool), bitorder="little"))
    if layout.kind == "ipc":
        return pa.ipc.open_stream(pa.py_buffer(bufs["data"])).read_all().column(0).combine_chunks()
    if layout.kind == "bool":
        values = pa.py_buffer(np.packbits(bufs["values"].astype(bool), bitorder="little"))
        return pa.Array.from_buffers(t, n, [validity, values], layout.null_count)
    if layout.kind == "dict":
        dictionary = _arrow_column(layout.dictionary, bufs["dictionary"])
        return dictionary.take(pa.Array.from_buffers(pa.int32(), n, [validity, pa.py_buffer(bufs["codes"])],
                                                     layout.null_count))
    if layout.kind == "string":
        width = 8 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else 4
        offsets = bufs["offsets"].astype(_INT[width], copy=False)
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(offsets), pa.py_buffer(bufs["data"])],
                                     layout.null_count)
    values = bufs["values"]
    if "hi" in bufs:
        values = np.stack([values, bufs["hi"]], axis=1).reshape(-1)
    elif t.bit_width == 16:
        values = values.astype(np.int16)
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(values)], layout.null_count)


def decode_batch(batch: EncodedBatch) -> pa.Table:
    """The Arrow table ``batch`` was encoded from (bit-exact)."""
    arrays = decode_arrays(batch)
    return pa.Table.from_arrays([_arrow_column(c, b) for c, b in zip(batch.columns, arrays)],
                                schema=batch.schema)
