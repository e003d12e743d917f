"""The device side of the decoded placement without a GPU (exec/device_placement.py): a query's scans
as the physical plan has them, the forms of its columns from the manifest, the choice per table, and
the eviction of cached compressed pages of a column the choice has just made decoded (a
DevicePageCache over a DeviceMemoryBudget: both are GPU-free)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_data import build_ssb  # noqa: E402
from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu.memory import DeviceMemoryBudget  # noqa: E402
from hetdb.cache import DevicePageCache, PageKey  # noqa: E402
from hetdb.cache.pages import column_device_bytes  # noqa: E402
from hetdb.exec.device_placement import column_form, place_decoded, plan_scans  # noqa: E402


@pytest.fixture(scope="module")
def ssb(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("placement") / "ssb")
    build_ssb(path, 0.01, 4096)
    with hetdb.connect(path, device="cpu") as con:
        yield con


class _Stored:
    """Stands for a cached EncodedColumn (what the eviction looks at is ``device_page``)."""

    device_page = True


def _device(capacity: int) -> SimpleNamespace:
    cache = DevicePageCache(DeviceMemoryBudget(capacity), share=1.0)
    return SimpleNamespace(cache=cache, placement=None, placement_map={})


def test_a_query_s_columns_are_chosen_and_their_compressed_pages_evicted(ssb):
    engine = ssb._get_engine()
    db = engine.db
    queries = load_queries("ssb")
    q11, _ = engine.planned(queries["q1.1"])
    scans = dict(plan_scans(q11.physical))
    assert set(scans["lineorder"]) >= {"lo_orderdate", "lo_quantity", "lo_discount", "lo_extendedprice"}
    lineorder = db.table("lineorder")
    form = column_form(lineorder, "lo_quantity")
    assert form.key == ("lineorder", "lo_quantity") and form.cost > 0
    assert (form.stored, form.decoded) == (column_device_bytes(lineorder, "lo_quantity", True),
                                           column_device_bytes(lineorder, "lo_quantity", False))
    assert form.stored < form.decoded
    # room for everything decoded: every column q1.1 reads whose decoding helps is chosen
    device = _device(64 << 20)
    cache = device.cache
    for rg in range(lineorder.num_row_groups):
        for column in ("lo_quantity", "lo_revenue"):
            assert cache.put(PageKey("lineorder", lineorder.version, column, rg), _Stored(), 1000)
    got = place_decoded(device, db, q11.physical)
    costly = {c for c in scans["lineorder"] if column_form(lineorder, c).extra and column_form(lineorder, c).cost}
    assert "lo_quantity" in costly and got["lineorder"] >= costly
    # its cached compressed pages left; those of a column it does not decode stayed
    assert not any(k.column == "lo_quantity" for k in cache.keys())
    assert sum(k.column == "lo_revenue" for k in cache.keys()) == lineorder.num_row_groups
    changes = device.placement.changes
    assert place_decoded(device, db, q11.physical) is got and device.placement.changes == changes


def test_no_room_beside_the_stored_pages_decodes_nothing(ssb):
    engine = ssb._get_engine()
    q41, _ = engine.planned(load_queries("ssb")["q4.1"])
    device = _device(1 << 10)
    assert place_decoded(device, engine.db, q41.physical) == {}
    assert device.placement.decoded == frozenset()
