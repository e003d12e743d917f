"""One launch over every cached page of a hot scan for a compiled GPU pipeline (exec/compiled.py):
when every row group's pages are in the device cache (exec/compiled_scan.py) and they all suit one
kernel (the same dictionary per string column, the same physical type per column), the pipeline's
paged kernel (codegen/pipeline_paged.py) aggregates, selects or marks every row in one launch
instead of one launch, sync and gather per row group (TPC-H SF 10's lineitem: 58). Pages may be
value arrays, pages kept compressed in device memory (option ``gpu_compressed_cache``: the page table
says which, and the kernel decodes the slice of each page it reads) or plain strings (offsets and
bytes, read by LIKE). Selected rows are gathered from the pages in place (plain strings page by
page). Batches cut to ``batch_rows`` keep the per-batch path (as the option asks), and so does
anything the paged path does not take.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hetdb.column import Column
from hetdb.errors import UnsupportedError
from hetdb.exec.compiled_features import off
from hetdb.exec.compiled_rows import dictionary_lookups, sink_selected
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.base import ExecContext, Timer


def _representatives(pages: list[tuple[int, dict[str, Column]]]) -> dict[str, Column] | None:
    """Per column, a page's Column standing for all of them in the kernel's signature (one with
    NULLs if any has), or None when the pages differ in a way one kernel cannot take."""
    rep: dict[str, Column] = {}
    for cid in pages[0][1]:
        cols = [cols[cid] for _, cols in pages]
        first = cols[0]
        kind = _physical(first)
        for c in cols:
            if c.dictionary is not first.dictionary or _physical(c) != kind:
                return None
        rep[cid] = next((c for c in cols if c.validity is not None), first)
    return rep


def _plain_strings(ctx: ExecContext, pages: list[tuple[int, dict[str, Column]]]) -> list[tuple[int, dict[str, Column]]]:
    """``pages`` with the dictionary pages of a string column that also has plain pages made plain:
    the table store writes a column's first page dictionary-encoded and, once its strings prove too
    distinct (comments, names), the later ones plain; one kernel reads one kind."""
    from hetdb.exec.columns import to_plain

    mixed = [cid for cid in pages[0][1]
             if len({cols[cid].dictionary is None for _, cols in pages}) > 1
             and pages[0][1][cid].dtype.kind == "string"]
    if not mixed:
        return pages
    return [(rows, {cid: to_plain(ctx.backend, c) if cid in mixed else c for cid, c in cols.items()})
            for rows, cols in pages]


def _physical(col: Column) -> Any:
    """What a page of ``col`` holds, as far as one kernel's signature is concerned: its values'
    dtype (of the decoded values for a page kept compressed), or "plain string"."""
    page = getattr(col, "device_page", None)
    if page is not None:
        return page.dtype  # (col.data would decode the page)
    if col.dtype.kind == "string" and col.dictionary is None:
        return "plain string"
    return None if col.data is None else col.data.dtype


def _paged_spec(spec: Any, pages: list[tuple[int, dict[str, Column]]]) -> Any:
    """``spec`` (a per-batch kernel's, from the representatives) with each input's codec over all
    the pages (pipeline_paged.paged_codec): pages kept compressed are read in place, whatever codec."""
    from dataclasses import replace

    from hetdb.backend.gpu.codegen.pipeline_paged import paged_codec

    inputs = tuple(i if i.dtype.kind == "string" and not i.dictionary
                   else replace(i, codec=paged_codec([cols[i.cid] for _, cols in pages]))
                   for i in spec.inputs)
    return replace(spec, inputs=inputs)


def _take_strings(ctx: ExecContext, table: Any, cid: str, rows: Any) -> Column:
    """Plain-string column ``cid`` at ``rows`` (global rows), page by page (a gather of offsets and
    bytes per page with rows selected, then one concatenation). Rows in another order than
    ascending (a top-N's best rows in rank order, compiled_rows._best_selected) are gathered
    ascending and put back in their order."""
    from hetdb.exec.columns import take

    be = ctx.backend
    xp = be.xp
    n = int(rows.shape[0])
    if n > 1 and not bool(be.to_host(xp.all(rows[1:] >= rows[:-1]))):
        order = xp.argsort(rows)
        back = xp.empty_like(order)
        back[order] = xp.arange(n, dtype=order.dtype)
        return take(be, _take_ascending(ctx, table, cid, rows[order]), back)
    return _take_ascending(ctx, table, cid, rows)


def _take_ascending(ctx: ExecContext, table: Any, cid: str, rows: Any) -> Column:
    from hetdb.exec.columns import concat_columns, take

    be = ctx.backend
    xp = be.xp
    starts = table.starts
    bounds = xp.searchsorted(rows, xp.concatenate([starts, xp.asarray([table.num_rows], dtype=starts.dtype)]))
    bounds, first_rows = be.to_host(bounds).tolist(), be.to_host(starts).tolist()
    parts = [take(be, cols[cid], rows[lo:hi] - first_rows[p])
             for p, (cols, lo, hi) in enumerate(zip(table.pages, bounds, bounds[1:])) if hi > lo]
    if not parts:
        return take(be, table.pages[0][cid], rows[:0])
    return parts[0] if len(parts) == 1 else concat_columns(be, parts)


def run_paged(ctx: ExecContext, pipe: Any, plan: Any, hot: Any, probes: list, build_dicts: dict[str, Column],
              marks: Any, gsink: Any, lsink: Any) -> str | None:
    """Run the whole scan in one launch; what it did (for EXPLAIN ANALYZE), or None when the
    per-batch path must run instead (nothing was done then)."""
    from hetdb.backend.gpu.codegen.pipeline_paged import (
        aggregate_pages,
        mark_pages,
        page_table,
        paged_take,
        select_pages,
    )
    from hetdb.backend.gpu.codegen.pipeline_runtime import CompiledPipeline, MarkRun
    from hetdb.exec.compiled import _kernel
    from hetdb.exec.compiled_tables import partial_state

    if ctx.batch_rows or off("paged"):
        return None
    pages = [(rows, cols) for rows, cols in hot.cid_pages() if rows]
    if len(pages) < 2:
        return None  # (one row group: the per-batch path is one launch too)
    pages = _plain_strings(ctx, pages)
    rep = _representatives(pages)
    if rep is None:
        return None
    # (_kernel reads only the columns: the representatives come from pages of different lengths)
    kernel, cids = _kernel(ctx, plan, SimpleNamespace(columns=rep))
    if isinstance(kernel, str):
        return None
    spec = _paged_spec(kernel.spec, pages)
    key = ("paged", kernel.kernel.name, tuple(i.codec for i in spec.inputs))
    paged = plan.kernels.get(key)
    if paged is None:
        try:
            paged = CompiledPipeline(spec, paged=True)
        except UnsupportedError:
            paged = False
        plan.kernels[key] = paged
    if paged is False:
        return None
    try:
        table = page_table(paged, pages)
    except ValueError:
        return None
    dicts = dict(build_dicts)
    dicts.update({c: rep[c].dictionary for c in cids if rep[c].dictionary is not None})
    sink = plan.sink
    if marks is not None:
        op = marks.op
        with Timer(ctx, op.op_id):
            run = marks.runs.get(id(paged))
            if run is None:
                run = marks.runs[id(paged)] = MarkRun(paged, marks.marked)
            mark_pages(run, table, dictionary_lookups(ctx, plan, paged, dicts), probes)
            ctx.add(op.op_id, rows_in=table.num_rows)
    elif plan.materialize:
        with Timer(ctx, sink.op_id):  # (the launch and its wait: the sink's time in EXPLAIN ANALYZE)
            sel = select_pages(paged, table, dictionary_lookups(ctx, plan, paged, dicts), probes, plan.unique_rows)
        if int(sel.rows.shape[0]):
            def column(cid: str, rows: Any) -> Column:
                col = table.pages[0][cid]
                if col.dtype.kind == "string" and col.dictionary is None:
                    return _take_strings(ctx, table, cid, rows)
                return paged_take(paged, table, cid, rows)

            sink_selected(ctx, plan, None, sel, gsink, lsink, column)
    else:
        reservation = Reservation(ctx.memory)
        ctx.cleanup.append(reservation.close)
        with Timer(ctx, sink.op_id):
            groups = aggregate_pages(paged, table, dictionary_lookups(ctx, plan, paged, dicts), probes, reservation)
            if groups is None:
                reservation.close()
                return None
            ctx.add(sink.op_id, rows_in=table.num_rows)
            unique = gsink.parts is None and not gsink.batches and not gsink.runs and not lsink.batches \
                and not sink.raw_mode and all(k.build_rows_of is None and k.expr is None
                                              for k in paged.kernel.group_keys)
            sink.add_partial(ctx, partial_state(ctx, plan, paged, groups, dicts), gsink, lsink)
            if unique and len(lsink.batches) == 1 and gsink.parts is None:
                gsink.groups_unique = True  # one launch's groups: each once, nothing to merge
        reservation.close()
    what = f"one launch over every cached page ({table.num_pages} row groups"
    if table.encoded:
        what += f"; {table.encoded} column pages read compressed in place"
    return what + ")"


def compiled_over_pages(ctx: ExecContext, pipe: Any, src: Any, gsrc: Any, morsels: list, compiler: Any) -> str | None:
    """A dense fused pipeline whose scan is all in the device cache but has pages the fused kernel
    cannot take (NULLs, plain strings): its compiled kernel (``compiler``, exec/compiled.BatchCompiler)
    takes every page in one paged launch instead of the fused kernel plus a compiled launch per
    row group; what it did, or None (nothing done: the caller streams the row groups)."""
    from hetdb.exec.compiled_scan import resident_scan
    from hetdb.exec.fusion_reuse import _run_skipped_inputs, _skipped_inputs

    if not morsels:
        return None
    hot = resident_scan(ctx, src, gsrc, morsels)
    if hot is None:
        return None
    try:
        if _skipped_inputs(ctx, pipe):
            _run_skipped_inputs(ctx, pipe)  # the compiled kernel probes the builds' hash tables
        return compiler.run_resident(hot)
    finally:
        hot.close()
