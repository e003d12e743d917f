"""Plain-string pages (offsets + UTF-8 bytes) in a smaller form, chosen per page.

A plain-string page's ``codec`` (manifest page entry) is one of:

    plain     offsets: int64[n+1]; chars: the bytes                       (format versions 1-3)
    offsets   offsets: an encoded section of hetdb.codec (header first, usually delta: the string
              lengths bit-packed); chars: the bytes
    lz4       offsets as for ``offsets``; chars: the bytes in independent chunks of CHUNK input
              bytes, each in the LZ4 *block* format (pyarrow's ``lz4_raw``; nvCOMP's batched LZ4
              decompressor reads the same chunks on the GPU)

The ``lz4`` chars section::

    uint64 raw bytes R, uint32 chunk size C, uint32 chunk count K = ceil(R / C)
    uint64 start[K]     byte offset of chunk k's compressed bytes in the section (a multiple of 16)
    uint32 length[K]    compressed bytes of chunk k (padded to 8 bytes)
    chunks              chunk k decompresses to min(C, R - k*C) bytes; zero padding between chunks

The writer tries LZ4 on a page only when a sample of its chunks compresses, and keeps it only when
the whole page shrinks by at least ``LZ4_MIN_SAVING`` of what it is with the offsets encoded alone
(an LZ4 chunk decodes at 1-3 GB/s per CPU core, against 15 GB/s for bit-packed offsets).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hetdb.codec.encodings import CODEC_IDS, FOR, HEADER, PLAIN, CodecError, decode, encode, encode_as

OFFSETS = "offsets"
LZ4 = "lz4"
STRING_CODECS = (OFFSETS, LZ4)
CHUNK = 1 << 16
CHUNK_ALIGN = 16  # nvCOMP wants compressed chunks aligned (16 bytes is enough for every algorithm)
LZ4_MIN_SAVING = 1 / 8
SAMPLE_CHUNKS = 4
_HEAD = 16
_CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}


def _lz4() -> pa.Codec:
    return pa.Codec("lz4_raw")


def encode_strings(offsets: np.ndarray, chars: np.ndarray, codecs: tuple[str, ...]
                   ) -> tuple[str, np.ndarray, np.ndarray]:
    """(codec, offsets section, chars section) of a plain-string page: the smallest of plain and
    the string codecs among ``codecs``, LZ4 only where it saves ``LZ4_MIN_SAVING`` of the page."""
    plain = (PLAIN, offsets.view(np.uint8), chars)
    if OFFSETS not in codecs and LZ4 not in codecs:
        return plain
    packed = encode_offsets(offsets)
    best = (OFFSETS, packed, chars) if OFFSETS in codecs and packed.shape[0] < offsets.nbytes else plain
    if LZ4 in codecs:
        size = best[1].shape[0] + chars.shape[0]
        lz4 = compress_chars(chars, LZ4_MIN_SAVING)
        if lz4 is not None and packed.shape[0] + lz4.shape[0] <= (1 - LZ4_MIN_SAVING) * size:
            best = (LZ4, packed, lz4)
    return best


def encode_offsets(offsets: np.ndarray) -> np.ndarray:
    """``offsets`` (int64, n+1 entries) as an encoded section: the smallest of hetdb.codec's
    encodings, frame-of-reference when plain would be smaller (an encoded section always has its
    header, so a reader tells its encoding from the bytes)."""
    data, name = encode(offsets)
    return encode_as(offsets, FOR) if name == PLAIN else data


def offsets_codec(section: np.ndarray) -> str:
    """The hetdb.codec encoding of an encoded offsets section (from its header)."""
    if section.shape[0] < HEADER or int(section[0]) not in _CODEC_NAMES:
        raise CodecError("string offsets section has no valid encoding header")
    return _CODEC_NAMES[int(section[0])]


def decode_offsets(section: np.ndarray, n: int) -> np.ndarray:
    """The n+1 int64 offsets of an encoded offsets section; CodecError if inconsistent."""
    return decode(section, offsets_codec(section), n + 1, np.dtype(np.int64))


def compress_chars(chars: np.ndarray, min_saving: float = 0.0) -> np.ndarray | None:
    """``chars`` as an ``lz4`` chars section, or None when a sample of chunks saves less than
    ``min_saving`` of their bytes (the whole page is not compressed then)."""
    chars = np.ascontiguousarray(chars, dtype=np.uint8)
    raw = int(chars.shape[0])
    k = -(-raw // CHUNK)
    if k == 0:
        return None
    codec = _lz4()
    if min_saving > 0:
        picks = np.unique(np.linspace(0, k - 1, min(SAMPLE_CHUNKS, k)).astype(np.int64))
        sample = [chars[i * CHUNK:(i + 1) * CHUNK] for i in picks]
        packed = sum(codec.compress(s).size for s in sample)
        if packed > (1 - min_saving) * sum(s.shape[0] for s in sample):
            return None
    chunks = [np.frombuffer(codec.compress(chars[i * CHUNK:(i + 1) * CHUNK]), np.uint8) for i in range(k)]
    directory = _HEAD + 8 * k + _align(4 * k, 8)
    starts = np.empty(k, np.int64)
    pos = _align(directory, CHUNK_ALIGN)
    for i, c in enumerate(chunks):
        starts[i] = pos
        pos = _align(pos + c.shape[0], CHUNK_ALIGN)
    end = int(starts[-1]) + chunks[-1].shape[0]
    out = np.zeros(_align(end, 8), np.uint8)
    out[0:8] = np.frombuffer(np.uint64(raw).tobytes(), np.uint8)
    out[8:16] = np.frombuffer(np.array([CHUNK, k], np.uint32).tobytes(), np.uint8)
    out[_HEAD:_HEAD + 8 * k] = starts.view(np.uint8)
    out[_HEAD + 8 * k:_HEAD + 12 * k] = np.array([c.shape[0] for c in chunks], np.uint32).view(np.uint8)
    for s, c in zip(starts, chunks):
        out[s:s + c.shape[0]] = c
    return out


def chunk_table(section: np.ndarray, size: int | None = None) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(raw bytes, chunk size, start[K], length[K]) of an ``lz4`` chars section, checked against the
    section's size; CodecError if inconsistent. ``section`` may be the header and directory alone
    (a GPU reads just those back) when ``size`` gives the section's length."""
    size = int(section.shape[0]) if size is None else size
    if section.shape[0] < _HEAD:
        raise CodecError("lz4 chars section is shorter than its header")
    raw = int(section[0:8].view(np.uint64)[0])
    chunk, k = (int(x) for x in section[8:16].view(np.uint32))
    if chunk <= 0 or k != -(-raw // chunk) or _HEAD + 12 * k > min(size, section.shape[0]):
        raise CodecError("lz4 chars header does not match the section (size, chunk size or chunk count)")
    starts = section[_HEAD:_HEAD + 8 * k].view(np.int64)
    lengths = section[_HEAD + 8 * k:_HEAD + 12 * k].view(np.uint32).astype(np.int64)
    if k:
        ends = starts + lengths
        if int(starts[0]) < _HEAD + 12 * k or np.any(starts[1:] < ends[:-1]) or int(ends[-1]) > size \
                or np.any(starts % CHUNK_ALIGN) or np.any(lengths <= 0):
            raise CodecError("lz4 chunk directory is inconsistent with the section")
    return raw, chunk, starts, lengths


def decompress_chars(section: np.ndarray, raw_bytes: int) -> np.ndarray:
    """The bytes of an ``lz4`` chars section (``raw_bytes`` of them: the last offset), chunk by
    chunk into one buffer; CodecError if a chunk is damaged."""
    raw, chunk, starts, lengths = chunk_table(section)
    if raw != raw_bytes:
        raise CodecError(f"lz4 chars section holds {raw} bytes, the offsets end at {raw_bytes}")
    out = np.empty(raw, np.uint8)
    codec = _lz4()
    for i, (s, ln) in enumerate(zip(starts.tolist(), lengths.tolist())):
        size = min(chunk, raw - i * chunk)
        try:
            got = codec.decompress(section[s:s + ln], decompressed_size=size)
        except (OSError, pa.ArrowException) as e:
            raise CodecError(f"lz4 chunk {i} is damaged: {e}") from None
        if got.size != size:
            raise CodecError(f"lz4 chunk {i} decompressed to {got.size} bytes, {size} expected")
        out[i * chunk:i * chunk + size] = np.frombuffer(got, np.uint8)
    return out


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a
