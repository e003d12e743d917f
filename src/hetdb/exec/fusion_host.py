"""Fused plans' dense joins planned on the host (exec/fusion.py ``_dense_probe``): a dimension's
filtered rows of at most HOST_PLAN_ROWS build rows have their key, mask and group-key columns copied
out (every join of a pipeline with one copy, one wait for the device), the group keys compacted, the
dense table built and its probe forms made by NumPy, and what the kernel reads (the forms, the
compacted keys' values) put on the device with one upload for the pipeline; the tables' rows,
payload and hits stay on the host until something reads them (codegen/dense_tables.py
``host_planned``). On the device the same took ~6 waits and ~30 launches a dimension (compact's
unique, the build's range and uniqueness verdicts, the forms' range check and masked assignments)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hetdb import types as T
from hetdb.errors import UnsupportedError
from hetdb.exec.compiled_features import on
from hetdb.exec.fusion_forms import probe_form
from hetdb.exec.fusion_swaps import _INT_KEYS
from hetdb.exec.operators.base import ExecContext
from hetdb.types import DataType

if TYPE_CHECKING:
    from hetdb.exec.fusion import _Join


def rank_bound(payload: list[tuple[str, DataType]], groups: dict) -> int | None:
    """The domain size of a probe's one payload column when it holds a group key's compacted ranks
    (its values lie in 0 .. size - 1 by construction), else None."""
    if len(payload) != 1:
        return None
    sizes = {kcid: domain.size for kcid, domain, _ in groups.values()}
    return sizes.get(payload[0][0])


# a dense join's build side of at most this many rows (a dimension's filtered rows) is planned on the
# host: its key, mask and group-key columns come out with one copy (one wait), the keys are compacted,
# the table built and its probe form made there, and what the kernel reads goes up with one upload;
# on the device the same takes ~6 waits for the device and ~30 launches (compact's unique, the build's
# range and uniqueness verdicts, the forms). 0: as before (dense_build's and compact's own limits)
HOST_PLAN_ROWS = 1 << 18


def _host_arrays(j: _Join, needed: set[str], group_cids: set[str]) -> tuple[list, list] | None:
    """(the device arrays ``host_dense_probe`` reads of join ``j``: its key, mask and group-key
    columns; its build columns, ``_build_columns``), or None when it is not planned on the host."""
    from hetdb.exec.fusion import _build_columns, _NotFused

    if j.key.dtype.kind not in _INT_KEYS or j.key.data is None or not 0 < int(j.key.data.shape[0]) <= HOST_PLAN_ROWS:
        return None
    try:
        cols = _build_columns(j, needed, group_cids)
    except _NotFused:
        return None  # (refused in the join's turn)
    if on("fused_payload_by_key") and cols:
        return None  # (keyed payloads are made from device tables)
    ranked = [col.data for f, col in cols if f.cid in group_cids]
    if any(a.dtype.kind not in "iu" for a in ranked):
        return None
    return [j.key.data, *([] if j.key.validity is None else [j.key.validity]), *ranked], cols


def host_copies(ctx: ExecContext, joins: list[_Join], needed: set[str], group_cids: set[str]) -> list:
    """Per join, (its arrays that ``host_dense_probe`` reads, on the host; its build columns), or
    None (planned on the device); every join's arrays copied out together: one wait for the device
    for all the joins of a pipeline."""
    from hetdb.exec.fusion import _host_small

    wanted = [_host_arrays(j, needed, group_cids) if _host_small(ctx) else None for j in joins]
    flat = _copy_out(ctx, [a for w in wanted if w is not None for a in w[0]])
    out, at = [], 0
    for w in wanted:
        out.append(None if w is None else (flat[at:at + len(w[0])], w[1]))
        at += 0 if w is None else len(w[0])
    return out


def _copy_out(ctx: ExecContext, arrays: list) -> list:
    """Device ``arrays`` on the host with one copy (one wait): packed on the device, the widest
    elements first so that every array keeps its alignment, into pinned memory (a pageable copy
    goes through the driver's staging at a few GB/s); host arrays stay as they are."""
    from hetdb.exec.hostutil import arrays_to_host

    xp = ctx.backend.xp
    dev = [i for i, a in enumerate(arrays) if type(a) is not np.ndarray]
    if xp is np or len(dev) <= 1:
        return arrays_to_host(ctx.backend, arrays)
    from hetdb.backend.gpu.memory import pinned_empty

    order = sorted(dev, key=lambda i: -arrays[i].dtype.itemsize)
    flat = [xp.ascontiguousarray(arrays[i]).reshape(-1) for i in order]
    total = sum(int(f.nbytes) for f in flat)
    host = pinned_empty(max(total, 8), np.uint8)[:total]
    xp.concatenate([f.view(xp.uint8) for f in flat]).get(out=host)
    out, at = list(arrays), 0
    for i, f in zip(order, flat):
        size = int(f.nbytes)
        out[i] = host[at:at + size].view(np.dtype(f.dtype.str)).reshape(arrays[i].shape)
        at += size
    return out


def host_dense_probe(ctx: ExecContext, j: _Join, needed: set[str], group_cids: set[str],
                      groups: dict, host: tuple[list, list]) -> tuple[Any, Any, set[str]] | None:
    """``_dense_probe`` planned on the host (HOST_PLAN_ROWS) from ``host`` (``_host_arrays``, copied);
    None when the key range is too wide for a host build (the device builds it then)."""
    from hetdb.backend.gpu.codegen import DenseProbe
    from hetdb.backend.gpu.codegen.dense_tables import host_planned
    from hetdb.backend.gpu.codegen.groups import KeyDomain, compact_host
    from hetdb.exec.fusion import _NotFused

    copied, cols = host
    ranked = [(f, col) for f, col in cols if f.cid in group_cids]
    mask = j.key.validity
    keys, mask_h = copied[0], (None if mask is None else copied[1])
    host_vals = dict(zip((f.cid for f, _ in ranked), copied[1 + (mask is not None):]))
    if any(not _ranks_fast(v) for v in host_vals.values()):
        return None
    payload, arrays, provided, made = [], [], set(), {}
    for f, col in cols:
        if f.cid in needed:
            payload.append((f.cid, f.dtype))
            arrays.append(col.data)
            provided.add(f.cid)
        if f.cid in group_cids:
            uniq, inverse = compact_host(host_vals[f.cid]) if host_vals[f.cid].shape[0] else (
                host_vals[f.cid][:0], np.zeros(0, dtype=np.int32))
            kcid = f"{f.cid}@rank"
            payload.append((kcid, T.INT32))
            arrays.append(inverse)
            made[f.cid] = (kcid, uniq, col.dictionary)
    sized = {**groups, **{cid: (kcid, KeyDomain(0, int(uniq.shape[0]) - 1), d)
                          for cid, (kcid, uniq, d) in made.items()}}
    chosen: list[str] = []

    def forms_of(table: Any) -> list[tuple[str, int | None]]:
        chosen.append(probe_form(payload, sized, table, j.share))
        return [] if chosen[0] == "rows" else [(f, rank_bound(payload, sized)) for f in chosen[0].split("_")]

    try:
        # (the forms and compacted values stay host arrays here: _upload_host_products puts every
        # host-planned join's on the device with one upload)
        got = host_planned(keys, mask_h, arrays, forms_of, extra=[uniq for _, uniq, _ in made.values()],
                           to_device=list if ctx.backend.xp is np else None, upload=list)
    except UnsupportedError as e:
        raise _NotFused(str(e)) from None
    if got is None:
        return None
    table, uniqs = got
    form = chosen[0]
    if form == "rows":
        # (the kernel reads the rows and payload: on the device now, so a kept plan's accounting,
        # made when it is stored, holds them)
        table.upload_pending()
    for (cid, (kcid, _, dictionary)), uniq in zip(made.items(), uniqs):
        groups[cid] = (kcid, KeyDomain(0, int(uniq.shape[0]) - 1, uniq), dictionary)
    return DenseProbe(j.left_key, tuple(payload), False, form), table, provided


def _ranks_fast(values: np.ndarray) -> bool:
    """Whether ``compact_host`` ranks ``values`` fast: through its presence table (values spanning
    at most ~4 slots each), or by a sort of at most HOST_COMPACT_ROWS of them (SF 20's 120K
    sparse customer keys: 7 ms of np.unique on a 2-core host, where the device's unique is faster)."""
    from hetdb.backend.gpu.codegen.groups import HOST_COMPACT_ROWS

    n = int(values.shape[0])
    return n <= HOST_COMPACT_ROWS or int(values.max()) - int(values.min()) < 4 * n + 64


def upload_host_products(ctx: ExecContext, tables: list, groups: dict) -> dict[str, np.ndarray]:
    """The probe forms of host-planned ``tables`` and the compacted values of group keys (in
    ``groups``) still host arrays, on the device with one upload; returns those values' host arrays
    (group key cid -> array: the finish decodes the groups with them, fusion_run._on_host)."""
    if ctx.backend.xp is np:
        return {}  # (the "device" is the host)
    from hetdb.backend.gpu.codegen.dense_tables import _to_device
    from hetdb.backend.gpu.codegen.groups import KeyDomain

    slots = [(t, f) for t in tables for f, a in t.forms.items() if type(a) is np.ndarray]
    keys = [cid for cid, (_, d, _) in groups.items() if type(d.values) is np.ndarray]
    up = _to_device([*(t.forms[f] for t, f in slots), *(groups[cid][1].values for cid in keys)])
    for (t, f), a in zip(slots, up):
        t.forms[f] = a
    host = {cid: groups[cid][1].values for cid in keys}
    for cid, a in zip(keys, up[len(slots):]):
        kcid, d, dictionary = groups[cid]
        groups[cid] = (kcid, KeyDomain(d.lo, d.hi, a), dictionary)
    return host
