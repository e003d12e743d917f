"""Batches of row groups for the GPU: ``PageStreamer.batches()`` (mixed into ``stream.py``).

With ``batch_bytes`` > 0 (connection option ``gpu_batch_bytes``) the streamer groups consecutive row
groups into deliveries of about ``batch_bytes`` link bytes (``batch_plan.plan_groups``; at most a quarter of the GPU budget each) and
moves each run of consecutive row groups whose pages are all transient — none in the device cache,
none the cache admits — as ONE delivery: one device allocation, the host->device copies of every
section into its place, at most one launch of each batched kernel for all columns (``batch.py``).
The consumer gets one Batch spanning the run's row groups — or, with ``gpu_compressed_cache``
(``paged``), one Batch per row group out of the same buffer, whose encoded pages stay as stored
(``EncodedColumn``s: no decode launch; the fused kernel reads them all through one page table); a
page the cache admits rides along there, copied device to device into arrays the cache keeps. A row
group with a cached page (or, not paged, an admitted one) is delivered on its own, page by page as before (the cache keeps what it admits; its verdict
is asked for every page of a group, in page order, before any page of the group is moved); a run
also ends where a string column changes between dictionary and plain pages, or between plain pages
in codec "plain" and in a string codec (LZ4 chunks, encoded offsets: a delivery decodes such a
column's pages one by one and concatenates them, ``_coded_column``). Pages and bytes are counted per page in ``StreamStats`` and the
route counts either way; ``RouteCounts.deliveries`` counts the steps.

Ordering is that of the per-row-group pipeline: ``depth`` groups are scheduled ahead (their reads
into the group's ring slot, laid out column by column so back-to-back pages coalesce into one copy);
a group's memory is released when the consumer moves past it (the copy stream waits on an event of
the consumer's stream first).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetdb.backend.gpu.batch_plan import (
    ColumnSpecLite,
    DeliveryPlan,
    PageSpec,
    cached_plan,
    delivery_bound,
    plan_delivery,
    plan_groups,
)
from hetdb.backend.gpu.stream_columns import DeliveryColumns
from hetdb.backend.gpu.stream_io import decode_stream
from hetdb.backend.gpu.stream_pages import (
    _Page,
    _RowGroup,
    count_delivery,
    keeps_compressed,
    release_batches,
    zero_copy_address,
)
from hetdb.backend.gpu.upload import note_copies
from hetdb.cache.admission import admit_row_groups
from hetdb.cache.pages import memoized, page_info
from hetdb.cache.router import Route
from hetdb.column import Batch

DEFAULT_BATCH_BYTES = 64 << 20
PRIMED_BATCHES = 4  # a primed scan's deliveries aim at this many times ``batch_bytes``
# A paged scan beside the device cache (pages kept compressed, a budget too small for the working set:
# SSB SF 20 hot at 10% copies 0.3-0.9 GB per run) delivers one ahead as a scan past the cache does:
# the next delivery's copies are queued before the consumer takes this one, instead of after its kernel
# is launched (the link then waited for the host's work of every step). False: not ahead (A/B).
AHEAD_PAGED = True
# A primed scan's last deliveries aim at half, a quarter, ... 1/32 of its target (batch_plan.plan_groups
# ``tail``): after the last copy only the last delivery's decode and kernel remain, and a primed
# delivery of 4 x 64 MiB took 1.2-2.5 ms to decode after its copies (H100, SSB SF 20 warm, 4a9eb6f:
# q4.1's last kernel ended 1.95 ms after its last copy). Primed fact scans only (``prime``'s ``tail``):
# their deliveries' host work is done before the consumer asks, the extra ones cost the consumer
# nothing; a dimension scan's last copies are done long before its pipeline runs. 0: no tail (A/B).
# 3 until session 20: its last delivery of an eighth (q1.1: 7.8M rows) still decoded 0.36 ms after its
# copy, with 5 0.10 ms; H100, warm_timeline, same process, 7 runs, q1.1-q4.1: geomean 18.62 ms against
# 18.86 (q3.1 17.0 / 17.3, q4.1 26.5 / 26.8; session 20 checkpoint, main 98eace8a).
TAIL_RAMP = 5
# A scan past the device cache (a first scan passing through, route 'copy') under gpu_compressed_cache
# whose columns are all kept decoded (exec/device_placement.py) delivers as one Batch, as an
# uncompressed scan does: paged, it handed out a Batch per row group (a Column per page, a page
# table per delivery) for pages decoded on arrival all the same, ~1 ms of host work more per
# delivery (H100, SSB SF 20 warm at a 50% budget, main bd6a5185: q1.1's early scan took 11.9 ms to
# queue its 8 deliveries against 2.5 unlimited, and its kernels ran after every copy was done: 18.8
# ms against 12.4). True: paged all the same (A/B: warm_timeline switch pageddecoded=1).
PAGED_DECODED = False
# A warm paged delivery of fixed-width pages without NULLs hands out its Batches lazily
# (backend/gpu/paged_parts.py): a fused kernel reads its pages through the plan's layout, no Column
# per page made. False: every page's Column made with the delivery (A/B: warm_timeline lazypaged=0).
LAZY_PAGED = True
# A primed scan's first deliveries ramp up from a quarter of its target (two steps) instead of an eighth
# (three): the consumer comes milliseconds later (after the pipelines before it), so what the first
# deliveries must do is start the link early and keep it busy while the host makes the dimension scans
# and the rest of the primed deliveries (H100, SSB SF 20 warm, 4a9eb6f: the link sat idle 1.0-1.7 ms
# after a 34 MB first delivery until the second one's copies were queued). With the fact scan's first
# two deliveries queued before the dimension scans (exec/early_scan.FIRST_DELIVERIES 2), a quarter and a
# half: the first copy comes after less host work (H100 session 18 checkpoint 2, with FIRST_DELIVERIES
# 2 against half and one: q1.1/q2.1/q3.1/q4.1 13.4/21.0/17.4/26.9 ms against 13.5/23.1/17.7/27.8 for
# main's, same process). 1: from half (session 17); 3: as a scan that is not primed.
PRIMED_RAMP = 2


@dataclass
class _Unit:
    """What the consumer gets at one step: a batch of row groups (``buffer`` set; one Batch spanning
    them, or one per row group when paged) or one row group delivered page by page (``rg`` set)."""

    row_groups: tuple[int, ...]
    batches: list[Batch]
    rg: _RowGroup | None = None
    buffer: Any = None
    transient: int = 0
    kept: list = field(default_factory=list)  # keys of pages a paged delivery put in the cache (pinned)
    in_place: list = field(default_factory=list)  # host-tier pages its kernel reads in place (pinned)
    ready: list = field(default_factory=list)  # events the consumer's stream waits on before using it


def _string_plain(spec: Any, page: _Page) -> bool:
    return spec.dtype.kind == "string" and page.encoding == "plain"


def _string_coded(spec: Any, page: _Page) -> bool:
    """A plain-string page in a string codec (hetdb.codec.strings: encoded offsets, LZ4 chunks): a
    delivery decodes its pages one by one (``_coded_column``) instead of through the plan."""
    return _string_plain(spec, page) and page.codec != "plain"


class BatchedDelivery(DeliveryColumns):
    """The batched iteration of ``PageStreamer`` (see the module docstring)."""

    _reading_ahead = False  # ``read_ahead`` is scheduling the first groups (no delivery is made)
    # the ramp's steps (plan_groups ``ramp``) when set; None: as ``overlap`` says. A scan whose cached
    # row groups run as one launch beside it (exec/resident_split.py) takes none: short first
    # deliveries start nothing early there, and each one's kernel must run before the copy stream may
    # reuse its memory (behind the launch over cached pages, the link waited for it)
    ramp_steps: int | None = None

    def deliveries(self) -> Iterator[tuple[tuple[int, ...], list[Batch]]]:
        """Iterate ``(row groups, Batches)``, one step per delivery: with batching on
        (``batch_bytes``) several consecutive row groups, as one Batch spanning them or — when pages
        stay compressed (``paged``) — one Batch per row group out of one buffer; else one row group.
        The arrays stay valid until the next step."""
        if self._gen is not None or self._closed:
            raise RuntimeError("a PageStreamer streams once; make a new one for another scan")
        if not self.batching:
            self._gen = self._iterate()
            return self._wrapper(self._row_groups_as_deliveries(self._gen))
        self._gen = self._iterate_batches()
        return self._gen

    def prime(self, nbytes: int, tail: bool = True) -> Iterator[tuple[tuple[int, ...], list[Batch]]] | None:
        """Start ``deliveries()`` before a consumer asks: queue the copies (and decode launches) of
        the first deliveries while they hold at most ``nbytes`` of the budget together (at least
        one, if the budget has room for it) and return the iterator, which hands them out first;
        nothing waits here (``held_bytes``: what they hold). Batched deliveries only (else None and
        nothing is queued). The deliveries aim at PRIMED_BATCHES times ``batch_bytes`` (the consumer
        comes later, when they have been copied), with ``overlap`` ramped up to it from half of it
        (PRIMED_RAMP) and, with ``tail`` (its last copies end the query's link work: a fact scan's), down
        at the end (TAIL_RAMP)."""
        if not self.batching or self._gen is not None or self._closed or nbytes <= 0:
            return None
        self._prime_bytes = int(nbytes)
        self._tail_ramp = TAIL_RAMP if tail else 0
        gen = self.deliveries()
        try:
            got = next(gen)
        finally:
            self._prime_bytes = 0
        if got is not None:  # (the generator yields None once primed, before any delivery)
            raise AssertionError("a primed streamer handed out a delivery")
        return gen

    def prime_more(self, nbytes: int) -> None:
        """Queue more deliveries of a primed scan (``prime``) before its consumer asks, while all of
        them hold at most ``nbytes`` of the budget (none if the consumer took one already)."""
        if self._gen is None or self._closed or nbytes <= 0 or self._consuming:
            return
        self._prime_bytes = int(nbytes)
        try:
            got = next(self._gen)
        finally:
            self._prime_bytes = 0
        if got is not None:
            raise AssertionError("a primed streamer handed out a delivery")

    @property
    def delivery_bytes(self) -> int:
        """Budget bytes one of the scan's deliveries holds at most (known once it has started)."""
        return self._group_need

    @property
    def held_bytes(self) -> int:
        """Budget bytes the scan's deliveries hold now (queued or with the consumer)."""
        return self._transient_held

    def batches(self) -> Iterator[tuple[tuple[int, ...], Batch]]:
        """``deliveries`` one Batch at a time: ``(row groups, Batch)`` (a paged delivery's row
        groups one by one; the arrays stay valid until the step after its last)."""
        return self._wrapper(self._batches())

    def _wrapper(self, gen: Iterator) -> Iterator:
        """``gen``, closed by ``close``. A wrapper's yield lies inside ``try``/``finally`` (which closes
        what it wraps): CPython 3.12.3 (the H100's; python/cpython gh-118272, fixed in 3.12.4) closes a
        generator suspended at a yield outside any ``try`` without clearing its frame, whose loop
        variables — the last step's Batches — kept the delivery's device buffer (the early-stop leak)."""
        self._wrappers.append(gen)
        return gen

    def _row_groups_as_deliveries(self, gen: Iterator[tuple[int, Batch]]) -> Iterator[tuple[tuple[int, ...], list[Batch]]]:
        try:
            for rg, batch in gen:
                yield (rg,), [batch]
        finally:
            gen.close()

    def _batches(self) -> Iterator[tuple[tuple[int, ...], Batch]]:
        steps = self.deliveries()
        try:
            for rgs, parts in steps:
                if len(parts) == 1:
                    yield rgs, parts[0]
                else:
                    for rg, part in zip(rgs, parts):
                        yield (rg,), part
        finally:
            steps.close()

    @property
    def batching(self) -> bool:
        return self.batch_bytes > 0 and not self.keep

    @property
    def paged(self) -> bool:
        """Batched deliveries hand out one Batch per row group (the consumer's kernel reads several
        through one page table): encoded pages kept as stored (``compressed``), or some pages left in
        the host tier for the kernel to read in place (``zero_copy``; the others decoded). Not a scan
        past the device cache whose every column is decoded on arrival (``decoded``): no page of it
        stays encoded or rides in from the cache, so it goes as one Batch (PAGED_DECODED)."""
        if self.zero_copy:
            return True
        return self.compressed and (PAGED_DECODED or self.cache is not None or not self.decoded.issuperset(self.columns))

    # ---- planning --------------------------------------------------------------------------------
    def _rg_bounds(self, rg: int) -> tuple[int, int, int]:
        """(link bytes, device bytes bound in a delivery, padded bytes) of row group ``rg``."""
        reader, columns, paged = self.reader, tuple(self.columns), self.paged
        kept = paged and self.compressed
        decoded = self.decoded
        mirror = self._mirror()

        def compute() -> tuple[int, int, int]:
            link = dev = padded = 0
            for c in columns:
                info = page_info(reader, c, rg, False)
                spec = reader.column(c)
                loc = info.location
                page = PageSpec(loc.length, info.num_rows, info.codec, info.sections, padded=loc.padded_length)
                link += loc.length
                padded += loc.padded_length
                if spec.dtype.kind == "string" and info.encoding == "plain" and info.codec != "plain":
                    dev += 2 * info.device_bytes  # decoded page, then its part of the concatenation
                    continue
                dev += delivery_bound(page, np.dtype(spec.dtype.numpy_dtype).itemsize,
                                      spec.dtype.kind == "string" and info.encoding == "plain",
                                      kept and c not in decoded and keeps_compressed(info.codec, info.sections),
                                      mirror)
            return link, dev, padded

        return memoized(reader, ("batch bounds", columns, rg, paged, kept, decoded, mirror), compute)

    def _plan_groups(self) -> list[list[int]]:
        limit = getattr(self.budget, "limit_bytes", None)
        max_device = max(1, limit // 4) if limit else 1 << 62
        # a primed scan's deliveries are made before anything waits for them: larger ones (fewer
        # steps of host work each), ramped up from half of that (PRIMED_RAMP) and down at the end (TAIL_RAMP)
        target = self.batch_bytes * (PRIMED_BATCHES if self._prime_bytes else 1)
        ramp = (PRIMED_RAMP if self._prime_bytes else 3) if self.overlap else 0
        if self.ramp_steps is not None:
            ramp = self.ramp_steps
        tail = self._tail_ramp if self.overlap and self._prime_bytes else 0

        def compute() -> tuple[list[list[int]], int, int]:
            bounds = [self._rg_bounds(rg) for rg in self.row_groups]
            groups = plan_groups([b[0] for b in bounds], [b[1] for b in bounds], target, max_device, ramp=ramp,
                                 tail=tail)
            # every ring slot holds the largest group (allocated once, never while a copy reads it);
            # a delivery holds at most the largest group's device bytes
            return (groups, max((sum(bounds[i][2] for i in g) for g in groups), default=0),
                    max((sum(bounds[i][1] for i in g) for g in groups), default=0))

        # the same scan (columns, row groups, form) of a table version groups alike every time
        groups, self._slot_bytes, self._group_need = memoized(
            self.reader, ("delivery groups", tuple(self.columns), tuple(self.row_groups), self.paged,
                          self.paged and self.compressed, self.decoded, self._mirror(), target, max_device, ramp, tail),
            compute)
        groups = list(groups)  # (a shared scan cuts its copy short: _iterate_batches)
        # device memory the deliveries hold at most at once (what the cache leaves free when it
        # admits a page: ``_admission_headroom``): the consumer's, the one being made next to it and,
        # delivering ahead, one more (``_iterate_batches``; scheduled groups hold host memory only),
        # and never more than the scan has. It was ``depth + 1`` deliveries: under a 10% budget
        # (deliveries of a quarter of it each) that was the whole budget, so a streaming scan
        # admitted no page at all and every hot run copied every page again.
        # (a scan beside the cache delivers ahead only while the budget has room for it at once:
        # ``_deliver_ahead``; the cache's admissions keep room for two, as they did)
        held = 2 + (1 if self.overlap and self.cache is None else 0)
        self._ring_need = min(len(groups), held) * self._group_need
        return groups

    def _mirror(self) -> int:
        """The host tier's block bytes when deliveries stage pages as they lie there (``neighbours``),
        else 0 (batch_plan.plan_delivery's ``mirror``)."""
        return self.host_cache.block_bytes if self.host_cache is not None and self.neighbours else 0

    def _admission_headroom(self) -> int:
        """Budget bytes the scan's next deliveries still need beside what it holds now."""
        return max(0, self._ring_need - self._transient_held)

    # ---- iteration -------------------------------------------------------------------------------
    def _iterate_batches(self) -> Iterator[tuple[tuple[int, ...], Batch]]:
        self._started = time.perf_counter()
        groups = self._plan_groups()
        pending: list[list[_RowGroup]] = []
        queue: list[_Unit] = []
        current: _Unit | None = None
        next_group = 0

        def schedule_next() -> None:
            nonlocal next_group
            if next_group >= len(groups):
                return
            # with CPU workers sharing the scan: only the row groups none of them took
            positions = groups[next_group] if self.shared is None else self.shared.take_front(groups[next_group])
            if len(positions) < len(groups[next_group]):
                groups[next_group + 1:] = []  # the CPU workers took the rest
            if positions:
                pending.append(self._schedule_group(next_group, positions))
            next_group += 1

        def deliver_next() -> None:
            nonlocal current
            self._held = current  # retired early if the group's delivery needs its memory
            try:
                queue.extend(self._deliver_group(pending[0]))
            finally:
                if self._held is None:
                    current = None
                self._held = None
            pending.pop(0)
            while next_group < len(groups) and len(pending) < self.depth:
                schedule_next()

        try:
            # a primed scan (out of the host tier: nothing to read ahead) schedules its first group
            # alone, so its first copies start one group's host work earlier; the rest follow
            while next_group < len(groups) and len(pending) < (1 if self._prime_bytes else self.depth):
                schedule_next()
            if self._reading_ahead:
                yield None  # (``read_ahead``: the reads run; the consumer's first ``next`` goes on here)
            while self._prime_bytes:
                # primed (``prime``, ``prime_more``): deliveries queued before any consumer asks, within
                # the bytes given and the budget's room; each such ``next`` gets None (the consumer's
                # first ``next`` comes with no bytes given, and gets the first delivery)
                per = self._group_need  # (a delivery's most)
                while pending and self._room_ahead() and (not queue or self._transient_held + per <= self._prime_bytes):
                    deliver_next()
                yield None
            self._consuming = True
            while pending or queue:
                # the next delivery's copies are queued before the consumer gets this one (``ahead``)
                ahead = self._deliver_ahead()
                while pending and len(queue) <= ahead:
                    if queue and not self._room_ahead():
                        if current is None:
                            break  # (memory grew tight meanwhile: this delivery waits for the consumer's)
                        # the consumer is done with its step (it asked for the next): that memory
                        # first (room for two deliveries, not three, keeps one ahead: _deliver_ahead)
                        self._retire_unit(current)
                        current = None
                        if not self._room_ahead():
                            break
                    deliver_next()
                if not queue:
                    break
                unit = queue.pop(0)
                if current is not None:
                    self._retire_unit(current)
                current = unit
                if unit.ready:  # (waited on now, not when made: a delivery ahead must not hold up
                    consumer = self._consumer or self._cupy.cuda.get_current_stream()  # this one's kernel)
                    for event in unit.ready:
                        consumer.wait_event(event)
                self.stats.seconds = time.perf_counter() - self._started
                yield unit.row_groups, unit.batches
            if current is not None:
                self._retire_unit(current)
                current = None
        finally:
            for unit in ([current] if current is not None else []) + queue:  # (stopped early)
                release_batches(unit.batches)
                self._retire_unit(unit)
            for rgs in pending:
                for rg in rgs:
                    self._abandon(rg)
            self._release_scan()

    def _deliver_ahead(self) -> int:
        """Deliveries queued beyond the one the consumer works on: with ``overlap`` one, when the
        budget has room for two at once (the copy stream then has the next delivery's copies queued
        while the host prepares the one after, whatever the host's hiccups; a third is made after the
        consumer's step is retired, ``_reserve_budget``); else none. It asked for room for three:
        under a budget of 4 deliveries (deliveries of a quarter of it) with anything else held, or
        beside a device cache that leaves room for two (the admissions' headroom), that was never,
        and without a delivery ahead each delivery's copies wait for the kernel over the one before
        (retiring a step makes the copy stream wait for its kernel)."""
        if not self._ahead_ok():
            return 0
        limit = getattr(self.budget, "limit_bytes", None)
        per = self._group_need
        # (asked at every step, of the budget apart from the scan's own deliveries: a primed scan's
        # held all of its room when its consumer came, and was then never one ahead)
        if limit and 2 * per > limit - (self.budget.used_bytes - self._transient_held):
            return 0
        return 1

    def _ahead_ok(self) -> bool:
        """Whether ``overlap`` delivers ahead here: a scan past the device cache, or (AHEAD_PAGED) a
        paged one beside it, whose row groups with cached pages ride in the batch; not a scan whose
        row groups with cached pages go page by page (their consumer waits at once)."""
        return self.overlap and (self.cache is None or (AHEAD_PAGED and self.paged))

    def _room_ahead(self) -> bool:
        """Whether the budget still has room for another delivery beside those held."""
        limit = getattr(self.budget, "limit_bytes", None)
        return not limit or limit - self.budget.used_bytes >= self._group_need

    def _retire_unit(self, unit: _Unit) -> None:
        if unit.rg is not None:
            self._retire(unit.rg)
            return
        cp = self._cupy
        done = cp.cuda.Event(disable_timing=True)
        done.record(self._consumer or cp.cuda.get_current_stream())
        self._copy_stream.wait_event(done)
        for event in unit.ready:  # (a unit made ahead and never taken: its decode kernels may still run)
            self._copy_stream.wait_event(event)
        unit.ready = []
        unit.buffer = None
        unit.batches = []
        if unit.in_place:  # unpinned once the consumer's kernels reading them in place have run
            self._host_pins.append((done, unit.in_place))
            unit.in_place = []
        for key in unit.kept:
            self.cache.unpin(key)
        unit.kept = []
        if unit.transient:
            self.budget.release(unit.transient)
            self._transient_held -= unit.transient
            unit.transient = 0

    # ---- delivery --------------------------------------------------------------------------------
    def _deliver_group(self, rgs: list[_RowGroup]) -> list[_Unit]:
        """Deliver a scheduled group: row groups holding a cached page, or a page the cache admits,
        go row group by row group (the cache keeps its own copy of such pages); each run of
        consecutive others whose string columns agree on dictionary or plain pages goes as one
        batch. A paged delivery takes row groups with admitted pages too: it copies those pages
        out of its buffer into arrays of their own, which the cache keeps."""
        # (a paged delivery takes cached pages as they are: no row group of it is special; without
        # the device cache no page is cached or admitted)
        if self.paged or self.cache is None:
            special = [False] * len(rgs)
        else:
            special = [any(p.cached for p in rg.pages) for rg in rgs]
        if self.cache is not None and not all(special):
            # the cache's verdicts first: the admission the per-page path asks for each page, in page
            # order (asked when the group is delivered, so a group's pages see one access clock)
            admit_row_groups(self.cache, rgs, self.paged, self._first_reuse(), self._admission_headroom())
            if not self.paged:  # (a paged delivery keeps its own copies of admitted pages)
                special = [s or any(p.admitted for p in rg.pages) for s, rg in zip(special, rgs)]
        units: list[_Unit] = []
        i = 0
        try:
            while i < len(rgs):
                if special[i]:
                    units.append(_Unit((self.row_groups[rgs[i].index],), [self._deliver(rgs[i])], rg=rgs[i]))
                    i += 1
                    continue
                j = i + 1
                while j < len(rgs) and not special[j] and self._same_strings(rgs[i], rgs[j]):
                    j += 1
                if self.cache is not None:
                    for rg in rgs[i:j]:
                        for p in rg.pages:
                            if not p.admitted:
                                p.admitted = None  # refused: nothing reserved in the cache
                units.append(self._deliver_batch(rgs[i:j]))
                i = j
        except BaseException:
            for unit in units:
                self._retire_unit(unit)
            rgs[:] = rgs[i:]  # the caller abandons the rest (delivered ones are retired)
            raise
        return units

    def _same_strings(self, a: _RowGroup, b: _RowGroup) -> bool:
        """Whether every string column has dictionary pages in both row groups or plain in both."""
        strings = self._string_columns
        if strings is None:
            strings = self._string_columns = [(c, self.reader.column(name)) for c, name in enumerate(self.columns)
                                              if self.reader.column(name).dtype.kind == "string"]
        for c, spec in strings:
            if (_string_plain(spec, a.pages[c]) != _string_plain(spec, b.pages[c])
                    or _string_coded(spec, a.pages[c]) != _string_coded(spec, b.pages[c])):
                return False
        return True

    def _deliver_batch(self, rgs: list[_RowGroup]) -> _Unit:
        cp, stream, reader = self._cupy, self._copy_stream, self.reader
        self._unpin_host(wait=False)
        specs = [reader.column(name) for name in self.columns]
        strings = tuple(_string_plain(spec, rgs[0].pages[c]) for c, spec in enumerate(specs))
        coded = tuple(_string_coded(spec, rgs[0].pages[c]) for c, spec in enumerate(specs))
        planned = [c for c in range(len(self.columns)) if not coded[c]]
        sources: list[list[list[tuple[int, int]]]] = []
        raws: dict[int, list[Any]] = {}  # coded column -> per page: its bytes (ring slice or host-tier page)
        # columns the consumer's kernel reads in place from the host tier (paged deliveries only:
        # their pages stay encoded, and the kernel touches only the rows that reach it)
        in_place = self.zero_copy if self.paged else frozenset()
        regions: list[list[Any]] = []  # per planned column and page: the host-tier chunk of each run
        # the warm steady state: every page a host-tier hit of one look-up (``_RowGroup.hosts``: none
        # cached, read or admitted), none decoded apart or read in place: no page needs a look
        warm = not in_place and not any(coded) and all(rg.hosts is not None for rg in rgs)
        for c in range(len(self.columns) if not warm else 0):
            col_sources = []
            col_regions: list[Any] = []
            zero_copy = self.columns[c] in in_place and not coded[c]
            for rg in rgs:
                p = rg.pages[c]
                if p.cached:  # a device-cache hit (paged deliveries only): nothing moves
                    if coded[c]:
                        raws.setdefault(c, []).append(None)
                    else:
                        col_sources.append([])
                        col_regions.append(None)
                    continue
                got = p.future.result() if p.future is not None else None
                p.future = None
                if p.loading:
                    p.host, p.loading = got, False
                if coded[c]:
                    raws.setdefault(c, []).append(p.host if p.host is not None else got)
                    continue
                if zero_copy and not p.admitted and zero_copy_address(p) is not None:
                    p.zero_copy, p.route = True, Route.HOST_ZERO_COPY
                    col_sources.append([])  # nothing moves
                    col_regions.append(None)
                    continue
                if p.host is not None:
                    col_sources.append(p.host.addresses())
                    chunks = p.host.run_chunks
                    col_regions.append(chunks if len(chunks) == len(p.host.runs) else None)
                else:
                    col_sources.append([(int(got.ctypes.data), int(got.shape[0]))])
                    col_regions.append(None)
            if not coded[c]:
                sources.append(col_sources)
                regions.append(col_regions)
        if warm:
            for c in range(len(self.columns)):
                sources.append([rg.hosts[c].source for rg in rgs])
                regions.append([rg.hosts[c].source_chunks for rg in rgs])
        ids = tuple(self.row_groups[rg.index] for rg in rgs)
        rows = sum(rg.num_rows for rg in rgs)
        paged = self.paged
        # pages staged as far apart as they lie in the host tier (its blocks), so that a column's
        # neighbouring pages there go as one copy
        mirror = self._mirror()

        def make_plan() -> DeliveryPlan:
            lite = [ColumnSpecLite(self.columns[c], np.dtype(specs[c].dtype.numpy_dtype).itemsize, strings[c])
                    for c in planned]
            pages = [[PageSpec(p.location.length, p.num_rows, p.codec, p.sections, self._where(p),
                               p.cached or p.zero_copy, p.location.padded_length)
                      for p in (rg.pages[c] for rg in rgs)] for c in planned]
            return plan_delivery(lite, pages, paged=paged, keep_encoded=paged and self.compressed, mirror=mirror,
                                 decoded=self.decoded)

        # a plan depends on the table version's manifest and on which pages need not move (device-cache
        # hits, pages read in place): a repeated scan reuses it (hot runs under a budget: the same
        # pages cached run after run, exec/resident_split.py)
        # (the warm steady state: no page cached or read in place, and its _Pages are not made to ask)
        absent = () if not paged else (False,) * (len(rgs) * len(self.columns)) if warm else tuple(
            p.cached or p.zero_copy for rg in rgs for p in rg.pages)
        what = ("delivery plan", tuple(self.columns), ids, strings, coded, paged, self.compressed, self.decoded,
                absent, mirror)
        plan = memoized(reader, what, make_plan) if not any(absent) else cached_plan(reader, what, make_plan)
        first = ids[0]
        # coded string columns: each page's decoded arrays (a page the cache admitted is reserved
        # there), then, not paged, the column's concatenation
        extra = (1 if paged else 2) * sum(rg.pages[c].device_bytes or 0 for c in raws for rg in rgs
                                          if not rg.pages[c].cached and not (paged and rg.pages[c].admitted))
        self._reserve_bytes(plan.nbytes + extra, f"streaming row groups {first}..{self.row_groups[rgs[-1].index]} "
                                                 f"of table '{reader.name}'")
        from hetdb.backend.gpu.batch import run_delivery

        # a warm paged delivery of fixed-width pages without NULLs: its Columns made only when asked
        # (paged_parts.py; a fused kernel reads its pages through the plan's layout)
        layout = None
        if paged and warm and not raws and not in_place and not any(strings) and LAZY_PAGED:
            from hetdb.backend.gpu.paged_parts import paged_layout

            layout = paged_layout(plan, rgs, reader, ids, specs)
        # the decode kernels on a stream of their own (gpu_delivery_overlap: the copy stream moves the
        # next delivery meanwhile), unless something on the copy stream reads their outputs (a paged
        # delivery's copies of admitted pages, coded strings)
        apart = (self._decode_on or decode_stream(self._device_id)) if (
            self.overlap and not raws and (warm or not any(p.admitted for rg in rgs for p in rg.pages))) else None
        try:
            with stream:
                dtypes = [None if strings[c] else np.dtype(specs[c].dtype.numpy_dtype) for c in planned]
                staged: list[np.ndarray] = []
                buf, planned_arrays = run_delivery(plan, sources, dtypes, stream, staged, launch_stream=apart,
                                                   regions=regions, views=layout is None)
                decoded = None
                if apart is not None:
                    decoded = cp.cuda.Event(disable_timing=True)
                    decoded.record(apart)
                arrays: list[Any] = [None] * len(self.columns)
                for c, a in zip(planned, planned_arrays or ()):
                    arrays[c] = a
                if layout is not None:
                    from hetdb.backend.gpu.batch import delivery_arrays
                    from hetdb.backend.gpu.paged_parts import PagedParts

                    # (no coded columns: every column planned, in order)
                    batches = PagedParts(layout, buf, lambda: self._paged_batches(
                        rgs, ids, specs, delivery_arrays(buf, plan, dtypes), strings, coded, raws),
                        {name: c for c, name in enumerate(self.columns)})
                elif paged:
                    batches = self._paged_batches(rgs, ids, specs, arrays, strings, coded, raws)
                else:
                    batches = [Batch({name: self._coded_column([rg.pages[c] for rg in rgs], raws[c]) if coded[c]
                                      else self._column(spec, rgs[0].pages[c], arrays[c], strings[c])
                                      for c, (name, spec) in enumerate(zip(self.columns, specs))}, rows)]
                event = cp.cuda.Event(disable_timing=True)
                event.record(stream)
                note_copies(event)  # (small uploads go beside these copies until they are done)
        except BaseException:
            stream.synchronize()
            if apart is not None:
                apart.synchronize()  # (its decode launches may still read the buffer)
            self.budget.release(plan.nbytes + extra)
            self._transient_held -= plan.nbytes + extra
            raise
        if warm:
            # (the pins the look-up took, handed to the copies' event; no page holds one any more)
            count_delivery(self.stats, self.routes, rgs, len(self.columns), warm=True)
            hosts = [h for rg in rgs for h in rg.hosts]
            for rg in rgs:
                rg.hand_over_hosts()
            read_in_place, kept = [], []
        else:
            count_delivery(self.stats, self.routes, rgs, len(self.columns), warm=False)
            hosts = [p.host for rg in rgs for p in rg.pages if p.host is not None and not p.zero_copy]
            read_in_place = [p.host for rg in rgs for p in rg.pages if p.zero_copy]
            for rg in rgs:
                rg.hand_over_hosts()
            kept = [p.key for rg in rgs for p in rg.pages if p.cached]
        if hosts:
            self._host_pins.append((event, hosts))
        if staged:
            self._staged.append((event, staged))
        self._slot_events[rgs[0].slot] = event
        self.routes.deliveries += 1
        self.stats.row_groups += len(rgs)
        self.stats.rows += rows
        return _Unit(ids, batches, buffer=buf, transient=plan.nbytes + extra, kept=kept, in_place=read_in_place,
                     ready=[event] if decoded is None else [event, decoded])

    def _reserve_bytes(self, nbytes: int, what: str) -> None:
        self._reserve_budget(nbytes, what)
        self._transient_held += nbytes

    def _reserve_budget(self, nbytes: int, what: str) -> None:
        if self.budget.try_reserve(nbytes):
            return
        held, self._held = self._held, None
        if held is not None:
            # the step the consumer has finished with still holds its buffer: give it back first (the
            # next copies then wait for the consumer's work on it), before cached pages (evicted,
            # a hot scan under a budget would copy them again at its next run)
            self._retire_unit(held)
            if self.budget.try_reserve(nbytes):
                return
        if self._device_tier is not None:
            self._evict_short(nbytes)  # (only what the budget lacks: cached pages beyond that stay)
        self.budget.reserve(nbytes, what)
