"""One launch over every cached page of a hot scan for a compiled GPU pipeline (exec/compiled.py):
when every row group's pages are in the device cache (exec/compiled_scan.py) and they all suit one
kernel (the same dictionary per string column, plain value arrays: no plain strings, no pages kept
compressed), the pipeline's paged kernel (codegen/pipeline_paged.py) aggregates, selects or marks
every row in one launch instead of one launch, sync and gather per row group (TPC-H SF 10's
lineitem: 58). Selected rows are gathered from the pages in place. Batches cut to ``batch_rows`` keep
the per-batch path (as the option asks), and so does anything the paged path does not take.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hetdb.column import Column
from hetdb.errors import UnsupportedError
from hetdb.exec.compiled_features import off
from hetdb.exec.compiled_rows import dictionary_lookups, gather
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.base import ExecContext, Timer


def _representatives(pages: list[tuple[int, dict[str, Column]]]) -> dict[str, Column] | None:
    """Per column, a page's Column standing for all of them in the kernel's signature (one with
    NULLs if any has), or None when the pages differ in a way one kernel cannot take."""
    rep: dict[str, Column] = {}
    for cid in pages[0][1]:
        cols = [cols[cid] for _, cols in pages]
        first = cols[0]
        for c in cols:
            if getattr(c, "device_page", None) is not None or c.data is None:
                return None  # kept compressed, or plain strings (offsets and bytes)
            if c.dictionary is not first.dictionary or c.data.dtype != first.data.dtype:
                return None
        rep[cid] = next((c for c in cols if c.validity is not None), first)
    return rep


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
    rep = _representatives(pages)
    if rep is None:
        return None
    # (_kernel reads only the columns: the representatives come from pages of different lengths)
    kernel, cids = _kernel(ctx, plan, SimpleNamespace(columns=rep))
    if isinstance(kernel, str):
        return None
    key = ("paged", kernel.kernel.name)
    paged = plan.kernels.get(key)
    if paged is None:
        try:
            paged = CompiledPipeline(kernel.spec, paged=True)
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
        sel = select_pages(paged, table, dictionary_lookups(ctx, plan, paged, dicts), probes, plan.unique_rows)
        if int(sel.rows.shape[0]):
            sink.sink(ctx, gather(ctx, plan, None, sel, lambda c: paged_take(paged, table, c, sel.rows)),
                      gsink, lsink)
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
    return f"one launch over every cached page ({table.num_pages} row groups)"
