"""On-disk format of a hetdb database: layout constants, the public metadata records, the manifest
and CURRENT files, checksums and fsync helpers.

    DB/hetdb.json                      {"format": "hetdb", "format_version": 4}
    DB/tables/<name>/CURRENT           "<version> <crc32 hex>\\n" (the committed version)
    DB/tables/<name>/v<N>/manifest.json  JSON body + "\\n#crc32 <hex>\\n" trailer over the body bytes
    DB/tables/<name>/v<N>/c<i>.col     one file per column: pages at 4096-aligned offsets
    DB/tables/<name>/v<N>/c<i>.v<M>.col  pages version M appended (hard-linked into later versions)
    DB/tables/<name>/v<N>/c<i>.dict    shared dictionary of a dict-encoded string column
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from typing import Any

from hetdb.errors import CorruptDataError
from hetdb.types import DataType

FORMAT_NAME = "hetdb"
FORMAT_VERSION = 4
# Version 1 (plain pages only, no "codec" in page entries) is read as it is: its pages are plain.
# Version 2 has no page entries naming their own "file" (appends, version 3) and no "rows_per_page".
# Version 3 has plain-string pages in codec "plain" only (4 adds "offsets" and "lz4",
# hetdb.codec.strings); every older version is read as it is.
READABLE_FORMAT_VERSIONS = (1, 2, 3, 4)
DB_MARKER = "hetdb.json"
TABLES_DIR = "tables"
CURRENT = "CURRENT"
MANIFEST = "manifest.json"
PAGE_ALIGN = 4096
DEFAULT_ROWS_PER_PAGE = 1 << 20
# A string zone-map bound longer than this is dropped (None = unknown) rather than truncated,
# because a truncated max would be wrong as an upper bound.
MAX_ZONE_STRING_BYTES = 64
_TRAILER = b"\n#crc32 "


@dataclass(frozen=True)
class ColumnSpec:
    """Name, type and nullability of one table column."""

    name: str
    dtype: DataType
    nullable: bool = True


@dataclass(frozen=True)
class ZoneMap:
    """Per-page statistics over valid, non-NaN values in the physical representation.

    min/max are None when unknown (all NULL, all NaN, or a string longer than 64 bytes)."""

    min: Any
    max: Any
    null_count: int
    nan_count: int
    num_rows: int


@dataclass(frozen=True)
class PageLocation:
    """Where a page's bytes are: ``length`` meaningful bytes, ``padded_length`` on disk (4096-multiple)."""

    path: str
    offset: int
    length: int
    padded_length: int
    checksum: int


def checksum(data: Any) -> int:
    """The page/file checksum (CRC-32, ~4 GB/s with the system zlib)."""
    return zlib.crc32(data) & 0xFFFFFFFF


def align_up(n: int, a: int = PAGE_ALIGN) -> int:
    return (n + a - 1) // a * a


def fsync_dir(path: str) -> None:
    """Make a rename/creation inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_durably(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


# ---- manifest --------------------------------------------------------------------------------------

def encode_manifest(manifest: dict) -> bytes:
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()
    return body + _TRAILER + f"{checksum(body):08x}\n".encode()


def decode_manifest(data: bytes, where: str) -> dict:
    """Parse and verify a manifest file's bytes; CorruptDataError naming ``where`` if anything is off."""
    cut = data.rfind(_TRAILER)
    if cut < 0:
        raise CorruptDataError(f"{where}: manifest has no checksum trailer (truncated or garbled)")
    body, trailer = data[:cut], data[cut + len(_TRAILER):]
    try:
        stored = int(trailer.strip(), 16)
    except ValueError:
        raise CorruptDataError(f"{where}: manifest checksum trailer is garbled") from None
    if trailer != f"{stored:08x}\n".encode() or checksum(body) != stored:
        raise CorruptDataError(f"{where}: manifest checksum mismatch (the file was modified or damaged)")
    try:
        manifest = json.loads(body)
    except ValueError as e:
        raise CorruptDataError(f"{where}: manifest is not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME \
            or manifest.get("format_version") not in READABLE_FORMAT_VERSIONS:
        raise CorruptDataError(f"{where}: not a hetdb manifest of format version "
                               f"{' or '.join(map(str, READABLE_FORMAT_VERSIONS))}")
    return manifest


# ---- CURRENT ---------------------------------------------------------------------------------------

def encode_current(version: int) -> bytes:
    text = str(version)
    return f"{text} {checksum(text.encode()):08x}\n".encode()


def decode_current(data: bytes, where: str) -> int:
    """The version number a CURRENT file names; CorruptDataError if it is damaged."""
    try:
        text, crc = data.decode("ascii").rstrip("\n").split(" ")
        version = int(text)
        ok = data == encode_current(version) and int(crc, 16) == checksum(text.encode())
    except (UnicodeDecodeError, ValueError):
        ok = False
    if not ok:
        raise CorruptDataError(f"{where}: CURRENT file is damaged ({data[:40]!r})")
    return version
