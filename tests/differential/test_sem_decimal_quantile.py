"""quantile_cont/median of DECIMAL values against DuckDB (issue 15, fuzz cases 70260-70263): DuckDB
keeps the DECIMAL's unscaled integer, picks a value exactly where the position is whole and
interpolates lo + (hi - lo) * d from the exact difference. hetdb read the values as doubles first,
so values past 2^53 unscaled (|x| > ~9e11 at scale 4) lost their last digits. GROUP BY, whole
partitions and frames (also with EXCLUDE), wide values near DECIMAL(18)'s limit, NULLs, groups of
every size from 1 to 9 (whole and fractional positions), equal neighbours; DECIMAL(19..38) values
(wide arithmetic) keep their type (hetdb answered a DOUBLE); percentile_cont WITHIN GROUP (ORDER BY x
DESC) interpolates from the largest value as DuckDB does."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from sem_check import build, check

import hetdb
from hetdb.backend.cpu import window as K
from hetdb.backend.cpu import window_stats as KS


def _rows() -> pa.Table:
    rng = np.random.default_rng(15)
    g, dw, dz, ds = [], [], [], []
    big = 10**18 - 1
    for group in range(24):
        size = group % 9 + 1
        for _ in range(size):
            g.append(group)
            u = int(rng.integers(-big, big)) if group % 3 else int(rng.integers(-10**6, 10**6)) + 9 * 10**17
            if group % 4 == 1:  # equal neighbours past 2^53: exact only if never read as doubles
                u = -953983946188005318
            dw.append(None if rng.random() < 0.15 else Decimal(u).scaleb(-4))
            dz.append(None if rng.random() < 0.1 else Decimal(int(rng.integers(-big, big))))
            ds.append(None if rng.random() < 0.1 else Decimal(int(rng.integers(-10**8, 10**8))).scaleb(-2))
    g += [99, 99]  # a group of NULLs only
    dw += [None, None]
    dz += [None, None]
    ds += [None, None]
    return pa.table({
        "g": pa.array(g, pa.int32()),
        "i": pa.array(range(len(g)), pa.int32()),
        "dw": pa.array(dw, pa.decimal128(18, 4)),
        "dz": pa.array(dz, pa.decimal128(18, 0)),
        "ds": pa.array(ds, pa.decimal128(9, 2)),
    })


QUERIES = [
    "SELECT g, quantile_cont(dw, 0.25), quantile_cont(dw, 0.5), median(dz), quantile_cont(ds, 0.75) FROM t GROUP BY g",
    "SELECT g, quantile_cont(dw, 0.0), quantile_cont(dw, 1.0), quantile_cont(dz, 0.3), quantile_cont(dz, 0.9) "
    "FROM t GROUP BY g",
    "SELECT quantile_cont(dw, 0.37), median(dz), quantile_cont(ds, 0.01) FROM t",
    # WITHIN GROUP (ORDER BY x DESC): DuckDB interpolates from the largest value (1 - q ascending
    # differs in the last digits)
    "SELECT g, percentile_cont(0.3) WITHIN GROUP (ORDER BY dw DESC), percentile_cont(0.7) WITHIN GROUP "
    "(ORDER BY dz), percentile_cont(0.45) WITHIN GROUP (ORDER BY ds DESC) FROM t GROUP BY g",
    "SELECT g, percentile_cont(0.3) WITHIN GROUP (ORDER BY CAST(dz AS DECIMAL(38, 0)) * ds DESC), "
    "percentile_cont(0.8) WITHIN GROUP (ORDER BY i DESC) FROM t GROUP BY g",
    "SELECT i, quantile_cont(dw, 0.25) OVER (PARTITION BY g), median(dz) OVER (PARTITION BY g) FROM t",
    "SELECT i, quantile_cont(dw, 0.5) OVER (PARTITION BY g ORDER BY i ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), "
    "quantile_cont(dz, 0.25) OVER (ORDER BY i ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) FROM t",
    # DECIMAL(19..38) (wide arithmetic): DuckDB interpolates lo + trunc(double(hi - lo) * d) exactly
    "SELECT g, quantile_cont(CAST(dw AS DECIMAL(38, 4)) * dw, 0.3), median(CAST(dz AS DECIMAL(30, 0)) * ds) "
    "FROM t GROUP BY g",
    "SELECT i, quantile_cont(CAST(dw AS DECIMAL(38, 4)) * dz, 0.7) OVER (PARTITION BY g ORDER BY i ROWS "
    "BETWEEN 2 PRECEDING AND CURRENT ROW), median(CAST(ds AS DECIMAL(20, 2)) * ds) OVER (PARTITION BY g) FROM t",
    "SELECT i, median(dw) OVER (PARTITION BY g ORDER BY i ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING "
    "EXCLUDE CURRENT ROW), quantile_cont(ds, 0.6) OVER (ORDER BY g RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    path = tmp_path_factory.mktemp("sem-decimal-quantile")
    return str(path), build(str(path), {"t": _rows()})


def test_decimal_quantiles_agree_with_duckdb(tables, device) -> None:
    path, duck = tables
    with hetdb.connect(path, device=device) as con:
        compared = [check(con, duck, sql) for sql in QUERIES]
    assert len(compared) == len(QUERIES) and all(a.rows for a in compared)


def test_the_fuzz_case_keeps_every_digit(tables) -> None:
    """Equal neighbours past 2^53 (DuckDB interpolates them through doubles: ...5376) and a whole
    position (DuckDB picks the value: ...5318), as in fuzz case 70260."""
    path, duck = tables
    with hetdb.connect(path, device="cpu") as con:
        for n in (2, 3):
            sql = (f"SELECT quantile_cont(x, 0.5) FROM (SELECT dw AS x FROM t WHERE dw = -95398394618800.5318 "
                   f"LIMIT {n})")
            answer = check(con, duck, sql)
            assert answer.rows and ("5376')" if n == 2 else "5318')") in answer.rows[0][0][1]


def test_interpolation_of_unscaled_decimals_is_exact_in_int64() -> None:
    """The compiled kernels' int64 results match the Python definition (exact rationals) on values up
    to DECIMAL(18)'s limit; whole positions pick the value itself."""
    rng = np.random.default_rng(5)
    pairs = np.sort(rng.integers(-10**18 + 1, 10**18 - 1, size=(300, 2)), axis=1)
    ps, pe, valid = np.zeros(2, np.int64), np.full(2, 2, np.int64), np.ones(2, bool)
    tie = np.zeros(2, bool)
    for a, b in pairs:
        xs = np.array([a, b], np.int64)
        for q in (0.25, 0.5, 0.3, 0.999):
            out, ok = K.partition_quantile(xs, valid, ps, pe, q)
            framed, framed_ok = KS.frame_quantile(xs, valid, ps, pe, pe, pe, tie, q)
            assert out.dtype == framed.dtype == np.int64 and ok.all() and framed_ok.all()
            assert int(out[0]) == int(framed[1]) == KS.interpolate(int(a), int(b), q)
        for q, want in ((0.0, a), (1.0, b)):
            assert int(K.partition_quantile(xs, valid, ps, pe, q)[0][0]) == want
