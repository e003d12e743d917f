"""Plain-string pages in codecs "offsets" and "lz4" (hetdb.codec.strings) decoded on the GPU.

A GPU scan copies such a page as stored (compressed) to the device, then: the offsets section is
decoded by the integer decode kernel (decode.cu: the section's header names its encoding), and the
chars of an ``lz4`` page are decompressed by nvCOMP's batched LZ4 decompressor (python package
``nvidia-nvcomp-cu13``), every chunk of the page in one call, straight into one device buffer.
A delivery of several LZ4 pages of one column (``decode_string_pages``) decompresses the chunks of
all of them in one call, into the column's one chars buffer (one nvCOMP launch and one stream wait
per column instead of per page).

Where nvCOMP is not importable (or ``HETDB_NVCOMP=0``, or it fails on a page) the chunks are
decompressed on the host (pyarrow, as the CPU reader does) and copied to the device; each such
page is recorded as a host step of the scan, so EXPLAIN ANALYZE names it ("CPU fallback: ...").
The page bytes were checksum-verified when they were read; the chunk directory is checked again
here (a damaged one is CorruptDataError naming the page).
"""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np

from hetdb.codec import CodecError
from hetdb.codec import strings as sc
from hetdb.codec.encodings import endpoints
from hetdb.errors import CorruptDataError

NVCOMP_ENV = "HETDB_NVCOMP"
_GPU = SimpleNamespace(name="gpu")  # what hostutil.note_host_step needs of a backend
_local = threading.local()  # nvCOMP codecs are per thread (its documentation: "thread-local")
_import_lock = threading.Lock()
_nvcomp: list[Any] = []  # [module or None, reason it is unavailable or None], once imported
_OUT_ALIGN = 16  # nvCOMP's buffers need at most 16-byte alignment (its low-level API documentation)


def nvcomp_module() -> tuple[Any, str | None]:
    """(nvidia.nvcomp, None), or (None, why it cannot be used)."""
    if os.environ.get(NVCOMP_ENV, "1") == "0":
        return None, f"{NVCOMP_ENV}=0"
    with _import_lock:
        if not _nvcomp:
            try:
                from nvidia import nvcomp

                _nvcomp.extend((nvcomp, None))
            except Exception as e:  # noqa: BLE001 - any import failure means: decode on the host
                _nvcomp.extend((None, f"nvCOMP (nvidia-nvcomp-cu13) not importable: {type(e).__name__}"))
        return _nvcomp[0], _nvcomp[1]


def decode_string_page(raw: Any, sections: dict, n: int, codec: str, where: str,
                       host: list[np.ndarray] | None = None) -> tuple[Any, Any]:
    """(offsets int64[n+1], chars uint8) on the device of a plain-string page in ``codec`` whose
    stored bytes are the device array ``raw`` (queued on the current stream). ``host``: the same
    bytes in host memory (the runs the copy reads, in order): the offsets header and endpoints and
    the LZ4 chunk directory are then read and checked there, with no device read-back (each of which
    waits for everything queued on the stream); without it they are read back from ``raw``."""
    from hetdb.backend.gpu.decode import decode_device

    offsets_section, chars_section = _section(raw, sections, "offsets", where), _section(raw, sections, "chars", where)
    if codec not in sc.STRING_CODECS:
        raise CorruptDataError(f"{where}: unknown string page codec {codec!r}")
    if host is not None:
        head = host_bytes(host, *sections["offsets"])  # (the whole section: its endpoints are read)
    else:
        head = offsets_section[:16].get()
    name = _offsets_codec(head, n, codec, where)
    if host is not None:
        table = _checked_chars(head, name, host_bytes(host, *sections["chars"]), n, codec, where)
        offsets = decode_device(offsets_section, name, n + 1, np.int64)
        return offsets, (chars_section if table is None else _decompress(chars_section, where, table))
    offsets = decode_device(offsets_section, name, n + 1, np.int64)
    if codec == sc.OFFSETS:
        chars = chars_section
    else:
        chars = _decompress(chars_section, where)
    if int(offsets[-1]) != int(chars.shape[0]) or int(offsets[0]) != 0:
        raise CorruptDataError(f"{where}: string offsets do not match the character section")
    return offsets, chars


def _offsets_codec(head: np.ndarray, n: int, codec: str, where: str) -> str:
    """The integer codec of a string page's offsets section (``head``: at least its header),
    checked against the page's rows."""
    try:
        name = sc.offsets_codec(head)
    except CodecError as e:
        raise CorruptDataError(f"{where}: {codec}-encoded strings are damaged: {e}") from None
    if int(head[1]) != 8 or int(head[4:8].view(np.uint32)[0]) != n + 1:
        raise CorruptDataError(f"{where}: the string offsets header does not match the page")
    return name


def _checked_chars(head: np.ndarray, name: str, chars_host: np.ndarray, n: int, codec: str,
                   where: str) -> tuple | None:
    """The LZ4 chunk table of a string page's chars (None for codec "offsets"), read from its host
    bytes, after checking that the offsets (first and last, from ``head``) span the characters."""
    try:
        ends = endpoints(head, name, n + 1)
        table = sc.chunk_table(chars_host) if codec != sc.OFFSETS else None
    except CodecError as e:
        raise CorruptDataError(f"{where}: {codec}-encoded strings are damaged: {e}") from None
    size = chars_host.shape[0] if table is None else table[0]
    if ends != (0, size):
        raise CorruptDataError(f"{where}: string offsets do not match the character section")
    return table


def decode_string_pages(buf: Any, pages: list[tuple[Any, dict, int, str, str, list[np.ndarray]]]
                        ) -> tuple[Any, Any] | None:
    """(offsets int64[rows + 1], chars) on the device of one string column made of consecutive
    ``lz4`` plain-string pages whose stored bytes lie in device buffer ``buf``: per page (raw: its
    bytes, a view of ``buf``; sections; rows; codec; where; host: the host runs it was copied from).
    Every page's header, offsets endpoints and chunk directory are checked on the host (damage is
    CorruptDataError naming the page); the chunks of all pages decompress in one nvCOMP call
    (``decompress_sections``) into one buffer, each page's characters starting 16-byte aligned (as
    nvCOMP's outputs need), then the pages' characters are moved together (one offsets array cannot
    skip a gap: the end of a page's last string is the start of the next page's first). None when
    the pages cannot go that way (fewer than two, one not in lz4, nvCOMP missing or failing): the
    caller decodes them one by one (``decode_string_page``), which says why in a fallback."""
    import cupy

    from hetdb.backend.gpu.decode import decode_device

    if len(pages) < 2 or any(codec != sc.LZ4 for _, _, _, codec, _, _ in pages):
        return None
    nvcomp, _ = nvcomp_module()
    if nvcomp is None:
        return None
    offsets, items = [], []
    for raw, sections, n, codec, where, host in pages:
        offsets_section = _section(raw, sections, "offsets", where)
        _section(raw, sections, "chars", where)  # (checks that it lies inside the page)
        head = host_bytes(host, *sections["offsets"])
        name = _offsets_codec(head, n, codec, where)
        table = _checked_chars(head, name, host_bytes(host, *sections["chars"]), n, codec, where)
        offsets.append(decode_device(offsets_section, name, n + 1, np.int64))
        items.append((int(raw.data.ptr) - int(buf.data.ptr) + sections["chars"][0], table))
    try:
        out, firsts = decompress_sections(nvcomp, buf, items)
    except Exception:  # noqa: BLE001 - nvCOMP refusing a page: page by page (the host decodes, names damage)
        return None
    sizes = [table[0] for _, table in items]
    bases = np.concatenate(([0], np.cumsum(sizes)))
    chars = cupy.concatenate([out[first:first + size] for first, size in zip(firsts, sizes)])
    joined = cupy.concatenate([o[:-1] + int(base) for o, base in zip(offsets, bases[:-1])]
                              + [offsets[-1][-1:] + int(bases[-2])])
    return joined, chars


def host_bytes(runs: list[np.ndarray], off: int, length: int) -> np.ndarray:
    """Bytes [off, off + length) of the concatenation of host ``runs`` (a view when one run holds
    them); the caller has checked that the range lies inside the page."""
    parts, pos = [], 0
    for run in runs:
        size = int(run.shape[0])
        lo, hi = max(off - pos, 0), min(off + length - pos, size)
        if lo < hi:
            parts.append(run[lo:hi])
        pos += size
        if pos >= off + length:
            break
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, np.uint8)


def concat_strings(cols: list[Any]) -> Any:
    """Device string Columns (offsets + chars, optional validity) of consecutive pages as one."""
    import cupy

    from hetdb.column import Column

    if len(cols) == 1:
        return cols[0]
    bases = np.cumsum([0] + [int(c.chars.shape[0]) for c in cols])
    offsets = cupy.concatenate([c.offsets[:-1] + int(b) for c, b in zip(cols, bases[:-1])]
                               + [cupy.asarray(np.array([bases[-1]], np.int64))])
    chars = cupy.concatenate([c.chars for c in cols])
    validity = None
    if any(c.validity is not None for c in cols):
        validity = cupy.concatenate([c.validity if c.validity is not None
                                     else cupy.ones(int(c.offsets.shape[0]) - 1, dtype=cupy.bool_) for c in cols])
    return Column(cols[0].dtype, validity=validity, offsets=offsets, chars=chars)


def _section(raw: Any, sections: dict, name: str, where: str) -> Any:
    s = sections.get(name)
    if s is None:
        raise CorruptDataError(f"{where}: string page without a {name} section")
    off, ln = s
    if off + ln > raw.shape[0]:
        raise CorruptDataError(f"{where}: section {name} lies outside the page")
    return raw[off:off + ln]


def _chunk_table(section: Any, where: str) -> tuple[int, int, np.ndarray, np.ndarray]:
    head = section[:16].get()
    if head.shape[0] < 16:
        raise CorruptDataError(f"{where}: lz4 chars section is shorter than its header")
    k = int(head[12:16].view(np.uint32)[0])
    size = min(int(section.shape[0]), 16 + 12 * k)
    try:
        return sc.chunk_table(np.concatenate([head, section[16:size].get()]) if k else head, int(section.shape[0]))
    except CodecError as e:
        raise CorruptDataError(f"{where}: lz4-encoded strings are damaged: {e}") from None


def _decompress(section: Any, where: str, table: tuple | None = None) -> Any:
    """The chars of the ``lz4`` chars ``section`` (device); ``table`` its chunk table when the
    caller read it on the host already."""
    import cupy

    raw, chunk, starts, lengths = _chunk_table(section, where) if table is None else table
    if raw == 0:
        return cupy.empty(0, dtype=cupy.uint8)
    nvcomp, reason = nvcomp_module()
    if nvcomp is not None:
        try:
            return _nvcomp_decompress(nvcomp, section, raw, chunk, starts, lengths)
        except Exception as e:  # noqa: BLE001 - nvCOMP refusing a page: the host decodes it (and names damage)
            reason = f"nvCOMP failed: {type(e).__name__}"
    _note_host_decode(reason)
    try:
        host = sc.decompress_chars(section.get(), raw)
    except CodecError as e:
        raise CorruptDataError(f"{where}: lz4-encoded strings are damaged: {e}") from None
    return cupy.asarray(host)


def _nvcomp_decompress(nvcomp: Any, section: Any, raw: int, chunk: int, starts: np.ndarray,
                       lengths: np.ndarray) -> Any:
    out, _ = decompress_sections(nvcomp, section, [(0, (raw, chunk, starts, lengths))])
    return out


def decompress_sections(nvcomp: Any, buf: Any, items: list[tuple[int, tuple]]) -> tuple[Any, list[int]]:
    """Every chunk of the ``lz4`` chars sections lying in device buffer ``buf`` at byte ``base`` with
    chunk table ``table`` ((base, table) per item, tables as ``sc.chunk_table`` gives them) decoded
    by one nvCOMP call into one new buffer, the sections' characters one after another (each
    starting _OUT_ALIGN-aligned); returns it and each section's first byte there. More chunks per call keep more of the GPU busy (nvCOMP
    decodes a chunk per warp: one page of 64 KiB chunks is some 900 of them)."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    src_offsets: list[int] = []
    src_sizes: list[int] = []
    dst_offsets: list[int] = []
    sizes: list[int] = []
    firsts: list[int] = []
    total = 0
    for base, (raw, chunk, starts, lengths) in items:
        total = -(-total // _OUT_ALIGN) * _OUT_ALIGN  # (no padding after the last section)
        firsts.append(total)
        k = int(starts.shape[0])
        src_offsets += (starts + base).tolist()
        src_sizes += lengths.tolist()
        dst_offsets += [total + i * chunk for i in range(k)]
        sizes += [min(chunk, raw - i * chunk) for i in range(k)]
        total += raw
    out = cupy.empty(total, dtype=cupy.uint8)
    if not sizes:
        return out, firsts
    srcs = nvcomp.as_arrays(buf, src_offsets, src_sizes, cuda_stream=stream.ptr)
    dsts = nvcomp.as_arrays(out, dst_offsets, sizes, cuda_stream=stream.ptr)
    _codec(nvcomp, stream.ptr).decode(srcs, out=dsts)
    # the batches hold nvCOMP's own device arrays of chunk pointers: they must outlive the kernels
    stream.synchronize()
    if list(dsts.buffer_sizes) != sizes:
        raise CodecError(f"nvCOMP decompressed chunks of {list(dsts.buffer_sizes)[:4]}... bytes")
    return out, firsts


def _codec(nvcomp: Any, stream_ptr: int) -> Any:
    """This thread's nvCOMP LZ4 codec for raw chunks on ``stream_ptr`` (made once per stream)."""
    import cupy

    codecs = getattr(_local, "codecs", None)
    if codecs is None:
        codecs = _local.codecs = {}
    key = (cupy.cuda.Device().id, stream_ptr)
    codec = codecs.get(key)
    if codec is None:
        codec = codecs[key] = nvcomp.Codec(algorithm="LZ4", bitstream_kind=nvcomp.BitstreamKind.RAW,
                                           device_id=key[0], cuda_stream=stream_ptr)
    return codec


def _note_host_decode(reason: str | None) -> None:
    from hetdb.exec.hostutil import note_host_step

    note_host_step(_GPU, f"LZ4 string pages decoded on the host ({reason})")
