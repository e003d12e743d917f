"""Dense join tables, compacted group keys and probe forms of fused pipelines planned on the host
(exec/fusion.py HOST_PLAN_ROWS: one copy of a dimension's key and group columns out, one upload of
what the kernel reads), planned and driven on the CPU with emulated kernels (fusion_emulation.py):
every SSB query answers as DuckDB does, through the host path, with the same tables, forms and
domains as the array-module path makes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from diff_queries import SSB_ORDERING, load_queries  # noqa: E402

import hetdb  # noqa: E402


def _plans(monkeypatch, fusion, pending: list) -> list:
    """The fused plans made (and, in ``pending``, per plan whether its tables' rows and payload were
    still on the host when the plan was done: the kernel of a narrow-form probe does not read them,
    the emulated one does)."""
    got: list = []
    real = fusion._plan_checked

    def plan(*a):
        got.append(real(*a))
        pending.append([t.pending is not None for t in got[-1].tables])
        return got[-1]

    monkeypatch.setattr(fusion, "_plan_checked", plan)
    return got


def _shape(plan) -> list:
    out: list = [plan.pipeline.real.spec if hasattr(plan.pipeline, "real") else plan.pipeline.spec]
    for t in plan.tables:
        out.append((t.lo, t.size, t.num_rows, t.payload_columns,
                    {f: np.asarray(a).tolist() for f, a in sorted(t.forms.items())}))
    for k in plan.group_keys:
        out.append((k.domain.lo, k.domain.hi, None if k.domain.values is None else np.asarray(k.domain.values).tolist()))
    return out


def test_ssb_plans_on_the_host_as_on_the_device(ssb_db, emulated_fusion, monkeypatch):
    from hetdb.backend.gpu.codegen import dense_tables
    from hetdb.exec import fusion

    pending: list = []
    planned = _plans(monkeypatch, fusion, pending)
    host = []
    real_host = dense_tables.host_planned
    monkeypatch.setattr(dense_tables, "host_planned", lambda *a, **k: host.append(1) or real_host(*a, **k))
    queries = load_queries("ssb")
    compared, default = 0, fusion.HOST_PLAN_ROWS
    for name, sql in queries.items():
        before = len(host)
        shapes = []
        for limit in (default, 0):
            monkeypatch.setattr(fusion, "HOST_PLAN_ROWS", limit)
            planned.clear()
            pending.clear()
            with hetdb.connect(ssb_db.path, device="cpu", cpu_compile=False) as con:
                got = con.sql(sql).arrow()
            diff = mismatch(got, ssb_db.reference(sql), SSB_ORDERING[name])
            assert diff is None, f"{name} (HOST_PLAN_ROWS={limit}): {diff}"
            shapes.append([_shape(p) for p in planned if p is not None and not p.deferred])
            if limit:  # (every table planned on the host stays there through the planning)
                assert sum(map(sum, pending)) == len(host) - before, name
        assert shapes[0] == shapes[1], name
        compared += bool(shapes[0]) and len(host) > before  # (a dimension of it planned on the host)
    assert compared == len(queries) == 13
