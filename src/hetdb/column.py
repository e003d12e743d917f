"""Column and Batch: the unit of data every layer passes around.

A Column is one typed array of values on one device (NumPy on the host, CuPy on a GPU):
  - ``data``: fixed-width values (see hetdb.types for the physical dtype). For a dictionary-encoded
    string column, ``data`` holds int32 codes into ``dictionary``; for a plain string column it is None.
  - ``validity``: None when every value is valid, else a bool array (True = valid). In memory it is one
    byte per value (cheap to combine with NumPy/CuPy); on disk it is bit-packed.
  - ``dictionary``: for dictionary strings, a plain string Column without NULLs holding the values.
  - ``offsets`` (int64, length n+1) and ``chars`` (uint8): for plain strings.
Values under a NULL are unspecified but always in range (codes of NULLs are valid codes, e.g. 0, as long
as the dictionary is non-empty; for an empty dictionary every row is NULL and codes are 0).

A Batch is equal-length named columns on one device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hetdb import types as T
from hetdb.types import DataType


@dataclass
class Column:
    dtype: DataType
    data: Any = None
    validity: Any = None
    dictionary: Column | None = None
    offsets: Any = None
    chars: Any = None

    def __len__(self) -> int:
        if self.data is not None:
            return int(self.data.shape[0])
        return int(self.offsets.shape[0]) - 1

    @property
    def is_dict(self) -> bool:
        return self.dictionary is not None

    @property
    def is_plain_string(self) -> bool:
        return self.dtype.kind == "string" and self.dictionary is None

    def null_count(self) -> int:
        return 0 if self.validity is None else int(len(self) - self.validity.sum())

    def held_arrays(self) -> list[Any]:
        """The arrays this column holds now (not its dictionary's), without materialising any:
        a page kept compressed (backend/gpu/encoded.py) yields its encoded bytes, not a decoded copy."""
        return [a for a in (self.data, self.validity, self.offsets, self.chars) if a is not None]

    def held_nbytes(self) -> int:
        """Bytes of ``held_arrays`` (a shared dictionary is not counted: it belongs to the table)."""
        return sum(int(a.nbytes) for a in self.held_arrays())

    # ---- conversions (host only) -------------------------------------------------------------
    @staticmethod
    def from_arrow(arr: pa.Array | pa.ChunkedArray, dtype: DataType | None = None) -> Column:
        """Convert an Arrow array (any chunking, dictionary or plain) to a host Column of ``dtype``."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
        if dtype is None:
            dtype = T.from_arrow(arr.type)
        validity = None
        if arr.null_count:
            validity = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if pa.types.is_null(arr.type) and dtype.kind not in ("string", "list"):
            # an Arrow null column (a bare NULL's result, e.g. one read back from a spill file): no
            # value to fill its nulls with in its own type
            n = len(arr)
            return Column(dtype, data=np.zeros(n, dtype=dtype.numpy_dtype), validity=np.zeros(n, dtype=bool))
        if dtype.kind == "list":  # one Python list of the elements' Python values per row
            data = np.empty(len(arr), dtype=object)
            for i, v in enumerate(arr.to_pylist()):
                data[i] = v
            return Column(dtype, data=data, validity=validity)
        if dtype.kind == "string":
            if pa.types.is_dictionary(arr.type):
                values = arr.dictionary
                codes = arr.indices.fill_null(0).cast(pa.int32()).to_numpy(zero_copy_only=False)
                dictionary = Column.from_arrow(values.cast(pa.large_string()), T.STRING)
                if dictionary.validity is not None:  # a NULL inside the dictionary: make those rows NULL
                    bad = ~dictionary.validity[codes]
                    validity = ~bad if validity is None else validity & ~bad
                    dictionary.validity = None
                return Column(dtype, data=np.ascontiguousarray(codes, dtype=np.int32), validity=validity,
                              dictionary=dictionary)
            large = arr.cast(pa.large_string())
            bufs = large.buffers()
            offsets = np.frombuffer(bufs[1], dtype=np.int64, count=len(large) + 1, offset=large.offset * 8)
            start, end = int(offsets[0]), int(offsets[-1])
            chars = (np.frombuffer(bufs[2], dtype=np.uint8)[start:end].copy() if bufs[2] is not None
                     else np.zeros(0, np.uint8))
            return Column(dtype, offsets=offsets - start, validity=validity, chars=chars)
        if dtype.kind == "decimal":
            data = _decimal_to_scaled(arr, dtype)
        elif dtype.kind == "int128":
            data = _decimal_to_wide(arr, pa.decimal128(38, 0))
        elif dtype.kind == "date":
            data = arr.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False)
        elif dtype.kind == "timestamp":
            ts = arr.cast(pa.timestamp("us", tz=arr.type.tz)) if arr.type.tz else arr.cast(pa.timestamp("us"))
            data = ts.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        elif dtype.kind == "time":
            data = arr.cast(pa.time64("us")).cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        elif dtype.kind == "bool":
            data = arr.fill_null(False).to_numpy(zero_copy_only=False)
        elif dtype.kind == "interval":
            data = _interval_from_arrow(arr)
        else:
            filled = arr.fill_null(0) if arr.null_count else arr
            data = filled.cast(dtype.to_arrow()).to_numpy(zero_copy_only=False)
        if data.dtype == object:  # HUGEINT / DECIMAL(38) values past 64 bits stay Python ints
            return Column(dtype, data=data, validity=validity)
        return Column(dtype, data=np.ascontiguousarray(data, dtype=dtype.numpy_dtype), validity=validity)

    def to_arrow(self) -> pa.Array:
        """Convert a host Column to an Arrow array of ``dtype.to_arrow()`` (strings as pa.string())."""
        mask = None if self.validity is None else ~np.asarray(self.validity, dtype=bool)
        kind = self.dtype.kind
        if kind == "string":
            if self.dictionary is not None:
                values = self.dictionary.to_arrow()
                codes = _primitive_to_arrow(np.asarray(self.data, dtype=np.int32), pa.int32(), mask)
                return pa.DictionaryArray.from_arrays(codes, values).cast(pa.string())
            n = len(self)
            valid_buf = _validity_buffer(mask)
            arr = pa.LargeStringArray.from_buffers(
                n, pa.py_buffer(np.ascontiguousarray(self.offsets, dtype=np.int64)),
                pa.py_buffer(np.ascontiguousarray(self.chars, dtype=np.uint8)), valid_buf,
                null_count=-1 if mask is not None else 0)
            return arr.cast(pa.string())
        if self.dtype == T.NULL:
            return pa.nulls(len(self))
        data = np.asarray(self.data)
        if kind == "interval":
            return _interval_to_arrow(data, mask)
        if kind == "list":  # Python lists of the elements' Python values
            values = data.tolist() if mask is None else [None if m else v for v, m in zip(data.tolist(), mask)]
            return pa.array(values, type=self.dtype.to_arrow())
        if self.dtype == T.UBIGINT:  # int64 data, or Python ints past 2**63 (hash values)
            values = data.astype(np.uint64) if data.dtype != object else \
                np.array([0 if v is None else int(v) for v in data.tolist()], dtype=np.uint64)
            return _primitive_to_arrow(values, pa.uint64(), mask)
        if data.dtype == object or kind == "int128":
            return _wide_to_decimal(data, mask, self.dtype.to_arrow())
        if kind == "decimal":
            scaled = _primitive_to_arrow(data.astype(np.int64), pa.int64(), mask)
            return _scaled_to_decimal(scaled, self.dtype)
        if kind == "date":
            return _primitive_to_arrow(data.astype(np.int32), pa.date32(), mask)
        if kind in ("timestamp", "time"):
            return _primitive_to_arrow(data.astype(np.int64), self.dtype.to_arrow(), mask)
        t = self.dtype.to_arrow()
        if _NUMPY_OF_ARROW.get(t) is not None and data.dtype == _NUMPY_OF_ARROW[t]:
            return _primitive_to_arrow(data, t, mask)
        return pa.array(data, type=t, mask=mask)

    def to_pylist(self) -> list:
        return self.to_arrow().to_pylist()


def _validity_buffer(mask: np.ndarray | None) -> pa.Buffer | None:
    """Arrow's validity bitmap of a null ``mask`` (True = NULL), or None."""
    if mask is None:
        return None
    return pa.py_buffer(np.packbits(~np.asarray(mask, dtype=bool), bitorder="little"))


def _primitive_to_arrow(data: np.ndarray, t: pa.DataType, mask: np.ndarray | None) -> pa.Array:
    """A fixed-width NumPy array as an Arrow array of ``t`` (same width), built from buffers: the
    values are not looked at one by one, and pyarrow's ``pa.array`` (whose first call imports pandas
    when it is installed: ~0.3 s of a fresh process's first query) is not called."""
    n = len(data)
    if pa.types.is_boolean(t):
        values = pa.py_buffer(np.packbits(np.asarray(data, dtype=bool), bitorder="little"))
    else:
        values = pa.py_buffer(np.ascontiguousarray(data))
    return pa.Array.from_buffers(t, n, [_validity_buffer(mask), values], null_count=-1 if mask is not None else 0)


_NUMPY_OF_ARROW = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
                   pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
                   pa.float32(): np.float32, pa.float64(): np.float64, pa.bool_(): np.bool_}


def _interval_to_arrow(data: np.ndarray, mask: np.ndarray | None) -> pa.Array:
    """INTERVAL container values (hetdb.exec.functions_interval) -> Arrow month_day_nano_interval."""
    from hetdb.exec.functions_interval import unpack

    months, days, micros = unpack(np, data)
    cells = np.empty(len(data), dtype=[("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])
    cells["months"], cells["days"], cells["nanos"] = months, days, micros * 1000
    valid = _validity_buffer(mask)
    return pa.Array.from_buffers(pa.month_day_nano_interval(), len(data), [valid, pa.py_buffer(cells)],
                                 null_count=-1 if mask is not None else 0)


def _interval_from_arrow(arr: pa.Array) -> np.ndarray:
    """Arrow month_day_nano_interval or duration values -> INTERVAL containers (NULL rows zero);
    nanoseconds truncate toward zero to microseconds, as DuckDB reads Arrow intervals."""
    from hetdb.errors import UnsupportedError
    from hetdb.exec.functions_interval import pack

    n = len(arr)
    if pa.types.is_duration(arr.type):
        micros = arr.cast(pa.duration("us"), safe=False).cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        zero = np.zeros(n, np.int64)
        return pack(np, zero, zero, micros)
    if arr.type != pa.month_day_nano_interval():
        raise UnsupportedError(f"cannot read Arrow type {arr.type} as INTERVAL")
    cells = np.frombuffer(arr.buffers()[1], dtype=[("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")],
                          count=n, offset=arr.offset * 16)
    nanos = cells["nanos"]
    micros = np.where(nanos < 0, -(-nanos // 1000), nanos // 1000)
    out = pack(np, cells["months"].astype(np.int64), cells["days"].astype(np.int64), micros)
    if arr.null_count:
        out[~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)] = 0
    return out


def _decimal_to_scaled(arr: pa.Array, dtype: DataType) -> np.ndarray:
    """decimal128 (any precision/scale) -> int64 scaled by 10**dtype.scale, checking every value fits."""
    from hetdb.errors import InputError

    src_scale = arr.type.scale if pa.types.is_decimal(arr.type) else 0
    if pa.types.is_decimal(arr.type) and arr.type.precision <= T.MAX_DECIMAL_PRECISION \
            and src_scale == dtype.scale:
        # decimal128 little-endian 16-byte values; the low 8 bytes are the int64 when it fits
        arr = arr.fill_null(pa.scalar(0, arr.type)) if arr.null_count else arr
        if pa.types.is_decimal128(arr.type):
            raw = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset * 2:(arr.offset + len(arr)) * 2]
            return raw[0::2].copy()
    target = pa.decimal128(38, dtype.scale)
    if dtype.precision > T.MAX_DECIMAL_PRECISION and pa.types.is_decimal(arr.type):
        return _decimal_to_wide(arr, target)
    try:
        as38 = arr.cast(target)
        # DECIMAL(p, s) holds |value| < 10**(p - s): compare values, not the unscaled integers
        # (at p = 38 the cast to decimal128(38, s) above already checked it; 10**(38 - s) has no
        # decimal128(38, s) form)
        too_big = None
        if dtype.precision < 38:
            limit = pa.scalar(10 ** (dtype.precision - dtype.scale), pa.decimal128(38, 0)).cast(target)
            too_big = pc.greater_equal(pc.abs(as38), limit)
        if too_big is not None and pc.any(too_big).as_py():
            first = as38.filter(too_big)[0]
            raise InputError(f"decimal value {first} does not fit in DECIMAL({dtype.precision},{dtype.scale}) "
                             f"(hetdb stores at most {T.MAX_DECIMAL_PRECISION} digits)")
        filled = as38.fill_null(pa.scalar(0, target)) if as38.null_count else as38
        raw = np.frombuffer(filled.buffers()[1], dtype=np.int64)[filled.offset * 2:(filled.offset + len(filled)) * 2]
        return raw[0::2].copy()
    except pa.ArrowInvalid as e:
        raise InputError(f"cannot convert decimal values to scale {dtype.scale}: {e}") from e


def _decimal_to_wide(arr: pa.Array, target: pa.DataType) -> np.ndarray:
    """decimal128 -> DECIMAL(38) physical values: int64 when every value fits, else Python ints (any
    decimal128 with the target's scale fits DECIMAL(38); e.g. a spilled SUM state read back)."""
    from hetdb.errors import InputError

    try:
        as38 = arr.cast(target)
    except pa.ArrowInvalid as e:
        raise InputError(f"cannot convert decimal values to scale {target.scale}: {e}") from e
    filled = as38.fill_null(pa.scalar(0, target)) if as38.null_count else as38
    words = np.frombuffer(filled.buffers()[1], dtype=np.int64)[filled.offset * 2:(filled.offset + len(filled)) * 2]
    lo, hi = words[0::2], words[1::2]
    if np.array_equal(hi, lo >> 63):
        return lo.copy()
    return np.array([(int(h) << 64) | (int(v) & 0xFFFFFFFFFFFFFFFF) for v, h in zip(lo, hi)], dtype=object)


def _wide_to_decimal(data: np.ndarray, mask: np.ndarray | None, t: pa.DataType) -> pa.Array:
    """HUGEINT / DECIMAL(38) physical values (int64, or Python ints) -> decimal128 (16-byte words)."""
    words = np.empty(len(data) * 2, dtype=np.int64)
    if data.dtype == object:
        vals = [0 if mask is not None and mask[i] else int(v) for i, v in enumerate(data.tolist())]
        words[0::2] = np.array([v & 0xFFFF_FFFF_FFFF_FFFF for v in vals], dtype=np.uint64).view(np.int64)
        words[1::2] = np.array([v >> 64 for v in vals], dtype=np.int64)
    else:
        lo = data.astype(np.int64)
        words[0::2] = lo
        words[1::2] = lo >> 63
    valid = _validity_buffer(mask)
    return pa.Array.from_buffers(t, len(data), [valid, pa.py_buffer(words)],
                                 null_count=-1 if mask is not None else 0)


def _scaled_to_decimal(scaled: pa.Array, dtype: DataType) -> pa.Array:
    t = pa.decimal128(dtype.precision, dtype.scale)
    lo = np.asarray(scaled.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    words = np.empty(len(lo) * 2, dtype=np.int64)
    words[0::2] = lo
    words[1::2] = lo >> 63  # sign extension into the high 64 bits
    valid = scaled.buffers()[0]
    return pa.Array.from_buffers(t, len(lo), [valid, pa.py_buffer(words)], null_count=scaled.null_count)


@dataclass
class Batch:
    """Equal-length named columns on one device."""

    columns: dict[str, Column] = field(default_factory=dict)
    num_rows: int = 0

    def __post_init__(self) -> None:
        for name, col in self.columns.items():
            if len(col) != self.num_rows:
                raise ValueError(f"column {name} has {len(col)} rows, batch has {self.num_rows}")

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def __getitem__(self, name: str) -> Column:
        return self.columns[name]

    @staticmethod
    def from_arrow(table: pa.Table | pa.RecordBatch, dtypes: dict[str, DataType] | None = None) -> Batch:
        cols = {name: Column.from_arrow(table.column(i), (dtypes or {}).get(name))
                for i, name in enumerate(table.schema.names)}
        return Batch(cols, table.num_rows)

    def to_arrow(self) -> pa.Table:
        return pa.table({name: col.to_arrow() for name, col in self.columns.items()})
