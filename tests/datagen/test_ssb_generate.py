"""SSB sizes (pure formulas), determinism across worker counts, and generation into the table store."""

from __future__ import annotations

import pyarrow as pa
import pytest
from datagen_helpers import ssb_arrow

from hetdb.datagen import ssb
from hetdb.errors import InputError
from hetdb.storage import Database


@pytest.mark.parametrize("sf, orders, customer, supplier, part, partkey_range", [
    (1, 1_500_000, 30_000, 2_000, 200_000, 200_000),
    (10, 15_000_000, 300_000, 20_000, 800_000, 600_000),
    (20, 30_000_000, 600_000, 40_000, 1_000_000, 600_000),  # ln 20 = 2.996,
    (100, 150_000_000, 3_000_000, 200_000, 1_400_000, 1_000_000),
    (0.1, 150_000, 3_000, 200, 20_000, 20_000),
    (0.01, 15_000, 300, 20, 2_000, 2_000),
])
def test_sizes(sf, orders, customer, supplier, part, partkey_range):
    sz = ssb.sizes(sf)
    assert (sz.orders, sz.customer, sz.supplier, sz.part, sz.partkey_range, sz.date) == (
        orders, customer, supplier, part, partkey_range, 2557)
    assert sz.lineorder_expected == 4 * orders
    assert sz.partkey_range <= sz.part


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_bad_scale_factor(bad):
    with pytest.raises(InputError, match="scale factor"):
        ssb.sizes(bad)


def test_same_data_with_one_and_two_workers(monkeypatch):
    # Small chunks so SF 0.01 spans several chunks and both workers really produce some.
    monkeypatch.setattr(ssb, "ORDERS_PER_CHUNK", 4_000)
    monkeypatch.setattr(ssb, "DIM_ROWS_PER_CHUNK", 700)
    one, two = ssb_arrow(0.01, workers=1), ssb_arrow(0.01, workers=2)
    assert len(list(ssb.batches(0.01, "lineorder"))) == 4
    for name in ssb.TABLES:
        assert one[name].num_rows > 0
        assert one[name].equals(two[name]), name


def test_generate_into_store(tmp_path):
    db = Database.open(str(tmp_path / "db"), create=True)
    rows = ssb.generate(db, 0.01, workers=2, progress=False, rows_per_page=1 << 14)
    expected = ssb_arrow(0.01)
    assert set(rows) == set(ssb.TABLES) == set(db.tables())
    assert rows["customer"] == 300 and rows["date"] == 2557 and 59_000 < rows["lineorder"] < 61_000
    for name in ssb.TABLES:
        stored = db.table(name).arrow()
        assert stored.num_rows == rows[name] == expected[name].num_rows
        assert stored.schema.names == [f.name for f in ssb.SCHEMAS[name]]
        assert stored.cast(expected[name].schema).equals(expected[name]), name
    # a second run replaces the tables
    assert ssb.generate(db, 0.01, workers=1) == rows
    assert db.table("lineorder").num_rows == rows["lineorder"]


def test_generate_arrow_types(tmp_path):
    db = Database.open(str(tmp_path / "db"), create=True)
    ssb.generate(db, 0.01, workers=1)
    lo = db.table("lineorder").arrow().schema
    assert lo.field("lo_orderkey").type == pa.int64()
    assert lo.field("lo_orderdate").type == pa.int32()
    assert lo.field("lo_revenue").type == pa.int32()
    shipmode = lo.field("lo_shipmode").type
    assert pa.types.is_string(shipmode) or pa.types.is_dictionary(shipmode)


def test_failure_keeps_the_committed_table(tmp_path, monkeypatch):
    db = Database.open(str(tmp_path / "db"), create=True)
    rows = ssb.generate(db, 0.01, workers=1)
    monkeypatch.setattr(ssb, "ORDERS_PER_CHUNK", 4_000)
    real = ssb.lineorder_batch

    def failing(sf, chunk, start, stop):
        if chunk == 2:
            raise RuntimeError("disk on fire")
        return real(sf, chunk, start, stop)

    monkeypatch.setattr(ssb, "lineorder_batch", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ssb.generate(db, 0.02, workers=1)
    assert db.table("lineorder").num_rows == rows["lineorder"]  # the old version is still the one read
    assert db.table("customer").num_rows == 600  # tables finished before the failure were replaced
