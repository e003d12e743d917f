"""The host side of one paged launch over every cached page (exec/compiled_paged.py), without a GPU:
which pages one kernel takes (physical types, dictionaries), a string column whose first page is
dictionary-encoded and later ones plain read all plain, each input's codec over the pages (value
arrays, pages kept compressed, delta/rle ones decoded per tile), and plain strings gathered page by
page for rows numbered over the pages. (The launches themselves: tests/exec/test_gpu_compiled_paged.py.)"""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.backend.gpu.codegen.pipeline_paged import paged_codec
from hetdb.backend.gpu.codegen.pipeline_spec import Input, MaterializeSink, PipelineSpec
from hetdb.backend.gpu.encoded import DevicePage, EncodedColumn
from hetdb.codec.encodings import encode_as
from hetdb.column import Column
from hetdb.exec import compiled_paged as CP
from hetdb.exec.hostutil import strings_to_pylist

BE = CpuBackend()
SIZES = (5, 7, 3)


def _encoded(values: np.ndarray, codec: str) -> EncodedColumn:
    section = np.frombuffer(encode_as(values, codec), np.uint8).copy()
    return EncodedColumn(T.INT64, device_page=DevicePage(section, codec, len(values), values.dtype))


def _plain(strings: list[str]) -> Column:
    offsets = np.cumsum([0] + [len(s.encode()) for s in strings]).astype(np.int64)
    return Column(T.STRING, offsets=offsets, chars=np.frombuffer("".join(strings).encode(), np.uint8).copy())


def _pages(codecs: tuple[str | None, ...]) -> list:
    """Three row groups: column a (a page per codec, None a value array), column s (the first page
    dictionary-encoded, the others plain strings)."""
    d = Column.from_arrow(pa.array(["x", "yé"], type=pa.large_string()), T.STRING)
    d = d.dictionary if d.dictionary is not None else d
    out = []
    for p, (rows, codec) in enumerate(zip(SIZES, codecs)):
        vals = np.arange(rows, dtype=np.int64) * (p + 1) - 3
        a = Column(T.INT64, data=vals) if codec is None else _encoded(vals, codec)
        s = Column(T.STRING, data=np.arange(rows, dtype=np.int32) % 2, dictionary=d) if p == 0 \
            else _plain([f"s{p}-{i}" for i in range(rows)])
        out.append((rows, {"a": a, "s": s}))
    return out


def test_mixed_string_pages_are_read_plain_and_codecs_follow_the_pages() -> None:
    pages = _pages(("for", None, "delta"))
    assert CP._representatives(pages) is None  # a dictionary page next to plain ones: not one kernel
    plain = CP._plain_strings(NS(backend=BE), pages)
    assert [c["s"].dictionary is None for _, c in plain] == [True, True, True]
    assert strings_to_pylist(BE, plain[0][1]["s"].offsets, plain[0][1]["s"].chars) == ["x", "yé", "x", "yé", "x"]
    rep = CP._representatives(plain)
    assert rep is not None and set(rep) == {"a", "s"}
    spec = PipelineSpec((Input("a", T.INT64), Input("s", T.STRING)), (), MaterializeSink())
    assert [i.codec for i in CP._paged_spec(spec, plain).inputs] == ["paged_tile", "plain"]
    assert [i.codec for i in CP._paged_spec(spec, CP._plain_strings(NS(backend=BE), _pages(("for", None, "dict"))))
            .inputs] == ["paged", "plain"]
    assert paged_codec([c["a"] for _, c in _pages((None, None, None))]) == "plain"
    assert paged_codec([c["a"] for _, c in _pages(("for", "rle", None))]) == "paged_tile"


def test_pages_of_different_physical_types_are_not_one_kernel() -> None:
    pages = _pages((None, None, None))
    pages[1][1]["a"] = Column(T.INT64, data=np.arange(SIZES[1], dtype=np.int32))
    assert CP._representatives(CP._plain_strings(NS(backend=BE), pages)) is None


def test_plain_strings_are_gathered_page_by_page() -> None:
    pages = CP._plain_strings(NS(backend=BE), _pages((None, None, None)))
    starts = np.cumsum((0,) + SIZES[:-1]).astype(np.int64)
    table = NS(starts=starts, num_rows=sum(SIZES), pages=[cols for _, cols in pages])
    rows = np.array([0, 3, 5, 5, 6, 11, 12, 14], np.int64)  # ascending, a row twice (an expanding probe)
    col = CP._take_strings(NS(backend=BE), table, "s", rows)
    got = strings_to_pylist(BE, col.offsets, col.chars)
    assert got == ["x", "yé", "s1-0", "s1-0", "s1-1", "s1-6", "s2-0", "s2-2"]
    empty = CP._take_strings(NS(backend=BE), table, "s", rows[:0])
    assert len(empty) == 0
