"""Planning a batched delivery of several row groups to the GPU (pure Python/NumPy; no CuPy).

Under a GPU memory budget most pages of a large scan are transient: copied, decoded, read once by the
consumer and released. Doing that page by page costs a device allocation, a decode launch and tens of
microseconds of Python per page, which caps a scan at a fraction of the link. A *delivery* instead
takes consecutive row groups (``plan_groups``: a target of link bytes, bounded by device bytes) and
``plan_delivery`` lays out, for all their pages at once:

* ONE device buffer: the kernels' page descriptors (int64, copied first), then per column its output
  arrays (values, unpacked validity, plain-string offsets and chars) spanning every row group of the
  delivery, then a staging area for the sections a kernel turns into outputs (encoded data sections,
  validity bitmaps, plain-string offsets);
* the host->device copies: per page and section (page offset, bytes, buffer offset); plain fixed-width
  values and plain-string chars go straight to their place in the output arrays, nothing else moves;
* per delivery at most one launch of each batched kernel (``kernels/batch_decode.cu``), over the
  pages of every column: ``decode_pages`` (encoded data sections -> values; descriptor: staging
  offset, output offset, rows, value size), ``unpack_validity`` (bitmap or all-valid; descriptor:
  staging offset or -1, output offset, rows) and ``rebase_offsets`` (plain-string offsets onto the
  column's concatenated chars; descriptor: staging offset, output offset, rows, chars base, whether
  it is the column's last page). Offsets are byte offsets in the buffer.

A *paged* delivery (``plan_delivery(..., paged=True)``) lays the same out with outputs per page
instead of per column (the consumer gets one Batch per row group of one buffer: a fused kernel reads
them all through one page table), and with ``keep_encoded`` (option ``gpu_compressed_cache``) an
encoded data section is copied as stored to the page's own region and never decoded: the kernel
that reads it decodes it in place, so the link and device memory carry the compressed bytes.

Section bounds and sizes are checked here, as the per-page path checks them (``CorruptDataError``).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetdb.errors import CorruptDataError

ALIGN = 256          # device offsets of every region (CUDA allocations are 256-byte aligned)
DECODE_ITEMSIZES = (1, 4, 8)  # value sizes decode_pages is instantiated for
MAX_GROUP = 4096     # row groups per delivery (pages of a column are the kernels' grid y: < 65536)


@dataclass(frozen=True)
class PageSpec:
    """What planning needs of one page: stored bytes, rows, codec of its data section, its sections
    ({name: [offset, length]} within the page), and a name for error messages."""

    length: int
    num_rows: int
    codec: str
    sections: dict
    where: str = "page"
    absent: bool = False  # paged plans: the consumer has the page already (device cache): nothing moves
    padded: int = 0       # its bytes on disk and in the host tier (length rounded up to 4 KiB; 0: so)


@dataclass(frozen=True)
class ColumnSpecLite:
    """A column of the delivery: ``string`` True for plain-string pages (offsets + chars); otherwise
    fixed-width values of ``itemsize`` bytes (dictionary codes included)."""

    name: str
    itemsize: int
    string: bool = False


DECODE_DESC, UNPACK_DESC, REBASE_DESC = 4, 3, 5  # int64 words per page descriptor of each kernel


@dataclass
class ColumnPlan:
    """Where one column's outputs lie in the buffer: regions are (buffer offset, bytes)."""

    name: str
    rows: int
    data: tuple[int, int] | None = None
    validity: tuple[int, int] | None = None
    offsets: tuple[int, int] | None = None
    chars: tuple[int, int] | None = None
    encoded: tuple[int, int] | None = None  # a kept-encoded data section (``keep_encoded``)


@dataclass
class Launch:
    """One kernel launch of a delivery: its descriptors start at int64 index ``start`` of
    ``DeliveryPlan.desc``; ``pages`` of them (the grid's y); ``most``: the largest rows of a page."""

    start: int
    pages: int
    most: int


@dataclass
class DeliveryPlan:
    nbytes: int                                  # the one device allocation
    desc: np.ndarray                             # int64 descriptors, copied to buffer offset 0
    copies: list[tuple[int, int, int, int, int]]  # (column, page, offset in page, bytes, buffer offset)
    columns: list[ColumnPlan] = field(default_factory=list)
    rows: int = 0
    decode: Launch | None = None
    unpack: Launch | None = None
    rebase: Launch | None = None
    pages: list[list[ColumnPlan]] = field(default_factory=list)  # paged: [column][row group]
    # copy indices i whose copy i + 1 lies as far after it in the buffer as the next page lies after
    # this one in the host tier, when the two pages are neighbours there (``plan_delivery``'s mirror):
    # the two may go as one copy, the bytes between them included
    linked: frozenset[int] = frozenset()
    # (sources, regions, copies) of the last ``batch.run_delivery`` of this plan: the same sources (a
    # warm scan copies the same host-tier pages run after run) give the same copies
    last_copies: tuple | None = field(default=None, repr=False, compare=False)


def _up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _padded(page: PageSpec) -> int:
    return page.padded or -(-page.length // 4096) * 4096


def plan_groups(link_bytes: Sequence[int], device_bytes: Sequence[int], target_link: int,
                max_device: int, max_group: int = MAX_GROUP, ramp: int = 0, tail: int = 0) -> list[list[int]]:
    """Consecutive positions grouped into deliveries: a group closes once it holds ``target_link``
    link bytes or ``max_group`` row groups, or when the next row group would take it past
    ``max_device`` device bytes. Every group holds at least one row group (one larger than
    ``max_device`` goes alone). ``ramp``: the first ``ramp`` groups aim at ``target_link`` halved
    that many times, then one time fewer, ... (the GPU waits for the first delivery's copies with
    nothing to overlap them, so a small first one starts the kernel early). ``tail``: the last
    ``tail`` groups aim at ``target_link`` halved once, twice, ... ``tail`` times, the last the
    smallest (what follows the last copy, that delivery's decode and kernel, is on the query's
    path; each earlier one's is done while the next, half as large, is copied); the tail takes at
    most half of the link bytes."""
    if len(link_bytes) != len(device_bytes):
        raise ValueError("link_bytes and device_bytes differ in length")
    end = len(link_bytes)
    back: list[list[int]] = []  # the tail's groups, the last one first
    if tail > 0 and end > 1:
        room = sum(link_bytes) // 2
        for k in range(tail, 0, -1):
            aim = target_link >> k
            group: list[int] = []
            link = dev = 0
            while end > 1 and link < aim and len(group) < max_group and link_bytes[end - 1] <= room \
                    and (not group or dev + device_bytes[end - 1] <= max_device):
                end -= 1
                group.append(end)
                link += link_bytes[end]
                dev += device_bytes[end]
                room -= link_bytes[end]
            if not group:
                break
            back.append(group[::-1])
    groups: list[list[int]] = []
    group = []
    link = dev = 0
    for i, (lb, db) in enumerate(zip(link_bytes[:end], device_bytes[:end])):
        target = target_link >> max(0, ramp - len(groups))
        if group and (link >= target or dev + db > max_device or len(group) >= max_group):
            groups.append(group)
            group, link, dev = [], 0, 0
        group.append(i)
        link += lb
        dev += db
    if group:
        if back and group[0] > 0 and 2 * link <= sum(link_bytes[i] for i in back[-1]) \
                and dev + sum(device_bytes[i] for i in back[-1]) <= max_device \
                and len(group) + len(back[-1]) <= max_group:
            back[-1] = group + back[-1]  # (a remainder under half the tail's first group goes with it)
        else:
            groups.append(group)
    return groups + back[::-1]


def delivery_bound(page: PageSpec, itemsize: int, string: bool, keep_encoded: bool = False,
                   mirror: int = 0) -> int:
    """An upper bound of the buffer bytes a page takes in a delivery (for ``plan_groups``);
    ``keep_encoded``: its encoded data section stays encoded; ``mirror``: staged as far apart as
    pages lie in a host tier of such blocks (``plan_delivery``)."""
    n = page.num_rows
    kept = keep_encoded and not string and page.codec != "plain"
    out = (n + 1) * 8 if string else 0 if kept else n * itemsize
    staged = 0
    for name, (_, ln) in page.sections.items():
        if kept and name == "data":
            out += ln + ALIGN
        elif name == "data" and page.codec != "plain" and mirror:
            # the page's blocks in the tier, and the next page's header before its data
            staged += -(-_padded(page) // mirror) * mirror + page.length + ALIGN
        elif name == "validity" or name == "offsets" or (name == "data" and page.codec != "plain"):
            staged += ln + ALIGN
        elif name == "chars":
            out += ln
    return out + n + staged + 3 * ALIGN


def _section(page: PageSpec, name: str) -> tuple[int, int] | None:
    s = page.sections.get(name)
    if s is None:
        return None
    off, ln = int(s[0]), int(s[1])
    if off < 0 or ln < 0 or off + ln > page.length:
        raise CorruptDataError(f"{page.where}: section {name} lies outside the page")
    return off, ln


def plan_delivery(columns: Sequence[ColumnSpecLite], pages: Sequence[Sequence[PageSpec]], *,
                  paged: bool = False, keep_encoded: bool = False, mirror: int = 0,
                  decoded: frozenset[str] = frozenset()) -> DeliveryPlan:
    """The layout of one delivery (see the module docstring). ``pages[c][r]``: page of column ``c``
    in the delivery's ``r``-th row group; every column has the same rows per row group.

    ``paged``: every page gets outputs of its own (``DeliveryPlan.pages[c][r]``, one Batch per row
    group for the consumer) instead of one array per column spanning the row groups (``columns``).
    ``keep_encoded`` (paged only; option ``gpu_compressed_cache``): encoded data sections of
    fixed-width pages are copied as stored into the page's ``encoded`` region, nothing decodes them
    (the consumer's kernel reads them in place), except those of the columns named in ``decoded``.

    ``mirror`` (the host tier's block bytes; 0: off): a column's encoded data sections to decode are
    staged as far apart as their pages lie in the host tier when each page follows the previous one
    there (a page takes its padded bytes rounded up to whole blocks), so the copies of neighbouring
    pages may go as one (``DeliveryPlan.linked``): the staging area grows by less than a block and
    a page header per page."""
    if len(pages) != len(columns):
        raise ValueError("one list of pages per column")
    if keep_encoded and not paged:
        raise ValueError("encoded pages are kept only in a paged delivery")
    counts = [p.num_rows for p in pages[0]] if pages else []
    for col_pages in pages:
        if [p.num_rows for p in col_pages] != counts:
            raise ValueError("every column needs the same rows per row group")
    rows = sum(counts)
    # the output units: per column all its pages (one array each), or each page on its own
    units = [(ci, [pi]) for ci in range(len(columns)) for pi in range(len(counts))] if paged \
        else [(ci, list(range(len(counts)))) for ci in range(len(columns))]
    cursor = 0  # output regions (relative to the output area, which follows the descriptors)

    def kept(col: ColumnSpecLite, p: PageSpec) -> bool:
        return keep_encoded and not col.string and p.codec != "plain" and col.name not in decoded

    if not paged and any(p.absent for col_pages in pages for p in col_pages):
        raise ValueError("absent pages are left out only in a paged delivery")
    # Pass 1: per unit its outputs (offsets relative to the output area).
    outputs: list[tuple[ColumnPlan, dict]] = []
    for ci, pis in units:
        col = columns[ci]
        unit_pages = [pages[ci][pi] for pi in pis]
        n_rows = sum(p.num_rows for p in unit_pages)
        cp = ColumnPlan(col.name, n_rows)
        regions: dict = {}
        if unit_pages[0].absent:
            pass  # nothing to lay out or copy
        elif col.string:
            chars = 0
            for p in unit_pages:
                got = _section(p, "chars")
                chars += 0 if got is None else got[1]
            regions["offsets"] = (cursor, (n_rows + 1) * 8)
            cursor += _up((n_rows + 1) * 8)
            regions["chars"] = (cursor, chars)
            cursor += _up(max(chars, 1))
        elif kept(col, unit_pages[0]):
            data = _section(unit_pages[0], "data")
            if data is None:
                raise CorruptDataError(f"{unit_pages[0].where}: the page has no data section")
            regions["encoded"] = (cursor, data[1])
            cursor += _up(max(data[1], 1))
        else:
            regions["data"] = (cursor, n_rows * col.itemsize)
            cursor += _up(max(n_rows * col.itemsize, 1))
        if any("validity" in p.sections and not p.absent for p in unit_pages):
            regions["validity"] = (cursor, n_rows)
            cursor += _up(max(n_rows, 1))
        outputs.append((cp, regions))
    out_bytes = cursor

    # Pass 2: copies and descriptors (offsets relative to the output or staging area, fixed up once the
    # descriptor area's size is known: ("out"|"stage", offset) pairs).
    stage_cursor = 0
    pending_copies: list[tuple[int, int, int, int, str, int]] = []
    decode_rows: list[list] = []   # [src (stage), dst (out), rows, value size]
    unpack_rows: list[list] = []   # [src (stage) or -1, dst (out), rows]
    rebase_rows: list[list] = []   # [src (stage), dst (out), rows, chars base, last page]
    linked: set[int] = set()
    for (ci, pis), (_, regions) in zip(units, outputs):
        col = columns[ci]
        char_base = row0 = 0
        # (copy index, staging offset, data offset, page bytes in the host tier, page) of the unit's
        # last staged data section
        last = None
        for k, pi in enumerate(pis):
            p = pages[ci][pi]
            n = p.num_rows
            if p.absent:
                last = None
                continue
            if "validity" in regions:
                bits = _section(p, "validity")
                dst = regions["validity"][0] + row0
                if bits is None:
                    unpack_rows.append([-1, dst, n])
                else:
                    if bits[1] < (n + 7) // 8:
                        raise CorruptDataError(f"{p.where}: validity section holds fewer than {n} bits")
                    pending_copies.append((ci, pi, bits[0], bits[1], "stage", stage_cursor))
                    unpack_rows.append([stage_cursor, dst, n])
                    stage_cursor += _up(max(bits[1], 1))
            if col.string:
                offs = _section(p, "offsets")
                if offs is None or offs[1] != (n + 1) * 8:
                    raise CorruptDataError(f"{p.where}: section size does not match {n + 1} values of int64")
                pending_copies.append((ci, pi, offs[0], offs[1], "stage", stage_cursor))
                rebase_rows.append([stage_cursor, regions["offsets"][0] + 8 * row0, n, char_base,
                                    int(k == len(pis) - 1)])
                stage_cursor += _up(offs[1])
                chars = _section(p, "chars")
                if chars is not None and chars[1]:
                    pending_copies.append((ci, pi, chars[0], chars[1], "out", regions["chars"][0] + char_base))
                    char_base += chars[1]
                row0 += n
                continue
            data = _section(p, "data")
            if data is None:
                raise CorruptDataError(f"{p.where}: the page has no data section")
            if "encoded" in regions:
                pending_copies.append((ci, pi, data[0], data[1], "out", regions["encoded"][0]))
                row0 += n
                continue
            dst = regions["data"][0] + row0 * col.itemsize
            if p.codec == "plain":
                if data[1] != n * col.itemsize:
                    raise CorruptDataError(f"{p.where}: section size does not match {n} values of "
                                           f"{col.itemsize} bytes")
                if n:
                    pending_copies.append((ci, pi, data[0], data[1], "out", dst))
            else:
                if col.itemsize not in DECODE_ITEMSIZES:
                    raise CorruptDataError(f"{p.where}: codec {p.codec} on {col.itemsize}-byte values")
                if n:
                    at = stage_cursor
                    if mirror and last is not None and last[0] == len(pending_copies) - 1 and last[4] == pi - 1 \
                            and (data[0] - last[2]) % ALIGN == 0:
                        # where this page's data lies after the previous page's in the host tier
                        mirrored = last[1] + last[3] - last[2] + data[0]
                        if mirrored >= stage_cursor:
                            at = mirrored
                            linked.add(last[0])
                    pending_copies.append((ci, pi, data[0], data[1], "stage", at))
                    decode_rows.append([at, dst, n, col.itemsize])
                    stage_cursor = at + _up(max(data[1], 1))
                    if mirror:
                        last = (len(pending_copies) - 1, at, data[0], -(-_padded(p) // mirror) * mirror, pi)
            row0 += n

    words = len(decode_rows) * DECODE_DESC + len(unpack_rows) * UNPACK_DESC + len(rebase_rows) * REBASE_DESC
    out_base = _up(max(words * 8, 8))
    stage_base = out_base + out_bytes
    for row in decode_rows:
        row[0] += stage_base
        row[1] += out_base
    for row in unpack_rows:
        if row[0] >= 0:
            row[0] += stage_base
        row[1] += out_base
    for row in rebase_rows:
        row[0] += stage_base
        row[1] += out_base
    desc: list[int] = []
    launches: dict[str, Launch] = {}
    for kind, table in (("decode", decode_rows), ("unpack", unpack_rows), ("rebase", rebase_rows)):
        if table:
            launches[kind] = Launch(len(desc), len(table), max(r[2] for r in table))
            for row in table:
                desc.extend(row)
    for cp, regions in outputs:
        for name, (off, ln) in regions.items():
            setattr(cp, name, (out_base + off, ln))
    copies = [(ci, pi, off, ln, (out_base if where == "out" else stage_base) + dst)
              for ci, pi, off, ln, where, dst in pending_copies]
    plans = [cp for cp, _ in outputs]
    if paged:
        per_page = [plans[ci * len(counts):(ci + 1) * len(counts)] for ci in range(len(columns))]
        plans = []
    else:
        per_page = []
    return DeliveryPlan(stage_base + stage_cursor, np.asarray(desc, dtype=np.int64), copies, plans, rows,
                        launches.get("decode"), launches.get("unpack"), launches.get("rebase"), per_page,
                        frozenset(linked))


def source_pieces(run_lengths: Sequence[int], offset: int, nbytes: int) -> list[tuple[int, int, int]]:
    """Bytes ``[offset, offset + nbytes)`` of a page held in consecutive runs of ``run_lengths``
    bytes, as (run index, offset in the run, bytes) pieces."""
    out: list[tuple[int, int, int]] = []
    start = 0
    end = offset + nbytes
    for i, ln in enumerate(run_lengths):
        lo, hi = max(offset, start), min(end, start + ln)
        if lo < hi:
            out.append((i, lo - start, hi - lo))
        start += ln
        if start >= end:
            break
    if sum(n for _, _, n in out) != nbytes:
        raise ValueError(f"bytes {offset}..{end} lie outside the page's runs ({sum(run_lengths)} bytes)")
    return out


# the most bytes between two linked copies that are copied along to make them one
MAX_LINK_GAP = 1 << 20


def coalesce_linked(pieces: Sequence[tuple[int, int, int, object, object]]) -> list[tuple[int, int, int]]:
    """``coalesce`` of (source address, destination offset, bytes, tail, head) pieces where, besides,
    a piece whose ``tail`` is not None joins the next one whose ``head`` equals it (the same host
    memory region: one allocation) when the next lies as far after it in the source as in the
    destination and the gap between them is under MAX_LINK_GAP: the gap's bytes are copied along
    (the plan keeps that stretch of the destination free: ``DeliveryPlan.linked``)."""
    out: list[list] = []
    for src, dst, n, tail, head in pieces:
        if n <= 0:
            continue
        if out:
            last = out[-1]
            end = last[0] + last[2]
            if end == src and last[1] + last[2] == dst:
                last[2] += n
                last[3] = tail
                continue
            if last[3] is not None and last[3] == head and src - last[0] == dst - last[1] \
                    and 0 <= src - end <= MAX_LINK_GAP:
                last[2] = src + n - last[0]
                last[3] = tail
                continue
        out.append([src, dst, n, tail])
    return [(c[0], c[1], c[2]) for c in out]


def coalesce(copies: Sequence[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(source address, destination offset, bytes) copies merged where one continues the previous on
    both sides (pages laid out back to back in a pinned buffer become one copy)."""
    out: list[list[int]] = []
    for src, dst, n in copies:
        if n <= 0:
            continue
        if out and out[-1][0] + out[-1][2] == src and out[-1][1] + out[-1][2] == dst:
            out[-1][2] += n
        else:
            out.append([src, dst, n])
    return [tuple(c) for c in out]


# (reader, plan key) -> delivery plan of row groups some of whose pages need not move (device-cache
# hits, pages read in place): which ones changes with the cache, so these are kept apart from the
# reader's memo (which lives as long as the reader) and dropped when there are too many
_PLANS: dict[tuple, tuple[Any, DeliveryPlan]] = {}
_PLAN_ENTRIES = 4096


def cached_plan(reader: Any, what: tuple, make: Any) -> DeliveryPlan:
    """``make()``'s plan for ``what`` of ``reader``'s table version, kept a while (see _PLANS)."""
    key = (id(reader), what)
    hit = _PLANS.get(key)
    if hit is not None and hit[0]() is reader:
        return hit[1]
    plan = make()
    if len(_PLANS) >= _PLAN_ENTRIES:
        _PLANS.clear()
    _PLANS[key] = (weakref.ref(reader), plan)
    return plan
