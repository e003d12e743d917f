"""One launch of a compiled pipeline over every row group of a hot scan: the page table of a paged
kernel (pipeline_gen.generate_pipeline(paged=True)), and its aggregation, row selection and build-row
marking, plus the gather of selected rows from the pages (pipeline.cuh ``pipe_paged_take``).

Rows are numbered over the pages in table order (the row groups of the scan, empty ones left out),
so a selection's rows index the concatenated pages without the pages ever being concatenated. An
aggregation's table is a fresh one per launch (sized by what earlier runs of the same kernel needed,
rerun with four times the slots when it overflows), since no room can be promised before one launch
over all rows; a selection starts with room for the rows earlier runs selected (once more with the
exact size when more came out).

Pages kept compressed in device memory (option ``gpu_compressed_cache``) are read in place: the page
table marks each page's pointer as a value array (0) or an encoded data section (its codec id,
codec.encodings.CODEC_IDS: pipe::PageColumn then knows the page's layout before its header arrives,
so a for page's block directory load does not wait for the header) (the inputs of codec
"paged"/"paged_tile", pipeline_gen.PAGED_CODECS), the kernel decodes the slice it reads, and the
gather decodes the selected rows (pipeline.cuh ``pipe_paged_take``; a delta page, not random-access,
is decoded whole for it, and that copy goes with the gather).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.backend.gpu.codegen.pipeline_kernel import PAGE_PTRS, PAGED_CODECS, PL_TILE, TILE_CODECS
from hetdb.backend.gpu.codegen.pipeline_runtime import (
    LOAD,
    MAX_SLOTS,
    MIN_SLOTS,
    CompiledPipeline,
    Groups,
    MarkRun,
    ProbeInput,
    Selected,
    run_select,
)
from hetdb.codec.encodings import CODEC_IDS
from hetdb.column import Column
from hetdb.errors import HetdbError

# kernel name -> slots its aggregation needed / rows its selection produced in earlier runs
_HINTS: dict[tuple[str, str], int] = {}
_HINT_ENTRIES = 1024


@dataclass
class PageTable:
    """A paged kernel's page table (device int64 ``array``) over ``num_pages`` non-empty pages of
    ``num_rows`` rows in ``num_tiles`` tiles; ``starts`` the first row of each page (device int64),
    ``pages`` the Columns per page by cid (the arrays the table points into), ``keep`` arrays made
    for the table (plain strings' int64 offsets) that must live as long as it, ``encoded`` how many
    of its column pages the kernel reads compressed in place."""

    array: Any
    num_pages: int
    num_tiles: int
    num_rows: int
    starts: Any
    pages: list[dict[str, Column]]
    keep: list[Any]
    encoded: int = 0


def paged_codec(cols: list[Column]) -> str:
    """The codec of a paged kernel's input whose pages are ``cols``: "plain" when none is kept
    compressed, "paged_tile" when one is a delta or rle page (decoded per tile), else "paged"."""
    codecs = {getattr(getattr(c, "device_page", None), "codec", "plain") for c in cols}
    if codecs == {"plain"}:
        return "plain"
    return "paged_tile" if codecs & set(TILE_CODECS) else "paged"


def page_table(pipeline: CompiledPipeline, pages: list[tuple[int, dict[str, Column]]]) -> PageTable:
    """The page table of ``pages`` ((rows, {cid: Column}) per row group) for ``pipeline``'s inputs;
    ValueError when a page does not suit the kernel (its caller checked the signature)."""
    import cupy

    inputs = pipeline.spec.inputs
    pages = [(int(rows), cols) for rows, cols in pages if int(rows) > 0]
    num = len(pages)
    width = PAGE_PTRS * len(inputs)
    table = np.zeros(3 * num + 1 + num * width, dtype=np.int64)
    keep: list[Any] = []
    tile = row = encoded = 0
    for p, (rows, cols) in enumerate(pages):
        table[p], table[num + 1 + p], table[2 * num + 1 + p] = tile, row, rows
        for k, inp in enumerate(inputs):
            base = 3 * num + 1 + p * width + PAGE_PTRS * k
            col = cols[inp.cid]
            if col.validity is not None and not inp.nullable:
                raise ValueError(f"page of column {inp.cid} has NULLs the kernel does not expect")
            table[base + 1] = 0 if col.validity is None else int(col.validity.data.ptr)
            page = getattr(col, "device_page", None)
            if page is not None:  # kept compressed: the kernel decodes the slice it reads in place
                if inp.codec not in PAGED_CODECS or (page.codec in TILE_CODECS and inp.codec != "paged_tile"):
                    raise ValueError(f"page of column {inp.cid} is a {page.codec} page the kernel does not read")
                if page.n != rows:
                    raise ValueError(f"page of column {inp.cid} has {page.n} rows, not {rows}")
                table[base], table[base + 2] = int(page.data.data.ptr), CODEC_IDS[page.codec]
                encoded += 1
                continue
            if inp.dtype.kind == "string" and not inp.dictionary:  # offsets and UTF-8 bytes
                if col.offsets is None or int(col.offsets.shape[0]) != rows + 1:
                    raise ValueError(f"page of column {inp.cid} is not a plain-string page of {rows} rows")
                offsets = col.offsets.astype(np.int64, copy=False)
                chars = col.chars if int(col.chars.shape[0]) else offsets  # (any valid pointer)
                keep.append(offsets)
                table[base], table[base + 2] = int(offsets.data.ptr), int(chars.data.ptr)
                continue
            arr = col.data
            if arr is None or int(arr.shape[0]) != rows or not arr.flags.c_contiguous:
                raise ValueError(f"page of column {inp.cid} is not a contiguous array of {rows} rows")
            table[base] = int(arr.data.ptr)
        tile += -(-rows // PL_TILE)
        row += rows
    table[num] = tile
    starts = table[num + 1:2 * num + 1].copy()
    return PageTable(cupy.asarray(table), num, tile, row, cupy.asarray(starts), [cols for _, cols in pages], keep,
                     encoded)


def _args(pipeline: CompiledPipeline, table: PageTable, lookups: list[tuple],
          probes: list[ProbeInput]) -> list[Any]:
    return [table.array, np.int64(table.num_pages), np.int64(table.num_tiles),
            *pipeline.tail_args(lookups, probes)]


def _hint(pipeline: CompiledPipeline, kind: str, default: int) -> int:
    return _HINTS.get((pipeline.kernel.name, kind), default)


def _learn(pipeline: CompiledPipeline, kind: str, value: int) -> None:
    if len(_HINTS) >= _HINT_ENTRIES:
        _HINTS.pop(next(iter(_HINTS)))
    _HINTS[(pipeline.kernel.name, kind)] = value


def aggregate_pages(pipeline: CompiledPipeline, table: PageTable, lookups: list[tuple],
                    probes: list[ProbeInput], reservation: Any) -> Groups | None:
    """Every row of ``table`` aggregated in one launch (rerun with a larger table on overflow); None
    when ``reservation`` (try_grow/shrink against the memory budget) refuses a table."""
    base = _args(pipeline, table, lookups, probes)
    # (no hint yet: room for a group per 64 rows, which low-cardinality aggregations waste little on)
    slots = _hint(pipeline, "slots", 1 << max(MIN_SLOTS.bit_length() - 1, int(table.num_rows / 64 / LOAD).bit_length()))
    while True:
        nbytes = pipeline.table_bytes(slots)
        if not reservation.try_grow(nbytes):
            return None
        t = pipeline.new_table(slots)
        pipeline.launch_into(t, base, table.num_rows, table.num_tiles)
        if not pipeline.check(t):
            break
        reservation.shrink(nbytes)
        if slots >= MAX_SLOTS:
            raise HetdbError(f"a compiled aggregation has more than {int(MAX_SLOTS * LOAD)} groups in one "
                             "launch; use a smaller batch_rows")
        slots = min(MAX_SLOTS, slots * 4)
    groups = pipeline.groups(t)
    # the next launch's table: room for twice the groups found (a few groups over many rows need
    # neither the first guess's slots, one per 64 rows, nor their fill)
    _learn(pipeline, "slots", min(slots, 1 << max(MIN_SLOTS.bit_length() - 1,
                                                   int(2 * groups.num_groups / LOAD).bit_length())))
    reservation.shrink(nbytes)  # (the groups are copies: the table goes with this call)
    return groups


def select_pages(pipeline: CompiledPipeline, table: PageTable, lookups: list[tuple],
                 probes: list[ProbeInput], unique_rows: bool) -> Selected:
    """The rows (global over the pages) and build rows a materializing kernel selects, in one launch."""
    n = table.num_rows
    cap = _hint(pipeline, "rows", max(1 << 16, n // 8))
    sel = run_select(pipeline, _args(pipeline, table, lookups, probes), n, table.num_tiles, cap, unique_rows)
    _learn(pipeline, "rows", max(1, int(sel.rows.shape[0])))
    return sel


def mark_pages(run: MarkRun, table: PageTable, lookups: list[tuple], probes: list[ProbeInput]) -> None:
    """Every row of ``table`` through a kernel marking build rows, in one launch (errors: run.finish)."""
    from hetdb.backend.gpu.codegen.pipeline_kernel import PL_BLOCK
    from hetdb.backend.gpu.compile import launch

    p = run.pipeline
    if table.num_tiles:
        launch(p.function(), min(table.num_tiles, 65536), PL_BLOCK,
               (*_args(p, table, lookups, probes), run.marked, run.errors, run.arith_err, *p.literal_args()))


def paged_take(pipeline: CompiledPipeline, table: PageTable, cid: str, rows: Any) -> Column:
    """Column ``cid`` of the pages at ``rows`` (global rows, as select_pages returns them), read from
    value arrays and from pages kept compressed alike."""
    import cupy

    from hetdb.backend.gpu.compile import launch

    cols = [cols[cid] for cols in table.pages]
    first = cols[0]
    if first.dtype.kind == "string" and first.dictionary is None:
        raise ValueError(f"column {cid} is a plain-string column: its rows are gathered per page")
    n = int(rows.shape[0])
    pipeline.function()
    fn = pipeline._module.function("pipe_paged_take")

    def take(ptrs: list[int], enc: list[int] | None, dtype: Any) -> Any:
        out = cupy.empty(max(n, 1), dtype=dtype)
        if n:
            flags = np.uint64(0) if enc is None else cupy.asarray(np.asarray(enc, dtype=np.int64))
            launch(fn, min(-(-n // 256), 65536), 256,
                   (cupy.asarray(np.asarray(ptrs, dtype=np.int64)), flags, table.starts,
                    np.int64(table.num_pages), np.int32(out.dtype.itemsize), rows, np.int64(n), out))
        return out[:n]

    ptrs, enc, decoded = [], [], []
    dtype = None
    for c in cols:
        page = getattr(c, "device_page", None)
        if page is not None and page.codec in TILE_CODECS:
            decoded.append(page.decode())  # (a delta page is not random-access: decoded for this gather)
            page, arr = None, decoded[-1]
        else:
            arr = None if page is not None else c.data
        ptrs.append(int(page.data.data.ptr) if page is not None else int(arr.data.ptr))
        enc.append(0 if page is None else 1)
        dtype = page.dtype if page is not None else arr.dtype
    data = take(ptrs, enc if any(enc) else None, dtype)
    validity = None
    if any(c.validity is not None for c in cols):
        validity = take([0 if c.validity is None else int(c.validity.data.ptr) for c in cols], None, cupy.bool_)
    return Column(first.dtype, data=data, validity=validity, dictionary=first.dictionary)
