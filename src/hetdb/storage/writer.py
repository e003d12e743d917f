"""TableWriter: streams batches into a new table version and publishes it atomically.

Everything goes into ``v<N>.tmp-<pid>/``; commit fsyncs the files and the directory, renames it to
``v<N>/``, then replaces CURRENT through a fsynced temporary file and a rename. A crash at any point
leaves the previous version as the one CURRENT names; leftovers are removed by the next writer.
A writer holds the table's lock (storage.locking) from before it numbers its version until its commit
or abort is complete, so the writers of a table run one after another and versions only grow.

An append (``Carried``) writes only the new row groups: the new version's manifest lists the kept
row groups of the version it appends to with their page entries unchanged, each naming its file,
and those files are hard-linked into the new version's directory. Every version directory so holds
every file it reads, and removing an old version never takes a page a newer one uses.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hetdb import types as T
from hetdb.codec import CODECS
from hetdb.codec.strings import LZ4, OFFSETS
from hetdb.column import Batch, Column
from hetdb.config import usable_cpus
from hetdb.errors import CatalogError, CorruptDataError, HetdbError, InputError
from hetdb.storage import versions
from hetdb.storage.dictionary import DictionaryBuilder
from hetdb.storage.format import (
    CURRENT,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST,
    ColumnSpec,
    checksum,
    encode_current,
    encode_manifest,
    fsync_dir,
    write_file_durably,
)
from hetdb.storage.locking import TableLock
from hetdb.storage.pages import DICT, PLAIN, encode_page
from hetdb.storage.reader import TableReader
from hetdb.storage.zonemap import compute_zone

KILL_ENV = "HETDB_TEST_KILL_AT"
# "auto": every fixed-width page in the smallest of the codec's encodings, plain-string pages with
# their offsets encoded and their bytes in LZ4 chunks where that gains (hetdb.codec.strings);
# "light": the same without LZ4 (string bytes stay as they are); "none": plain pages.
COMPRESSIONS = {"auto": CODECS + (OFFSETS, LZ4), "light": CODECS + (OFFSETS,), "none": ()}
DEFAULT_COMPRESSION = "auto"


def check_compression(compression: str) -> tuple[str, ...]:
    """The codecs a ``compression`` setting allows; InputError naming the choices otherwise."""
    if compression not in COMPRESSIONS:
        raise InputError(f"unknown compression {compression!r}: use one of {', '.join(COMPRESSIONS)}")
    return COMPRESSIONS[compression]


_kill_counts: dict[str, int] = {}


PARALLEL_ENCODE_ROWS = 1 << 16  # a row group this long encodes its columns on the shared pool
_POOL: list[ThreadPoolExecutor | None] = []
_POOL_LOCK = threading.Lock()


def _encode_pool() -> ThreadPoolExecutor | None:
    """The process's page-encoding threads (one per CPU up to 16; None on one CPU)."""
    if not _POOL:
        with _POOL_LOCK:
            if not _POOL:
                cpus = usable_cpus()
                _POOL.append(ThreadPoolExecutor(min(16, cpus), thread_name_prefix="hetdb-encode")
                             if cpus > 1 else None)
    return _POOL[0]


def _kill_point(step: str) -> None:
    # Crash-consistency tests make a writer die at a named step (os._exit: no cleanup runs);
    # "step#n" dies the n-th time the process reaches the step (the n-th commit of a sequence).
    want = os.environ.get(KILL_ENV)
    if not want or not want.startswith(step):
        return
    name, _, nth = want.partition("#")
    if name != step:
        return
    _kill_counts[step] = _kill_counts.get(step, 0) + 1
    if _kill_counts[step] >= int(nth or 1):
        os._exit(137)


def column_file(i: int, version: int | None = None) -> str:
    """Column ``i``'s file: ``c0000.col`` in a fresh table, ``c0000.v<N>.col`` for the pages version
    N appended (a distinct name, so it can be linked into later versions next to older ones)."""
    return f"c{i:04d}.col" if version is None else f"c{i:04d}.v{version}.col"


@dataclass(frozen=True)
class Carried:
    """What an append keeps of the version it appends to: its first ``row_groups`` row groups,
    pages referenced as they are (never copied or rewritten)."""

    reader: TableReader
    row_groups: int

    @property
    def rows(self) -> int:
        r = self.reader
        return r.row_group_start(self.row_groups - 1) + r.row_group_rows(self.row_groups - 1) \
            if self.row_groups else 0


def _link_or_copy(src: str, dst: str) -> None:
    """Hard-link ``src`` as ``dst`` (the same bytes, no copy); copy where links are refused."""
    try:
        os.link(src, dst)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        shutil.copyfile(src, dst)
        with open(dst, "rb+") as f:
            os.fsync(f.fileno())


def dictionary_file(i: int) -> str:
    return f"c{i:04d}.dict"


def _check_utf8(arr: pa.Array) -> None:
    """InputError (with ``row``: the first bad value's index in ``arr``) if a string is not UTF-8;
    Parquet and IPC readers hand such bytes over as strings unchecked."""
    try:
        arr.validate(full=True)
        return
    except pa.ArrowInvalid:
        pass
    for row, value in enumerate(arr.cast(pa.large_binary())):
        raw = value.as_py()
        if raw is None:
            continue
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            err = InputError(f"invalid UTF-8 in a string value ({raw[max(e.start - 10, 0):e.end + 10]!r}); "
                             "hetdb stores UTF-8 text only")
            err.row = row
            raise err from None
    raise InputError("the string values are malformed")


class TableWriter:
    """Writes one new version of a table. Use as a context manager: commit on success, abort on error."""

    def __init__(self, table_dir: str, table: str, schema: list[ColumnSpec], rows_per_page: int,
                 lock: TableLock, compression: str = DEFAULT_COMPRESSION, carried: Carried | None = None) -> None:
        """``lock``: the table's writer lock, held by the caller; the writer releases it when it
        commits or aborts (also when this constructor fails). ``carried``: the new version appends
        to ``carried.reader``'s version, keeping its first ``carried.row_groups`` row groups."""
        self._lock = lock
        self._done = True  # until the version directory exists: abort has nothing to remove
        self._carried = carried
        try:
            self._start(table_dir, table, schema, rows_per_page, compression)
        except BaseException:
            if self._done:
                self._release()
            else:
                self.abort()
            raise

    def _start(self, table_dir: str, table: str, schema: list[ColumnSpec], rows_per_page: int,
               compression: str) -> None:
        if rows_per_page < 1:
            raise InputError(f"rows_per_page must be >= 1, got {rows_per_page}")
        self._codecs = check_compression(compression)
        self.table = table
        self.schema = list(schema)
        self.rows_per_page = int(rows_per_page)
        self.rows_written = 0
        self._table_dir = table_dir
        self.reader: TableReader | None = None  # the committed version, opened before the lock is released
        self._names = [c.name for c in self.schema]
        try:
            self._previous = versions.read_current(table_dir, table)
        except CorruptDataError:
            self._previous = None  # replacing a damaged table: nothing of it is worth keeping
        versions.remove_stale(table_dir, keep=None)
        self.version = versions.next_version(table_dir, self._previous)
        self._tmp = os.path.join(table_dir, f"v{self.version}.tmp-{os.getpid()}")
        os.mkdir(self._tmp)
        versions.ACTIVE_TMP_DIRS.add(self._tmp)
        self._done = False
        self._files: list[Any] = []
        suffix = None if self._carried is None else self.version
        self._col_files = [column_file(i, suffix) for i in range(len(schema))]
        self._files.extend(open(os.path.join(self._tmp, name), "wb") for name in self._col_files)
        self._offsets = [0] * len(schema)
        self._pages: list[list[dict]] = [[] for _ in schema]
        self._dicts = [self._dictionary_builder(c) if c.dtype.kind == "string" else None for c in schema]
        self._rg_rows: list[int] = []
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0

    def _dictionary_builder(self, spec: ColumnSpec) -> DictionaryBuilder:
        """A fresh builder, or for an append one holding the kept pages' dictionary: codes only
        grow, so the kept dict pages stay valid with the new version's (longer) dictionary."""
        d = DictionaryBuilder()
        c = self._carried
        if c is None or not c.row_groups:
            return d
        d.rows_seen = c.rows
        if any(c.reader.page_encoding(spec.name, rg) == DICT for rg in range(c.row_groups)):
            for v in c.reader.dictionary(spec.name).to_arrow().to_pylist():
                d.index[v] = len(d.values)
                d.values.append(v)
            d.used = True
        return d

    # ---- context manager -----------------------------------------------------------------------
    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._done:
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    # ---- appending -----------------------------------------------------------------------------
    def append(self, batch: Batch) -> None:
        """Append a host Batch whose column names are the schema's (any order, any length)."""
        self._check_names(batch.names)
        arrays = {name: batch[name].to_arrow() for name in self._names}
        self._append_arrays(arrays, batch.num_rows)

    def append_arrow(self, data: pa.Table | pa.RecordBatch) -> None:
        """Append an Arrow table or record batch (columns converted as Column.from_arrow does)."""
        self._check_names(data.schema.names)
        arrays = {name: data.column(name) for name in self._names}
        self._append_arrays(arrays, data.num_rows)

    def _check_names(self, names: list[str]) -> None:
        if self._done:
            raise HetdbError(f"table '{self.table}': writer already committed or aborted")
        if sorted(names) != sorted(self._names):
            missing = [n for n in self._names if n not in names]
            extra = [n for n in names if n not in self._names]
            raise InputError(f"table '{self.table}': appended columns do not match the schema "
                             f"(missing {missing}, unexpected {extra})")

    def _append_arrays(self, arrays: dict[str, Any], num_rows: int) -> None:
        if num_rows == 0:
            return
        canon = [self._canonical(spec, arrays[spec.name]) for spec in self.schema]
        self._pending.append(pa.RecordBatch.from_arrays(canon, names=self._names))
        self._pending_rows += num_rows
        while self._pending_rows >= self.rows_per_page:
            self._flush(self.rows_per_page)

    def _canonical(self, spec: ColumnSpec, arr: Any) -> pa.Array:
        """Convert to the one Arrow type pages are cut from, checking values fit the column type."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
        if not spec.nullable and arr.null_count:
            raise InputError(f"table '{self.table}' column '{spec.name}' is NOT NULL but "
                             f"{arr.null_count} appended values are NULL")
        try:
            if pa.types.is_dictionary(arr.type):
                arr = arr.dictionary_decode()
            if spec.dtype.kind == "string":
                arr = arr if arr.type == pa.large_string() else arr.cast(pa.large_string())
                _check_utf8(arr)
                return arr
            return Column.from_arrow(arr, spec.dtype).to_arrow()
        except InputError as e:
            err = InputError(f"table '{self.table}' column '{spec.name}': {e}")
            err.row = getattr(e, "row", None)  # where in ``arr`` (ingest names the row of the file)
            raise err from None
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise InputError(f"table '{self.table}' column '{spec.name}': cannot store values of "
                             f"type {arr.type} as {spec.dtype}: {e}") from None

    def _flush(self, nrows: int) -> None:
        table = pa.Table.from_batches(self._pending)
        page = table.slice(0, nrows)
        rest = table.slice(nrows)
        self._pending = rest.to_batches() if rest.num_rows else []  # zero-copy slices
        self._pending_rows = rest.num_rows
        arrays = [page.column(i).combine_chunks() for i in range(len(self.schema))]
        pool = _encode_pool() if len(arrays) > 1 and nrows >= PARALLEL_ENCODE_ROWS else None
        if pool is None:
            encoded = [self._encode_page(i, spec, arrays[i]) for i, spec in enumerate(self.schema)]
        else:  # the columns' pages encode side by side (NumPy and the codec kernels release the GIL)
            encoded = list(pool.map(self._encode_page, range(len(arrays)), self.schema, arrays))
        for i, (buf, meta) in enumerate(encoded):  # written in column order by this thread
            self._store_page(i, buf, meta)
        self._rg_rows.append(nrows)
        self.rows_written += nrows
        _kill_point("after_page")

    def _encode_page(self, i: int, spec: ColumnSpec, arr: pa.Array) -> tuple[Any, dict]:
        """Column ``i``'s page of ``arr``: its bytes and its manifest entry less the file position
        (touches only column ``i``'s state: the columns of a row group encode in parallel)."""
        encoding = PLAIN
        strings = None
        if spec.dtype.kind == "string":
            strings = arr
            codes = self._dicts[i].try_encode(arr)
            plain = Column.from_arrow(arr, T.STRING)
            if codes is not None:
                col = Column(spec.dtype, data=codes, validity=plain.validity)
                encoding = DICT
            else:
                col = plain
        else:
            col = Column.from_arrow(arr, spec.dtype)
        buf, sections, length, data_codec, decoded = encode_page(col, encoding, self._codecs)
        zone = compute_zone(col, strings)
        # "decoded": bytes of the page with every section decoded (what a plain page of it would hold)
        return buf, {"length": length, "padded": int(buf.shape[0]), "crc": checksum(memoryview(buf)[:length]),
                     "enc": encoding, "codec": data_codec, "decoded": decoded, "sections": sections, "zone": zone}

    def _store_page(self, i: int, buf: Any, meta: dict) -> None:
        self._files[i].write(memoryview(buf))
        self._pages[i].append({"offset": self._offsets[i], **meta})
        self._offsets[i] += meta["padded"]

    # ---- commit / abort ------------------------------------------------------------------------
    def commit(self) -> int:
        """Write the remaining rows, publish the version atomically, and return its number."""
        if self._done:
            raise HetdbError(f"table '{self.table}': writer already committed or aborted")
        try:
            if self._pending_rows:
                self._flush(self._pending_rows)
            columns = []
            carried = self._carried
            kept = carried.row_groups if carried is not None else 0
            for i, spec in enumerate(self.schema):
                f = self._files[i]
                f.flush()
                os.fsync(f.fileno())
                f.close()
                pages = [carried.reader.manifest_page(spec.name, rg) for rg in range(kept)]
                for name in dict.fromkeys(p["file"] for p in pages):
                    _link_or_copy(os.path.join(carried.reader.path, name), os.path.join(self._tmp, name))
                entry: dict[str, Any] = {"name": spec.name, "type": str(spec.dtype), "nullable": spec.nullable,
                                         "file": self._col_files[i], "pages": pages + self._pages[i]}
                d = self._dicts[i]
                if d is not None and d.used:
                    entry["dictionary"] = self._write_dictionary(i, d)
                columns.append(entry)
            _kill_point("after_link")
            rg_rows = [carried.reader.row_group_rows(rg) for rg in range(kept)] + self._rg_rows
            starts, pos = [], 0
            for n in rg_rows:
                starts.append(pos)
                pos += n
            manifest = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "table": self.table,
                        "version": self.version, "num_rows": pos, "rows_per_page": self.rows_per_page,
                        "row_group_starts": starts, "row_group_rows": rg_rows, "columns": columns}
            _kill_point("before_manifest")
            write_file_durably(os.path.join(self._tmp, MANIFEST), encode_manifest(manifest))
            fsync_dir(self._tmp)
            _kill_point("before_rename")
            final = os.path.join(self._table_dir, f"v{self.version}")
            try:
                os.rename(self._tmp, final)
            except OSError as e:
                raise CatalogError(f"table '{self.table}': another writer committed version "
                                   f"{self.version} concurrently ({e})") from None
            versions.ACTIVE_TMP_DIRS.discard(self._tmp)
            self._tmp = final
            fsync_dir(self._table_dir)
            _kill_point("before_current")
            self._publish()
            _kill_point("after_publish")
        except BaseException:
            if not self._done:
                self.abort()
            raise
        self._done = True
        try:
            # Readers of the previous version may still be running; older ones go.
            versions.remove_stale(self._table_dir, keep={self.version} | (
                {self._previous} if self._previous is not None else set()))
            self.reader = TableReader(self._tmp, self.table, self.version)
        finally:
            self._release()
        return self.version

    def _publish(self) -> None:
        tmp = os.path.join(self._table_dir, f"{CURRENT}.tmp-{os.getpid()}")
        write_file_durably(tmp, encode_current(self.version))
        _kill_point("before_current_rename")
        os.replace(tmp, os.path.join(self._table_dir, CURRENT))
        versions.note_catalog_change()
        fsync_dir(self._table_dir)

    def _write_dictionary(self, i: int, d: DictionaryBuilder) -> dict:
        col = d.column()
        offsets = col.offsets.astype("<i8", copy=False)
        data = offsets.tobytes() + col.chars.tobytes()
        name = dictionary_file(i)  # a version's own file (an append writes the grown dictionary)
        write_file_durably(os.path.join(self._tmp, name), data)
        return {"file": name, "count": len(d.values), "length": len(data), "crc": checksum(data),
                "chars_offset": int(offsets.nbytes)}

    def abort(self) -> None:
        """Remove everything this writer wrote; the table's committed version is untouched."""
        if self._done:
            return
        self._done = True
        for f in self._files:
            f.close()
        if self._tmp.endswith(f".tmp-{os.getpid()}"):
            shutil.rmtree(self._tmp, ignore_errors=True)
        versions.ACTIVE_TMP_DIRS.discard(self._tmp)
        self._release()

    def _release(self) -> None:
        """Release the lock; a table that never had a committed version leaves no directory behind
        (a writer waiting for the lock sees the lock file vanish and takes the lock again)."""
        if not os.path.exists(os.path.join(self._table_dir, CURRENT)):
            try:
                os.unlink(self._lock.path)
                os.rmdir(self._table_dir)
            except OSError:
                pass  # versions of a damaged table, or the lock file is already gone
        self._lock.release()
