"""Shared scaffolding of the streamer's batched-iteration tests without a GPU
(test_stream_batch_cpu.py, test_stream_batch_deliveries_cpu.py): stand-ins for CuPy's streams, events
and devices, ``run_delivery`` carried out with NumPy (batch_host.py) from the host addresses the
streamer hands it, what the ``fake_gpu`` and ``reader`` fixtures do (install_fake_gpu; every_codec_table: 5 row groups in every page codec),
a host tier in plain memory, the host reader's answer and a checked scan, and a device cache stand-in
that admits the pages of some row groups."""

from __future__ import annotations

import ctypes
import types

import numpy as np
import pyarrow as pa
from batch_host import run_plan_on_host

from hetdb import codec
from hetdb import types as T
from hetdb.backend.gpu import batch as gpu_batch
from hetdb.backend.gpu import memory as gpu_memory
from hetdb.backend.gpu import stream as gpu_stream
from hetdb.backend.gpu import stream_batch as gpu_stream_batch
from hetdb.backend.gpu.encoded import DevicePage
from hetdb.cache import HostPageCache
from hetdb.storage import ColumnSpec, Database

RPP = 4096
ROWS = 4 * RPP + 700
COLUMNS = ["c_rle", "c_delta", "c_plain", "c_nulls", "c_flag", "c_f64", "s_dict", "s_plain"]


class _Event:
    done = True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass


class _Stream:
    ptr = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class _Device:
    id = 0

    def __init__(self, *args) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _host_run_delivery(plan, sources, dtypes, stream, staged=None, launch_stream=None, regions=None, views=True):
    def fetch(ci, pi, off, n):
        out = np.empty(n, np.uint8)
        start = 0
        for addr, ln in sources[ci][pi]:
            lo, hi = max(off, start), min(off + n, start + ln)
            if lo < hi:
                run = np.ctypeslib.as_array((ctypes.c_uint8 * ln).from_address(addr))
                out[lo - off:hi - off] = run[lo - start:hi - start]
            start += ln
        return out

    # the copies run_delivery queues: a column's neighbouring host-tier pages as one (plan.linked)
    copies = None
    if regions is not None and plan.linked:
        from hetdb.backend.gpu.batch import _linked_pieces
        from hetdb.backend.gpu.batch_plan import coalesce_linked

        copies = coalesce_linked(_linked_pieces(plan, sources, regions))
    buf, arrays = run_plan_on_host(plan, fetch, [np.uint8 if d is None else d for d in dtypes], copies)
    return buf, (arrays if views else None)


def _host_decode_stored(self, page, got):
    """A page in a string codec (LZ4 chunks, encoded offsets), decoded by the host reader."""
    buf = got if isinstance(got, np.ndarray) else np.concatenate(got.runs)
    return self.reader.decode(page.column, page.row_group, buf[:page.location.length])


def _host_coded_column(self, pages, raws):
    from hetdb.column import Column

    arrays = [_host_decode_stored(self, p, got).to_arrow() for p, got in zip(pages, raws)]
    return Column.from_arrow(pa.concat_arrays(arrays), T.STRING)


def install_fake_gpu(monkeypatch) -> None:
    """The ``fake_gpu`` fixture of the tests: CuPy's streams, events and decode stand in."""
    cuda = types.SimpleNamespace(Device=_Device, Event=lambda disable_timing=True: _Event(),
                                 get_current_stream=lambda: _Stream())
    monkeypatch.setitem(__import__("sys").modules, "cupy", types.SimpleNamespace(cuda=cuda, asarray=np.asarray))
    monkeypatch.setattr(gpu_stream, "copy_stream", lambda device_id: _Stream())
    monkeypatch.setattr(gpu_stream_batch, "decode_stream", lambda device_id: _Stream())
    monkeypatch.setattr(gpu_stream.PageStreamer, "_observe_rates", lambda self: None)
    monkeypatch.setattr(gpu_batch, "run_delivery", _host_run_delivery)
    monkeypatch.setattr(gpu_stream.PageStreamer, "_coded_column", _host_coded_column)
    monkeypatch.setattr(gpu_stream.PageStreamer, "_decode_stored", _host_decode_stored)
    monkeypatch.setattr(gpu_memory, "pinned_empty", lambda shape, dtype=np.uint8: np.empty(shape, dtype))
    # a page kept encoded decodes through the CPU codec (decode.cu is checked on the GPU)
    monkeypatch.setattr(DevicePage, "decode", lambda self: codec.decode(self.data, self.codec, self.n, self.dtype))


def every_codec_table(tmp_path_factory):
    """The ``reader`` fixture of the tests: 5 row groups of 8 columns in every page codec."""
    rng = np.random.default_rng(11)
    n = ROWS
    cols = {
        "c_rle": (T.INT64, pa.array(np.repeat(rng.integers(0, 1 << 40, n // 20 + 1), 20)[:n])),
        "c_delta": (T.INT64, pa.array(np.sort(rng.integers(-10**12, 10**12, n)))),
        "c_plain": (T.INT64, pa.array(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n))),
        "c_nulls": (T.INT32, pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.3)),
        "c_flag": (T.BOOL, pa.array(rng.random(n) < 0.5)),
        "c_f64": (T.FLOAT64, pa.array(rng.standard_normal(n))),
        "s_dict": (T.STRING, pa.array(rng.choice(["red", "green", "blue", None], n).tolist())),
        "s_plain": (T.STRING, pa.array([None if i % 17 == 0 else f"n{i}-{'x' * (i % 9)}" for i in range(n)])),
    }
    db = Database.open(str(tmp_path_factory.mktemp("batches-cpu") / "db"), create=True)
    with db.create_table("t", [ColumnSpec(k, t) for k, (t, _) in cols.items()], rows_per_page=RPP) as w:
        w.append_arrow(pa.table({k: a for k, (_, a) in cols.items()}))
    return db.table("t")


def host_tier() -> HostPageCache:
    def allocate(nbytes: int) -> np.ndarray:  # 4096-aligned plain memory (O_DIRECT reads into it)
        raw = np.empty(nbytes + 4096, np.uint8)
        start = (-raw.ctypes.data) % 4096
        return raw[start:start + nbytes]

    return HostPageCache(64 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20, allocate=allocate)


def wanted(reader, rgs):
    parts = [reader.read_batch(COLUMNS, rg) for rg in rgs]
    return {c: pa.concat_arrays([p[c].to_arrow() for p in parts]) for c in COLUMNS}


def scan(reader, budget, **kw):
    steps, compared = [], 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=budget, **kw) as s:
        for rgs, batch in s.batches():
            steps.append(rgs)
            want = wanted(reader, rgs)
            assert batch.num_rows == sum(reader.row_group_rows(r) for r in rgs)
            assert budget.used_bytes > 0  # the delivery's buffer is reserved while in use
            for c in COLUMNS:
                assert batch[c].to_arrow().equals(want[c]), (c, rgs)
                compared += batch.num_rows
    return s, steps, compared


class Verdicts:
    """A device cache that admits the pages of some row groups (and holds nothing)."""

    capacity_bytes = 1 << 40
    stats = types.SimpleNamespace(admitted=0, evictions=0, bypassed=0)

    def __init__(self, admit: set[int]) -> None:
        self.admit, self.asked = admit, []

    def get(self, key, pin=False):
        return None

    def kept_bytes(self) -> int:
        return 0

    def reserve(self, nbytes, key=None, link_bytes=None, first_reuse=None, headroom=0) -> bool:
        if key is None:
            return False  # a dictionary: transient
        self.asked.append((key.column, key.row_group))
        return key.row_group in self.admit and key.column == "c_f64"

    def release(self, nbytes) -> None:
        raise AssertionError("an admitted page the stand-in per-page path took must not be released")
