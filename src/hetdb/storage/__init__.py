"""hetdb's columnar table store: a database directory of versioned tables with 4 KiB-aligned,
checksummed pages, zone maps and atomic commits (see storage/format.py for the layout)."""

from __future__ import annotations

from hetdb.storage.database import Database
from hetdb.storage.format import ColumnSpec, PageLocation, ZoneMap
from hetdb.storage.reader import TableReader
from hetdb.storage.writer import TableWriter

__all__ = ["Database", "ColumnSpec", "PageLocation", "ZoneMap", "TableReader", "TableWriter"]
