"""The streamer's paged deliveries without a GPU (stand-ins of stream_batch_host.py): a delivery keeps
copies of the pages the device cache admits and takes the pages it already holds as they are, a budget
for one delivery at a time single-buffers, string-codec pages go alone, overlapped deliveries start
small, zero-copy columns stay in the host tier and read the same, and scans stopped early or under a
tight budget return every reservation and pin. Every delivery must equal the host reader's row groups."""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa
import pytest
from stream_batch_host import (
    COLUMNS,
    ROWS,
    RPP,
    Verdicts,
    every_codec_table,
    host_tier,
    install_fake_gpu,
    scan,
)

from hetdb.backend.gpu import memory as gpu_memory
from hetdb.backend.gpu import stream as gpu_stream
from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache.router import PageRouter


@pytest.fixture()
def fake_gpu(monkeypatch):
    install_fake_gpu(monkeypatch)


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    return every_codec_table(tmp_path_factory)


class _Keeps(Verdicts):
    """A device cache that admits some pages and keeps what is put (pinned until unpinned)."""

    def __init__(self, admit: set[tuple[str, int]]) -> None:
        super().__init__(set())
        self.admit_pages, self.entries, self.pins = admit, {}, {}

    def reserve(self, nbytes, key=None, link_bytes=None, first_reuse=None, headroom=0) -> bool:
        if key is None:
            return False
        self.asked.append((key.column, key.row_group))
        return (key.column, key.row_group) in self.admit_pages

    def put(self, key, value, nbytes, pin=False, reserved=False, link_bytes=None, first_reuse=None) -> bool:
        assert reserved and pin and key not in self.entries
        self.entries[key] = value
        self.pins[key] = self.pins.get(key, 0) + 1
        return True

    def unpin(self, key) -> None:
        self.pins[key] -= 1


def test_a_paged_delivery_keeps_copies_of_admitted_pages(reader, fake_gpu, monkeypatch):
    from hetdb.cache import admission

    monkeypatch.setattr(admission, "ALIGNED_ADMISSION", False)  # (page by page: the cache picks pages)
    admit = {("c_delta", 2), ("s_dict", 3), ("c_nulls", 2)}
    cache = _Keeps(admit)
    b = DeviceMemoryBudget(1 << 30)
    compared = 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                 cache=cache, router=PageRouter("auto"), compressed=True) as s:
        steps = []
        for rgs, parts in s.deliveries():
            steps.append(rgs)
            for rg, part in zip(rgs, parts):
                want = reader.read_batch(COLUMNS, rg)
                for c in COLUMNS:
                    assert part[c].to_arrow().equals(want[c].to_arrow()), (c, rg)
                    compared += 1
    # the admitted pages rode along in the one delivery; the cache holds copies, equal to the pages
    assert steps == [(1, 2, 3, 4)] and compared == 4 * len(COLUMNS)
    assert {(k.column, k.row_group) for k in cache.entries} == admit
    for key, value in cache.entries.items():
        assert value.to_arrow().equals(reader.read_batch([key.column], key.row_group)[key.column].to_arrow())
        page = getattr(value, "device_page", None)
        own = [page.data if page is not None else value.data, value.validity, value.offsets, value.chars]
        assert all(a is None or a.base is None for a in own)  # copies, not views of the delivery's buffer
    assert all(n == 0 for n in cache.pins.values())  # unpinned once the step was done
    assert b.used_bytes == 0


def test_a_paged_delivery_asks_to_admit_a_row_groups_missing_pages_together(reader, fake_gpu):
    # the cache's verdict on a row group is asked once, with the first missing page's key: row
    # group 3 (verdict yes) is kept whole, the others not at all
    cache = _Keeps({(COLUMNS[0], 3)})
    b = DeviceMemoryBudget(1 << 30)
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                 cache=cache, router=PageRouter("auto"), compressed=True) as s:
        compared = 0
        for rgs, parts in s.deliveries():
            for rg, part in zip(rgs, parts):
                want = reader.read_batch(COLUMNS, rg)
                for c in COLUMNS:
                    assert part[c].to_arrow().equals(want[c].to_arrow()), (c, rg)
                    compared += 1
    assert compared == 4 * len(COLUMNS)
    assert cache.asked == [(COLUMNS[0], rg) for rg in (1, 2, 3, 4)]
    assert {(k.column, k.row_group) for k in cache.entries} == {(c, 3) for c in COLUMNS}
    assert all(n == 0 for n in cache.pins.values()) and b.used_bytes == 0


class _Holds(_Keeps):
    """``_Keeps`` that also holds some pages already (device-cache hits, pinned by ``get``)."""

    def __init__(self, held: dict) -> None:
        super().__init__(set())
        self.held = held

    def get(self, key, pin=False):
        value = self.held.get((key.column, key.row_group))
        if value is not None and pin:
            self.pins[key] = self.pins.get(key, 0) + 1
        return value


def test_a_paged_delivery_takes_cached_pages_as_they_are(reader, fake_gpu):
    held = {("c_f64", 3): reader.read_batch(["c_f64"], 3)["c_f64"],
            ("s_plain", 2): reader.read_batch(["s_plain"], 2)["s_plain"]}
    cache = _Holds(held)
    b = DeviceMemoryBudget(1 << 30)
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                 cache=cache, router=PageRouter("auto"), compressed=True) as s:
        steps = []
        for rgs, parts in s.deliveries():
            steps.append(rgs)
            for rg, part in zip(rgs, parts):
                want = reader.read_batch(COLUMNS, rg)
                for c in COLUMNS:
                    if (c, rg) in held:
                        assert part[c] is held[(c, rg)]  # the cached Column itself: nothing moved
                    assert part[c].to_arrow().equals(want[c].to_arrow()), (c, rg)
    assert steps == [(1, 2, 3, 4)]
    routes = s.route_counts()
    assert routes.pages["gpu_resident"] == 2 and routes.pages["disk_direct"] == 4 * len(COLUMNS) - 2
    assert s.stats.pages_cached == 2 and s.stats.pages_read == 4 * len(COLUMNS) - 2
    assert all(n == 0 for n in cache.pins.values()) and len(cache.pins) == 2
    assert b.used_bytes == 0


@pytest.mark.parametrize("compressed", [False, True])
def test_a_budget_for_one_delivery_at_a_time_single_buffers(reader, fake_gpu, compressed):
    """A budget that holds one delivery but not two: the step the consumer finished with is given
    back before the next one is reserved (single-buffered), instead of OutOfMemoryError."""
    from hetdb.errors import OutOfMemoryError

    rgs = [1, 2, 3]
    probe = DeviceMemoryBudget(1 << 30)
    sizes = []
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=probe, batch_bytes=1, row_groups=rgs,
                                 router=PageRouter("disk"), compressed=compressed) as s:
        for _ in s.deliveries():
            sizes.append(probe.used_bytes)
    tight = DeviceMemoryBudget(max(sizes) + min(sizes) // 2)  # room for one delivery, not two
    compared = 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=tight, batch_bytes=1, row_groups=rgs,
                                 router=PageRouter("disk"), compressed=compressed) as s:
        for got, parts in s.deliveries():
            assert tight.used_bytes <= tight.limit_bytes
            for rg, part in zip(got, parts):
                assert part["c_delta"].to_arrow().equals(reader.read_batch(["c_delta"], rg)["c_delta"].to_arrow())
                compared += 1
    assert compared == len(rgs) and tight.used_bytes == 0
    with pytest.raises(OutOfMemoryError):  # less than one delivery: still refused, with the reason
        with gpu_stream.PageStreamer(reader, COLUMNS, budget=DeviceMemoryBudget(min(sizes) // 2), batch_bytes=1,
                                     row_groups=rgs, router=PageRouter("disk"), compressed=compressed) as s:
            for _ in s.deliveries():
                pass


def test_a_batch_of_string_codec_pages_alone(reader, fake_gpu):
    """Only string-codec columns: the delivery plan is empty, the batch still spans its row groups."""
    assert {reader.page_codec("s_plain", rg) for rg in range(1, 5)} <= {"offsets", "lz4"}
    b = DeviceMemoryBudget(1 << 30)
    steps = []
    with gpu_stream.PageStreamer(reader, ["s_plain"], budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                 router=PageRouter("disk")) as s:
        for rgs, batch in s.batches():
            steps.append(rgs)
            want = pa.concat_arrays([reader.read("s_plain", rg).to_arrow() for rg in rgs])
            assert batch.num_rows == len(want) and batch["s_plain"].to_arrow().equals(want)
    assert steps == [(1, 2, 3, 4)] and s.stats.rows == ROWS - RPP and b.used_bytes == 0


def test_overlapped_deliveries_start_small_and_equal_the_reader(reader, fake_gpu):
    # gpu_delivery_overlap: the first deliveries aim at 1/8, 1/4, 1/2 of the batch size (the decode
    # launches' stream is the GPU's business: here the rows must be the same, in order)
    b = DeviceMemoryBudget(1 << 30)
    rgs = [1, 2, 3, 4] * 4
    link = sum(reader.page_location(c, rg).length for c in COLUMNS for rg in [1, 2, 3, 4])
    s, steps, compared = scan(reader, b, batch_bytes=link, row_groups=rgs, router=PageRouter("disk"),
                               overlap=True)
    assert [r for step in steps for r in step] == rgs and compared == 4 * (ROWS - RPP) * len(COLUMNS)
    assert len(steps[0]) < len(steps[2]) and b.used_bytes == 0
    _, plain, _ = scan(reader, b, batch_bytes=link, row_groups=rgs, router=PageRouter("disk"))
    assert len(plain) < len(steps)


@pytest.mark.parametrize("compressed", [True, False], ids=["others-as-stored", "others-decoded"])
def test_zero_copy_columns_stay_in_the_host_tier_and_read_the_same(reader, fake_gpu, monkeypatch, compressed):
    # gpu_zero_copy: a paged delivery leaves random-access pages of the chosen columns in the pinned
    # host tier; the consumer gets encoded columns over those very bytes (here decoded by the CPU
    # codec), pinned until the step after the one that read them, and nothing of them is copied
    from hetdb.backend.gpu.stream_pages import RANDOM_ACCESS_CODECS

    monkeypatch.setattr(gpu_memory, "host_view", lambda address, nbytes, owner:
                        np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address)))
    rgs = [1, 2, 3, 4]
    chosen = [c for c in COLUMNS if all(reader.page_codec(c, rg) in RANDOM_ACCESS_CODECS
                                        and "validity" not in reader.page_sections(c, rg) for rg in rgs)]
    assert chosen  # the fixture has such columns
    b = DeviceMemoryBudget(1 << 30)
    host = host_tier()
    scan(reader, b, batch_bytes=1 << 30, row_groups=rgs, host_cache=host, compressed=True)  # loads the tier
    s, steps, compared = scan(reader, b, batch_bytes=1 << 30, row_groups=rgs, host_cache=host,
                               compressed=compressed, router=PageRouter("copy"),
                               zero_copy=frozenset(chosen + ["c_rle"]))
    # one Batch per row group either way (the consumer's kernel reads them through one page table)
    assert steps == [(rg,) for rg in rgs] and compared == (ROWS - RPP) * len(COLUMNS)
    routes = s.route_counts()
    # c_rle's rle pages are not random-access: copied (a page of it in another codec is not)
    left = {(c, rg) for c in chosen + ["c_rle"] for rg in rgs if reader.page_codec(c, rg) in RANDOM_ACCESS_CODECS
            and "validity" not in reader.page_sections(c, rg)}
    assert len(left) > len(chosen) * len(rgs) - 1 and routes.pages["host_zero_copy"] == len(left)
    moved = sum(reader.page_location(c, rg).length for c in COLUMNS for rg in rgs if (c, rg) not in left)
    assert s.stats.bytes_host == moved and routes.bytes["host_zero_copy"] == sum(
        reader.page_location(c, rg).length for c, rg in left)
    assert b.used_bytes == 0 and host.pinned_bytes() == 0


def test_a_batch_step_reads_in_place_columns_from_the_tier_it_pinned(reader, fake_gpu, monkeypatch):
    from hetdb.backend.gpu.stream_pages import RANDOM_ACCESS_CODECS
    from hetdb.cache.pages import page_info

    monkeypatch.setattr(gpu_memory, "host_view", lambda address, nbytes, owner:
                        np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address)))
    col = next(c for c in COLUMNS if all(reader.page_codec(c, rg) in RANDOM_ACCESS_CODECS
                                         and "validity" not in reader.page_sections(c, rg) for rg in range(5)))
    host = host_tier()
    b = DeviceMemoryBudget(1 << 30)
    scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2], host_cache=host, compressed=True)
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, host_cache=host, batch_bytes=1 << 30, row_groups=[1, 2],
                                 compressed=True, router=PageRouter("copy"), zero_copy=frozenset([col])) as s:
        rgs, batch = next(s.batches())
        page = batch[col].device_page
        entry = host.lookup(page_info(reader, col, rgs[0], True).host_key)
        assert entry is not None and entry.pins >= 1  # pinned while the step may read it
        assert page.data.ctypes.data == entry.runs[0].ctypes.data + reader.page_sections(col, rgs[0])["data"][0]
    assert host.pinned_bytes() == 0


def test_overlapped_scans_stopped_early_or_under_a_tight_budget_return_everything(reader, fake_gpu):
    # with overlap the next delivery is made before the consumer gets this one (when the budget has
    # room for three); an early stop then holds two, and a budget of one delivery still streams
    host = host_tier()
    one = max(sum(reader.page_location(c, rg).length for c in COLUMNS) for rg in range(1, 5))
    b = DeviceMemoryBudget(1 << 30)
    s = gpu_stream.PageStreamer(reader, COLUMNS, budget=b, host_cache=host, batch_bytes=one + 1,
                                row_groups=[1, 2, 3, 4] * 2, overlap=True)
    it = s.batches()
    next(it)
    assert s.routes.deliveries == 2 and b.used_bytes > 0  # one ahead
    s.close()
    assert b.used_bytes == 0 and host.pinned_bytes() == 0
    most = 0
    for rg in [1, 2, 3, 4]:
        probe = DeviceMemoryBudget(1 << 30)
        scan(reader, probe, batch_bytes=1, row_groups=[rg], router=PageRouter("disk"))
        most = max(most, probe.peak_bytes)
    tight = DeviceMemoryBudget(most + 1)  # room for one delivery at a time: none ahead
    _, steps, compared = scan(reader, tight, batch_bytes=1, row_groups=[1, 2, 3, 4], router=PageRouter("disk"),
                               overlap=True)
    assert steps == [(1,), (2,), (3,), (4,)] and compared == (ROWS - RPP) * len(COLUMNS)
    assert tight.used_bytes == 0


@pytest.mark.parametrize("ahead", [True, False])
def test_a_paged_scan_beside_the_device_cache_delivers_one_ahead(reader, fake_gpu, monkeypatch, ahead):
    """Pages kept as stored, a device cache in play that admits none of them (a working set larger
    than the cache): the next delivery's copies are queued before the consumer takes this one
    (stream_batch.AHEAD_PAGED; off: none ahead), and every row group still equals the reader's."""
    from hetdb.backend.gpu import stream_batch

    monkeypatch.setattr(stream_batch, "AHEAD_PAGED", ahead)
    one = max(sum(reader.page_location(c, rg).length for c in COLUMNS) for rg in range(1, 5))
    cache = _Keeps(set())
    b = DeviceMemoryBudget(1 << 30)
    compared = 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, host_cache=host_tier(), batch_bytes=one + 1,
                                 row_groups=[1, 2, 3, 4], cache=cache, router=PageRouter("auto"),
                                 compressed=True, overlap=True) as s:
        made = []
        for rgs, parts in s.deliveries():
            made.append(s.routes.deliveries)
            for rg, part in zip(rgs, parts):
                want = reader.read_batch(COLUMNS, rg)
                assert all(part[c].to_arrow().equals(want[c].to_arrow()) for c in COLUMNS), rg
                compared += 1
    assert compared == 4
    assert made[0] == (2 if ahead else 1), made  # (at the consumer's first step)
    assert b.used_bytes == 0 and not cache.entries


def test_one_delivery_goes_ahead_with_room_for_two(reader, fake_gpu):
    """A budget with room for two deliveries, not three: the next delivery is still made before the
    consumer takes this one (the step the consumer finished with is given back first), the budget
    is never exceeded, and every row group equals the reader's."""
    one = max(sum(reader.page_location(c, rg).length for c in COLUMNS) for rg in range(1, 5))
    args = dict(host_cache=host_tier(), batch_bytes=one + 1, row_groups=[1, 2, 3, 4], router=PageRouter("auto"),
                compressed=True, overlap=True)
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=DeviceMemoryBudget(1 << 30), cache=_Keeps(set()),
                                 **args) as probe:
        probe._plan_groups()
        need = probe._group_need
    budget = DeviceMemoryBudget(2 * need + need // 2)
    cache = _Keeps(set())
    compared = 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=budget, cache=cache, **args) as s:
        made = []
        for rgs, parts in s.deliveries():
            made.append(s.routes.deliveries)
            assert budget.used_bytes <= budget.limit_bytes
            for rg, part in zip(rgs, parts):
                want = reader.read_batch(COLUMNS, rg)
                assert all(part[c].to_arrow().equals(want[c].to_arrow()) for c in COLUMNS), rg
                compared += 1
    assert compared == 4 and len(made) >= 3
    assert all(m == i + 2 for i, m in enumerate(made[:-1])), made  # one made ahead at every step but the last
    assert budget.used_bytes == 0 and not cache.entries


def test_a_scan_under_a_tight_budget_admits_what_its_deliveries_leave_free(reader, fake_gpu):
    """Paged deliveries (pages kept as stored, as under a tight budget by default). A streaming scan asks the device cache to keep free what its deliveries hold at most at once:
    the consumer's and the one being made next to it (scheduled groups hold host memory only), not
    one per scheduled group too. With deliveries of a quarter of the budget each, that left nothing
    to admit (every hot run copied every page again); now the later scans find every page cached."""
    from hetdb.cache import DevicePageCache

    compressed = True

    with gpu_stream.PageStreamer(reader, COLUMNS, budget=DeviceMemoryBudget(1 << 30), batch_bytes=1 << 30,
                                 compressed=compressed) as probe:
        whole = sum(b[1] for b in (probe._rg_bounds(rg) for rg in probe.row_groups))
    limit = 2 * whole  # deliveries of at most a quarter of it: about half the scan each
    budget = DeviceMemoryBudget(limit)
    cache = DevicePageCache(budget, share=0.5)
    hits = []
    for _ in range(3):
        with gpu_stream.PageStreamer(reader, COLUMNS, budget=budget, batch_bytes=1 << 30, cache=cache,
                                     router=PageRouter("auto"), compressed=compressed, overlap=True) as s:
            for rgs, parts in s.deliveries():
                for rg, part in zip(rgs, parts if len(parts) == len(rgs) else [None] * len(rgs)):
                    if part is not None:
                        want = reader.read_batch(COLUMNS, rg)
                        assert all(part[c].to_arrow().equals(want[c].to_arrow()) for c in COLUMNS), rg
            groups = len(s._plan_groups())
            assert groups >= 2 and s._group_need <= limit // 4 + max(b[1] for b in map(s._rg_bounds, s.row_groups))
            # (a cache in play: its admissions keep room for two deliveries, which is what one ahead
            # takes: _deliver_ahead)
            assert s._ring_need == 2 * s._group_need
        hits.append((s.stats.pages_cached, s.stats.pages_read))
        assert budget.used_bytes == cache.used_bytes > 0
    # the scan's pages fit in the cache beside two deliveries: the first scan admits every one and
    # the next ones copy nothing (with room kept for four deliveries, 13 of the 40 pages were copied
    # again on every scan)
    pages = reader.num_row_groups * len(COLUMNS)
    assert hits == [(0, pages), (pages, 0), (pages, 0)]
