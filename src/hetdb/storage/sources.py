"""Streaming readers of input files (Parquet, CSV, Arrow IPC) for ingest, batch by batch.

Each source reports its Arrow schema without reading the data, then yields record batches whose memory
does not grow with the file: Parquet by ``iter_batches``, CSV through pyarrow's streaming reader, IPC
file/stream format one record batch at a time. ``position()`` is how many bytes of the file were consumed
(for a progress bar).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from hetdb.errors import InputError
from hetdb.types import DataType

FORMATS = ("parquet", "csv", "ipc")
_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv", ".csv.gz": "csv",
               ".tsv.gz": "csv", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc", ".arrows": "ipc"}
# Type inference sees the first block only, so the schema is read with a big block. The data is then
# streamed with the inferred types and smaller blocks: pyarrow's streaming reader keeps a readahead
# window of several blocks, so the block size bounds import memory.
CSV_INFER_BLOCK_SIZE = 16 << 20
CSV_STREAM_BLOCK_SIZE = 4 << 20
PARQUET_BATCH_ROWS = 1 << 17

_READ_KEYS = {"block_size", "skip_rows", "skip_rows_after_names", "column_names",
              "autogenerate_column_names", "encoding"}
_PARSE_KEYS = {"delimiter", "quote_char", "double_quote", "escape_char", "newlines_in_values",
               "ignore_empty_lines"}
_CONVERT_KEYS = {"column_types", "null_values", "true_values", "false_values", "timestamp_parsers",
                 "strings_can_be_null", "quoted_strings_can_be_null", "decimal_point", "check_utf8"}
CSV_OPTION_KEYS = _READ_KEYS | _PARSE_KEYS | _CONVERT_KEYS | {"header"}


def detect_format(path: str, format: str | None) -> str:
    """'parquet', 'csv' or 'ipc' from ``format`` or the file extension; InputError if unknown."""
    if format is not None:
        f = {"pq": "parquet", "arrow": "ipc", "feather": "ipc", "tsv": "csv"}.get(format.lower(), format.lower())
        if f not in FORMATS:
            raise InputError(f"unknown input format {format!r} (use one of {', '.join(FORMATS)})")
        return f
    lower = path.lower()
    for ext in sorted(_EXTENSIONS, key=len, reverse=True):
        if lower.endswith(ext):
            return _EXTENSIONS[ext]
    raise InputError(f"{path}: cannot tell the file format from the extension "
                     f"(known: {', '.join(sorted(_EXTENSIONS))}); pass format='parquet'|'csv'|'ipc'")


def _arrow_type(t: Any) -> pa.DataType:
    if isinstance(t, pa.DataType):
        return t
    if isinstance(t, DataType):
        return t.to_arrow()
    try:
        return DataType.parse(str(t)).to_arrow()
    except ValueError:
        try:
            return pa.type_for_alias(str(t))
        except ValueError:
            raise InputError(f"csv_options column type {t!r} is not a type (e.g. 'BIGINT', "
                             "'DECIMAL(15,2)', pa.int64())") from None


class CsvOptions:
    """csv_options (a flat dict) split into pyarrow's read/parse/convert options."""

    def __init__(self, path: str, options: dict | None) -> None:
        options = dict(options or {})
        unknown = set(options) - CSV_OPTION_KEYS
        if unknown:
            raise InputError(f"unknown csv_options {sorted(unknown)} (known: {sorted(CSV_OPTION_KEYS)})")
        read = {k: options[k] for k in _READ_KEYS if k in options}
        parse = {k: options[k] for k in _PARSE_KEYS if k in options}
        convert = {k: options[k] for k in _CONVERT_KEYS if k in options}
        self.user_block_size = "block_size" in read
        if options.get("header") is False and "column_names" not in read:
            read.setdefault("autogenerate_column_names", True)
        if path.lower().endswith((".tsv", ".tsv.gz")):
            parse.setdefault("delimiter", "\t")
        # Unquoted empty fields are NULL, quoted "" is the empty string (what CSV writers produce).
        # Only the empty field is NULL by default (as in DuckDB): "NA" may be a real value and "nan"
        # is a float NaN.
        convert.setdefault("null_values", [""])
        convert.setdefault("strings_can_be_null", True)
        convert.setdefault("quoted_strings_can_be_null", False)
        if "column_types" in convert:
            convert["column_types"] = {k: _arrow_type(v) for k, v in convert["column_types"].items()}
        self.read, self.parse, self.convert = read, parse, convert
        self.header_lines = int(read.get("skip_rows", 0)) + (
            0 if read.get("column_names") or read.get("autogenerate_column_names") else 1)

    def make(self, column_types: dict[str, pa.DataType] | None = None, use_threads: bool = True,
             handler: Any = None) -> tuple[pcsv.ReadOptions, pcsv.ParseOptions, pcsv.ConvertOptions]:
        """Options for one read; with ``column_types`` (types already known) blocks are smaller."""
        read = dict(self.read)
        if not self.user_block_size:
            read["block_size"] = CSV_STREAM_BLOCK_SIZE if column_types else CSV_INFER_BLOCK_SIZE
        convert = dict(self.convert)
        if column_types is not None:
            convert["column_types"] = {**column_types, **convert.get("column_types", {})}
        parse = dict(self.parse)
        if handler is not None:
            parse["invalid_row_handler"] = handler
        return (pcsv.ReadOptions(use_threads=use_threads, **read), pcsv.ParseOptions(**parse),
                pcsv.ConvertOptions(**convert))


class Source:
    """One input file: ``schema`` (Arrow) and ``batches()``."""

    def __init__(self, path: str, format: str, csv_options: dict | None = None) -> None:
        self.path = path
        self.format = format
        if not os.path.isfile(path):
            raise InputError(f"{path}: no such file")
        self.size = os.path.getsize(path)
        self._consumed = 0
        self._raw: Any = None
        self.csv = CsvOptions(path, csv_options) if format == "csv" else None
        self.column_types: dict[str, pa.DataType] | None = None  # forced CSV types (from the first file)
        self.schema: pa.Schema | None = None
        try:
            self.schema = self._read_schema()
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            raise InputError(self.describe_error(e)) from None

    def describe_error(self, error: Exception) -> str:
        """A message for a read error: "path:line: ..." naming the first bad CSV row where it can be
        found, else "path: ..."."""
        found = self.locate_csv_error() if self.format == "csv" else None
        if found is None:
            return f"{self.path}: cannot read as {self.format}: {error}"
        line, detail = found
        return f"{self.path}:{line}: cannot read as {self.format}: {detail or error}"

    def position(self) -> int:
        """Bytes of the file consumed so far."""
        if self._raw is not None and not self._raw.closed:
            return min(self._raw.tell(), self.size)
        return self._consumed

    def _read_schema(self) -> pa.Schema:
        if self.format == "parquet":
            return pq.ParquetFile(self.path).schema_arrow
        if self.format == "ipc":
            with pa.OSFile(self.path) as f:
                try:
                    return ipc.open_file(f).schema
                except pa.ArrowInvalid:
                    f.seek(0)
                    return ipc.open_stream(f).schema
        return self._infer_csv_schema()

    def _infer_csv_schema(self) -> pa.Schema:
        # Inference from a sample of whole lines: opening the streaming reader on the file itself
        # would start a readahead of many blocks only to look at the first one.
        if self.csv.user_block_size:
            reader, raw = self._open_csv()
            raw.close()
            return reader.schema
        with pa.input_stream(self.path, compression="detect") as f:
            sample = f.read(CSV_INFER_BLOCK_SIZE)
            complete = len(sample) < CSV_INFER_BLOCK_SIZE or not f.read(1)
        if not complete:
            cut = sample.rfind(b"\n")
            sample = sample[:cut + 1] if cut >= 0 else sample
        read, parse, convert = self.csv.make()
        read.block_size = max(len(sample), 1)
        try:
            return pcsv.open_csv(pa.BufferReader(sample), read_options=read, parse_options=parse,
                                 convert_options=convert).schema
        except pa.ArrowInvalid:
            if complete:
                raise
            # the cut fell inside a quoted value that spans lines: infer from the file itself
            reader, raw = self._open_csv()
            raw.close()
            return reader.schema

    def _open_csv(self, column_types: dict | None = None, use_threads: bool = True, handler: Any = None,
                  all_strings: list[str] | None = None, infer_only: bool = False) -> tuple[Any, Any]:
        raw = pa.OSFile(self.path)
        stream = pa.CompressedInputStream(raw, "gzip") if self.path.lower().endswith(".gz") else raw
        read, parse, convert = self.csv.make(column_types, use_threads, handler)
        if all_strings is not None:
            convert.column_types = {name: pa.string() for name in all_strings}
        elif infer_only:
            convert.column_types = {}
        try:
            return pcsv.open_csv(stream, read_options=read, parse_options=parse, convert_options=convert), raw
        except BaseException:
            raw.close()
            raise

    def locate_csv_error(self) -> tuple[int, str | None] | None:
        """Re-read the CSV to find the first row that does not parse or convert: (line, what is wrong
        or None), or None when it cannot be found."""
        bad_rows: list[Any] = []

        def handler(row: Any) -> str:
            bad_rows.append(row)
            return "error"

        try:
            if self.schema is None:  # the typed read failed at once: the names still come from pure inference
                reader, raw = self._open_csv(use_threads=False, handler=handler, infer_only=True)
                names = reader.schema.names
                raw.close()
                target = {}
            else:
                names = self.schema.names
                target = {f.name: f.type for f in self.schema}
        except pa.ArrowInvalid:
            return _bad_row(bad_rows)
        target.update(self.csv.convert.get("column_types", {}))
        target.update(self.column_types or {})
        rows = 0
        try:
            reader, raw = self._open_csv(use_threads=False, handler=handler, all_strings=names)
        except pa.ArrowInvalid:
            return _bad_row(bad_rows)
        try:
            for batch in reader:
                for name, t in target.items():
                    if pa.types.is_string(t) or name not in batch.schema.names:
                        continue
                    idx = _first_bad_value(batch.column(name), t)
                    if idx is not None:
                        line = self.csv.header_lines + rows + idx + 1
                        value = batch.column(name)[idx].as_py()
                        return line, f"column '{name}': value {value!r} is not a valid {t}"
                rows += batch.num_rows
        except pa.ArrowInvalid:
            return _bad_row(bad_rows)
        finally:
            raw.close()
        return None

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Record batches of the file, in order."""
        if self.format == "parquet":
            pf = pq.ParquetFile(self.path)
            total = max(pf.metadata.num_rows, 1)
            done = 0
            for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
                done += batch.num_rows
                self._consumed = self.size * done // total
                yield batch
        elif self.format == "ipc":
            yield from self._ipc_batches()
        else:
            reader, raw = self._open_csv(self.column_types)
            self._raw = raw
            try:
                yield from reader
            finally:
                raw.close()
                self._consumed = self.size
        self._consumed = self.size

    def _ipc_batches(self) -> Iterator[pa.RecordBatch]:
        with pa.OSFile(self.path) as f:
            try:
                reader = ipc.open_file(f)
            except pa.ArrowInvalid:
                f.seek(0)
                self._raw = f
                yield from ipc.open_stream(f)
                return
            n = reader.num_record_batches
            for i in range(n):
                batch = reader.get_batch(i)
                self._consumed = self.size * (i + 1) // max(n, 1)
                yield batch


def _first_bad_value(col: pa.Array, t: pa.DataType) -> int | None:
    """Index of the first string in ``col`` that does not cast to ``t`` (binary search over slices)."""
    def ok(a: pa.Array) -> bool:
        try:
            a.cast(t)
            return True
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False

    if ok(col):
        return None
    lo, hi = 0, len(col)  # the first bad index lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(col.slice(lo, mid - lo)):
            lo = mid
        else:
            hi = mid
    return lo


def _bad_row(bad_rows: list[Any]) -> tuple[int, str | None] | None:
    if not bad_rows or not bad_rows[0].number:
        return None
    row = bad_rows[0]
    return row.number, f"expected {row.expected_columns} columns, got {row.actual_columns}: {row.text!r}"
