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


@pytest.mark.parametrize("pass_paged", [True, False])
def test_a_scan_passing_through_delivers_the_columns_kept_decoded_as_stored(monkeypatch, pass_paged):
    # the placement's decoded columns are for the pages the device cache holds: a scan that passes
    # through it (a warm first scan) delivers them as stored (scan_device.PASS_PAGED), one that reads
    # or fills the cache decodes them on arrival
    from hetdb.exec.operators import scan_device
    from hetdb.exec.operators.scan_device import DeviceScanState, streamer_args

    monkeypatch.setattr(scan_device, "PASS_PAGED", pass_paged)
    reader = SimpleNamespace(name="lineorder")
    device = SimpleNamespace(budget="budget", cache="cache", host_tier=lambda options: "tier")
    options = SimpleNamespace(gpu_compressed_cache=True, gpu_batch_bytes=0, route="auto")
    ctx = SimpleNamespace(device=device, options=options,
                          decoded_columns={"lineorder": frozenset({"lo_revenue"})})
    op = SimpleNamespace(scan=SimpleNamespace(column_names=["lo_orderdate", "lo_revenue"]))
    for through in (True, False):
        state = DeviceScanState(reader)
        state.pass_through = through
        args, kwargs = streamer_args(op, ctx, state, [0, 1])
        assert args == (reader, ["lo_orderdate", "lo_revenue"], [0, 1])
        want = frozenset() if through and pass_paged else frozenset({"lo_revenue"})
        assert kwargs["decoded"] == want, (through, pass_paged)
        assert kwargs["compressed"] is True
