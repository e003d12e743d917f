"""Data read in place: files named in FROM (Parquet, CSV, JSON, Arrow IPC; globs, lists, hive
partitions, union by name) and Python objects registered on a connection (Arrow tables, record batch
readers, datasets, pandas and Polars frames).

Registered Python objects are in storage/registered.py. An ``ExternalSource`` describes its columns (hetdb types, DuckDB's names), cuts the data into
morsels, prunes Parquet row groups and whole files by their statistics and partition values, and
reads one morsel into an Arrow table. Every morsel opens its own file reader, so any number of
worker threads may read at once (a ``pq.ParquetFile`` must never be shared between threads).
"""

from __future__ import annotations

import datetime as _dt
import glob as _glob
import os
import re
import stat
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from hetdb import types as T
from hetdb.errors import InputError, UnsupportedError
from hetdb.storage.format import ZoneMap

_GLOB_CHARS = re.compile(r"[*?\[]")
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_FORMAT_OF_EXT = {".parquet": "parquet", ".parq": "parquet", ".pq": "parquet", ".csv": "csv",
                  ".tsv": "csv", ".csv.gz": "csv", ".tsv.gz": "csv", ".txt": "csv", ".json": "json",
                  ".jsonl": "json", ".ndjson": "json", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc"}


@dataclass(frozen=True)
class ExtColumn:
    """One column as SQL sees it: ``name`` (DuckDB's, duplicates renamed a, a_1, …), its hetdb type,
    the Arrow type it is read as, and whether it comes from a hive partition directory."""

    name: str
    dtype: T.DataType
    arrow_type: pa.DataType
    partition: bool = False


def dedup_names(names: list[str]) -> list[str]:
    """DuckDB's names for columns whose names repeat (case-insensitively): a, a_1, A_2."""
    seen: set[str] = set()
    counts: dict[str, int] = {}
    out = []
    for n in names:
        key = n.lower()
        if key in seen:
            k = counts.get(key, 0)
            while True:
                k += 1
                cand = f"{n}_{k}"
                if cand.lower() not in seen:
                    break
            counts[key] = k
            n = cand
        seen.add(n.lower())
        out.append(n)
    return out


def hetdb_type(t: pa.DataType, where: str) -> T.DataType:
    """hetdb's type for an Arrow column found in a file or a registered object."""
    if pa.types.is_null(t):
        return T.STRING
    return T.value_type_from_arrow(t, where)


def normalize(arr: pa.Array | pa.ChunkedArray, col: ExtColumn, where: str) -> pa.Array | pa.ChunkedArray:
    """An array ready for Column.from_arrow: nanosecond timestamps truncated to microseconds (as
    DuckDB's CAST(ts_ns AS TIMESTAMP) does), strings checked to be valid UTF-8, NULL-typed columns
    typed, other types cast to the column's Arrow type."""
    t = arr.type
    if pa.types.is_null(t):
        return pa.nulls(len(arr), col.dtype.to_arrow())
    if pa.types.is_timestamp(t) and t.unit == "ns":
        return _ns_to_us(arr, t)
    value_t = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_string(value_t) or pa.types.is_large_string(value_t):
        try:
            (arr.dictionary if pa.types.is_dictionary(t) and isinstance(arr, pa.DictionaryArray) else arr
             ).validate(full=True)
        except pa.ArrowInvalid:
            raise InputError(f"{where}: column '{col.name}' holds a string that is not valid UTF-8 "
                             "(hetdb, like DuckDB, reads VARCHAR as UTF-8 only)") from None
    if not col.partition and t != col.arrow_type and not pa.types.is_dictionary(t) \
            and not pa.types.is_timestamp(t):
        try:
            return arr.cast(col.arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InputError(f"{where}: column '{col.name}' of type {t} cannot be read as "
                             f"{col.arrow_type}: {e}") from None
    return arr


def _ns_to_us(arr: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array:
    """Nanoseconds to microseconds rounded half away from zero (DuckDB's CAST(ts_ns AS TIMESTAMP))."""
    import numpy as np

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    ns = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    us = np.sign(ns) * ((np.abs(ns) + 500) // 1000)
    mask = None if arr.null_count == 0 else ~arr.is_valid().to_numpy(zero_copy_only=False)
    return pa.array(us, pa.int64(), mask=mask).cast(pa.timestamp("us", tz=t.tz))


# ---- file lists -----------------------------------------------------------------------------------
def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def expand_paths(patterns: list[str]) -> list[str]:
    """Files named by ``patterns`` (paths or globs, ``**`` recursive), in order, globs sorted.
    InputError for a path that does not exist, a glob without matches, or anything that is not a
    regular file (a FIFO or a device would block a read forever)."""
    files: list[str] = []
    for p in patterns:
        p = os.path.expanduser(p)
        if _GLOB_CHARS.search(p):
            matches = sorted(m for m in _glob.glob(p, recursive=True) if not os.path.isdir(m))
            if not matches:
                raise InputError(f"no files match '{p}'")
            bad = [m for m in matches if not _regular(m)]
            if bad:
                raise InputError(f"'{bad[0]}' (matched by '{p}') is not a regular file; hetdb reads "
                                 "only regular files (not FIFOs, sockets or devices)")
            files.extend(matches)
            continue
        if not os.path.exists(p):
            raise InputError(f"file '{p}' does not exist")
        if os.path.isdir(p):
            raise InputError(f"'{p}' is a directory: name its files, e.g. '{os.path.join(p, '*.parquet')}' "
                             f"or '{os.path.join(p, '**', '*.parquet')}'")
        if not _regular(p):
            raise InputError(f"'{p}' is not a regular file; hetdb reads only regular files "
                             "(not FIFOs, sockets or devices)")
        files.append(p)
    return files


def detect_format(path: str) -> str:
    low = path.lower()
    for ext in sorted(_FORMAT_OF_EXT, key=len, reverse=True):
        if low.endswith(ext):
            return _FORMAT_OF_EXT[ext]
    raise InputError(f"cannot tell the format of '{path}' from its extension: use read_parquet(...), "
                     "read_csv(...) or read_json(...)")


def hive_values(path: str) -> dict[str, str | None]:
    """Partition keys of a path's directories (``key=value`` segments, values URL-decoded)."""
    out: dict[str, str | None] = {}
    for seg in os.path.dirname(os.path.abspath(path)).split(os.sep):
        if "=" in seg:
            k, _, v = seg.partition("=")
            if k:
                v = unquote(v)
                out[k] = None if v == _HIVE_NULL else v
    return out


_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _hive_type(values: list[str | None]) -> T.DataType:
    vals = [v for v in values if v is not None]
    if vals and all(re.fullmatch(r"-?\d+", v) and str(int(v)) == v and abs(int(v)) < 2**63 for v in vals):
        return T.INT64
    if vals and all(_DATE_RE.fullmatch(v) for v in vals):
        try:
            for v in vals:
                _dt.date.fromisoformat(v)
            return T.DATE
        except ValueError:
            pass
    return T.STRING


def _hive_value(v: str | None, dtype: T.DataType) -> Any:
    if v is None:
        return None
    if dtype == T.INT64:
        return int(v)
    if dtype == T.DATE:
        return _dt.date.fromisoformat(v)
    return v


def _physical(v: Any, dtype: T.DataType, arrow_type: pa.DataType) -> Any:
    """A statistics value in hetdb's physical representation (what zone maps compare)."""
    if v is None:
        return None
    if dtype.kind in ("string",):
        return v if isinstance(v, str) else None
    if dtype.kind == "bool":
        return None
    if dtype.kind in ("int32", "int64", "float64") and isinstance(v, (int, float)):
        return v
    try:
        from hetdb.column import Column

        t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
        col = Column.from_arrow(pa.array([v], type=t), dtype)
        return col.data[0].item()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        return None


# ---- sources --------------------------------------------------------------------------------------
@dataclass
class ScanPlan:
    """What one scan reads: morsels plus the pruning counts EXPLAIN ANALYZE shows."""

    morsels: list
    files_total: int = 0
    files_skipped: int = 0
    row_groups_total: int = 0
    row_groups_skipped: int = 0


class ExternalSource:
    """Base of data read in place."""

    label = "external"
    columns: list[ExtColumn]

    def describe(self) -> str:
        return self.label

    def plan(self, names: list[str], filters: tuple, cid_of: dict[str, str], prune) -> ScanPlan:
        raise NotImplementedError

    def read(self, morsel: Any, names: list[str]) -> dict[str, pa.Array | pa.ChunkedArray]:
        raise NotImplementedError

    def estimated_rows(self) -> float:
        return 1_000_000.0


CSV_OPTION_MAP = {"delim": "delimiter", "sep": "delimiter", "delimiter": "delimiter", "quote": "quote_char",
                  "escape": "escape_char", "skip": "skip_rows", "header": "header"}


class FileSource(ExternalSource):
    """Files of one format named by paths, globs or a list of them."""

    def __init__(self, patterns: list[str], format: str | None = None, hive_partitioning: bool | None = None,
                 union_by_name: bool = False, csv_options: dict | None = None) -> None:
        self.patterns = list(patterns)
        self.files = expand_paths(self.patterns)
        self.format = format or detect_format(self.files[0])
        self.union_by_name = union_by_name
        self.csv_options = dict(csv_options or {})
        self._meta: dict[int, Any] = {}
        self._file_schema: dict[int, pa.Schema] = {}
        self._lock = threading.Lock()
        parts = [hive_values(f) for f in self.files]
        keys = sorted(set(parts[0]))
        if hive_partitioning is None:
            hive_partitioning = bool(keys) and all(set(p) == set(keys) for p in parts)
        elif hive_partitioning:
            for f, p in zip(self.files, parts):
                if set(p) != set(keys):
                    raise InputError(f"hive_partitioning: '{f}' has partition keys {sorted(p)}, but "
                                     f"'{self.files[0]}' has {keys}")
        self.hive_keys = keys if hive_partitioning else []
        self.partitions = [{k: p.get(k) for k in self.hive_keys} for p in parts]
        self.columns = self._schema()
        self.label = self._label()

    def _label(self) -> str:
        fn = {"parquet": "read_parquet", "csv": "read_csv", "json": "read_json", "ipc": "read_arrow"}[self.format]
        shown = self.patterns[0] if len(self.patterns) == 1 else f"{len(self.patterns)} paths"
        return f"{fn}({shown}: {len(self.files)} file{'s' if len(self.files) != 1 else ''})"

    # -- schema
    def file_schema(self, i: int) -> pa.Schema:
        with self._lock:
            if i in self._file_schema:
                return self._file_schema[i]
        path = self.files[i]
        try:
            if self.format == "parquet":
                import pyarrow.parquet as pq

                meta = pq.read_metadata(path)
                schema = meta.schema.to_arrow_schema()
                with self._lock:
                    self._meta[i] = meta
            elif self.format == "json":
                schema = self._read_json(i).schema
            else:
                schema = self._source(i).schema
        except InputError:
            raise
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            raise InputError(f"cannot read '{path}' as {self.format}: {e}") from None
        with self._lock:
            self._file_schema[i] = schema
        return schema

    def _source(self, i: int):
        from hetdb.storage.sources import Source

        opts = {}
        for k, v in self.csv_options.items():
            if k == "nullstr":
                opts["null_values"] = [v] if isinstance(v, str) else list(v)
            elif k in CSV_OPTION_MAP:
                opts[CSV_OPTION_MAP[k]] = v
            else:
                raise UnsupportedError(f"read_csv option '{k}' (supported: {', '.join(sorted(CSV_OPTION_MAP))}, nullstr)")
        fmt = "ipc" if self.format == "ipc" else "csv"
        return Source(self.files[i], fmt, opts if fmt == "csv" else None)

    def _read_json(self, i: int) -> pa.Table:
        import pyarrow.json as pj

        try:
            return pj.read_json(self.files[i])
        except (pa.ArrowInvalid, OSError) as e:
            raise InputError(f"cannot read '{self.files[i]}' as newline-delimited JSON: {e}") from None

    def _schema(self) -> list[ExtColumn]:
        first = self.file_schema(0)
        if self.union_by_name:
            fields: dict[str, pa.Field] = {}
            order: list[str] = []
            for i in range(len(self.files)):
                for f in self.file_schema(i):
                    key = f.name.lower()
                    if key not in fields:
                        fields[key] = f
                        order.append(key)
                    elif fields[key].type != f.type:
                        fields[key] = fields[key].with_type(_common_type(fields[key].type, f.type, f.name))
            arrow_fields = [fields[k] for k in order]
        else:
            arrow_fields = list(first)
        names = dedup_names([f.name for f in arrow_fields] + self.hive_keys)
        cols = []
        for f, n in zip(arrow_fields, names):
            t = pa.timestamp("us", tz=f.type.tz) if pa.types.is_timestamp(f.type) else f.type
            cols.append(ExtColumn(n, hetdb_type(f.type, f"'{f.name}' of {self.files[0]}"), t))
        for k, n in zip(self.hive_keys, names[len(arrow_fields):]):
            dtype = _hive_type([p[k] for p in self.partitions])
            cols.append(ExtColumn(n, dtype, dtype.to_arrow(), partition=True))
        self._file_fields = [f.name for f in arrow_fields]
        return cols

    def _file_index(self, i: int) -> dict[str, int | None]:
        """Output column name -> column index in file ``i`` (None: the file lacks it)."""
        schema = self.file_schema(i)
        data_cols = [c for c in self.columns if not c.partition]
        if self.union_by_name:
            pos = {}
            for j, n in enumerate(schema.names):
                pos.setdefault(n.lower(), j)
            return {c.name: pos.get(f.lower()) for c, f in zip(data_cols, self._file_fields)}
        if i == 0:
            return {c.name: j for j, c in enumerate(data_cols)}
        lower = [n.lower() for n in schema.names]
        out = {}
        for c, f in zip(data_cols, self._file_fields):
            if f.lower() not in lower:
                raise InputError(f"'{self.files[i]}' has no column '{f}' (which '{self.files[0]}' has): "
                                 "pass union_by_name=true to read files with different columns")
            out[c.name] = lower.index(f.lower())
        return out

    # -- planning and pruning
    def plan(self, names: list[str], filters: tuple, cid_of: dict[str, str], prune) -> ScanPlan:
        sp = ScanPlan([], files_total=len(self.files))
        by_name = {c.name: c for c in self.columns}
        used = {cid_of[cid] for f in filters for cid in f.columns() if cid in cid_of}
        for i in range(len(self.files)):
            part_zm = {c.name: _physical(self.partition_value(i, c.name), c.dtype, c.arrow_type)
                       for c in self.columns if c.partition and c.name in used}
            if self.format != "parquet":
                rows = 1
                zms = {cid: ZoneMap(part_zm[n], part_zm[n], int(part_zm[n] is None), 0, rows)
                       for cid, n in cid_of.items() if n in part_zm}
                if prune is not None and filters and zms and prune(filters, zms) == "skip":
                    sp.files_skipped += 1
                    continue
                sp.morsels.append((i, None))
                continue
            self.file_schema(i)
            meta = self._meta[i]
            index = self._file_index(i)
            kept = 0
            for rg in range(meta.num_row_groups):
                sp.row_groups_total += 1
                rgm = meta.row_group(rg)
                if prune is not None and filters:
                    zms = {}
                    for cid, n in cid_of.items():
                        if n not in used:
                            continue
                        if n in part_zm:
                            v = part_zm[n]
                            zms[cid] = ZoneMap(v, v, rgm.num_rows if v is None else 0, 0, rgm.num_rows)
                            continue
                        j = index.get(n)
                        zm = _zone_map(rgm, j, by_name[n]) if j is not None else \
                            ZoneMap(None, None, rgm.num_rows, 0, rgm.num_rows)
                        if zm is not None:
                            zms[cid] = zm
                    if zms and prune(filters, zms) == "skip":
                        sp.row_groups_skipped += 1
                        continue
                kept += 1
                sp.morsels.append((i, rg))
            if kept == 0:
                sp.files_skipped += 1
        return sp

    def estimated_rows(self) -> float:
        if self.format != "parquet":
            total = sum(os.path.getsize(f) for f in self.files)
            return max(total / 64.0, 1.0)
        rows = 0
        for i in range(len(self.files)):
            self.file_schema(i)
            rows += self._meta[i].num_rows
        return float(rows)

    # -- reading
    def read(self, morsel: Any, names: list[str]) -> dict[str, pa.Array | pa.ChunkedArray]:
        i, rg = morsel
        path = self.files[i]
        data_names = [n for n in names if not self._is_partition(n)]
        try:
            if self.format == "parquet":
                table, num_rows = self._read_parquet(i, rg, data_names)
            elif self.format == "json":
                table = self._read_json(i)
                num_rows = table.num_rows
            else:
                from hetdb.storage.ingest import _batches

                table = pa.Table.from_batches(list(_batches(self._source(i))), schema=self.file_schema(i))
                num_rows = table.num_rows
        except InputError:
            raise
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            raise InputError(f"cannot read '{path}' as {self.format}: {e}") from None
        index = self._file_index(i) if self.format != "parquet" else None
        by_name = {c.name: c for c in self.columns}
        out: dict[str, Any] = {}
        for n in names:
            col = by_name[n]
            if col.partition:
                v = self.partition_value(i, n)
                out[n] = pa.array([v] * num_rows, type=col.dtype.to_arrow()) if v is not None \
                    else pa.nulls(num_rows, col.dtype.to_arrow())
                continue
            if index is None:
                arr = table.column(n) if n in table.column_names else None
            else:
                j = index.get(n)
                arr = table.column(j) if j is not None else None
            if arr is None:
                arr = pa.nulls(num_rows, col.arrow_type)
            out[n] = normalize(arr, col, path)
        return out

    def _is_partition(self, name: str) -> bool:
        return any(c.name == name and c.partition for c in self.columns)

    def partition_value(self, i: int, name: str) -> Any:
        """The value of partition column ``name`` for file ``i`` (a Python value of its type)."""
        cols = [c for c in self.columns if c.partition]
        pos = [c.name for c in cols].index(name)
        return _hive_value(self.partitions[i][self.hive_keys[pos]], cols[pos].dtype)

    def _read_parquet(self, i: int, rg: int, names: list[str]) -> tuple[pa.Table, int]:
        import pyarrow.parquet as pq

        self.file_schema(i)
        # one reader per morsel: pq.ParquetFile is not safe to share between threads
        pf = pq.ParquetFile(self.files[i], metadata=self._meta[i])
        index = self._file_index(i)
        want = sorted({index[n] for n in names if index.get(n) is not None})
        num_rows = self._meta[i].row_group(rg).num_rows
        if not want:
            return pa.table({}), num_rows
        file_names = self.file_schema(i).names
        if len(set(file_names)) == len(file_names):
            t = pf.read_row_group(rg, columns=[file_names[j] for j in want])
            cols = {index_name: t.column(file_names[index[index_name]]) for index_name in names
                    if index.get(index_name) is not None}
        else:  # duplicate names in the file: read every column and pick by position
            t = pf.read_row_group(rg)
            cols = {n: t.column(index[n]) for n in names if index.get(n) is not None}
        return pa.table(cols) if cols else pa.table({}), num_rows


def _common_type(a: pa.DataType, b: pa.DataType, name: str) -> pa.DataType:
    try:
        return pa.unify_schemas([pa.schema([pa.field(name, a)]), pa.schema([pa.field(name, b)])],
                                promote_options="permissive").field(0).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        raise InputError(f"union_by_name: column '{name}' is {a} in one file and {b} in another") from None


def _zone_map(rgm: Any, j: int, col: ExtColumn) -> ZoneMap | None:
    """A row group's column statistics as a zone map (None when the file has none)."""
    st = rgm.column(j).statistics
    n = rgm.num_rows
    if st is None or not st.has_null_count:
        return None
    nulls = st.null_count
    if not st.has_min_max:
        return ZoneMap(None, None, nulls, 0, n) if nulls == n else None
    mn = _physical(st.min, col.dtype, col.arrow_type)
    mx = _physical(st.max, col.dtype, col.arrow_type)
    if mn is None or mx is None:
        return None
    if col.dtype.kind == "timestamp":  # nanosecond statistics truncate; values round to microseconds
        mn, mx = mn - 1, mx + 1
    # Parquet min/max leave NaN out and do not count it: a float row group may hold NaN
    nans = 1 if col.dtype.kind == "float64" and n - nulls > 1 else 0
    return ZoneMap(mn, mx, nulls, nans, n)


# ---- registry: a Scan node names its source by a key ----------------------------------------------
_REGISTRY: OrderedDict[str, ExternalSource] = OrderedDict()
_REGISTRY_LOCK = threading.Lock()
_MAX_TRANSIENT = 256


def register_source(source: ExternalSource, key: str | None = None) -> str:
    """Keep ``source`` under a key a plan can name (a new key unless given); transient keys (files
    in FROM) are forgotten oldest first past a bound."""
    with _REGISTRY_LOCK:
        if key is None:
            key = f"ext-{uuid.uuid4().hex}"
            transient = [k for k in _REGISTRY if k.startswith("ext-")]
            for k in transient[:max(0, len(transient) - _MAX_TRANSIENT)]:
                del _REGISTRY[k]
        _REGISTRY[key] = source
        return key


def unregister_source(key: str) -> None:
    with _REGISTRY_LOCK:
        _REGISTRY.pop(key, None)


def lookup_source(key: str) -> ExternalSource:
    with _REGISTRY_LOCK:
        src = _REGISTRY.get(key)
    if src is None:
        raise InputError("the data this plan reads in place is no longer registered; run the query again")
    return src
