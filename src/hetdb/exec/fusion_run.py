"""Running a fused GPU pipeline (planned by exec/fusion.py): one launch over the device-resident pages
where it can, else the streamed batches; batches the kernel cannot take go through the compiled or
operator-at-a-time path; the kernel's groups join the aggregation's partial states."""

from __future__ import annotations

import itertools
import time
from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError
from hetdb.exec.fusion import FusionPlan
from hetdb.exec.fusion_reuse import _run_skipped_inputs, _skipped_inputs
from hetdb.exec.operators.aggregate import HashAggregate, _g, _s, _sum_type
from hetdb.exec.operators.base import ExecContext, Timer
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.scan import TableScan, conjunction
from hetdb.exec.wide import wide_sum


def run_fused(ctx: ExecContext, pipe: Any, plan: FusionPlan, run: Any) -> ExecContext | None:
    """Drive ``pipe`` through the fused kernel; batches it cannot take go through the operators of
    ``run`` (the pipeline driver). The kernel's groups join the aggregation's partial states; when
    they are handed over on the host (``_host_finish``), returns the host context the aggregation
    then finishes in (else None)."""
    if plan.deferred:
        return None  # the consumer's kernel scans this pipeline's table
    sink = pipe.sink
    src = plan.scan
    fp = plan.pipeline
    held = _reserve_state(ctx, plan)
    state = fp.new_state([(k.domain.lo, k.domain.hi) for k in plan.group_keys])
    if plan.chain is None:
        gsrc, morsels = run.gsrc, run.morsels
    else:
        from hetdb.exec.pipeline import enumerated

        gsrc = src.init_global(ctx)
        morsels = enumerated(src.morsels(ctx, gsrc))
    lops = [op.init_local(ctx, g) for op, g in zip(pipe.ops, run.gops)]
    lsink = sink.init_local(ctx, run.gsink)
    pred: Any = False  # the scan's filters as one predicate, made at the first batch that needs it
    fused_rows = unfused = recompiled = 0
    inputs_ready = False
    from hetdb.exec.compiled import BatchCompiler
    from hetdb.exec.compiled_paged import compiled_over_pages

    compiler = BatchCompiler(ctx, pipe, run.gsink, lsink)
    launches = None
    hot = _run_resident(ctx, src, gsrc, _row_groups(morsels), plan, state, sink.op_id)
    if hot is not None:
        fused_rows, rest, streamed, launches = hot
        left = set(rest)
        morsels = [m for m in morsels if m[1] in left] if rest else []
        if not rest:
            ctx.stat(sink.op_id).fused += " (one launch over every cached page)"
        else:
            if fused_rows:
                ctx.stat(sink.op_id).fused += (f" (one launch over the cached pages it can take; {streamed} row "
                                               "groups not cached streamed)" if streamed else
                                               " (one launch over the cached pages it can take)")
            # the row groups with pages it cannot take (NULLs, plain strings): one compiled launch
            # (not when some are not cached: compiled_over_pages would fill the cache with them)
            what = None if plan.chain is not None or streamed else compiled_over_pages(ctx, pipe, src, gsrc, morsels,
                                                                                        compiler)
            if what is not None:
                inputs_ready, morsels = True, []
                ctx.stat(sink.op_id).fused += (f" ({len(rest)} row groups with pages it cannot take: compiled "
                                               f"hash aggregation, {what})")
    if getattr(getattr(fp, "spec", None), "encoded", False):
        ctx.stat(sink.op_id).fused += " (pages kept compressed are decoded in the kernel)"
    co = None
    if morsels and plan.chain is None:
        from hetdb.exec.coprocess_plan import plan_coprocess

        co, why = plan_coprocess(ctx, pipe, getattr(gsrc, "reader", gsrc), run, [rg for _, rg in morsels])
        if why:
            ctx.stat(sink.op_id).fused += f" (not co-processed: {why})"
    zero_copy_key = None
    if morsels and plan.chain is None:
        from hetdb.exec.fusion_stream import stream_form

        fp, zero_copy_key = stream_form(ctx, src, gsrc, fp)
        if getattr(gsrc, "zero_copy", None):
            ctx.stat(sink.op_id).fused += (" (read in place from pinned host memory: "
                                           f"{', '.join(sorted(gsrc.zero_copy))})")
    if hot is not None and morsels and co is None and getattr(gsrc, "iterator", True) is None:
        # the resident launch took the other row groups: the streamer delivers only these, in order
        gsrc.verdicts = {rg: v for rg, v in gsrc.verdicts.items() if rg in left}
    timed = morsels and plan.chain is None and getattr(ctx.options, "gpu_coprocess", "off") == "auto"
    scan_began, feeder_cpu = time.perf_counter(), time.thread_time()
    for index, batches in _reads(ctx, src, gsrc, morsels, co):
        fusable = []
        if _layout_table(fp, batches) is not None:  # (a lazily handed-out paged delivery: backend/gpu/paged_parts.py)
            fusable, batches = batches, ()
            fused_rows += fusable.page_table.num_rows
        for b in batches:
            why = fp.batch_unfusable_reason(b.columns)
            if why is None:
                fusable.append(b)
                fused_rows += b.num_rows
                continue
            if plan.chain is not None:
                raise HetdbError(f"internal error: a page of {src.scan.table} cannot run fused ({why}) "
                                 "although its zone maps said it could")
            if not inputs_ready and _skipped_inputs(ctx, pipe):
                _run_skipped_inputs(ctx, pipe)  # the operators below probe the builds' hash tables
                ctx.set_morsel(index)
            inputs_ready = True
            if compiler.consume(b):
                recompiled += 1
                continue
            unfused += 1
            if pred is False:
                pred = conjunction(src.scan.filters)
            if pred is not None:
                from hetdb.exec.columns import filter_batch

                b = filter_batch(ctx.backend, b, ctx.evaluator.predicate(pred, b))
            if b.num_rows:
                run.push(b, 0, lops, lsink)
        if fusable:
            with Timer(ctx, sink.op_id):
                _consume_fused(fp, state, fusable, plan.tables)
            if launches is not None:
                launches.step()  # (the next launch over cached pages, after this delivery's kernel)
    if launches is not None:
        launches.finish()  # (the rest of the launches over cached pages; the state waits for them)
    if co is not None:
        co.fed(scan_began, feeder_cpu)
    cpu_parts: list[Batch] = []  # the CPU workers' partial states (co-processing), on the host
    if co is not None:
        cpu_parts = co.finish()
    compiler.finish()
    sink.combine(ctx, run.gsink, lsink)
    if not unfused and not recompiled and co is None and plan.chain is None:
        from hetdb.exec.operators.scan_device import close_consumed

        close_consumed(gsrc)  # (its deliveries all went to the kernel: nothing here holds one)
    if unfused or not _skipped_inputs(ctx, pipe):
        run.flush()  # (operators of a fused pipeline emit nothing at the end unless rows went through them)
    host, result, cpu_parts = finish_fused(ctx, pipe, plan, run.gsink, fp, state, co, cpu_parts)
    if timed:  # (the cost model's GPU rate for this pipeline, and its slowdown when co-processed)
        from hetdb.exec.coprocess_plan import observe_gpu_scan

        # timed to the kernel's groups on the host (the feeder's loop ends when its last launch is
        # queued, long before the GPU is done; the CPU workers' side ends when they are)
        if host is None and ctx.device is not None:
            import cupy

            cupy.cuda.get_current_stream().synchronize()  # (the groups stay on the device: done there)
        observe_gpu_scan(ctx, pipe, getattr(gsrc, "reader", gsrc), len(morsels) - (len(co.shared.cpu_taken) if co else 0),
                         time.perf_counter() - scan_began, co)
    if co is not None:
        ctx.stat(sink.op_id).fused += co.describe()
    ctx.add(sink.op_id, rows_in=fused_rows)
    if zero_copy_key is not None and fused_rows:
        from hetdb.cache.rates import shared_rates

        shared_rates().observe_passing(zero_copy_key, fused_rows, int(result.counts.sum()) if result.num_groups else 0)
    if recompiled:
        ctx.stat(sink.op_id).fused += f" ({recompiled} batches with NULLs ran as compiled hash-aggregation kernels)"
    if unfused:
        why = "; ".join(sorted(compiler.refusals))
        ctx.stat(sink.op_id).fused += f" ({unfused} batches the fused kernel could not take ran operator at a time: {why})"
    state = None
    if held is not None:
        held.close()  # (the accumulators go with ``state``; the groups' arrays are the partial state's)
    if hot is not None and getattr(ctx.options, "gpu_hot_replay", False) and not rest and fused_rows == hot[0] \
            and co is None and not recompiled and not unfused \
            and held is None \
            and (_skipped_inputs(ctx, pipe) or not any(isinstance(op, HashProbe) for op in pipe.ops)):
        from hetdb.exec.hot_replay import note_fused_step

        # (a later run of the plan may replay this launch, without run.flush above: nothing ran through
        # the operators, and no probe of a build that ran could emit build rows at the end)
        note_fused_step(ctx, pipe, plan)  # exec/hot_replay.py
    return add_groups(ctx, pipe, plan, run.gsink, result, host, cpu_parts)


def _plain_keys(backend: Any, batch: Batch) -> Batch:
    """``batch`` (host arrays) with its dictionary string columns as plain strings."""
    from hetdb.exec.columns import to_plain

    if all(c.dictionary is None for c in batch.columns.values()):
        return batch
    return Batch({k: to_plain(backend, c) for k, c in batch.columns.items()}, batch.num_rows)


def finish_fused(ctx: ExecContext, pipe: Any, plan: FusionPlan, g: Any, fp: Any, state: Any, co: Any = None,
                 cpu_parts: list | None = None) -> tuple[Any, Any, list]:
    """(host context or None, the kernel's groups, the CPU workers' partial states still to join them on
    the host) after the fused kernel over ``state`` was queued: on the host when the groups can be
    handed over there (``_host_finish``), else on the device; co-processed workers' partial states
    (``cpu_parts`` of ``co``) join them on the host (dictionary keys as plain strings) or go to the device
    where the groups stay there."""
    host = _host_finish(ctx, pipe, plan, g, fp, state)
    cpu_parts = cpu_parts or []
    if cpu_parts and host is not None:
        # (their dictionary keys as plain strings: the dictionaries are host copies of the builds', not
        # the kernel's; a few hundred groups merged on the host in 1.0-1.4 ms, where moving them to the
        # GPU and merging there took 8-17 ms of small kernels: SSB SF 20 q2.1-q4.1 on an H200, s24)
        cpu_parts = [_plain_keys(host.backend, b) for b in cpu_parts]
    elif cpu_parts:
        co.to_device(cpu_parts, g)  # (merged with the kernel's groups on the GPU)
        cpu_parts = []
    with Timer(ctx, pipe.sink.op_id):
        result = fp.finish(state, host=True) if host is not None else fp.finish(state)
    return host, result, cpu_parts


def add_groups(ctx: ExecContext, pipe: Any, plan: FusionPlan, g: Any, result: Any, host: Any,
               cpu_parts: list | tuple = ()) -> ExecContext | None:
    """The kernel's non-empty groups (``result`` of ``finish_fused``) into the aggregation's global
    state ``g``; returns the host context the aggregation then finishes in (None: on the device)."""
    sink = pipe.sink
    if host is not None:
        if result.num_groups:
            with Timer(ctx, sink.op_id):
                g.batches.append(_partial_state(host, sink, plan, result, on_host=True))
                g.groups_unique = True  # the kernel's groups alone: each once, nothing to merge
        if cpu_parts:  # (the CPU workers' groups join the kernel's on the host: nothing goes to the GPU)
            g.batches.extend(cpu_parts)
            g.groups_unique = False
        ctx.made_on_host.add(pipe.pid)  # (its consumers on the host take the result as it is)
        return host
    if result.num_groups:
        part = _partial_state(ctx, sink, plan, result)
        if g.parts is not None:  # the aggregation spilled: the kernel's groups join its partitions
            sink._spill(ctx, g, [part])
        else:
            g.reservation.force_grow(sum(int(c.data.nbytes) for c in part.columns.values()))
            g.groups_unique = not g.batches  # the kernel's groups alone: each once, nothing to merge
            g.batches.append(part)
    return None


_ROW_GROUPS: dict[int, tuple[list, tuple]] = {}  # id(morsel pairs) -> (the pairs, their row groups)


def _row_groups(morsels: list) -> tuple[int, ...]:
    """The row groups of ``morsels`` ((index, row group) pairs), the same tuple for the same pairs
    list (a hot scan's: pipeline.enumerated)."""
    hit = _ROW_GROUPS.get(id(morsels))
    if hit is not None and hit[0] is morsels and len(hit[1]) == len(morsels):
        return hit[1]
    rgs = tuple(rg for _, rg in morsels)
    if len(rgs) >= 16:
        if len(_ROW_GROUPS) >= 256:
            _ROW_GROUPS.clear()
        _ROW_GROUPS[id(morsels)] = (morsels, rgs)
    return rgs


def _host_finish(ctx: ExecContext, pipe: Any, plan: FusionPlan, g: Any, fp: Any, state: Any) -> ExecContext | None:
    """A context on the host tail's backend when the kernel's groups can be handed over there: every
    consumer of the pipeline runs on the host (``ctx.host_sinks``), the domain is small enough for
    ``finish`` to find the groups on the host, nothing else reached the aggregation (no batch ran
    operator at a time, nothing spilled) and every group key decodes there (no key looked up in a
    join's build rows). The groups then go from the one copy of the accumulators straight into the
    aggregation's partial state and final values on the host: no copy back to the device, no small
    kernels, no copy to the host again for the consumer (a hot SSB query's tail)."""
    if pipe.pid not in ctx.host_sinks or ctx.tail_backend is None or g.batches or g.parts is not None:
        return None
    if not hasattr(fp, "finishes_on_host") or not fp.finishes_on_host(state):
        return None
    if plan.key_sources is not None and not all(isinstance(s, int) for s in plan.key_sources):
        return None
    host = ctx.__dict__.get("host_context")  # (one per query: the engine's host tail runs in it too)
    if host is None:
        host = ExecContext(ctx.db, ctx.tail_backend, ctx.options, ctx.host_memory, ctx.spill_dir,
                           device=None, host_memory=ctx.host_memory)
        host.stats, host.results, host.cleanup = ctx.stats, ctx.results, ctx.cleanup
        ctx.host_context = host
    return host


def _reserve_state(ctx: ExecContext, plan: FusionPlan) -> Any:
    """The device memory of a wide dense domain's accumulators (fusion._plan checked that they fit),
    reserved while the kernel fills them; None for the small domains (a few MiB at most)."""
    groups = plan.__dict__.get("_groups")  # (a reused plan: computed at its first run)
    if groups is None:
        from hetdb.backend.gpu.codegen.groups import combined_groups

        groups = plan.__dict__["_groups"] = combined_groups(k.domain for k in plan.group_keys)
    from hetdb.backend.gpu.codegen.groups import MAX_FUSED_GROUPS

    if groups <= MAX_FUSED_GROUPS:
        return None
    from hetdb.exec.fusion import state_bytes
    from hetdb.exec.memory import Reservation
    held = Reservation(ctx.memory)
    ctx.cleanup.append(held.close)
    held.force_grow(state_bytes(plan.pipeline, groups))
    return held


def _reads(ctx: ExecContext, src: TableScan, gsrc: Any, morsels: list, co: Any) -> Any:
    """(morsel index, Batches) of the fused pipeline's scan: morsel by morsel, or — co-processed —
    the GPU's deliveries while CPU workers take row groups from the back (stopped if the caller
    breaks off with an error)."""
    from hetdb.exec.operators.scan_device import read_device_scan, shared_device_scan

    if co is None:
        covered = getattr(gsrc, "covered", ())
        for index, rg in morsels:
            ctx.set_morsel(index)
            if rg in covered:  # (delivered with an earlier morsel's batch: nothing to read or time)
                covered.discard(rg)
                yield index, []
                continue
            with Timer(ctx, src.op_id):
                batches = read_device_scan(src, ctx, rg, gsrc, apply_filters=False)
            yield index, batches
        return
    from hetdb.exec.coprocess_plan import workers_start_queued

    queued = workers_start_queued(co)  # (else now: the fused pipeline begins)
    if not queued:
        co.start()
    done = False
    try:
        deliveries = shared_device_scan(src, ctx, gsrc, co.shared, co.start if queued else None)
        for index in itertools.count():
            ctx.set_morsel(index)
            with Timer(ctx, src.op_id):
                batches = next(deliveries, None)
            if batches is None:
                break
            yield index, batches
        done = True
    finally:
        if not done:
            co.abort()


def _layout_table(fp: Any, batches: Any) -> Any:
    """The page table of a paged delivery handed out lazily (``paged_parts.PagedParts``) made from its
    layout (kept on it for ``_consume_fused``), or None: not such a delivery, or the kernel cannot read
    it that way (its Batches are made then)."""
    if getattr(batches, "layout", None) is None or not hasattr(fp, "layout_page_table"):
        return None
    if batches.page_table is None:
        batches.page_table = fp.layout_page_table(batches)
    return batches.page_table


def _consume_fused(fp: Any, state: Any, batches: list[Batch], tables: list) -> None:
    """The fused kernel over ``batches`` (one delivery of the streamer): one launch through a page
    table when there are several (a paged delivery: one Batch per row group), else over the batch."""
    table = _layout_table(fp, batches)
    if table is not None:
        fp.consume_pages(state, table, tables)
        return
    if len(batches) > 1 and hasattr(fp, "consume_pages"):
        fp.consume_pages(state, fp.page_table([(b.num_rows, b.columns) for b in batches]), tables)
        return
    for b in batches:
        fp.consume(state, b.columns, tables)


def _consume_resident(fp: Any, state: Any, table: Any, tables: list) -> None:
    """The fused kernel's one launch over a scan's cached pages (a function of its own so that
    scripts/warm_timeline.py can time it apart from the deliveries' launches)."""
    fp.consume_pages(state, table, tables)


def _run_resident(ctx: ExecContext, src: TableScan, gsrc: Any, row_groups: list[int], plan: FusionPlan,
                  state: Any, sink_id: int) -> tuple[int, list[int], int, Any] | None:
    """When the device cache holds every page the kernel reads, run the kernel once over all of
    them (a page table) and return (rows consumed, row groups left, 0, None): the row groups left are
    those with a page the kernel cannot take (NULLs, plain strings), which the caller runs compiled.
    When it holds only some row groups' pages (a scan larger than the cache: exec/resident_split.py),
    the launches are over those, and the row groups left include the others, to stream (the third
    value: how many; the fourth: the launches still to make, ``resident_split.ResidentLaunch``: a
    ``step`` after each delivery's kernel, ``finish`` after the last). None when every page must be
    streamed."""
    from hetdb.errors import UnsupportedError
    from hetdb.exec.operators.scan_device import resident_or_warm

    fp = plan.pipeline
    if not row_groups or ctx.device is None or not hasattr(fp, "consume_pages"):
        return None
    memo = plan.__dict__.get("_resident_names")  # (a reused plan: made at its first run)
    if memo is None or memo[0] is not src or memo[1] is not fp:
        name_of = dict(zip((f.cid for f in src.scan.fields), src.scan.column_names))
        cids = [cid for cid, _ in fp.spec.inputs]
        memo = plan.__dict__["_resident_names"] = (src, fp, name_of, cids, list(dict.fromkeys(name_of[c] for c in cids)),
                                                   tuple((c, name_of[c]) for c in cids))
    _, _, name_of, cids, names, columns = memo
    forced = getattr(ctx.options, "gpu_coprocess", "off") == "on"  # (CPU workers take part: no warm fill)
    with Timer(ctx, src.op_id):
        got = resident_or_warm(src, ctx, gsrc, row_groups, names, warm=not forced)
        split = None
        if got is None and not forced:
            from hetdb.exec.resident_split import resident_split

            split = resident_split(src, ctx, gsrc, list(row_groups), names)
    if split is not None:
        from hetdb.exec.resident_split import launch_split

        rows, rest, launches = launch_split(ctx, fp, state, plan.tables, split, name_of, cids, columns, sink_id)
        return rows, sorted(rest + split.rest), len(split.rest), launches
    if got is None:
        return None
    resident, fill = got
    hit = None
    try:
        cache = ctx.device.cache
        tkey = ("page-table", resident.derived_key, fp.kernel.name, columns)
        hit = cache.derived(tkey)
        if hit is None:
            pages = [(rows, {c: cols[name_of[c]] for c in cids}) for rows, cols in resident.pages]
            rest = [i for i, (_, cols) in enumerate(pages) if fp.batch_unfusable_reason(cols) is not None]
            skip = set(rest)
            try:
                table = fp.page_table([p for i, p in enumerate(pages) if i not in skip])
            except UnsupportedError:
                table, rest = None, list(range(len(pages)))  # (stream row group by row group)
            hit = (table, [row_groups[i] for i in rest])
            cache.set_derived(tkey, hit)
        table, rest = hit
        if table is not None and table.num_tiles:
            fresh = table.device is None
            with Timer(ctx, sink_id):
                _consume_resident(fp, state, table, plan.tables)
            if fresh and table.device is not None:
                cache.arrays_changed()  # (the kept table now holds its device copy: the cache's bytes grew)
    finally:
        resident.release()
        if fill is not None:
            fill.close()  # the kernel is queued: waits for the copies, then unpins the host tier
    if fill is None and hit is not None:  # (all resident, nothing filled: what a replay launches again)
        ctx.__dict__.setdefault("_resident_launches", {})[sink_id] = (src.op_id, resident, tkey, hit)
    return (0 if table is None else table.num_rows), rest, 0, None


def _partial_state(ctx: ExecContext, sink: HashAggregate, plan: FusionPlan, result: Any,
                   on_host: bool = False, key_columns: list[Column] | None = None) -> Batch:
    """The kernel's non-empty groups as a partial-state batch of the aggregation (see HashAggregate);
    ``on_host``: ``result`` holds host arrays and ``ctx`` is a host context (see _host_finish).
    ``key_columns``: the group keys' columns, given (exec/hot_replay.py takes them by the groups'
    indices from ``group_key_columns`` of every group of the domain, made once)."""
    xp = ctx.backend.xp
    n = result.num_groups
    keys = key_columns if key_columns is not None else group_key_columns(ctx, plan, result, on_host)
    cols: dict[str, Column] = {_g(i): c for i, c in enumerate(keys)}
    fsums = {j: result.values[k] for j, part, k in plan.slots if part == "fsum"}
    for j, part, k in plan.slots:
        a = sink.aggs[j][1]
        v = result.values[k]
        if part == "fsum":
            continue
        if part == "sum":
            st = _sum_type(a.arg.dtype)
            data = v.astype(st.numpy_dtype)
            if j in fsums:
                scale = a.arg.dtype.scale if a.arg.dtype.kind == "decimal" else 0
                data = wide_sum(xp, data, fsums[j] * float(10 ** scale))
            cols[_s(j, part)] = Column(st, data=data, validity=xp.ones(n, dtype=bool))
        elif part == "cnt":
            cols[_s(j, part)] = Column(T.INT64, data=v.astype(xp.int64))
        else:
            cols[_s(j, part)] = Column(a.arg.dtype, data=v.astype(a.arg.dtype.numpy_dtype),
                                       validity=xp.ones(n, dtype=bool))
    return Batch(cols, n)


def group_key_columns(ctx: ExecContext, plan: FusionPlan, result: Any, on_host: bool = False) -> list[Column]:
    """The aggregation's group-key columns of the groups of ``result`` (their values decoded from the
    kernel's dense key ranks; a dependent key looked up in its join's build rows)."""
    xp = ctx.backend.xp
    kernel_keys: list[Column] = []
    for i, key in enumerate(plan.group_keys):
        domain, dictionary = _on_host(key) if on_host else (key.domain, key.dictionary)
        values = domain.decode(xp, result.keys[i])
        if key.dtype.kind == "string":
            kernel_keys.append(Column(key.dtype, data=values.astype(xp.int32), dictionary=dictionary))
        else:
            kernel_keys.append(Column(key.dtype, data=values.astype(key.dtype.numpy_dtype)))
    if plan.key_sources is None:
        return kernel_keys
    from hetdb.exec.columns import take
    from hetdb.exec.fusion import DependentKey

    out = []
    for src in plan.key_sources:
        if not isinstance(src, DependentKey):
            out.append(kernel_keys[src])
            continue
        # the build row each group's probe key finds (every group's key found one: inner join)
        t = plan.tables[src.table]
        probe = kernel_keys[src.probe_key].data.astype(xp.int64)
        rows = t.rows[probe - t.lo].astype(xp.int64)
        out.append(take(ctx.backend, src.column, rows))
    return out


def _on_host(key: Any) -> tuple[Any, Column | None]:
    """A group key's domain and dictionary with host arrays, copied once per fused plan (a reused
    plan hands the same dictionary object to every run: its sort ranks and Arrow strings are made
    once, exec/dictionary_memo.py). Not copied back where the host has them: the domain's values
    planned on the host (``GroupKey.host_values``), a dictionary a scan moved from the table
    version's host strings (``host_source``)."""
    got = getattr(key, "host", None)
    if got is None:
        import dataclasses

        from hetdb.exec.hostutil import _map_arrays

        def to_host(a: Any) -> Any:
            return a.get() if hasattr(a, "get") else a

        domain = key.domain
        if domain.values is not None:
            values = getattr(key, "host_values", None)
            domain = dataclasses.replace(domain, values=to_host(domain.values) if values is None else values)
        dictionary = key.dictionary
        source = getattr(dictionary, "host_source", None)
        if source is not None and len(source) == len(dictionary):
            dictionary = source
        elif dictionary is not None:
            dictionary = _map_arrays(dictionary, to_host, None)
        got = key.host = (domain, dictionary)
    return got
