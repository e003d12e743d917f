"""Shared fixtures for executor tests: a small database with NULL-rich tables, hand-built logical
plans, both backends (hetdb's CpuBackend and a pure NumPy reference), and DuckDB as the truth."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from exec_plan_helpers import check, col, duck_tables, output, run, scan, stored_tables  # noqa: E402,F401

# (the fused-pipeline planning tests' emulated kernels: test_gpu_fusion_*.py)
from fusion_emulation import emulated_fusion, ssb_db  # noqa: E402,F401
from reference_backend import ReferenceBackend  # noqa: E402

N_FACT = 3000


def _fact_table() -> pa.Table:
    rng = random.Random(7)
    n = N_FACT
    names = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "é-acute"]
    a = [None if rng.random() < 0.1 else rng.randint(0, 40) for _ in range(n)]
    b = [None if rng.random() < 0.1 else rng.choice(names) for _ in range(n)]
    c = [None if rng.random() < 0.05 else decimal.Decimal(rng.randint(-100000, 100000)) / 100 for _ in range(n)]
    d = [None if rng.random() < 0.05 else rng.uniform(-50, 50) for _ in range(n)]
    e = [dt.date(1992, 1, 1) + dt.timedelta(days=rng.randint(0, 2500)) for _ in range(n)]
    k = list(range(n))
    return pa.table({"k": pa.array(k, pa.int64()), "a": pa.array(a, pa.int32()),
                     "b": pa.array(b, pa.string()), "c": pa.array(c, pa.decimal128(12, 2)),
                     "d": pa.array(d, pa.float64()), "e": pa.array(e, pa.date32())})


def _dim_table() -> pa.Table:
    rng = random.Random(11)
    rows = 60
    a = [None if i % 13 == 0 else rng.randint(0, 45) for i in range(rows)]  # duplicates and NULLs
    s = [None if i % 17 == 0 else f"s{rng.randint(0, 9)}" for i in range(rows)]
    b = [rng.choice(["apple", "fig", "kiwi", None]) for _ in range(rows)]
    return pa.table({"a": pa.array(a, pa.int32()), "s": pa.array(s, pa.string()),
                     "b": pa.array(b, pa.string())})


TABLES = {"fact": _fact_table(), "dim": _dim_table()}


@pytest.fixture(scope="session")
def db(tmp_path_factory):
    return stored_tables(tmp_path_factory.mktemp("execdb"), TABLES)


@pytest.fixture(scope="session")
def duck():
    return duck_tables(TABLES)


@pytest.fixture(params=["cpu", "reference"])
def backend(request):
    if request.param == "cpu":
        from hetdb.backend.cpu import CpuBackend

        return CpuBackend()
    return ReferenceBackend()
