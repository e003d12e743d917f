"""Zone maps against the data, and the dictionary → plain switch of string columns."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from storage_helpers import assert_tables_equal, edge_table, schema_of

from hetdb.storage import Database, ZoneMap
from hetdb.storage import dictionary as dictionary_mod


def _expected_zone(values: list, kind: str) -> tuple:
    nulls = sum(v is None for v in values)
    present = [v for v in values if v is not None]
    nans = 0
    if kind == "float64":
        nans = sum(math.isnan(v) for v in present)
        present = [v for v in present if not math.isnan(v)]
    if kind == "string":
        lo = min(present) if present else None
        hi = max(present) if present else None
        lo = lo if lo is not None and len(lo.encode()) <= 64 else None
        hi = hi if hi is not None and len(hi.encode()) <= 64 else None
        return lo, hi, nulls, nans
    if not present:
        return None, None, nulls, nans
    return min(present), max(present), nulls, nans


@pytest.mark.parametrize("rows_per_page", [4, 7, 1000])
def test_zone_maps_match_data(db: Database, rows_per_page: int) -> None:
    src = edge_table(50)
    with db.create_table("t", schema_of(src), rows_per_page=rows_per_page) as w:
        w.append_arrow(src)
    r = db.table("t")
    checked = 0
    for spec in r.schema:
        for rg in range(r.num_row_groups):
            start, n = r.row_group_start(rg), r.row_group_rows(rg)
            # physical values: what Column.to_arrow inverts (scaled decimals, days, microseconds)
            col = r.read(spec.name, rg)
            page = src.column(spec.name).slice(start, n).combine_chunks()
            if spec.dtype.kind == "string":
                values = page.to_pylist()
            else:
                phys = np.asarray(col.data).tolist()
                valid = page.is_valid().to_pylist()
                values = [v if ok else None for v, ok in zip(phys, valid)]
            zm = r.zone_map(spec.name, rg)
            assert isinstance(zm, ZoneMap)
            assert zm.num_rows == n
            lo, hi, nulls, nans = _expected_zone(values, spec.dtype.kind)
            assert (zm.null_count, zm.nan_count) == (nulls, nans), (spec.name, rg)
            assert zm.min == lo and zm.max == hi, (spec.name, rg, zm, lo, hi)
            assert type(zm.min) is type(lo) or lo is None
            checked += 1
    assert checked == r.num_row_groups * len(r.schema)


def test_float_zone_map_ignores_nan_and_null(db: Database) -> None:
    t = pa.table({"f": pa.array([float("nan"), None, 2.5, float("-inf"), float("nan")]),
                  "g": pa.array([float("nan"), None, float("nan"), None, None])})
    with db.create_table("t", schema_of(t), rows_per_page=100) as w:
        w.append_arrow(t)
    r = db.table("t")
    assert r.zone_map("f", 0) == ZoneMap(float("-inf"), 2.5, 1, 2, 5)
    assert r.zone_map("g", 0) == ZoneMap(None, None, 3, 2, 5)


def test_long_strings_have_no_bounds(db: Database) -> None:
    t = pa.table({"s": ["a" * 65, "b", "é" * 40]})  # 'é' * 40 is 80 bytes
    with db.create_table("t", schema_of(t)) as w:
        w.append_arrow(t)
    zm = db.table("t").zone_map("s", 0)
    assert zm.min is None and zm.max is None and zm.null_count == 0


def test_dictionary_switches_to_plain_mid_column(db: Database) -> None:
    few = [["x", "y", None, "x"][i % 4] for i in range(40)]
    many = [f"unique-{i}" for i in range(60)]
    t = pa.table({"s": few + many + few})
    with db.create_table("t", schema_of(t), rows_per_page=10) as w:
        w.append_arrow(t)
    r = db.table("t")
    encodings = [r.page_encoding("s", rg) for rg in range(r.num_row_groups)]
    assert encodings[:4] == ["dict"] * 4
    assert "plain" in encodings
    switch = encodings.index("plain")
    assert all(e == "plain" for e in encodings[switch:])  # once plain, stays plain
    d = r.dictionary("s")
    assert d is not None and d.validity is None
    assert set(d.to_pylist()) >= {"x", "y"}
    pages = [r.read("s", rg) for rg in range(switch)]
    assert all(p.dictionary is d for p in pages)  # one shared object
    assert r.read("s", switch).is_plain_string
    assert assert_tables_equal(r.arrow(), t) == 140


def test_dictionary_value_limit(db: Database, monkeypatch) -> None:
    monkeypatch.setattr(dictionary_mod, "MAX_DICT_VALUES", 5)
    vals = [f"v{i % 3}" for i in range(30)] + [f"w{i % 4}" for i in range(30)]
    t = pa.table({"s": vals})
    with db.create_table("t", schema_of(t), rows_per_page=10) as w:
        w.append_arrow(t)
    r = db.table("t")
    encodings = [r.page_encoding("s", rg) for rg in range(r.num_row_groups)]
    assert encodings == ["dict"] * 3 + ["plain"] * 3
    assert len(r.dictionary("s")) == 3
    assert assert_tables_equal(r.arrow(), t) == 60


def test_dictionary_codes_stable_in_first_appearance_order(db: Database) -> None:
    t = pa.table({"s": ["b", "a", "b", "b", "c", "a", "a", "c", "b", "c", "c", "a"]})
    with db.create_table("t", schema_of(t), rows_per_page=4) as w:
        w.append_arrow(t)
    r = db.table("t")
    assert r.dictionary("s").to_pylist() == ["b", "a", "c"]
    assert r.read("s", 0).data.tolist() == [0, 1, 0, 0]
    assert r.read("s", 2).data.tolist() == [0, 2, 2, 1]


def test_all_null_string_column_is_dictionary_with_empty_dictionary(db: Database) -> None:
    t = pa.table({"s": pa.array([None] * 9, pa.string())})
    with db.create_table("t", schema_of(t), rows_per_page=4) as w:
        w.append_arrow(t)
    r = db.table("t")
    assert r.page_encoding("s", 0) == "dict"
    assert len(r.dictionary("s")) == 0
    assert assert_tables_equal(r.arrow(), t) == 9
