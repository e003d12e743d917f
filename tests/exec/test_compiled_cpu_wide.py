"""DECIMAL(19..38) expressions inside compiled CPU loops (TPC-H q09's amount): held in int64, with
int64 overflow as their bound; a value past it sends the pipeline to the operators, which hold it
exactly. Against DuckDB and the operators (cpu_compile=False), at 1 and 3 threads."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from exec_plan_helpers import compiled_answers, duck_tables, stored_tables  # noqa: E402


def _decimals(values: np.ndarray, scale: int, precision: int, mask=None) -> pa.Array:
    return pa.array([Decimal(int(v)).scaleb(-scale) for v in values], pa.decimal128(precision, scale), mask=mask)


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(9)
    n = 20_000
    small = pa.table({
        "k": pa.array(rng.integers(0, 50, n), pa.int64()),
        "p": _decimals(rng.integers(-10**9, 10**9, n), 2, 15, mask=rng.random(n) < 0.03),
        "q": _decimals(rng.integers(0, 10**6, n), 2, 15),
        "d": _decimals(rng.integers(0, 10, n), 2, 15)})
    # products past int64 (about 1e13 * 1e13 in units of 1e-4): the operators finish these exactly
    big = pa.table({
        "k": pa.array(rng.integers(0, 5, 2000), pa.int64()),
        "p": _decimals(rng.integers(10**14, 10**15, 2000), 2, 15),
        "q": _decimals(rng.integers(10**14, 10**15, 2000), 2, 15)})
    return {"small": small, "big": big}


COMPILED = [
    "SELECT k, sum(cast(p AS DECIMAL(20,2)) * q) FROM small GROUP BY k",
    "SELECT k, sum(cast(p * (1 - d) AS DECIMAL(19,4)) - cast(q * d AS DECIMAL(19,4))), count(*) "
    "FROM small GROUP BY k",
    "SELECT k, avg(cast(p AS DECIMAL(20,2)) * q), count(*) FROM small "
    "WHERE cast(p AS DECIMAL(20,2)) * q > 1000 GROUP BY k",
    "SELECT sum(cast(p AS DECIMAL(20,2)) * q - q * d) FROM small",
]
# a previous pipeline's wide SUM read by a compiled loop (q15's max(total_revenue), q18's HAVING)
# while it is held in int64; past int64 (Python ints) the morsel or build is left to the operators
LOADED = [
    "SELECT max(s), min(s), count(*) FROM (SELECT k, sum(cast(p AS DECIMAL(20,2)) * q) AS s FROM small GROUP BY k)",
    "SELECT count(*), sum(f.q) FROM small f JOIN (SELECT k, sum(cast(p AS DECIMAL(20,2)) * q) AS s FROM small "
    "GROUP BY k) x ON f.k = x.k WHERE x.s > 0",
    "SELECT max(s), count(*) FROM (SELECT k, sum(cast(p AS DECIMAL(20,2)) * q) AS s FROM big GROUP BY k) WHERE s > 0",
    "SELECT count(*), max(x.s) FROM big f JOIN (SELECT k, sum(cast(p AS DECIMAL(20,2)) * q) AS s FROM big "
    "GROUP BY k) x ON f.k = x.k",
]
FALLBACK = [
    "SELECT k, sum(cast(p AS DECIMAL(20,2)) * q) FROM big GROUP BY k",
    "SELECT sum(cast(q AS DECIMAL(20,2)) * p) FROM big",
]


def test_wide_decimal_expressions_in_compiled_loops(tmp_path) -> None:
    tables = _tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    ran = 0
    for _threads, sql, plan in compiled_answers(db.path, duck, COMPILED + FALLBACK + LOADED):
        if sql in LOADED[:2]:
            assert plan.count("compiled into one CPU loop") >= 2, plan
        elif sql in LOADED:
            assert "past 64 bits" in plan, plan
        elif sql in COMPILED:
            assert "compiled into one CPU loop (scan, filters, hash probes and hash aggregation" in plan, plan
        else:
            assert "a value left its type" in plan, plan
        ran += 1
    assert ran == 2 * (len(COMPILED) + len(FALLBACK) + len(LOADED))
