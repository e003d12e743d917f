"""Queries that differ only in literal values share their GPU kernels (codegen/expr_cuda.literal_params:
literals are kernel parameters, not source text).

Without a GPU: the 13 SSB queries and a set of queries over NULL-rich tables (dates, decimals, doubles,
IN lists, LIKE on plain and dictionary strings, CASE, ``%`` by a literal, a join) are planned by the
GPU's planners — the dense fused kernels (exec/fusion.py, driven by the NumPy emulation) and the
general pipeline compiler (exec/compiled.py) — once with each of two sets of literal values: every
generated kernel text must be the same for both sets, with different literal arguments, and the
kernels compile with nvcc. On a GPU (marked ``gpu``): both sets run (the first twice: cold, then over
the pages it left in the device cache, whose hot path has kernels of its own), each answer equals
DuckDB's, and the second set compiles no CUDA module and loads none from the disk cache
(backend/gpu/compile.compile_counts).
"""

from __future__ import annotations

import datetime as dt
import decimal
import difflib
import random
import re
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))
sys.path.insert(0, str(Path(__file__).parents[1] / "backend"))
sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))

from diff_check import mismatch  # noqa: E402
from diff_queries import SSB_ORDERING, load_queries  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402
from gpu_literal_kernels import variant  # noqa: E402
from test_gpu_pipeline_suites import _AsGpu, _fake_batches  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402

# the queries whose plans at SF 0.01 differ between the two sets (more than their literals)
DATA_DEPENDENT_PLANS = {"q2.3", "q3.2", "q3.3", "q3.4", "q4.3"}

# queries over ``t`` / ``u`` (below) in two literal sets: {A} / {B} in the text
MIXED = {
    "dates_decimals_doubles": ("SELECT b, count(*), sum(c) FROM t WHERE e BETWEEN DATE '{0}' AND DATE '{1}' "
                               "AND c > {2} AND d < {3} GROUP BY b",
                               ("1993-01-01", "1994-06-30", "12.50", "0.25"),
                               ("1992-05-01", "1995-01-31", "-3.75", "10.5")),
    "in_list_plain_like": ("SELECT a, count(*), min(d) FROM t WHERE a IN ({0}, {1}, {2}) OR s LIKE '{3}' GROUP BY a",
                           ("1", "5", "9", "%ab%"), ("2", "7", "11", "x1%")),
    "case_mod": ("SELECT CASE WHEN d > {0} THEN a * {1} ELSE a + {2} END AS g, count(*) FROM t "
                 "WHERE k % {3} = {4} GROUP BY 1", ("1.5", "3", "7", "7", "2"), ("-2.0", "5", "-1", "5", "1")),
    "join_filters": ("SELECT u.x, count(*), sum(t.c) FROM t JOIN u ON t.a = u.a WHERE t.d > {0} AND u.x < {1} "
                     "AND t.b <> '{2}' GROUP BY u.x", ("-3.5", "40", "fig"), ("2.25", "25", "apple")),
}


def _tables() -> dict[str, pa.Table]:
    rng = random.Random(23)
    n = 5000
    names = ["apple", "banana", "cherry", "fig", "grape"]
    t = pa.table({
        "k": pa.array(range(n), pa.int64()),
        "a": pa.array([None if rng.random() < 0.1 else rng.randint(0, 40) for _ in range(n)], pa.int32()),
        "b": pa.array([None if rng.random() < 0.1 else rng.choice(names) for _ in range(n)], pa.string()),
        "c": pa.array([None if rng.random() < 0.05 else decimal.Decimal(rng.randint(-9999, 9999)) / 100
                       for _ in range(n)], pa.decimal128(12, 2)),
        "d": pa.array([None if rng.random() < 0.05 else rng.uniform(-20, 20) for _ in range(n)], pa.float64()),
        "e": pa.array([dt.date(1992, 1, 1) + dt.timedelta(days=rng.randint(0, 2000)) for _ in range(n)],
                      pa.date32()),
        # near-unique strings: plain (not dictionary-encoded) pages, LIKE evaluated in the kernel
        "s": pa.array([None if i % 29 == 0 else f"x{i}-" + "".join(rng.choice("abcxyz") for _ in range(i % 9))
                       for i in range(n)], pa.string()),
    })
    u = pa.table({"a": pa.array([None if i % 11 == 0 else i % 45 for i in range(90)], pa.int32()),
                  "x": pa.array([rng.randint(0, 60) for _ in range(90)], pa.int32())})
    return {"t": t, "u": u}


TABLES = _tables()


@pytest.fixture(scope="module")
def mixed_db(tmp_path_factory):
    return stored_tables(tmp_path_factory.mktemp("literal-kernels"), TABLES, rows_per_page=1024)


def ssb_pairs() -> dict[str, tuple[str, str]]:
    """Each SSB query with the suite's literals and with scripts/gpu_literal_kernels.py's others."""
    return {name: (sql, variant(name, sql)) for name, sql in load_queries("ssb").items()}


def mixed_pairs() -> dict[str, tuple[str, str]]:
    return {name: (text.format(*a), text.format(*b)) for name, (text, a, b) in MIXED.items()}


def _batches(ctx, pipe) -> list:
    """test_gpu_pipeline_suites._fake_batches, and the same with every dictionary string column's page
    plain (a column's later pages are plain once its strings are mostly distinct: storage/dictionary.py)."""
    import numpy as np

    from hetdb.column import Batch, Column

    out = _fake_batches(ctx, pipe)
    for b in list(out):
        strings = {c for c, col in b.columns.items() if col.dtype.kind == "string" and col.dictionary is not None}
        if strings:
            cols = {c: Column(col.dtype, offsets=np.zeros(b.num_rows + 1, np.int64), chars=np.zeros(0, np.uint8),
                              validity=col.validity) if c in strings else col for c, col in b.columns.items()}
            out.append(Batch(cols, b.num_rows))
    return out


def _generated(path: str, sql: str, made: list, monkeypatch) -> list:
    """The kernels the GPU would generate for ``sql``: the general compiler's for every pipeline it
    takes (planned on one-row batches with and without NULLs, test_gpu_pipeline_suites._fake_batches)
    and the dense fused kernels (``made``: the emulated_fusion fixture's pipelines)."""
    from hetdb.exec import engine as engine_mod
    from hetdb.exec import pipeline as pipeline_mod
    from hetdb.exec.compiled import _kernel, plan_compiled

    kernels: list = []
    real = pipeline_mod.run_pipeline

    def spy(ctx, pipe, pool, threads):
        plan, _ = plan_compiled(_AsGpu(ctx), pipe)
        if plan is not None:
            for b in _batches(ctx, pipe):
                k, _ = _kernel(_AsGpu(ctx), plan, b)
                if not isinstance(k, str):
                    kernels.append((k.spec, k.kernel))
        real(ctx, pipe, pool, threads)

    start = len(made)
    with monkeypatch.context() as m:
        m.setattr(pipeline_mod, "run_pipeline", spy)
        m.setattr(engine_mod, "run_pipeline", spy, raising=False)
        with hetdb.connect(path, device="cpu", cpu_compile=False) as con:
            con.sql(sql).arrow()
    return kernels + [(p.spec, p.kernel) for p in made[start:]]


def _same_kernels(path, pairs, made, monkeypatch, tmp_path, bodies: dict[str, str]) -> tuple[int, int, list[str]]:
    """Plan both literal sets of every query; wherever the two specs are equal but for their literal
    values, the kernel texts must be equal. Returns (such kernels, those of them whose literal
    arguments differ, the queries whose plans differ in more than literals: a data-dependent choice,
    such as the columns a dense kernel loads first from its probes' hit rates). Every distinct kernel
    is compiled with nvcc (one invocation); ``bodies`` receives them by name."""
    from hetdb.backend.gpu.codegen.expr_cuda import masked
    from hetdb.backend.gpu.nvcc_check import nvcc_check

    kernels = differing = 0
    other_plans: list[str] = []
    for name, (a, b) in pairs.items():
        ka, kb = (_generated(path, sql, made, monkeypatch) for sql in (a, b))
        if len(ka) != len(kb) or [masked(x) for x, _ in ka] != [masked(y) for y, _ in kb]:
            other_plans.append(name)
        for (sx, x), (sy, y) in zip(ka, kb):
            bodies[x.name] = x.body
            if masked(sx) != masked(sy):
                continue
            assert x.body == y.body, f"{name}:\n" + "\n".join(difflib.unified_diff(
                x.body.splitlines(), y.body.splitlines(), lineterm="", n=1))
            assert x.name == y.name
            kernels += 1
            differing += x.literals != y.literals
    if shutil.which("nvcc") and bodies:
        from hetdb.backend.gpu.compile import load_source

        # one translation unit (pipeline.cuh includes the dense kernels' fused_pipeline.cuh)
        result = nvcc_check(load_source("pipeline.cuh") + "\n" + "\n".join(bodies.values()), tmp_path, "literals")
        assert result.returncode == 0, result.stderr[-4000:]
    return kernels, differing, other_plans


def test_ssb_literal_variants_generate_the_same_kernels(ssb_db, emulated_fusion, monkeypatch, tmp_path):
    kernels, differing, other_plans = _same_kernels(ssb_db.path, ssb_pairs(), emulated_fusion, monkeypatch, tmp_path,
                                                    {})
    print(f"{kernels} kernels, {differing} with other literal arguments; plans differ: {other_plans}")
    assert kernels >= 13  # (a dense kernel per query at least)
    assert differing >= 3  # q1.x's fact filters are literal arguments
    # at SF 0.01 a dimension's few rows make these plans depend on the values (the join order by the
    # filters' selectivity, the columns a dense kernel loads first by its probes' hit rates)
    assert set(other_plans) <= DATA_DEPENDENT_PLANS, other_plans


def test_mixed_literal_variants_generate_the_same_kernels(mixed_db, emulated_fusion, monkeypatch, tmp_path):
    bodies: dict[str, str] = {}
    kernels, differing, other_plans = _same_kernels(mixed_db.path, mixed_pairs(), emulated_fusion, monkeypatch,
                                                    tmp_path, bodies)
    print(f"{kernels} kernels, {differing} with other literal arguments; plans differ: {other_plans}")
    assert not other_plans
    assert kernels >= len(MIXED)
    assert differing >= len(MIXED)
    text = "\n".join(bodies.values())
    # the plain-string LIKE's pattern and the IN list's items are arguments too
    assert re.search(r"pipe::like_bytes\([^;]*lit_\d+, lit_\d+\)", text), text
    assert "checked_mod" not in text  # (% by a literal keeps its literal form, with the value an argument)


# ---- on the GPU --------------------------------------------------------------------------------------
def _modules() -> int:
    from hetdb.backend.gpu.compile import compile_counts

    c = compile_counts()
    return c["nvrtc"] + c["disk"]


def _run_pairs(path, pairs, reference, ordering=None, other_plans=frozenset()) -> int:
    """Per pair: its first query twice (cold, then over the pages it left in the device cache: the hot
    path's kernels, e.g. paged ones), then its second query twice; every answer equals DuckDB's, and
    the second query loads no CUDA module (compiled or from the disk cache) unless its plan is
    ``other_plans``'. Returns the queries compared."""
    compared = 0
    with hetdb.connect(path, device="gpu") as con:
        for name, (a, b) in pairs.items():
            for i, sql in enumerate((a, a, b, b)):
                before = _modules()
                got = con.sql(sql).arrow()
                if i >= 2 and name not in other_plans:
                    assert _modules() == before, f"{name}: the second literal set loaded {_modules() - before} module(s)"
                diff = mismatch(got, reference(sql), (ordering or {}).get(name, ()))
                assert diff is None, f"{name} [{sql}]: {diff}"
                compared += 1
    return compared


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_ssb_literal_variants_share_kernels_on_the_gpu(ssb_db):
    pairs = ssb_pairs()
    assert _run_pairs(ssb_db.path, pairs, ssb_db.reference, SSB_ORDERING, DATA_DEPENDENT_PLANS) == 4 * len(pairs) == 52


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_mixed_literal_variants_share_kernels_on_the_gpu(mixed_db):
    duck = duck_tables(TABLES)

    def reference(sql):
        got = duck.sql(sql).arrow()
        return got.read_all() if hasattr(got, "read_all") else got

    pairs = mixed_pairs()
    assert _run_pairs(mixed_db.path, pairs, reference) == 4 * len(pairs)
