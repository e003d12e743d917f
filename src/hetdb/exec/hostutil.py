"""Host-only helpers: moving Columns between host and device, building columns from Python values,
Arrow conversion of results and spill files. The only executor module that imports NumPy/pyarrow
directly; operators call these helpers and stay backend-neutral."""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from hetdb.column import Batch, Column
from hetdb.types import INT128, DataType

_active = threading.local()
# Device arrays of at most this many bytes in all move to the host packed into one transfer
PACKED_TRANSFER_BYTES = 64 << 20


def activate(ctx: Any) -> None:
    """Make ``ctx`` (an ExecContext) the query whose host steps this thread records."""
    _active.ctx = ctx


def deactivate(ctx: Any) -> None:
    """Forget ``ctx`` (or the host context sharing its stats) as this thread's query once it has
    ended: the thread-local would keep the query's context, and what it refers to, alive until the
    thread's next query."""
    active = getattr(_active, "ctx", None)
    if active is ctx or (active is not None and active.stats is ctx.stats):  # (or its host tail's)
        _active.ctx = None


def note_host_step(backend, what: str) -> None:
    """Record that a step ran on the host while the backend is the GPU (a per-operator CPU fallback,
    shown by EXPLAIN ANALYZE). Nothing to record on the CPU."""
    if backend.name == "cpu":
        return
    ctx = getattr(_active, "ctx", None)
    if ctx is not None:
        ctx.note_fallback(what)


def _map_arrays(col: Column, fn, dict_cache: dict | None) -> Column:
    dictionary = None
    if col.dictionary is not None:
        key = id(col.dictionary)
        if dict_cache is not None and key in dict_cache:
            dictionary = dict_cache[key][1]
        else:
            dictionary = _map_arrays(col.dictionary, fn, None)
            if dict_cache is not None:
                # keep the source alive so its id() is never reused while cached
                dict_cache[key] = (col.dictionary, dictionary)
    return Column(col.dtype,
                  data=None if col.data is None else fn(col.data),
                  validity=None if col.validity is None else fn(col.validity),
                  dictionary=dictionary,
                  offsets=None if col.offsets is None else fn(col.offsets),
                  chars=None if col.chars is None else fn(col.chars))


def arrays_to_host(backend, arrays: list[Any]) -> list[np.ndarray]:
    """Device ``arrays`` on the host, copied in one transfer (their bytes packed on the device first):
    one wait for the device instead of one per array. Host arrays among them stay as they are."""
    xp = backend.xp
    dev = [a for a in arrays if type(a) is not np.ndarray]
    if len(dev) <= 1 or sum(int(a.nbytes) for a in dev) > PACKED_TRANSFER_BYTES:
        # (a large result: packing it would hold a second copy in device memory; the copies' waits
        # are then a small part of its time anyway)
        return [a if type(a) is np.ndarray else np.asarray(backend.to_host(a)) for a in arrays]
    flat = [xp.ascontiguousarray(a).reshape(-1) for a in dev]
    raw = np.asarray(backend.to_host(xp.concatenate([a.view(xp.uint8) for a in flat])))
    moved, at = [], 0
    for a, f in zip(dev, flat):
        size = int(f.nbytes)
        moved.append(raw[at:at + size].view(np.dtype(f.dtype.str)).reshape(a.shape))
        at += size
    it = iter(moved)
    return [a if type(a) is np.ndarray else next(it) for a in arrays]


def batch_to_host(backend, batch: Batch, dict_cache: dict | None = None) -> Batch:
    """``batch``'s columns (on the device) on the host with one transfer (``arrays_to_host``); a
    dictionary in ``dict_cache`` (device dictionary id -> host copy) is not copied again."""
    if backend.name == "cpu":
        return batch
    found: dict[int, Any] = {}

    def collect(a: Any) -> Any:
        found.setdefault(id(a), a)
        return a

    for c in batch.columns.values():
        _map_arrays(c, collect, None if c.dictionary is None or dict_cache is None
                    or id(c.dictionary) not in dict_cache else dict_cache)
    keys = list(found)
    host = dict(zip(keys, arrays_to_host(backend, [found[k] for k in keys])))
    return Batch({k: _map_arrays(c, lambda a: host[id(a)], dict_cache) for k, c in batch.columns.items()},
                 batch.num_rows)


def column_to_device(backend, col: Column, dict_cache: dict | None = None) -> Column:
    """Copy a host Column to the backend's device; the same host dictionary maps to the same device
    dictionary object (via ``dict_cache``) so dictionary identity survives the move."""
    if backend.name == "cpu":
        return col
    return _map_arrays(col, backend.asarray, dict_cache)


def wide_column_to_device(backend, col: Column) -> Column:
    """``column_to_device`` for a HUGEINT/UBIGINT result computed on the host: its object form (a value
    past 64 bits) cannot go to the GPU, so the query reruns on the CPU (``GpuWideValueError``)."""
    from hetdb.errors import GpuWideValueError
    from hetdb.exec.wide import is_object

    if backend.name != "cpu" and is_object(col.data):
        raise GpuWideValueError(f"a {col.dtype.sql_name()} value needs more than 64 bits, which the GPU "
                                "path does not hold")
    return column_to_device(backend, col)


def column_to_host(backend, col: Column) -> Column:
    if backend.name == "cpu":
        return col
    return _map_arrays(col, backend.to_host, None)


def batch_to_device(backend, batch: Batch, dict_cache: dict | None = None) -> Batch:
    return Batch({k: column_to_device(backend, c, dict_cache) for k, c in batch.columns.items()},
                 batch.num_rows)


def column_from_pylist(backend, values: list, dtype: DataType) -> Column:
    """A device Column from Python values in physical representation (None = NULL)."""
    if dtype.kind == "string":
        arr = pa.array(values, type=pa.string())
        col = Column.from_arrow(arr, dtype)
    else:
        mask = np.array([v is None for v in values], dtype=bool)
        filled = [0 if v is None else v for v in values]
        data = np.array(filled, dtype=dtype.numpy_dtype) if filled else np.zeros(0, dtype.numpy_dtype)
        col = Column(dtype, data=data, validity=~mask if mask.any() else None)
    return column_to_device(backend, col)


def strings_to_pylist(backend, offsets: Any, chars: Any) -> list[str]:
    """Decode offsets+chars (any device) into Python strings."""
    off = np.asarray(backend.to_host(offsets), dtype=np.int64)
    buf = bytes(np.asarray(backend.to_host(chars), dtype=np.uint8))
    return [buf[off[i]:off[i + 1]].decode("utf-8") for i in range(len(off) - 1)]


def int64_array(values: list[int]) -> np.ndarray:
    """A host int64 array from Python ints (small id tables, moved to the device by the caller)."""
    return np.asarray(values, dtype=np.int64)


def host_scalar(backend, x: Any) -> Any:
    """A Python number from a 0-d/1-element device array."""
    return np.asarray(backend.to_host(x)).item()


# Arrow field metadata naming hetdb's SQL type where Arrow's type does not say it (HUGEINT is
# decimal128(38, 0) in Arrow): results return HUGEINT values as Python ints, as DuckDB does.
SQL_TYPE_KEY = b"hetdb.type"


_SCHEMAS: dict[tuple, tuple] = {}  # (id(fields), time zone) -> (fields, schema): a cached plan's result schema


def result_schema(fields, time_zone: str = "UTC") -> pa.Schema:
    """The Arrow schema of a result with ``fields`` (names may repeat); TIMESTAMPTZ columns are
    timestamps in the session's ``time_zone`` (as DuckDB). Made once per fields object (a cached
    plan's every run asks with the same one)."""
    key = (id(fields), time_zone)
    hit = _SCHEMAS.get(key)
    if hit is not None and hit[0] is fields:
        return hit[1]
    schema = _result_schema(fields, time_zone)
    if isinstance(fields, tuple):  # (an immutable plan's fields; a list may change under its id)
        if len(_SCHEMAS) >= 512:
            _SCHEMAS.clear()
        _SCHEMAS[key] = (fields, schema)
    return schema


def _result_schema(fields, time_zone: str) -> pa.Schema:
    return pa.schema([pa.field(f.name, pa.timestamp("us", tz=time_zone) if f.dtype.tz else f.dtype.to_arrow(),
                               metadata={SQL_TYPE_KEY: b"HUGEINT"} if f.dtype == INT128 else None)
                      for f in fields])


def to_arrow_table(backend, batch: Batch | None, fields, time_zone: str = "UTC") -> pa.Table:
    """Arrow table named by ``fields`` (Field objects: cid -> name, dtype); empty -> right schema."""
    schema = result_schema(fields, time_zone)
    if batch is None or batch.num_rows == 0:
        return schema.empty_table()
    host = batch_to_host(backend, batch)
    arrays = []
    for f, want in zip(fields, schema):
        col = host.columns[f.cid]
        arr = _dictionary_strings_to_arrow(col) if col.dictionary is not None and want.type == pa.string() \
            else col.to_arrow()
        if arr.type != want.type:
            arr = arr.cast(want.type)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)


# a result of at most this many rows whose dictionary has at most this many strings takes its strings
# from the dictionary's Python strings: Arrow's take, the first Arrow compute call of a query's
# end, cost ~0.1-0.17 ms for an SSB result's 150 rows on the stand-in, the list ~0.02-0.05 ms
SMALL_TAKE_ROWS = 1 << 12
SMALL_TAKE_STRINGS = 1 << 12


def _dictionary_strings_to_arrow(col: Column) -> pa.Array:
    """A host dictionary-coded string column as Arrow strings: its rows taken from the dictionary's
    Arrow strings, which are made once per dictionary while it lives (a hot query's result has the
    same dictionaries every run: exec/dictionary_memo.py)."""
    from hetdb.exec.dictionary_memo import ARROW_STRINGS

    memo = ARROW_STRINGS.get(col.dictionary)  # [Arrow strings, their Python strings once asked for]
    if memo is None:
        values = col.dictionary.to_arrow()
        if values.type != pa.string():
            values = values.cast(pa.string())
        memo = [values, None]
        ARROW_STRINGS.put(col.dictionary, memo)
    values = memo[0]
    if len(col) <= SMALL_TAKE_ROWS and len(values) <= SMALL_TAKE_STRINGS:
        if memo[1] is None:
            memo[1] = values.to_pylist()
        strings = memo[1]
        codes = np.asarray(col.data).tolist()
        if col.validity is None:
            return pa.array([strings[c] for c in codes], pa.string())
        valid = np.asarray(col.validity, dtype=bool).tolist()
        return pa.array([strings[c] if v else None for c, v in zip(codes, valid)], pa.string())
    mask = None if col.validity is None else ~np.asarray(col.validity, dtype=bool)
    codes = pa.Array.from_buffers(pa.int32(), len(col), [
        None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little")),
        pa.py_buffer(np.ascontiguousarray(col.data, dtype=np.int32))], null_count=-1 if mask is not None else 0)
    return values.take(codes)


def arrow_string_transform(backend, col: Column, fn) -> Column:
    """Apply a pyarrow.compute function to a plain or dictionary string column (rare functions that
    have no backend kernel: upper, lower, trim, ...). Returns a plain string column."""
    note_host_step(backend, "string function (pyarrow)")
    host = column_to_host(backend, col)
    out = fn(host.to_arrow())
    res = Column.from_arrow(out, col.dtype if pa.types.is_string(out.type) or pa.types.is_large_string(out.type)
                            else None)
    return column_to_device(backend, res)


# spill directories made by this process and not yet removed (a query's directory is removed at its
# end only when something made it: most queries spill nothing, and a removal costs file-system calls)
_SPILL_DIRS: set[str] = set()
_SPILL_DIRS_LOCK = threading.Lock()


def make_spill_dir(directory: str) -> None:
    """Create a query's spill directory (idempotent), noting it for ``spill_made``."""
    os.makedirs(directory, exist_ok=True)
    with _SPILL_DIRS_LOCK:
        _SPILL_DIRS.add(directory)


def spill_made(directory: str) -> bool:
    """Whether ``make_spill_dir`` made ``directory`` (forgotten from then on: the caller removes it)."""
    with _SPILL_DIRS_LOCK:
        if directory in _SPILL_DIRS:
            _SPILL_DIRS.discard(directory)
            return True
        return False


class SpillFile:
    """One Arrow IPC stream file on disk holding batches of one partition."""

    def __init__(self, directory: str, dtypes: dict[str, DataType]):
        make_spill_dir(directory)
        self.path = os.path.join(directory, f"spill-{uuid.uuid4().hex}.arrow")
        self.dtypes = dtypes
        self._writer = None
        self._sink = None
        self.num_rows = 0
        self.nbytes = 0

    def write(self, backend, batch: Batch) -> None:
        if batch.num_rows == 0:
            return
        table = batch_to_host(backend, batch).to_arrow()
        if self._writer is None:
            self._sink = pa.OSFile(self.path, "wb")
            self._writer = ipc.new_stream(self._sink, table.schema)
        self._writer.write_table(table)
        self.num_rows += batch.num_rows
        self.nbytes += table.nbytes

    def close_writer(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = None

    def read_all(self, backend) -> list[Batch]:
        self.close_writer()
        if self.num_rows == 0:
            return []
        with pa.OSFile(self.path, "rb") as f:
            table = ipc.open_stream(f).read_all()
        batch = Batch.from_arrow(table, self.dtypes)
        return [batch_to_device(backend, batch)]

    def iter_batches(self, backend, max_rows: int | None = None):
        """The partition's batches one record batch at a time (at most ``max_rows`` rows each), so a
        reader holds one batch, not the whole partition."""
        self.close_writer()
        if self.num_rows == 0:
            return
        with pa.OSFile(self.path, "rb") as f:
            for rb in ipc.open_stream(f):
                step = max_rows or rb.num_rows
                for lo in range(0, rb.num_rows, step):
                    part = pa.Table.from_batches([rb.slice(lo, step)])
                    yield batch_to_device(backend, Batch.from_arrow(part, self.dtypes))

    def remove(self) -> None:
        self.close_writer()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
