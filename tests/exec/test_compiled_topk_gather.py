"""exec/compiled_rows.sink_selected for a top-N sink (runs without a GPU, on the CPU backend): the rows a
row-selecting kernel kept are ranked by the sink's keys first (the string key only for the rows the
first key alone does not rule out) and only the best limit + offset rows have every column gathered; the sink's answer equals the one it gives fed every selected row (ties
included: the same rows, in the same order), and its rows-in count is still every selected row."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.backend.gpu.codegen.pipeline_runtime import Selected
from hetdb.column import Batch, Column
from hetdb.config import Options
from hetdb.exec import compiled_rows
from hetdb.exec.columns import take
from hetdb.exec.hostutil import column_from_pylist
from hetdb.exec.memory import MemoryManager
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.sort import TopNSink
from hetdb.plan.expr import ColumnRef, Field, SortKey

N = 5000


def _batch(rng: np.random.Generator) -> Batch:
    be = CpuBackend()
    val = rng.integers(0, 40, N)  # many ties
    valid = rng.random(N) > 0.1
    words = [None if rng.random() < 0.05 else f"w{rng.integers(0, 30)}" for _ in range(N)]
    wide = [f"payload-{i}-" + "x" * int(rng.integers(0, 20)) for i in range(N)]
    return Batch({"v": Column(T.INT64, data=val.astype(np.int64), validity=valid),
                  "s": column_from_pylist(be, words, T.STRING),
                  "p": column_from_pylist(be, wide, T.STRING),
                  "id": Column(T.INT64, data=np.arange(N, dtype=np.int64))}, N)


def _run(ctx: ExecContext, plan, b: Batch, sel: Selected, narrowed: bool, paged: bool = False) -> Batch:
    sink = plan.sink
    g = sink.init_global(ctx)
    local = sink.init_local(ctx, g)
    if narrowed and paged:  # a paged launch: no batch, the probe side's columns taken at given rows
        compiled_rows.sink_selected(ctx, plan, None, sel, g, local,
                                    lambda cid, rows: take(ctx.backend, b.columns[cid], rows))
    elif narrowed:
        compiled_rows.sink_selected(ctx, plan, b, sel, g, local)
    else:
        sink.sink(ctx, compiled_rows.gather(ctx, plan, b, sel), g, local)
    sink.combine(ctx, g, local)
    (out,) = sink.finalize(ctx, g)
    return out


class _NumpyProxy:
    def __getattr__(self, name):
        return getattr(np, name)


class _DeviceLike(CpuBackend):
    """The CPU backend seen as a device backend (``xp`` is not NumPy): small candidate sets are then
    ordered on the host and handed to the sink in rank order (operators/sort_small.py)."""

    xp = _NumpyProxy()

    def to_host(self, array):
        return np.asarray(array)


@pytest.mark.parametrize("device", [False, True])
@pytest.mark.parametrize("desc,nulls_first", [(True, False), (False, True)])
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("limit,offset", [(10, 0), (25, 5), (1, 0), (N, 0)])
def test_topn_ranks_before_gathering(tmp_path, monkeypatch, limit, offset, paged, desc, nulls_first,
                                     device) -> None:
    rng = np.random.default_rng(limit + offset)
    b = _batch(rng)
    fields = (Field("v", "v", T.INT64), Field("s", "s", T.STRING), Field("p", "p", T.STRING),
              Field("id", "id", T.INT64))
    keys = (SortKey(ColumnRef(T.INT64, cid="v"), descending=desc, nulls_first=nulls_first),
            SortKey(ColumnRef(T.STRING, cid="s")))
    sink = TopNSink(fields=fields, keys=keys, limit=limit, offset=offset, op_id=7)
    plan = SimpleNamespace(sink=sink, outputs=["id", "p", "s", "v"], alias={}, stages=[])
    rows = np.sort(rng.choice(N, N // 2, replace=False)).astype(np.int64)
    sel = Selected(rows, {}, {})
    assert compiled_rows.topk_first(plan)

    gathered: list[tuple[int, tuple]] = []
    real = compiled_rows.gather

    def spy(ctx, plan, b, sel, probe_column=None, cids=None):
        gathered.append((int(sel.rows.shape[0]), tuple(cids or plan.outputs)))
        return real(ctx, plan, b, sel, probe_column, cids)

    ref_ctx = ExecContext(None, CpuBackend(), Options(), MemoryManager(None), str(tmp_path))
    want = _run(ref_ctx, plan, b, sel, narrowed=False)
    monkeypatch.setattr(compiled_rows, "gather", spy)
    from hetdb.exec.operators import sort as sort_mod

    takes: list[int] = []
    real_take = sort_mod.take_batch
    monkeypatch.setattr(sort_mod, "take_batch", lambda *a, **k: takes.append(1) or real_take(*a, **k))
    ctx = ExecContext(None, _DeviceLike() if device else CpuBackend(), Options(), MemoryManager(None), str(tmp_path))
    got = _run(ctx, plan, b, sel, narrowed=True, paged=paged)
    if device:  # the rows came in rank order: the sink's order is theirs, nothing gathered again
        assert takes == []
    assert got.num_rows == want.num_rows == min(limit, len(rows) - offset) > 0
    for c in ("v", "s", "p", "id"):
        assert _values(got.columns[c]) == _values(want.columns[c]), c
    assert ctx.stats[7].rows_in == ref_ctx.stats[7].rows_in == len(rows)
    if limit + offset < len(rows):
        # the first key for every row; both keys (the string ranked) only for the rows not worse than
        # the k-th by the first key (ties kept); everything else for the best only
        v, valid = b.columns["v"].data[rows], b.columns["v"].validity[rows]
        null = np.iinfo(np.int64).min if nulls_first else np.iinfo(np.int64).max
        image = np.where(valid, -v if desc else v, null)  # smaller is better
        candidates = int((image <= np.sort(image)[limit + offset - 1]).sum())
        assert limit + offset <= candidates < len(rows)
        # (on a device the candidates' keys are gathered and ranked even when they are k or fewer)
        middle = [(candidates, ("s", "v"))] if candidates > limit + offset or device else []
        assert gathered == [(len(rows), ("v",)), *middle, (limit + offset, ("id", "p", "s", "v"))]
    elif device:
        assert gathered == [(len(rows), ("s", "v")), (len(rows), ("id", "p", "s", "v"))]
    else:
        assert gathered == [(len(rows), ("id", "p", "s", "v"))]


def _values(col: Column) -> list:
    from hetdb.exec.hostutil import strings_to_pylist

    if col.dtype.kind == "string":
        d = col.dictionary
        vals = strings_to_pylist(CpuBackend(), d.offsets, d.chars) if d is not None else \
            strings_to_pylist(CpuBackend(), col.offsets, col.chars)
        out = [vals[i] for i in col.data] if d is not None else vals
    else:
        out = col.data.tolist()
    return [None if col.validity is not None and not col.validity[i] else v for i, v in enumerate(out)]


@pytest.mark.parametrize("device", [False, True])
def test_limit_zero_selects_no_row(tmp_path, device) -> None:
    """ORDER BY ... LIMIT 0 over a compiled row sink: no row, no error (the fuzz campaign's GPU case 254
    of seed 20261125 crashed ranking the k-th best row of k = 0)."""
    rng = np.random.default_rng(0)
    b = _batch(rng)
    fields = (Field("v", "v", T.INT64), Field("s", "s", T.STRING))
    keys = (SortKey(ColumnRef(T.INT64, cid="v")), SortKey(ColumnRef(T.STRING, cid="s")))
    sink = TopNSink(fields=fields, keys=keys, limit=0, offset=0, op_id=7)
    plan = SimpleNamespace(sink=sink, outputs=["s", "v"], alias={}, stages=[])
    sel = Selected(np.arange(20, dtype=np.int64), {}, {})
    ctx = ExecContext(None, _DeviceLike() if device else CpuBackend(), Options(), MemoryManager(None), str(tmp_path))
    g = sink.init_global(ctx)
    local = sink.init_local(ctx, g)
    compiled_rows.sink_selected(ctx, plan, b, sel, g, local)
    sink.combine(ctx, g, local)
    assert sum(out.num_rows for out in sink.finalize(ctx, g)) == 0
    assert ctx.stats[7].rows_in == 20
