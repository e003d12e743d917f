"""Page encoding: one column's values for one row group, laid out so fixed-width pages need no decoding.

Layout (offsets within the page; every section starts 8-byte aligned):
  data      at 0: the value array (int32/int64/float64/1-byte bool; int32 codes for dict strings;
            empty for plain strings), encoded by the page's codec (hetdb.codec); with codec "plain" it
            is the raw value array, so a GPU can view the page as its value array
  validity  bit-packed, LSB first, 1 = valid; present only when the page has NULLs
  offsets   plain strings: int64, n+1 entries starting at 0 (codec "plain"), or an encoded section
            of hetdb.codec (codecs "offsets" and "lz4", see hetdb.codec.strings)
  chars     plain strings: the UTF-8 bytes, or (codec "lz4") those bytes in independent LZ4 chunks,
            16-byte aligned
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb import codec
from hetdb.codec import strings as string_codec
from hetdb.column import Column
from hetdb.errors import CorruptDataError
from hetdb.storage.format import align_up
from hetdb.types import DataType

PLAIN = "plain"
DICT = "dict"


def pack_validity(validity: np.ndarray) -> np.ndarray:
    return np.packbits(np.asarray(validity, dtype=bool), bitorder="little")


def unpack_validity(bits: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(bits, count=n, bitorder="little").view(bool)


def encode_page(col: Column, encoding: str, codecs: tuple[str, ...] = codec.CODECS
                ) -> tuple[np.ndarray, dict[str, list[int]], int, str, int]:
    """Lay out ``col`` as page bytes (``encoding`` DICT: ``col.data`` holds the codes), the data section
    in the smallest of ``codecs`` (none: plain); a plain-string page's offsets and characters in
    the string codec ``codecs`` allow and the page gains by (hetdb.codec.strings). Returns
    (zero-padded buffer of the page's padded length, sections {name: [offset, length]}, unpadded
    length, the page's codec, bytes of the page with everything decoded)."""
    parts: list[tuple[str, np.ndarray]] = []
    plain_sizes: list[int] = []  # each part's bytes decoded
    n = len(col)
    plain_string = col.dtype.kind == "string" and encoding == PLAIN
    page_codec = codec.PLAIN
    if plain_string:
        parts.append(("data", np.zeros(0, np.uint8)))
        plain_sizes.append(0)
    else:
        values = np.ascontiguousarray(col.data)
        fixed = tuple(c for c in codecs if c in codec.CODECS)
        data, page_codec = codec.encode(values, fixed) if fixed else (values.view(np.uint8), codec.PLAIN)
        parts.append(("data", data.reshape(-1)))
        plain_sizes.append(int(values.nbytes))
    if col.validity is not None and not np.all(col.validity):
        parts.append(("validity", pack_validity(col.validity)))
        plain_sizes.append(int(parts[-1][1].shape[0]))
    if plain_string:
        offsets = np.ascontiguousarray(col.offsets, dtype=np.int64)
        if offsets.shape[0] != n + 1:
            raise ValueError("offsets must have n+1 entries")
        if offsets[0] != 0:
            offsets = offsets - offsets[0]
        start = int(col.offsets[0])
        chars = np.ascontiguousarray(col.chars[start:start + int(offsets[-1])], dtype=np.uint8)
        page_codec, offsets_bytes, chars_bytes = string_codec.encode_strings(offsets, chars, codecs)
        parts += [("offsets", offsets_bytes), ("chars", chars_bytes)]
        plain_sizes += [int(offsets.nbytes), int(chars.shape[0])]
    sections: dict[str, list[int]] = {}
    pos = decoded = 0
    for (name, arr), plain in zip(parts, plain_sizes):
        # LZ4 chunks are 16-byte aligned within their section: the section starts 16-byte aligned
        lz4 = name == "chars" and page_codec == string_codec.LZ4
        pos = align_up(pos, string_codec.CHUNK_ALIGN if lz4 else 8)
        sections[name] = [pos, int(arr.shape[0])]
        pos += int(arr.shape[0])
        decoded = align_up(decoded, 8) + plain
    length = pos
    page = np.zeros(align_up(max(length, 1)), dtype=np.uint8)
    for name, arr in parts:
        off, ln = sections[name]
        page[off:off + ln] = arr
    return page, sections, length, page_codec, decoded


def decode_page(raw: np.ndarray, dtype: DataType, num_rows: int, encoding: str,
                sections: dict[str, list[int]], dictionary: Column | None, where: str,
                data_codec: str = codec.PLAIN) -> Column:
    """Build a Column from ``raw`` (already checksum-verified). Plain arrays are views into ``raw``;
    an encoded data section is decoded into a new array."""
    def section(name: str) -> np.ndarray | None:
        s = sections.get(name)
        if s is None:
            return None
        off, ln = s
        if off + ln > raw.shape[0]:
            raise CorruptDataError(f"{where}: section {name} lies outside the page")
        return raw[off:off + ln]

    bits = section("validity")
    validity = None if bits is None else unpack_validity(bits, num_rows)
    if dtype.kind == "string" and encoding == PLAIN:
        if data_codec == codec.PLAIN:
            offsets = _view(section("offsets"), np.int64, num_rows + 1, where)
            chars = section("chars")
        else:
            offsets, chars = _decode_strings(section("offsets"), section("chars"), num_rows, data_codec, where)
        if int(offsets[-1]) != chars.shape[0] or int(offsets[0]) != 0:
            raise CorruptDataError(f"{where}: string offsets do not match the character section")
        return Column(dtype, validity=validity, offsets=offsets, chars=chars)
    if data_codec == codec.PLAIN:
        data = _view(section("data"), dtype.numpy_dtype, num_rows, where)
    else:
        buf = section("data")
        if buf is None:
            raise CorruptDataError(f"{where}: the page has no data section")
        try:
            data = codec.decode(buf, data_codec, num_rows, dtype.numpy_dtype)
        except codec.CodecError as e:
            raise CorruptDataError(f"{where}: {data_codec}-encoded data is damaged: {e}") from None
    if encoding == DICT:
        if dictionary is None:
            raise CorruptDataError(f"{where}: dictionary page but the column has no dictionary")
        return Column(dtype, data=data, validity=validity, dictionary=dictionary)
    return Column(dtype, data=data, validity=validity)


def _decode_strings(offsets: np.ndarray | None, chars: np.ndarray | None, num_rows: int, page_codec: str,
                    where: str) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and characters of a plain-string page in a string codec (hetdb.codec.strings)."""
    if offsets is None or chars is None:
        raise CorruptDataError(f"{where}: string page without offsets or characters")
    if page_codec not in string_codec.STRING_CODECS:
        raise CorruptDataError(f"{where}: unknown string page codec {page_codec!r}")
    try:
        decoded = string_codec.decode_offsets(offsets, num_rows)
        if page_codec == string_codec.LZ4:
            if int(decoded[-1]) < 0:
                raise codec.CodecError("the last string offset is negative")
            chars = string_codec.decompress_chars(chars, int(decoded[-1]))
    except codec.CodecError as e:
        raise CorruptDataError(f"{where}: {page_codec}-encoded strings are damaged: {e}") from None
    return decoded, chars


def _view(buf: Any, dtype: np.dtype, count: int, where: str) -> np.ndarray:
    if buf is None or buf.shape[0] != count * np.dtype(dtype).itemsize:
        raise CorruptDataError(f"{where}: section size does not match {count} values of {np.dtype(dtype)}")
    return buf.view(dtype)
