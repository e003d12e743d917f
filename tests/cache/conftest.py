"""A small stored table in several pages, for the tests of the scan's cache hooks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec
from hetdb.types import DataType


@pytest.fixture()
def paged_con(tmp_path):
    """Table t: 5000 rows in pages of 1024 (an int column, a nullable float, a dictionary string)."""
    path = str(tmp_path / "db")
    db = Database.open(path, create=True)
    n = 5000
    schema = [ColumnSpec("a", DataType.parse("BIGINT"), False), ColumnSpec("b", DataType.parse("DOUBLE"), True),
              ColumnSpec("s", DataType.parse("VARCHAR"), False)]
    with db.create_table("t", schema, rows_per_page=1024) as w:
        w.append_arrow(pa.table({"a": np.arange(n, dtype=np.int64) // 7,
                                 "b": pa.array([None if i % 5 == 0 else float(i) for i in range(n)]),
                                 "s": pa.array([f"v{i % 13}" for i in range(n)])}))
        w.commit()
    c = hetdb.connect(path, device="cpu")
    assert c._get_engine().db.table("t").num_row_groups == 5
    yield c
    c.close()
