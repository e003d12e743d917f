"""Database: a directory of tables (the catalog)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections import OrderedDict

from hetdb.errors import CatalogError, CorruptDataError
from hetdb.storage import versions
from hetdb.storage.format import (
    CURRENT,
    DB_MARKER,
    DEFAULT_ROWS_PER_PAGE,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST,
    READABLE_FORMAT_VERSIONS,
    TABLES_DIR,
    ColumnSpec,
    fsync_dir,
    write_file_durably,
)
from hetdb.storage.locking import TableLock
from hetdb.storage.reader import TableReader, did_you_mean
from hetdb.storage.writer import DEFAULT_COMPRESSION, TableWriter, check_compression

# Table names become directory names (file systems allow 255 bytes), with room for the name a drop
# renames the directory to (".dropped-<name>-<pid>").
MAX_TABLE_NAME_BYTES = 200


def _check_table_name(name: str) -> None:
    # Table names become directory names: refuse anything that could escape or hide.
    if not isinstance(name, str) or not name or name.startswith(".") or any(c in name for c in "/\\\0") \
            or name != name.strip():
        raise CatalogError(f"invalid table name {name!r}: use a non-empty name without '/', '\\\\', "
                           "leading '.' or surrounding spaces")
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_TABLE_NAME_BYTES:
        raise CatalogError(f"table name {name[:40]!r}... is {size} bytes long; hetdb allows at most "
                           f"{MAX_TABLE_NAME_BYTES} bytes (UTF-8)")


# Readers of committed versions shared by every Database object of this process (a reader is an
# immutable snapshot of one version's manifest): a fresh connection does not parse the manifests again
# (5-12 ms for SSB SF 20's lineorder on the H100 machine). Keyed by the version directory and its
# manifest's identity, so a re-created table never gets a stale reader.
_READERS: OrderedDict[tuple[str, tuple], TableReader] = OrderedDict()
_READERS_LOCK = threading.Lock()
SHARED_READERS = 256


def _shared_reader(vdir: str, identity: tuple) -> TableReader | None:
    key = (os.path.realpath(vdir), identity)
    with _READERS_LOCK:
        reader = _READERS.get(key)
        if reader is not None:
            _READERS.move_to_end(key)
        return reader


def _share_reader(vdir: str, identity: tuple, reader: TableReader) -> None:
    with _READERS_LOCK:
        _READERS[(os.path.realpath(vdir), identity)] = reader
        while len(_READERS) > SHARED_READERS:
            _READERS.popitem(last=False)


# Table directory -> what ``Database.table`` saw of its commit last, for every Database object of this
# process (a fresh connection opens one: its first query checked each table's version by reading its
# CURRENT, 0.3-0.5 ms of a warm query's planning before its first copy): (CURRENT path, its identity,
# manifest path, its identity, reader, table_identity). Valid while both files are the ones seen.
_FRESH: dict[str, tuple] = {}
_FRESH_ENTRIES = 1024


def _file_identity(path: str) -> tuple[int, int, int, int, int]:
    """What changes when a file is replaced or rewritten: device, inode, size, mtime and ctime."""
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Database:
    """A hetdb database directory. Cheap to open; every ``table()`` call reads the latest commit."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._tables_dir = os.path.join(path, TABLES_DIR)
        # Readers are immutable snapshots, so one per committed version is reused: queries look a
        # table up many times (binding, estimates, scans) and a manifest parse costs milliseconds.
        self._readers: dict[str, tuple[tuple[int, int, int, int], TableReader]] = {}
        # name -> (CURRENT path, its identity, manifest path, its identity, reader, table_identity):
        # Database.table's check that the committed version is still the one read last (_FRESH: the
        # same for every Database object of the process)
        self._fresh: dict[str, tuple] = {}
        self.format_version = FORMAT_VERSION

    @staticmethod
    def open(path: str, create: bool = False) -> Database:
        """Open the database at ``path`` (creating it when ``create``); CatalogError if it is missing or
        the directory is not a hetdb database."""
        path = os.path.abspath(os.fspath(path))
        marker = os.path.join(path, DB_MARKER)
        if not os.path.exists(marker):
            if not create:
                what = "does not exist" if not os.path.exists(path) else "is not a hetdb database"
                raise CatalogError(f"database {path} {what} (open it with create=True to make one)")
            if os.path.isdir(path) and os.listdir(path):
                raise CatalogError(f"cannot create a database in {path}: the directory is not empty "
                                   "and is not a hetdb database")
            os.makedirs(os.path.join(path, TABLES_DIR), exist_ok=True)
            write_file_durably(marker, json.dumps({"format": FORMAT_NAME,
                                                   "format_version": FORMAT_VERSION}).encode())
            fsync_dir(path)
        try:
            with open(marker, "rb") as f:
                info = json.loads(f.read())
        except ValueError:
            raise CorruptDataError(f"database {path}: {DB_MARKER} is damaged") from None
        if not isinstance(info, dict) or info.get("format") != FORMAT_NAME:
            raise CorruptDataError(f"database {path}: {DB_MARKER} does not describe a hetdb database")
        if info.get("format_version") not in READABLE_FORMAT_VERSIONS:
            raise CatalogError(f"database {path} has format version {info.get('format_version')}; "
                               f"this hetdb reads versions {', '.join(map(str, READABLE_FORMAT_VERSIONS))} "
                               "(export its tables with the hetdb that wrote it, e.g. COPY ... TO "
                               "'x.parquet', and `hetdb import` them into a new database)")
        os.makedirs(os.path.join(path, TABLES_DIR), exist_ok=True)
        db = Database(path)
        db.format_version = int(info["format_version"])
        return db

    def _table_dir(self, name: str) -> str:
        return os.path.join(self._tables_dir, name)

    def tables(self) -> list[str]:
        """Names of committed tables, sorted."""
        try:
            entries = os.listdir(self._tables_dir)
        except FileNotFoundError:
            return []
        return sorted(e for e in entries if not e.startswith(".")
                      and os.path.exists(os.path.join(self._tables_dir, e, CURRENT)))

    def has_table(self, name: str) -> bool:
        return isinstance(name, str) and bool(name) and not name.startswith(".") and "/" not in name \
            and os.path.exists(os.path.join(self._table_dir(name), CURRENT))

    def _committed(self, name: str) -> tuple[int, str, tuple[int, int, int, int] | None]:
        """(committed version, its directory, the identity of its manifest or None)."""
        tdir = self._table_dir(name)
        version = versions.committed_version(tdir, name)
        vdir = os.path.join(tdir, f"v{version}")
        try:
            # The manifest's identity: a re-created table or a rewritten (damaged) manifest differs.
            st = os.stat(os.path.join(vdir, MANIFEST))
            identity = (version, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            identity = None
        return version, vdir, identity

    def table_identity(self, name: str) -> tuple[int, int, int, int] | None:
        """What identifies the committed version of table ``name`` for every Database object of this path
        (version and manifest file identity); None when it cannot be read."""
        fresh = self._seen(name)
        if fresh is not None:
            return fresh[5]
        if not self.has_table(name):
            raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.tables())}")
        return self._committed(name)[2]

    def table_and_identity(self, name: str) -> tuple[TableReader, tuple[int, int, int, int] | None]:
        """(``table(name)``, ``table_identity(name)``): the process-wide plan cache's check of a shared
        plan and the readers its run reads, at the head of every query of a fresh connection. One stat
        of CURRENT while it is the file seen last, as ``is_current`` (the connection's plan cache's
        check, whose readers its runs read too): every commit replaces it, a drop removes it."""
        if isinstance(name, str):
            fresh = self._fresh.get(name) or _FRESH.get(self._table_dir(name))
            if fresh is not None:
                try:
                    if _file_identity(fresh[0]) == fresh[1]:
                        self._fresh[name] = fresh
                        return fresh[4], fresh[5]
                except OSError:
                    pass
        reader = self.table(name)  # (before the identity: a commit in between makes them differ, not match)
        return reader, self.table_identity(name)

    def _seen(self, name: str) -> tuple | None:
        """``_fresh``'s entry of table ``name`` (this object's, else another Database object's of this
        process) while its CURRENT and manifest are the files seen then, else None. CURRENT is replaced
        by a rename at every commit (a new file), a drop removes it: while it and the manifest it named
        are the files seen last time, the version is the same. Two stats instead of reading CURRENT
        (a query's plan-cache check, per table)."""
        if not isinstance(name, str):
            return None
        fresh = self._fresh.get(name)
        if fresh is None:
            fresh = _FRESH.get(self._table_dir(name))
            if fresh is None:
                return None
        current, current_id, manifest, manifest_id = fresh[:4]
        try:
            if _file_identity(current) == current_id and _file_identity(manifest) == manifest_id:
                self._fresh[name] = fresh
                return fresh
        except OSError:
            pass
        self._fresh.pop(name, None)  # (another thread may have dropped it already)
        return None

    def table(self, name: str) -> TableReader:
        """A snapshot reader of the table's committed version."""
        fresh = self._seen(name)
        if fresh is not None:
            return fresh[4]
        if not self.has_table(name):
            raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.tables())}")
        current = os.path.join(self._table_dir(name), CURRENT)
        try:
            current_id = _file_identity(current)  # (before CURRENT is read: a commit in between is seen next time)
        except OSError:
            current_id = None
        version, vdir, identity = self._committed(name)
        reader = self._reader(name, version, vdir, identity)
        try:
            manifest = os.path.join(vdir, MANIFEST)
            manifest_id = _file_identity(manifest)
        except OSError:
            manifest_id = None
        if current_id is not None and manifest_id is not None and identity is not None \
                and manifest_id[1:4] == identity[1:]:  # (the manifest read is the one stat'ed)
            fresh = self._fresh[name] = (current, current_id, manifest, manifest_id, reader, identity)
            if len(_FRESH) >= _FRESH_ENTRIES:
                _FRESH.clear()
            _FRESH[self._table_dir(name)] = fresh
        return reader

    def is_current(self, name: str, reader: TableReader) -> bool:
        """Whether ``reader`` (from ``table(name)``) still reads the committed version: one stat of
        CURRENT, which every commit replaces and a drop removes (a plan cache's check, per table of
        every query; ``table`` also checks the manifest's file for a reader to be handed out)."""
        fresh = self._fresh.get(name) if isinstance(name, str) else None
        if fresh is not None and fresh[4] is reader:
            try:
                if _file_identity(fresh[0]) == fresh[1]:
                    return True
            except OSError:
                pass
        try:
            return self.table(name) is reader
        except CatalogError:
            return False

    def _reader(self, name: str, version: int, vdir: str, identity: tuple | None) -> TableReader:
        cached = self._readers.get(name)
        if identity is not None and cached is not None and cached[0] == identity:
            return cached[1]
        reader = _shared_reader(vdir, identity) if identity is not None else None
        if reader is None:
            reader = TableReader(vdir, name, version)
            if identity is not None:
                _share_reader(vdir, identity, reader)
        if identity is not None:
            self._readers[name] = (identity, reader)
        return reader

    def create_table(self, name: str, schema: list[ColumnSpec], rows_per_page: int = DEFAULT_ROWS_PER_PAGE,
                     replace: bool = False, compression: str = DEFAULT_COMPRESSION) -> TableWriter:
        """A writer of a new table (or, with ``replace``, of a new version replacing the old one).
        ``compression``: "auto" (each page in its smallest encoding) or "none" (plain pages)."""
        _check_table_name(name)
        check_compression(compression)
        if not schema:
            raise CatalogError(f"table '{name}' needs at least one column")
        seen: dict[str, str] = {}
        for c in schema:
            # SQL resolves names case-insensitively (as DuckDB does), so 'a' and 'A' would collide
            other = seen.get(c.name.lower())
            if other is not None:
                what = "duplicate column name" if other == c.name else \
                    f"column names '{other}' and '{c.name}' differ only in case (SQL names are case-insensitive):"
                raise CatalogError(f"table '{name}': {what} '{c.name}'; rename one of the columns")
            seen[c.name.lower()] = c.name
        self._check_case_clash(name)
        if self.has_table(name) and not replace:
            raise CatalogError(f"table '{name}' already exists (use replace=True to overwrite it)")
        tdir = self._table_dir(name)
        os.makedirs(tdir, exist_ok=True)
        # Writers of one table take turns (storage.locking); the check above is repeated under the
        # lock, so of two writers creating one new table the second is refused once the first commits.
        lock = TableLock(tdir, name)
        if self.has_table(name) and not replace:
            lock.release()
            raise CatalogError(f"table '{name}' already exists: another writer created it while this "
                               "one waited (use replace=True to overwrite it)")
        try:
            self._upgrade_marker()
        except BaseException:
            lock.release()
            raise
        return TableWriter(tdir, name, schema, rows_per_page, lock=lock, compression=compression)

    def append_table(self, name: str, new_rows: int) -> TableWriter:
        """A writer of the next version of table ``name`` holding its current rows and the rows
        appended to the writer: the current version's row groups are kept as they are (their pages
        referenced, not copied) except small trailing ones, which are rewritten with the new rows
        (``storage.append``). ``new_rows``: how many rows will be appended (decides that merge).
        One commit, atomic like any other; CatalogError if the table does not exist."""
        from hetdb.storage.append import kept_row_groups
        from hetdb.storage.writer import Carried

        if not self.has_table(name):
            raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.tables())}")
        lock = TableLock(self._table_dir(name), name)
        try:
            if not self.has_table(name):
                raise CatalogError(f"unknown table '{name}': another process dropped it")
            base = self.table(name)  # under the lock: the latest commit, and it stays the latest
            self._upgrade_marker()
        except BaseException:
            lock.release()
            raise
        keep = kept_row_groups(base, new_rows)
        writer = TableWriter(self._table_dir(name), name, base.schema, base.rows_per_page, lock=lock,
                             carried=Carried(base, keep))
        try:
            if keep < base.num_row_groups:
                for batch in base.scan(row_groups=list(range(keep, base.num_row_groups))):
                    writer.append(batch)
        except BaseException:
            writer.abort()
            raise
        return writer

    def _upgrade_marker(self) -> None:
        # A version-1 database is read as it is; its first new table version is written in the current
        # format, so the marker says so (a hetdb that reads only version 1 then refuses it cleanly).
        if self.format_version != FORMAT_VERSION:
            write_file_durably(os.path.join(self.path, DB_MARKER),
                               json.dumps({"format": FORMAT_NAME, "format_version": FORMAT_VERSION}).encode())
            fsync_dir(self.path)
            self.format_version = FORMAT_VERSION

    def _check_case_clash(self, name: str) -> None:
        """CatalogError if another table's name differs from ``name`` only in case: SQL resolves table
        names case-insensitively (as DuckDB does), so only one of them could be queried."""
        for other in self.tables():
            if other != name and other.lower() == name.lower():
                raise CatalogError(f"table '{other}' already exists and table names are case-insensitive "
                                   f"in SQL: choose another name than '{name}' (or replace/drop '{other}')")

    def drop_table(self, name: str) -> None:
        """Remove a table; CatalogError if there is none."""
        if not self.has_table(name):
            raise CatalogError(f"unknown table '{name}'{did_you_mean(name, self.tables())}")
        # Renaming first makes the drop atomic: the table vanishes at once, then the files go. A
        # writer of the table finishes first (the lock); one waiting for it then makes a new table.
        lock = TableLock(self._table_dir(name), name)
        try:
            if not self.has_table(name):
                raise CatalogError(f"unknown table '{name}': another process dropped it")
            versions.record_dropped(self._table_dir(name))
            grave = os.path.join(self._tables_dir, f".dropped-{name}-{os.getpid()}")
            shutil.rmtree(grave, ignore_errors=True)  # left by a drop that crashed half-way
            os.rename(self._table_dir(name), grave)
            versions.note_catalog_change()
            fsync_dir(self._tables_dir)
        finally:
            lock.release()
        shutil.rmtree(grave, ignore_errors=True)
