"""backend/gpu/strings_codec.py run on the host: CuPy and nvCOMP replaced by NumPy/pyarrow stand-ins
(the device is NumPy memory, nvCOMP's batched LZ4 decode is pyarrow's lz4_raw per chunk) so the
page plumbing — sections, the chunk directory read back, the chunk offsets and sizes handed to
nvCOMP, the host fallback and its EXPLAIN note, damage — runs without a GPU. The real CuPy/nvCOMP
path is tests/codec/test_gpu_string_pages.py (gpu-marked)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pyarrow as pa
import pytest

from hetdb import codec as hcodec
from hetdb.codec import strings as sc
from hetdb.column import Column
from hetdb.errors import CorruptDataError
from hetdb.storage.pages import PLAIN, encode_page
from hetdb.types import STRING


class _DevArray:
    """A 1-D device array stand-in over NumPy (the subset strings_codec uses); ``reads`` counts
    read-backs to the host (each a wait on the stream on a GPU)."""

    reads = 0

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    @property
    def shape(self) -> tuple[int, ...]:
        return self.a.shape

    def __getitem__(self, i):
        got = self.a[i]
        return _DevArray(got) if isinstance(got, np.ndarray) else got

    def get(self) -> np.ndarray:
        _DevArray.reads += 1
        return self.a.copy()

    def __int__(self) -> int:
        _DevArray.reads += 1
        return int(self.a)

    def __add__(self, other: int) -> _DevArray:
        return _DevArray(self.a + other)


class _Stream:
    ptr = 1234
    synced = 0

    def synchronize(self) -> None:
        _Stream.synced += 1


def _fake_cupy() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.uint8 = np.uint8
    cp.empty = lambda n, dtype: _DevArray(np.full(n, 0xAB, dtype))
    cp.asarray = lambda a: _DevArray(np.asarray(a))
    cp.bool_ = np.bool_
    cp.ones = lambda n, dtype: _DevArray(np.ones(n, dtype))
    cp.concatenate = lambda arrays: _DevArray(np.concatenate([x.a for x in arrays]))
    cp.cuda = types.SimpleNamespace(get_current_stream=lambda: _Stream(),
                                    Device=lambda: types.SimpleNamespace(id=0))
    return cp


class _Batch:
    def __init__(self, buf: _DevArray, offsets: list[int], sizes: list[int]) -> None:
        self.buf, self.offsets, self.sizes = buf, offsets, sizes
        self.buffer_sizes = list(sizes)


def _fake_nvcomp(calls: list) -> types.ModuleType:
    nv = types.ModuleType("nvidia.nvcomp")
    nv.BitstreamKind = types.SimpleNamespace(RAW="raw")

    class Codec:
        def __init__(self, **kw) -> None:
            assert kw["algorithm"] == "LZ4" and kw["bitstream_kind"] == "raw"

        def decode(self, srcs: _Batch, out: _Batch) -> _Batch:
            calls.append(len(srcs.sizes))
            lz4 = pa.Codec("lz4_raw")
            for so, ss, do, ds in zip(srcs.offsets, srcs.sizes, out.offsets, out.sizes):
                assert so % 16 == 0 and do % 16 == 0  # the alignment nvCOMP asks for (at most 16 bytes)
                got = lz4.decompress(srcs.buf.a[so:so + ss], decompressed_size=ds)
                out.buf.a[do:do + ds] = np.frombuffer(got, np.uint8)
            return out

    nv.Codec = Codec
    nv.as_arrays = lambda buf, offsets, sizes, cuda_stream=0: _Batch(buf, offsets, sizes)
    return nv


@pytest.fixture
def fake_gpu(monkeypatch):
    """strings_codec with the stand-ins; yields (module, nvCOMP decode calls, host notes)."""
    import hetdb.backend.gpu.decode as gdecode
    import hetdb.exec.hostutil as hostutil
    from hetdb.backend.gpu import strings_codec

    calls: list = []
    notes: list = []
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    nvidia = types.ModuleType("nvidia")
    nvidia.nvcomp = _fake_nvcomp(calls)
    monkeypatch.setitem(sys.modules, "nvidia", nvidia)
    monkeypatch.setitem(sys.modules, "nvidia.nvcomp", nvidia.nvcomp)
    monkeypatch.setattr(strings_codec, "_nvcomp", [])
    monkeypatch.setattr(strings_codec, "_local", types.SimpleNamespace())
    monkeypatch.delenv(strings_codec.NVCOMP_ENV, raising=False)

    def decode_device(data, codec, n, dtype):
        assert codec != "plain"  # the kernel (decode.cu) reads the encoding from the header
        return _DevArray(hcodec.decode(data.a, sc.offsets_codec(data.a), n, np.dtype(dtype)))

    monkeypatch.setattr(gdecode, "decode_device", decode_device)
    monkeypatch.setattr(hostutil, "note_host_step", lambda backend, what: notes.append((backend.name, what)))
    yield strings_codec, calls, notes


def _page(values: list[str | None], codecs=("offsets", "lz4")):
    col = Column.from_arrow(pa.array(values, pa.large_string()), STRING)
    page, sections, length, codec, _ = encode_page(col, PLAIN, codecs)
    return _DevArray(page[:length]), sections, codec


def _values(n: int) -> list[str]:
    rng = np.random.default_rng(11)
    words = ["final", "ironic", "deposits", "sleep", "carefully", "packages"]
    return [" ".join(rng.choice(words, int(rng.integers(0, 12)))) + f" {i}" for i in range(n)]


def _runs(raw: _DevArray) -> list[np.ndarray]:
    """The page's bytes in host memory as the pinned runs a copy reads them from (uneven pieces)."""
    a = raw.a
    cuts = [0, 17, 4096 + 5, a.shape[0] // 2, a.shape[0]]
    return [a[lo:hi] for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


def _check(module, raw, sections, codec, values, host: bool = False) -> None:
    reads = _DevArray.reads
    offsets, chars = module.decode_string_page(raw, sections, len(values), codec, "test page",
                                               _runs(raw) if host else None)
    col = Column(STRING, offsets=offsets.a, chars=chars.a)
    assert col.to_arrow().to_pylist() == values
    if host:  # headers, chunk directory and offset endpoints read on the host: no read-back
        assert _DevArray.reads == reads


@pytest.mark.parametrize("host", [False, True])
def test_lz4_pages_go_through_nvcomp_batched_decode(fake_gpu, host) -> None:
    module, calls, notes = fake_gpu
    values = _values(30000)
    raw, sections, codec = _page(values)
    assert codec == "lz4"
    _check(module, raw, sections, codec, values, host)
    k = -(-sum(len(v.encode()) for v in values) // sc.CHUNK)
    assert calls == [k] and k > 3 and notes == []  # every chunk in one call, no host step


@pytest.mark.parametrize("host", [False, True])
def test_offsets_pages_need_no_nvcomp(fake_gpu, host) -> None:
    module, calls, notes = fake_gpu
    values = [f"{x:016x}" for x in np.random.default_rng(3).integers(0, 2 ** 62, 5000)]
    raw, sections, codec = _page(values)
    assert codec == "offsets"
    _check(module, raw, sections, codec, values, host)
    assert calls == [] and notes == []


def test_without_nvcomp_the_host_decodes_and_the_step_is_named(fake_gpu, monkeypatch) -> None:
    module, calls, notes = fake_gpu
    monkeypatch.setenv(module.NVCOMP_ENV, "0")
    values = _values(20000)
    raw, sections, codec = _page(values)
    _check(module, raw, sections, codec, values)
    assert calls == [] and notes == [("gpu", "LZ4 string pages decoded on the host (HETDB_NVCOMP=0)")]


def test_nvcomp_not_importable_falls_back(fake_gpu, monkeypatch) -> None:
    module, calls, notes = fake_gpu
    monkeypatch.setitem(sys.modules, "nvidia", None)  # importing it raises ImportError
    values = _values(20000)
    raw, sections, codec = _page(values)
    _check(module, raw, sections, codec, values)
    assert calls == [] and len(notes) == 1 and "not importable" in notes[0][1]


def test_damaged_directory_is_corrupt_data_on_either_path(fake_gpu, monkeypatch) -> None:
    module, _, _ = fake_gpu
    values = _values(20000)
    raw, sections, codec = _page(values)
    start, _ = sections["chars"]
    raw.a[start + 8:start + 12] = np.frombuffer(np.uint32(777).tobytes(), np.uint8)
    for env in ("1", "0"):
        monkeypatch.setenv(module.NVCOMP_ENV, env)
        for host in (None, _runs(raw)):
            with pytest.raises(CorruptDataError, match="test page: lz4-encoded strings are damaged"):
                module.decode_string_page(raw, sections, len(values), codec, "test page", host)


@pytest.mark.parametrize("host", [False, True])
def test_offsets_past_the_characters_are_corrupt_data(fake_gpu, host) -> None:
    module, _, _ = fake_gpu
    values = [f"{x:016x}" for x in np.random.default_rng(5).integers(0, 2 ** 62, 3000)]
    raw, sections, codec = _page(values)
    assert codec == "offsets"
    start, length = sections["chars"]
    short = dict(sections, chars=[start, length - 1])  # one byte fewer than the last offset says
    with pytest.raises(CorruptDataError, match="test page: string offsets do not match the character section"):
        module.decode_string_page(raw, short, len(values), codec, "test page", _runs(raw) if host else None)


def test_pages_of_a_delivery_concatenate_into_one_column(fake_gpu) -> None:
    module, _, _ = fake_gpu
    pages = [["only valid", "", "x" * 70000], [None, "b", None, "ß€"], ["last", "page"]]
    cols = []
    for values in pages:
        col = Column.from_arrow(pa.array(values, pa.large_string()), STRING)
        cols.append(Column(STRING, offsets=_DevArray(col.offsets), chars=_DevArray(col.chars),
                           validity=None if col.validity is None else _DevArray(col.validity)))
    got = module.concat_strings(cols)
    host = Column(STRING, offsets=got.offsets.a, chars=got.chars.a, validity=got.validity.a)
    assert host.to_arrow().to_pylist() == [v for values in pages for v in values]
    assert module.concat_strings(cols[:1]) is cols[0]


def test_chars_of_several_pages_decode_in_one_nvcomp_call(fake_gpu) -> None:
    module, calls, _ = fake_gpu
    pages = [_page(_values(n)) for n in (30000, 7000, 21000)]
    sections = [raw.a[s:s + ln] for raw, secs, _ in pages for s, ln in [secs["chars"]]]
    bases, pos = [], 0
    for sec in sections:
        bases.append(pos)
        pos += -(-sec.shape[0] // 16) * 16  # each section 16-aligned in the buffer, as in a page
    buf = np.zeros(pos, np.uint8)
    for base, sec in zip(bases, sections):
        buf[base:base + sec.shape[0]] = sec
    tables = [sc.chunk_table(sec) for sec in sections]
    out, firsts = module.decompress_sections(module.nvcomp_module()[0], _DevArray(buf), list(zip(bases, tables)))
    assert calls == [sum(t[2].shape[0] for t in tables)]  # every chunk of every page in one call
    for sec, table, first in zip(sections, tables, firsts):
        assert np.array_equal(out.a[first:first + table[0]], sc.decompress_chars(sec, table[0]))
    assert firsts[0] == 0 and all(f % 16 == 0 for f in firsts)  # each page's characters 16-aligned
    assert firsts[-1] + tables[-1][0] <= out.shape[0] < firsts[-1] + tables[-1][0] + 16
