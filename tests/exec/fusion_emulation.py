"""The NumPy stand-in for a fused GPU kernel and the fixtures that route CPU connections through the
fusion planner (exec/fusion.py) and driver (exec/fusion_run.py) with it: the test_gpu_fusion_*.py
files plan and drive fused pipelines on the CPU, no GPU needed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_data import build_ssb, dataset  # noqa: E402

from hetdb.backend.gpu.codegen.runtime import AggregateResult  # noqa: E402
from hetdb.column import Batch, Column  # noqa: E402
from hetdb.plan.expr import ColumnRef  # noqa: E402

SF = 0.01
ROWS_PER_PAGE = 1 << 13


# ---- a NumPy interpreter of a fused pipeline spec ---------------------------------------------------
class _State:
    def __init__(self, domains, accs):
        self.domains = domains
        self.sizes = [max(0, hi - lo + 1) for lo, hi in domains]
        self.num_groups = int(np.prod(self.sizes, dtype=object)) if self.sizes else 1
        self.strides = [int(np.prod(self.sizes[k + 1:], dtype=object)) for k in range(len(self.sizes))]
        self.accs = accs


class EmulatedPipeline:
    """Same interface as codegen.FusedPipeline (new_state/consume/finish), computed with NumPy."""

    def __init__(self, real):
        from hetdb.backend.cpu import CpuBackend
        from hetdb.exec.expressions import ExprEvaluator

        self.real, self.spec, self.kernel = real, real.spec, real.kernel
        self.evaluator = ExprEvaluator(CpuBackend())
        self.consumed = 0
        self.host_finishes = 0  # finish(host=True): groups handed to the host tail (fusion_run._host_finish)

    def batch_unfusable_reason(self, columns):
        return self.real.batch_unfusable_reason(columns)

    def new_state(self, domains):
        n = len(self.kernel.accumulators)
        return _State(list(domains), [[] for _ in range(n)])

    def _value(self, expr, env, n):
        if isinstance(expr, ColumnRef):
            return env[expr.cid].data
        col = self.evaluator.evaluate(expr, Batch(env, n))
        data = col.data
        return np.broadcast_to(data, (n,)) if np.ndim(data) == 0 else data

    def consume(self, state, columns, tables):
        spec = self.spec
        n = len(next(iter(columns.values())))
        env = {cid: Column(t, data=np.asarray(columns[cid].data)) for cid, t in spec.inputs}
        keep = np.ones(n, dtype=bool)
        for probe, table in zip(spec.probes, tables):
            k = self._value(probe.key, env, n).astype(np.int64) - table.lo
            ok = keep & (k >= 0) & (k < table.size)
            r = np.where(ok, table.rows[np.clip(k, 0, max(table.size - 1, 0))] if table.size else -1, -1)
            keep &= r >= 0
            for (cid, t), arr in zip(probe.payload, table.payload):
                env[cid] = Column(t, data=np.asarray(arr)[np.where(r >= 0, r, 0)] if len(arr) else
                                  np.zeros(n, dtype=t.numpy_dtype))
        for f in spec.filters:
            keep &= self.evaluator.predicate(f, Batch(env, n))
        idx = np.flatnonzero(keep)
        gid = np.zeros(idx.shape[0], dtype=np.int64)
        for key, (lo, _), size, stride in zip(spec.group_keys, state.domains, state.sizes, state.strides):
            k = self._value(key, env, n)[idx].astype(np.int64) - lo
            assert ((k >= 0) & (k < size)).all(), f"group key {key} outside its domain"
            gid += k * stride
        state.accs[0].append((gid, np.ones(idx.shape[0], dtype=np.int64)))
        for a, acc in zip(spec.aggregates, state.accs[1:]):
            vals = np.ones(idx.shape[0], dtype=np.int64) if a.arg is None else \
                np.asarray(self._value(a.arg, env, n))[idx]
            acc.append((gid, vals))
        self.consumed += 1

    def finishes_on_host(self, state):
        return state.num_groups <= 1 << 16

    def finish(self, state, host=False):
        self.host_finishes += bool(host)
        ng = state.num_groups
        counts = np.zeros(ng, dtype=np.int64)
        for gid, v in state.accs[0]:
            np.add.at(counts, gid, v)
        groups = np.flatnonzero(counts > 0)
        keys = [(groups // stride) % size + lo
                for (lo, _), size, stride in zip(state.domains, state.sizes, state.strides)]
        values = []
        for a, acc, spec_acc in zip(self.spec.aggregates, state.accs[1:], self.kernel.accumulators[1:]):
            is_f = spec_acc.kind != "i64"
            if a.op in ("sum", "count", "count_star"):
                out = np.zeros(ng, dtype=np.float64 if is_f else np.int64)
                for gid, v in acc:
                    np.add.at(out, gid, v.astype(out.dtype))
            else:
                fill = np.inf if a.op == "min" else -np.inf
                out = np.full(ng, fill if is_f else (np.iinfo(np.int64).max if a.op == "min"
                                                     else np.iinfo(np.int64).min),
                              dtype=np.float64 if is_f else np.int64)
                for gid, v in acc:
                    (np.minimum if a.op == "min" else np.maximum).at(out, gid, v.astype(out.dtype))
                if not is_f:
                    out = out.astype(a.arg.dtype.numpy_dtype)
            values.append(out[groups])
        return AggregateResult(keys, values, counts[groups])


@pytest.fixture
def emulated_fusion(monkeypatch):
    """Route CPU connections through plan_fusion/run_fused with emulated kernels."""
    import hetdb.backend.gpu.codegen as codegen
    import hetdb.exec.engine as engine_mod
    import hetdb.exec.operators.scan_device as scan_device
    import hetdb.exec.pipeline as pipeline_mod
    from hetdb.exec import fusion, fusion_run
    from hetdb.exec.kept_builds import keep_build

    made: list[EmulatedPipeline] = []
    real_compile = codegen.compile_fused_pipeline
    real_run = pipeline_mod.run_pipeline

    def compile_emulated(spec):
        p = EmulatedPipeline(real_compile(spec))
        made.append(p)
        return p

    def read_unfiltered(op, ctx, rg, reader, apply_filters=True):
        assert not apply_filters
        scan = op.scan
        cols = {f.cid: op._read_column(ctx, reader, name, rg) for f, name in zip(scan.fields, scan.column_names)}
        n = reader.row_group_rows(rg)
        ctx.add(op.op_id, rows_in=n, rows_out=n)
        return [Batch(cols, n)]

    def run_with_fusion(ctx, pipe, pool, threads):
        run = pipeline_mod._Run(ctx, pipe)
        fused, why = fusion.plan_fusion(ctx, pipe)
        if why:
            ctx.stat(pipe.sink.op_id).fused = why if fused is not None else f"operator at a time: {why}"
        if fused is None:
            real_run(ctx, pipe, None, 1)
            return
        fusion_run.run_fused(ctx, pipe, fused, run)
        ctx.results[pipe.pid] = pipe.sink.finalize(ctx, run.gsink)
        if not fused.deferred:  # (as exec/pipeline.run_pipeline)
            keep_build(ctx, pipe)

    monkeypatch.setattr(codegen, "compile_fused_pipeline", compile_emulated)
    monkeypatch.setattr(scan_device, "read_device_scan", read_unfiltered)
    monkeypatch.setattr(engine_mod, "run_pipeline", run_with_fusion)
    monkeypatch.setattr(pipeline_mod, "run_pipeline", run_with_fusion)
    return made


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("fusion-ssb"), f"ssb-{SF}-{ROWS_PER_PAGE}",
                   lambda p: build_ssb(p, SF, ROWS_PER_PAGE))
