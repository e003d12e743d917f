"""TableReader: an immutable snapshot of one committed table version."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from hetdb import io
from hetdb.column import Batch, Column
from hetdb.errors import CatalogError, CorruptDataError
from hetdb.storage.format import (
    DEFAULT_ROWS_PER_PAGE,
    MANIFEST,
    ColumnSpec,
    PageLocation,
    ZoneMap,
    checksum,
    decode_manifest,
)
from hetdb.storage.pages import PLAIN, decode_page
from hetdb.types import DataType

IO_WORKERS = 8


def did_you_mean(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def load_manifest(version_dir: str, table: str) -> dict:
    path = os.path.join(version_dir, MANIFEST)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CorruptDataError(f"table '{table}': manifest {path} is missing") from None
    return decode_manifest(data, f"table '{table}' manifest {path}")


class TableReader:
    """Reads pages of one committed version; every page read verifies its checksum."""

    def __init__(self, version_dir: str, table: str, version: int) -> None:
        m = load_manifest(version_dir, table)
        where = f"table '{table}' manifest {os.path.join(version_dir, MANIFEST)}"
        try:
            self.name = table
            self.version = version
            self.path = version_dir
            self.num_rows = int(m["num_rows"])
            self._rg_rows = [int(n) for n in m["row_group_rows"]]
            self._rg_starts = [int(s) for s in m["row_group_starts"]]
            self._columns = {c["name"]: c for c in m["columns"]}
            self.schema = [ColumnSpec(c["name"], DataType.parse(c["type"]), bool(c["nullable"]))
                           for c in m["columns"]]
            # rows per full row group; manifests before format version 3 do not say (their first
            # row group is full when there are several)
            self.rows_per_page = int(m.get("rows_per_page") or (
                self._rg_rows[0] if len(self._rg_rows) > 1 else DEFAULT_ROWS_PER_PAGE))
            consistent = (m["version"] == version and sum(self._rg_rows) == self.num_rows
                          and len(self._rg_starts) == len(self._rg_rows)
                          and all(len(c["pages"]) == len(self._rg_rows) for c in m["columns"])
                          # a page's file is a name inside this version's directory
                          and all(os.path.basename(p.get("file") or c["file"]) == (p.get("file") or c["file"])
                                  for c in m["columns"] for p in c["pages"]))
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptDataError(f"{where}: malformed entry ({e!r})") from None
        if not consistent:
            raise CorruptDataError(f"{where}: row counts, page counts or version are inconsistent")
        self._specs = {s.name: s for s in self.schema}
        self._dictionaries: dict[str, Column | None] = {}

    # ---- metadata ------------------------------------------------------------------------------
    @property
    def num_row_groups(self) -> int:
        return len(self._rg_rows)

    def column(self, name: str) -> ColumnSpec:
        """The ColumnSpec of ``name``; CatalogError naming table and column if there is none."""
        spec = self._specs.get(name)
        if spec is None:
            raise CatalogError(f"table '{self.name}' has no column '{name}'"
                               f"{did_you_mean(name, list(self._specs))}")
        return spec

    def _page(self, column: str, rg: int) -> dict:
        self.column(column)
        if not 0 <= rg < len(self._rg_rows):
            raise IndexError(f"table '{self.name}': row group {rg} out of range "
                             f"(0..{len(self._rg_rows) - 1})")
        return self._columns[column]["pages"][rg]

    def page_file(self, column: str, rg: int) -> str:
        """Name (in this version's directory) of the file holding page (column, rg): the column's
        file, or for a row group an append carried over from an earlier version, that version's file
        (hard-linked into this directory, so each version directory holds every file it reads)."""
        return self._page(column, rg).get("file") or self._columns[column]["file"]

    def manifest_page(self, column: str, rg: int) -> dict:
        """A copy of the manifest entry of page (column, rg), its file named (what an append
        writes into the next version's manifest for a row group it keeps)."""
        return {**self._page(column, rg), "file": self.page_file(column, rg)}

    def row_group_rows(self, rg: int) -> int:
        return self._rg_rows[rg]

    def row_group_start(self, rg: int) -> int:
        return self._rg_starts[rg]

    def zone_map(self, column: str, rg: int) -> ZoneMap:
        z = self._page(column, rg)["zone"]
        lo, hi = z["min"], z["max"]
        if self._specs[column].dtype.kind == "float64":
            lo, hi = (None if lo is None else float(lo)), (None if hi is None else float(hi))
        return ZoneMap(lo, hi, int(z["nulls"]), int(z["nans"]), self._rg_rows[rg])

    def page_location(self, column: str, rg: int) -> PageLocation:
        p = self._page(column, rg)
        return PageLocation(os.path.join(self.path, self.page_file(column, rg)), int(p["offset"]),
                            int(p["length"]), int(p["padded"]), int(p["crc"]))

    def page_encoding(self, column: str, rg: int) -> str:
        """"plain" or "dict" (dict pages hold int32 codes into ``dictionary(column)``)."""
        return self._page(column, rg)["enc"]

    def page_codec(self, column: str, rg: int) -> str:
        """Encoding of the page's data section (hetdb.codec: "plain", "const", "for", "delta", "rle",
        "dict"); version-1 pages are "plain"."""
        return self._page(column, rg).get("codec", PLAIN)

    def decoded_bytes(self, column: str, rg: int) -> int:
        """Bytes of the page with its data section decoded (``length`` for a plain page)."""
        p = self._page(column, rg)
        return int(p.get("decoded", p["length"]))

    def page_sections(self, column: str, rg: int) -> dict[str, tuple[int, int]]:
        """(offset, length) within the page of its sections: "data" always; "validity" (bit-packed,
        LSB first) only when the page has NULLs; "offsets" (int64) and "chars" for plain strings.
        Lets a device decode raw pages itself."""
        return {k: (int(v[0]), int(v[1])) for k, v in self._page(column, rg)["sections"].items()}

    def bytes_on_disk(self, column: str | None = None) -> int:
        """Bytes of the column's pages (padded) and dictionary; all columns plus manifest when None."""
        names = [column] if column is not None else list(self._specs)
        total = 0
        for name in names:
            self.column(name)
            c = self._columns[name]
            total += sum(int(p["padded"]) for p in c["pages"])
            if "dictionary" in c:
                total += int(c["dictionary"]["length"])
        if column is None:
            total += os.path.getsize(os.path.join(self.path, MANIFEST))
        return total

    # ---- data ----------------------------------------------------------------------------------
    def _where(self, column: str, rg: int) -> str:
        return (f"table '{self.name}' column '{column}' file "
                f"{os.path.join(self.path, self.page_file(column, rg))} page {rg} (row group {rg})")

    def _read_raw(self, locs: list[PageLocation], keys: list[tuple[str, int]]) -> list[np.ndarray]:
        try:
            return io.read_pages(locs, max_workers=IO_WORKERS)
        except (CorruptDataError, FileNotFoundError):
            pass
        # find which page failed, to name it
        out = []
        for loc, (column, rg) in zip(locs, keys):
            try:
                out.append(io.read_range(loc.path, loc.offset, loc.padded_length))
            except CorruptDataError as e:
                raise CorruptDataError(f"{self._where(column, rg)}: {e}") from None
            except FileNotFoundError:
                raise CorruptDataError(f"{self._where(column, rg)}: column file is missing (was this "
                                       "version removed by a later commit? reopen the table)") from None
        return out

    def read(self, column: str, rg: int) -> Column:
        """Read, verify and decode page (column, rg) into a host Column."""
        loc = self.page_location(column, rg)
        raw = self._read_raw([loc], [(column, rg)])[0]
        return self.decode(column, rg, raw)

    def decode(self, column: str, rg: int, raw: Any) -> Column:
        """Decode raw page bytes (at least ``length`` of them) after verifying the checksum; the
        Column's arrays view ``raw``."""
        p = self._page(column, rg)
        buf = raw if isinstance(raw, np.ndarray) else np.frombuffer(raw, dtype=np.uint8)
        buf = buf.view(np.uint8).reshape(-1)
        length, padded = int(p["length"]), int(p["padded"])
        if buf.shape[0] < length:
            raise CorruptDataError(f"{self._where(column, rg)}: page has {buf.shape[0]} bytes, "
                                   f"{length} expected (truncated)")
        if checksum(memoryview(buf[:length])) != int(p["crc"]):
            raise CorruptDataError(f"{self._where(column, rg)}: checksum mismatch (data is damaged)")
        if buf.shape[0] >= padded and np.any(buf[length:padded]):
            raise CorruptDataError(f"{self._where(column, rg)}: page padding is not zero (data is damaged)")
        spec = self._specs[column]
        dictionary = self.dictionary(column) if p["enc"] == "dict" else None
        return decode_page(buf[:length], spec.dtype, self._rg_rows[rg], p["enc"], p["sections"],
                           dictionary, self._where(column, rg), p.get("codec", PLAIN))

    def dictionary_file(self, column: str) -> str | None:
        """The path of the column's dictionary file (None when it has none); nothing is read."""
        self.column(column)
        d = self._columns[column].get("dictionary")
        return None if d is None else os.path.join(self.path, d["file"])

    def dictionary(self, column: str) -> Column | None:
        """The shared dictionary of a dict-encoded string column (cached: one object per reader)."""
        self.column(column)
        if column in self._dictionaries:
            return self._dictionaries[column]
        d = self._columns[column].get("dictionary")
        result = None
        if d is not None:
            path = os.path.join(self.path, d["file"])
            where = f"table '{self.name}' column '{column}' dictionary file {path}"
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                raise CorruptDataError(f"{where} is missing") from None
            if len(data) != int(d["length"]) or checksum(data) != int(d["crc"]):
                raise CorruptDataError(f"{where}: checksum or length mismatch (damaged or truncated)")
            count, split = int(d["count"]), int(d["chars_offset"])
            offsets = np.frombuffer(data, dtype="<i8", count=count + 1).astype(np.int64)
            chars = np.frombuffer(data, dtype=np.uint8, offset=split)
            if split != (count + 1) * 8 or offsets[0] != 0 or offsets[-1] != chars.shape[0]:
                raise CorruptDataError(f"{where}: offsets do not match the characters")
            result = Column(self._specs[column].dtype, offsets=offsets, chars=chars)
        self._dictionaries[column] = result
        return result

    def read_batch(self, columns: list[str], rg: int) -> Batch:
        """Pages ``rg`` of ``columns`` (read concurrently) as a host Batch."""
        locs = [self.page_location(c, rg) for c in columns]
        raws = self._read_raw(locs, [(c, rg) for c in columns])
        return Batch({c: self.decode(c, rg, raw) for c, raw in zip(columns, raws)}, self._rg_rows[rg])

    def scan(self, columns: list[str] | None = None, row_groups: list[int] | None = None) -> Iterator[Batch]:
        """One Batch per row group (all columns / all row groups by default), in order. The next row
        group's pages are read while the caller works on the current one."""
        cols = list(self._specs) if columns is None else list(columns)
        for c in cols:
            self.column(c)
        rgs = list(range(self.num_row_groups) if row_groups is None else row_groups)
        pending = self._prefetch(cols, rgs[0]) if rgs else None
        for i, rg in enumerate(rgs):
            futures = pending
            pending = self._prefetch(cols, rgs[i + 1]) if i + 1 < len(rgs) else None
            try:
                raws = [f.result() for f in futures]
            except (CorruptDataError, OSError):
                raws = self._read_raw([self.page_location(c, rg) for c in cols], [(c, rg) for c in cols])
            yield Batch({c: self.decode(c, rg, raw) for c, raw in zip(cols, raws)}, self._rg_rows[rg])

    def _prefetch(self, cols: list[str], rg: int) -> list:
        return io.submit_pages([self.page_location(c, rg) for c in cols], max_workers=IO_WORKERS)

    def arrow(self, columns: list[str] | None = None) -> pa.Table:
        """The table (or ``columns``) as Arrow, NULLs included."""
        cols = list(self._specs) if columns is None else list(columns)
        chunks: dict[str, list[pa.Array]] = {c: [] for c in cols}
        for batch in self.scan(cols):
            for c in cols:
                chunks[c].append(batch[c].to_arrow())
        fields = [pa.field(c, self._specs[c].dtype.to_arrow(), self._specs[c].nullable) for c in cols]
        arrays = [pa.chunked_array(chunks[c], type=f.type) for c, f in zip(cols, fields)]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
