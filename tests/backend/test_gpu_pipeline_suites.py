"""Every pipeline of the TPC-H and SSB suites that the pipeline compiler takes, generated without a
GPU: the queries run on the CPU backend, and before each pipeline runs (its builds done) the
compiler plans it and generates its kernels, once with every input nullable and once with none, as
the GPU would for pages with and without NULLs. One test checks which pipelines compile, the other
compiles every generated kernel with nvcc in one invocation (both slow: they build and query both data sets;
test_gpu_pipeline_source.py compiles a representative set in ``make test``)."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_data import build_ssb, build_tpch, dataset  # noqa: E402
from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu.codegen.pipeline_gen import generate_pipeline  # noqa: E402
from hetdb.backend.gpu.nvcc_check import nvcc_check  # noqa: E402
from hetdb.column import Batch, Column  # noqa: E402
from hetdb.exec import pipeline as pipeline_mod  # noqa: E402
from hetdb.exec.operators.basic import ResultSource  # noqa: E402
from hetdb.exec.operators.scan import TableScan  # noqa: E402


def _fake_batches(ctx, pipe) -> list[Batch]:
    """One-row batches with the source's column types, dictionaries and (all / no) validity."""
    src = pipe.source
    if isinstance(src, ResultSource):
        got = [b for b in ctx.results[src.pipeline_id] if b.num_rows]
        return got[:1]
    if not isinstance(src, TableScan):
        return []
    reader = ctx.db.table(src.scan.table)
    out = []
    for nullable in (True, False):
        cols = {}
        for f, name in zip(src.scan.fields, src.scan.column_names):
            d = reader.dictionary(name) if f.dtype.kind == "string" else None
            if f.dtype.kind == "string" and d is None:
                cols[f.cid] = Column(f.dtype, offsets=np.zeros(2, np.int64), chars=np.zeros(0, np.uint8))
                continue
            dtype = np.int32 if f.dtype.kind == "string" else f.dtype.numpy_dtype
            cols[f.cid] = Column(f.dtype, data=np.zeros(1, dtype), dictionary=d,
                                 validity=np.ones(1, bool) if nullable else None)
        out.append(Batch(cols, 1))
    return out


class _AsGpu:
    """The CPU run's context as the GPU compiler sees it (what it plans for GPU kernels only)."""

    device = True

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    def __getattr__(self, name: str):
        return getattr(self._ctx, name)


def collect(path: str, queries: dict[str, str], monkeypatch) -> tuple[dict[str, list], dict[str, str]]:
    """(kernels per query, "query/pipeline" -> why not compiled)."""
    from hetdb.exec.compiled import _kernel, plan_compiled

    kernels: dict[str, list] = {}
    refused: dict[str, str] = {}
    real = pipeline_mod.run_pipeline
    current = [""]

    def spy(ctx, pipe, pool, threads):
        gpu = _AsGpu(ctx)
        plan, why = plan_compiled(gpu, pipe)
        if plan is not None:
            for b in _fake_batches(ctx, pipe):
                k, _ = _kernel(gpu, plan, b)
                if isinstance(k, str):
                    refused[f"{current[0]}/{pipe.pid}"] = k
                else:
                    kernels.setdefault(current[0], []).append(k)
        elif why:
            refused[f"{current[0]}/{pipe.pid}"] = why
        real(ctx, pipe, pool, threads)

    monkeypatch.setattr(pipeline_mod, "run_pipeline", spy)
    from hetdb.exec import engine as engine_mod

    monkeypatch.setattr(engine_mod, "run_pipeline", spy, raising=False)
    with hetdb.connect(path, device="cpu") as con:
        for name, sql in queries.items():
            current[0] = name
            con.sql(sql)
    return kernels, refused


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    tpch = dataset(tmp_path_factory.mktemp("pipe-tpch"), "tpch-0.01", lambda p: build_tpch(p, 0.01, 4096))
    ssb = dataset(tmp_path_factory.mktemp("pipe-ssb"), "ssb-0.01-8192", lambda p: build_ssb(p, 0.01, 8192))
    return {"tpch": tpch, "ssb": ssb}


def _all(suites, monkeypatch) -> tuple[dict[str, list], dict[str, str]]:
    kernels, refused = {}, {}
    for suite, data in suites.items():
        k, r = collect(data.path, load_queries(suite), monkeypatch)
        kernels.update({f"{suite}/{q}": v for q, v in k.items()})
        refused.update({f"{suite}/{q}": v for q, v in r.items()})
    return kernels, refused


@pytest.mark.slow
def test_suite_pipelines_compile(suites, monkeypatch):
    kernels, refused = _all(suites, monkeypatch)
    tpch = {q for q in kernels if q.startswith("tpch/")}
    ssb = {q for q in kernels if q.startswith("ssb/")}
    # TPC-H queries whose every probe and aggregate the compiler takes (right_semi / right_anti in
    # q21, the join without keys in q22 and COUNT DISTINCT in q16 as well)
    for q in ("q02", "q03", "q04", "q05", "q07", "q08", "q09", "q10", "q12", "q14", "q16", "q19", "q20", "q21",
              "q22"):
        assert f"tpch/{q}" in tpch, (q, {k: v for k, v in refused.items() if k.startswith(f"tpch/{q}")})
    # no pipeline of the suites is refused for a DECIMAL(>18) value any more (q09, q20)
    assert not any("DECIMAL(>18)" in why for why in refused.values()), refused
    from hetdb.backend.gpu.codegen.pipeline_spec import MaterializeSink, ProbeStage

    # q12 / q14: the filtered lineitem scan feeding a hash build (no probe) selects its rows in a kernel
    for q in ("q12", "q14"):
        assert any(isinstance(k.spec.sink, MaterializeSink) and not any(isinstance(s, ProbeStage) for s in k.spec.stages)
                   for k in kernels[f"tpch/{q}"]), q
    assert len(ssb) == 13
    from hetdb.backend.gpu.codegen.pipeline_spec import AggregateSink, MarkBuildSink

    marking = {k.spec.stages[-1].kind for k in kernels["tpch/q21"] if isinstance(k.spec.sink, MarkBuildSink)}
    assert "right_semi" in marking, marking
    assert any(not s.keys for k in kernels["tpch/q22"] for s in k.spec.stages if hasattr(s, "keys")), \
        ([k.spec.describe() for k in kernels["tpch/q22"]], {k: v for k, v in refused.items() if "q22" in k})
    assert not any("right_semi" in why or "without keys" in why for why in refused.values()), refused
    assert not any("DISTINCT" in why for why in refused.values()), refused
    distinct = [k for k in kernels["tpch/q16"] if isinstance(k.spec.sink, AggregateSink) and not k.spec.sink.aggs]
    assert distinct and len(distinct[0].spec.sink.keys) == 4  # p_brand, p_type, p_size, ps_suppkey


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_every_suite_kernel_compiles_with_nvcc(suites, monkeypatch, tmp_path):
    from hetdb.backend.gpu.compile import load_source

    kernels, _ = _all(suites, monkeypatch)
    bodies = {k.kernel.name: k.kernel.body for ks in kernels.values() for k in ks}
    assert len(bodies) > 40
    # the same pipelines over pages kept compressed (gpu_compressed_cache): each input in a codec,
    # cycling through them so every codec meets every input type the suites read
    codecs = ("for", "delta", "dict", "rle", "const")
    for j, k in enumerate(k for ks in kernels.values() for k in ks):
        inputs = tuple(dataclasses.replace(i, codec=codecs[(j + c) % len(codecs)]) for c, i in enumerate(k.spec.inputs))
        g = generate_pipeline(dataclasses.replace(k.spec, inputs=inputs))
        bodies[g.name] = g.body
    assert len(bodies) > 80
    run = nvcc_check(load_source("pipeline.cuh") + "\n" + "\n".join(bodies.values()), tmp_path, "suites", 1200)
    assert run.returncode == 0, run.stderr[-4000:]
