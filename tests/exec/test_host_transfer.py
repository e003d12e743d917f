"""Device batches moved to the host in one transfer (exec/hostutil.batch_to_host / arrays_to_host):
every column kind (numbers with validity, plain strings, dictionary strings sharing one dictionary,
an empty column, a 2-D array) arrives equal, a dictionary is copied once per cache, and arrays that
are already on the host stay. The "device" is NumPy behind a proxy module (its arrays are NumPy
arrays, so the test counts transfers instead of looking at memory)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.backend.cpu.strings import _arrow_to_offsets_chars
from hetdb.column import Batch, Column
from hetdb.exec.hostutil import arrays_to_host, batch_to_host


class _DeviceArray(np.ndarray):
    """A NumPy array standing for a device array (not an np.ndarray instance for the code's test)."""


class _Proxy:
    def __getattr__(self, name):
        return getattr(np, name)

    def concatenate(self, arrays):
        return np.concatenate([np.asarray(a) for a in arrays]).view(_DeviceArray)

    def ascontiguousarray(self, a):
        return np.ascontiguousarray(a).view(_DeviceArray)


class _Backend:
    name = "gpu-like"
    xp = _Proxy()

    def __init__(self):
        self.copies = 0

    def to_host(self, a):
        self.copies += 1
        return np.asarray(a).view(np.ndarray).copy()


def _dev(a) -> _DeviceArray:
    return np.asarray(a).view(_DeviceArray)


def _strings(values):
    o, c = _arrow_to_offsets_chars(pa.array(values, pa.string()))
    return _dev(o), _dev(c)


def test_arrays_to_host_one_transfer() -> None:
    be = _Backend()
    host = np.arange(3)
    arrays = [_dev(np.arange(5, dtype=np.int64)), host, _dev(np.array([True, False])),
              _dev(np.zeros(0, np.float64)), _dev(np.arange(6, dtype=np.int32).reshape(2, 3))]
    got = arrays_to_host(be, arrays)
    assert be.copies == 1 and got[1] is host
    for a, g in zip(arrays, got):
        assert type(g) is np.ndarray and g.dtype == a.dtype and g.shape == a.shape and (g == a).all()


def test_batch_to_host_every_column_kind() -> None:
    be = _Backend()
    d_off, d_chr = _strings(["x", "yy", ""])
    dictionary = Column(T.STRING, offsets=d_off, chars=d_chr)
    s_off, s_chr = _strings(["ab", "", "cde"])
    batch = Batch({
        "i": Column(T.INT64, data=_dev(np.array([1, 2, 3])), validity=_dev(np.array([True, False, True]))),
        "s": Column(T.STRING, offsets=s_off, chars=s_chr),
        "d1": Column(T.STRING, data=_dev(np.array([0, 2, 1], np.int32)), dictionary=dictionary),
        "d2": Column(T.STRING, data=_dev(np.array([1, 1, 0], np.int32)), dictionary=dictionary),
    }, 3)
    cache: dict = {}
    out = batch_to_host(be, batch, cache)
    assert be.copies == 1 and len(cache) == 1
    assert out.columns["d1"].dictionary is out.columns["d2"].dictionary  # one host copy
    for name, col in batch.columns.items():
        got = out.columns[name]
        for attr in ("data", "validity", "offsets", "chars"):
            a, g = getattr(col, attr), getattr(got, attr)
            assert (a is None) == (g is None)
            if a is not None:
                assert type(g) is np.ndarray and g.dtype == a.dtype and (g == a).all(), (name, attr)
    again = batch_to_host(be, Batch({"d1": batch.columns["d1"]}, 3), cache)
    assert be.copies == 2 and again.columns["d1"].dictionary is out.columns["d1"].dictionary
