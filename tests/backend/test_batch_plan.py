"""Batched GPU deliveries planned on the host (backend/gpu/batch_plan.py, no GPU): which row groups
go together, and — by carrying a plan out with NumPy in place of the copies and kernels — that the
layout, copies and page descriptors rebuild every column of several row groups exactly (plain and
encoded pages, NULLs, dictionary codes, plain strings), and that damaged sections are refused."""

from __future__ import annotations

import numpy as np
import pytest
from batch_host import run_plan_on_host

from hetdb import codec
from hetdb import types as T
from hetdb.backend.gpu.batch_plan import (
    ALIGN,
    ColumnSpecLite,
    PageSpec,
    coalesce,
    delivery_bound,
    plan_delivery,
    plan_groups,
    source_pieces,
)
from hetdb.column import Column
from hetdb.errors import CorruptDataError
from hetdb.storage.pages import encode_page


def test_groups_close_at_the_link_target_and_respect_the_device_bound():
    assert plan_groups([10] * 7, [1] * 7, 30, 100) == [[0, 1, 2], [3, 4, 5], [6]]
    assert plan_groups([10] * 5, [40] * 5, 1000, 100) == [[0, 1], [2, 3], [4]]
    # a row group larger than the device bound goes alone; nothing is dropped
    assert plan_groups([5, 5, 5], [10, 500, 10], 100, 100) == [[0], [1], [2]]
    assert plan_groups([], [], 10, 10) == []
    assert plan_groups([1] * 5, [1] * 5, 100, 100, max_group=2) == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError):
        plan_groups([1], [], 10, 10)


def test_a_ramp_makes_the_first_groups_smaller_and_keeps_every_position_in_order():
    # targets 80 >> 2 = 20, 80 >> 1 = 40, then 80
    got = plan_groups([10] * 20, [1] * 20, 80, 1000, ramp=2)
    assert got == [[0, 1], [2, 3, 4, 5], [6, 7, 8, 9, 10, 11, 12, 13], [14, 15, 16, 17, 18, 19]]
    assert [i for g in got for i in g] == list(range(20))
    # a ramp below one row group still moves one per group; no ramp is the plain grouping
    assert plan_groups([10] * 4, [1] * 4, 8, 1000, ramp=5) == [[0], [1], [2], [3]]
    assert plan_groups([10] * 7, [1] * 7, 30, 100, ramp=0) == plan_groups([10] * 7, [1] * 7, 30, 100)


def test_a_tail_makes_the_last_groups_halve_down_and_keeps_every_position_in_order():
    # the last three aim at 80 >> 1, >> 2, >> 3 = 40, 20, 10; before them the ramp and full groups, the
    # remainder (20, under half the tail's first group) joining the tail's first
    got = plan_groups([10] * 40, [1] * 40, 80, 1000, ramp=3, tail=3)
    sizes = [10 * len(g) for g in got]
    assert sizes == [10, 20, 40, 80, 80, 80, 60, 20, 10]
    assert [i for g in got for i in g] == list(range(40))
    # the tail takes at most half of the bytes, and leaves the front at least one row group
    assert plan_groups([10] * 4, [1] * 4, 1000, 1000, tail=3) == [[0, 1], [2, 3]]
    assert plan_groups([10] * 2, [1] * 2, 80, 1000, tail=3) == [[0], [1]]
    assert plan_groups([10], [1], 80, 1000, tail=3) == [[0]]
    assert plan_groups([], [], 80, 1000, tail=3) == []
    # the device bound and max_group hold in the tail too; a row group over the bound goes alone
    got = plan_groups([10] * 20, [30] * 20, 80, 50, tail=2)
    assert all(len(g) == 1 for g in got) and [i for g in got for i in g] == list(range(20))
    got = plan_groups([5, 5, 5, 5, 40], [1, 1, 1, 1, 500], 80, 100, tail=2)
    assert got[-1] == [4] and [i for g in got for i in g] == list(range(5))
    assert all(len(g) <= 2 for g in plan_groups([1] * 30, [1] * 30, 64, 1000, max_group=2, tail=3))
    assert plan_groups([10] * 7, [1] * 7, 30, 100, tail=0) == plan_groups([10] * 7, [1] * 7, 30, 100)


def test_source_pieces_split_a_section_across_runs_and_coalesce_merges_back_to_back_copies():
    assert source_pieces([100], 10, 20) == [(0, 10, 20)]
    assert source_pieces([64, 64, 64], 60, 70) == [(0, 60, 4), (1, 0, 64), (2, 0, 2)]
    with pytest.raises(ValueError):
        source_pieces([64], 60, 10)
    assert coalesce([(1000, 0, 10), (1010, 10, 5), (2000, 15, 5), (2005, 21, 1), (0, 30, 0)]) == [
        (1000, 0, 15), (2000, 15, 5), (2005, 21, 1)]


def _page(col: Column, encoding: str = "plain", codecs=codec.CODECS):
    raw, sections, length, data_codec, _ = encode_page(col, encoding, codecs)
    return raw[:length].copy(), PageSpec(length, len(col), data_codec, sections, "test page")


def _mixed_pages():
    """Pages of six columns in four row groups: every codec, NULLs, dictionary codes, plain strings."""
    rng = np.random.default_rng(3)
    sizes = [1500, 1025, 3, 2048]
    ints, floats, flags, codes, strings, maybe = [], [], [], [], [], []
    raws = [[] for _ in range(6)]
    specs = [[] for _ in range(6)]
    for r, n in enumerate(sizes):
        cols = [
            # runs (rle), sorted (delta), small range (for), random (plain) by row group
            Column(T.INT32, data=[np.repeat(np.arange(n // 10 + 1, dtype=np.int32), 10)[:n],
                                  np.sort(rng.integers(0, 10**6, n)).astype(np.int32),
                                  rng.integers(0, 50, n).astype(np.int32),
                                  rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)][r]),
            Column(T.FLOAT64, data=rng.normal(size=n)),
            Column(T.BOOL, data=rng.random(n) < 0.5),
            Column(T.STRING, data=rng.integers(0, 7, n).astype(np.int32),
                   validity=(rng.random(n) < 0.8) if r % 2 else None),
            _strings([f"s{r}-{i}-" + "x" * (i % 5) for i in range(n)], rng.random(n) < 0.9 if r != 1 else None),
            Column(T.INT64, data=np.full(n, 7 + r, np.int64), validity=rng.random(n) < 0.5),
        ]
        for c, col in enumerate(cols):
            raw, spec = _page(col, "dict" if c == 3 else "plain", () if c == 1 and r == 0 else codec.CODECS)
            raws[c].append(raw)
            specs[c].append(spec)
        ints.append(cols[0].data)
        floats.append(cols[1].data)
        flags.append(cols[2].data)
        codes.append((cols[3].data, cols[3].validity))
        strings.append(cols[4])
        maybe.append(cols[5])
    assert "plain" in {s.codec for s in specs[0]} and len({s.codec for s in specs[0]}) >= 2  # mixed
    lite = [ColumnSpecLite("i", 4), ColumnSpecLite("f", 8), ColumnSpecLite("b", 1), ColumnSpecLite("c", 4),
            ColumnSpecLite("s", 0, string=True), ColumnSpecLite("m", 8)]
    dtypes = [np.int32, np.float64, np.bool_, np.int32, None, np.int64]
    return sizes, raws, specs, lite, dtypes, (ints, floats, flags, codes, strings, maybe)


def test_a_plan_rebuilds_every_column_of_several_row_groups():
    sizes, raws, specs, lite, dtypes, (ints, floats, flags, codes, strings, maybe) = _mixed_pages()
    plan = plan_delivery(lite, specs)
    assert plan.rows == sum(sizes)
    regions = [r for cp in plan.columns for r in (cp.data, cp.validity, cp.offsets, cp.chars) if r is not None]
    assert all(off % ALIGN == 0 for off, _ in regions)
    ends = sorted((off, off + ln) for off, ln in regions)
    assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:]))  # no two outputs overlap
    # one launch of each kernel for the whole delivery: a descriptor per encoded page, per page of a
    # column with NULLs, per plain-string page
    encoded = sum(p.codec != "plain" for c in (0, 1, 2, 3, 5) for p in specs[c])
    assert plan.decode.pages == encoded and plan.unpack.pages == 3 * len(sizes)
    assert plan.rebase.pages == len(sizes)
    assert plan.decode.most == max(p.num_rows for c in (0, 1, 2, 3, 5) for p in specs[c] if p.codec != "plain")
    _, out = run_plan_on_host(plan, lambda ci, pi, off, n: raws[ci][pi][off:off + n], dtypes)
    np.testing.assert_array_equal(out[0]["data"], np.concatenate(ints))
    np.testing.assert_array_equal(out[1]["data"], np.concatenate(floats))
    np.testing.assert_array_equal(out[2]["data"], np.concatenate(flags))
    np.testing.assert_array_equal(out[3]["data"], np.concatenate([c for c, _ in codes]))
    want_valid = np.concatenate([np.ones(len(c), bool) if v is None else v for c, v in codes])
    np.testing.assert_array_equal(out[3]["validity"], want_valid)
    text = [s for col in strings for s in col.to_arrow().to_pylist()]
    got = Column(T.STRING, offsets=out[4]["offsets"], chars=out[4]["chars"], validity=out[4].get("validity"))
    assert got.to_arrow().to_pylist() == text
    np.testing.assert_array_equal(out[5]["validity"], np.concatenate([c.validity for c in maybe]))
    np.testing.assert_array_equal(out[5]["data"][out[5]["validity"]],
                                  np.concatenate([c.data[c.validity] for c in maybe]))
    assert "validity" not in out[0] and "validity" not in out[1]
    # every byte the plan copies is bounded by delivery_bound (the grouping's estimate)
    bound = sum(delivery_bound(specs[c][r], max(lite[c].itemsize, 1), lite[c].string)
                for c in range(6) for r in range(len(sizes)))
    assert plan.nbytes <= bound + plan.desc.nbytes + ALIGN * 16


@pytest.mark.parametrize("keep_encoded,decoded", [(False, False), (True, False), (True, True)],
                         ids=["decoded", "kept-encoded", "kept-encoded-but-one-column"])
def test_a_paged_plan_rebuilds_each_page_and_keeps_encoded_sections_as_stored(keep_encoded, decoded):
    """``decoded``: the first column's pages are decoded all the same (plan_delivery's ``decoded``: a
    column the device cache keeps decoded, cache/placement.py)."""
    sizes, raws, specs, lite, dtypes, (ints, floats, flags, codes, strings, maybe) = _mixed_pages()
    plan = plan_delivery(lite, specs, paged=True, keep_encoded=keep_encoded,
                         decoded=frozenset({lite[0].name}) if decoded else frozenset())

    def kept(c: int) -> bool:
        return keep_encoded and not (decoded and c == 0)

    assert not plan.columns and len(plan.pages) == 6 and all(len(c) == len(sizes) for c in plan.pages)
    regions = [r for col in plan.pages for cp in col
               for r in (cp.data, cp.validity, cp.offsets, cp.chars, cp.encoded) if r is not None]
    assert all(off % ALIGN == 0 for off, _ in regions)
    ends = sorted((off, off + ln) for off, ln in regions)
    assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:]))  # no two outputs overlap
    encoded = sum(p.codec != "plain" for c in (0, 1, 2, 3, 5) for p in specs[c])
    assert encoded > 0
    # one launch of each kernel for the whole delivery; kept-encoded sections are never decoded
    to_decode = sum(p.codec != "plain" for c in (0, 1, 2, 3, 5) if not kept(c) for p in specs[c])
    assert (plan.decode is None) if not to_decode else (plan.decode.pages == to_decode)
    assert to_decode == (0 if keep_encoded and not decoded else encoded if not keep_encoded else
                         sum(p.codec != "plain" for p in specs[0]))
    # a page without NULLs gets no validity of its own (a column's other pages may have some)
    assert plan.unpack.pages == sum("validity" in p.sections for c in specs for p in c)
    assert plan.rebase.pages == len(sizes)
    _, out = run_plan_on_host(plan, lambda ci, pi, off, n: raws[ci][pi][off:off + n], dtypes)
    compared = 0
    for r, n in enumerate(sizes):
        for c, want in ((0, ints[r]), (1, floats[r]), (2, flags[r]), (3, codes[r][0]), (5, maybe[r].data)):
            got = out[c][r]
            spec = specs[c][r]
            if kept(c) and spec.codec != "plain":
                assert "data" not in got
                off, ln = spec.sections["data"]
                np.testing.assert_array_equal(got["encoded"], raws[c][r][off:off + ln])  # as stored
                values = codec.decode(got["encoded"], spec.codec, n, np.dtype(dtypes[c]))
            else:
                assert "encoded" not in got
                values = got["data"]
            mask = maybe[r].validity if c == 5 else slice(None)
            np.testing.assert_array_equal(np.asarray(values)[mask], np.asarray(want)[mask])
            compared += 1
        valid = out[3][r].get("validity")
        want_valid = codes[r][1]
        assert (valid is None) == ("validity" not in specs[3][r].sections)
        if valid is not None:
            np.testing.assert_array_equal(valid, np.ones(n, bool) if want_valid is None else want_valid)
        np.testing.assert_array_equal(out[5][r]["validity"], maybe[r].validity)
        s = out[4][r]
        got = Column(T.STRING, offsets=s["offsets"], chars=s["chars"], validity=s.get("validity"))
        assert got.to_arrow().to_pylist() == strings[r].to_arrow().to_pylist()
    assert compared == 5 * len(sizes)
    bound = sum(delivery_bound(specs[c][r], max(lite[c].itemsize, 1), lite[c].string, kept(c))
                for c in range(6) for r in range(len(sizes)))
    assert plan.nbytes <= bound + plan.desc.nbytes + ALIGN * 32
    with pytest.raises(ValueError, match="paged"):
        plan_delivery(lite, specs, keep_encoded=True)


def test_a_paged_plan_leaves_absent_pages_out():
    sizes, raws, specs, lite, dtypes, _ = _mixed_pages()
    gone = {(0, 1), (4, 2), (5, 0)}  # (column, row group) the consumer holds already
    marked = [[PageSpec(p.length, p.num_rows, p.codec, p.sections, p.where, (c, r) in gone)
               for r, p in enumerate(col)] for c, col in enumerate(specs)]
    full = plan_delivery(lite, specs, paged=True, keep_encoded=True)
    plan = plan_delivery(lite, marked, paged=True, keep_encoded=True)
    assert plan.nbytes < full.nbytes
    for c, r in gone:
        cp = plan.pages[c][r]
        assert (cp.data, cp.validity, cp.offsets, cp.chars, cp.encoded) == (None,) * 5
    assert not [cp for cp in plan.copies if (cp[0], cp[1]) in gone]
    assert len(plan.copies) == len(full.copies) - sum(1 for cp in full.copies if (cp[0], cp[1]) in gone)
    _, out = run_plan_on_host(plan, lambda ci, pi, off, n: raws[ci][pi][off:off + n], dtypes)
    assert out[0][1] == {} and out[0][0] and out[4][1]["offsets"].shape[0] == sizes[1] + 1  # the others as before
    with pytest.raises(ValueError, match="paged"):
        plan_delivery(lite, marked)


def _strings(values, validity):
    data = [v.encode() for v in values]
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in data])]).astype(np.int64)
    return Column(T.STRING, offsets=offsets, chars=np.frombuffer(b"".join(data), np.uint8).copy(),
                  validity=validity)


def test_damaged_sections_are_refused():
    col = Column(T.INT32, data=np.arange(100, dtype=np.int32))
    raw, spec = _page(col, codecs=())
    lite = [ColumnSpecLite("i", 4)]
    short = PageSpec(spec.length, 101, "plain", spec.sections, "page 3")
    with pytest.raises(CorruptDataError, match="page 3: section size"):
        plan_delivery(lite, [[short]])
    outside = PageSpec(16, 100, "plain", spec.sections, "page 4")
    with pytest.raises(CorruptDataError, match="page 4: section data lies outside"):
        plan_delivery(lite, [[outside]])
    s = _strings(["a", "bc"], None)
    raw, sspec = _page(s)
    bad = PageSpec(sspec.length, 3, "plain", sspec.sections, "page 5")
    with pytest.raises(CorruptDataError, match="page 5"):
        plan_delivery([ColumnSpecLite("s", 0, string=True)], [[bad]])
    with pytest.raises(ValueError):
        plan_delivery([ColumnSpecLite("i", 4), ColumnSpecLite("j", 4)],
                      [[spec], [PageSpec(spec.length, 99, "plain", spec.sections)]])


def test_cached_plan_is_made_once_per_reader_and_key() -> None:
    from hetdb.backend.gpu.batch_plan import cached_plan

    class Reader:  # (a table version: plans are kept while it lives)
        pass

    made = []

    def make():
        made.append(1)
        return object()

    r1, r2 = Reader(), Reader()
    a = cached_plan(r1, ("k", (True, False)), make)
    assert cached_plan(r1, ("k", (True, False)), make) is a and len(made) == 1
    assert cached_plan(r1, ("k", (False, True)), make) is not a and len(made) == 2  # other pages absent
    assert cached_plan(r2, ("k", (True, False)), make) is not a and len(made) == 3
