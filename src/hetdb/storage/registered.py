"""Python objects registered on a connection (or found by a replacement scan): Arrow tables, record
batches, record batch readers, datasets, pandas and Polars DataFrames — scanned in place, without
copying where Arrow allows (zero-copy slices of the table, one morsel each)."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa

from hetdb.errors import InputError
from hetdb.storage.external import ExtColumn, ExternalSource, ScanPlan, dedup_names, hetdb_type, normalize

ARROW_MORSEL_ROWS = 1 << 17


class ArrowSource(ExternalSource):
    """A Python object registered on a connection: read without copying where Arrow allows."""

    def __init__(self, name: str, obj: Any) -> None:
        self.name = name
        self.obj = obj
        self._table: pa.Table | None = None
        self._dataset = None
        self._lock = threading.Lock()
        schema = self._arrow_schema(obj)
        names = dedup_names(schema.names)
        self.columns = [ExtColumn(n, hetdb_type(f.type, f"'{f.name}' of {name}"),
                                  pa.timestamp("us", tz=f.type.tz) if pa.types.is_timestamp(f.type) else f.type)
                        for n, f in zip(names, schema)]
        self.label = f"{name} ({type(obj).__module__.split('.')[0]}.{type(obj).__name__})"

    def _arrow_schema(self, obj: Any) -> pa.Schema:
        import pyarrow.dataset as ds

        if isinstance(obj, pa.Table):
            self._table = obj
        elif isinstance(obj, pa.RecordBatch):
            self._table = pa.Table.from_batches([obj])
        elif isinstance(obj, ds.Dataset):
            self._dataset = obj
            return obj.schema
        elif isinstance(obj, pa.RecordBatchReader):
            return obj.schema  # consumed once, when first scanned
        else:
            self._table = from_dataframe(obj, self.name)
        return self._table.schema

    def table(self) -> pa.Table:
        with self._lock:
            if self._table is None and isinstance(self.obj, pa.RecordBatchReader):
                self._table = self.obj.read_all()
            return self._table

    def plan(self, names: list[str], filters: tuple, cid_of: dict[str, str], prune) -> ScanPlan:
        if self._dataset is not None:
            frags = list(self._dataset.get_fragments())
            return ScanPlan([("fragment", f) for f in frags], files_total=len(frags))
        t = self.table()
        return ScanPlan([(s, min(s + ARROW_MORSEL_ROWS, t.num_rows)) for s in range(0, t.num_rows, ARROW_MORSEL_ROWS)])

    def read(self, morsel: Any, names: list[str]) -> dict[str, pa.Array | pa.ChunkedArray]:
        by_name = {c.name: (i, c) for i, c in enumerate(self.columns)}
        if morsel[0] == "fragment":
            t = morsel[1].to_table(schema=self._dataset.schema)
        else:
            t = self.table().slice(morsel[0], morsel[1] - morsel[0])
        return {n: normalize(t.column(by_name[n][0]), by_name[n][1], self.name) for n in names}

    def estimated_rows(self) -> float:
        if self._dataset is not None:
            return 1_000_000.0
        t = self._table
        return float(t.num_rows) if t is not None else 1_000_000.0


def from_dataframe(obj: Any, name: str) -> pa.Table:
    """A pandas or Polars DataFrame (or anything with ``__arrow_c_stream__``) as an Arrow table."""
    mod = type(obj).__module__.split(".")[0]
    if mod == "pandas":
        try:
            return pa.Table.from_pandas(obj, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise InputError(f"cannot read pandas DataFrame '{name}' as Arrow: {e}") from None
    if mod == "polars":
        return obj.to_arrow()
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.table(obj)
    raise InputError(f"'{name}' is a {type(obj).__name__}: hetdb scans pandas and Polars DataFrames, "
                     "Arrow tables, record batches, record batch readers and datasets")
