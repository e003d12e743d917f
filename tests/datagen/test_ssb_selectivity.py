"""SSB query selectivities on generated SF 1 data, computed by DuckDB, against ssb.md's reference values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from datagen_helpers import duck, ssb_arrow

from hetdb.datagen import ssb

# FROM + WHERE of the 13 SSB queries (shared/benchmarks/ssb/q*.sql), as COUNT(*) queries.
_LO_D = "from lineorder, date where lo_orderdate = d_datekey"
_Q2 = ("from lineorder, date, part, supplier where lo_orderdate = d_datekey and lo_partkey = p_partkey "
       "and lo_suppkey = s_suppkey")
_Q3 = ("from customer, lineorder, supplier, date where lo_custkey = c_custkey and lo_suppkey = s_suppkey "
       "and lo_orderdate = d_datekey")
_Q4 = ("from date, customer, supplier, part, lineorder where lo_custkey = c_custkey "
       "and lo_suppkey = s_suppkey and lo_partkey = p_partkey and lo_orderdate = d_datekey")
_UK = "(c_city = 'UNITED KI1' or c_city = 'UNITED KI5') and (s_city = 'UNITED KI1' or s_city = 'UNITED KI5')"
QUERIES = {
    "q1.1": f"{_LO_D} and d_year = 1993 and lo_discount between 1 and 3 and lo_quantity < 25",
    "q1.2": f"{_LO_D} and d_yearmonthnum = 199401 and lo_discount between 4 and 6 "
            "and lo_quantity between 26 and 35",
    "q1.3": f"{_LO_D} and d_weeknuminyear = 6 and d_year = 1994 and lo_discount between 5 and 7 "
            "and lo_quantity between 36 and 40",
    "q2.1": f"{_Q2} and p_category = 'MFGR#12' and s_region = 'AMERICA'",
    "q2.2": f"{_Q2} and p_brand1 between 'MFGR#2221' and 'MFGR#2228' and s_region = 'ASIA'",
    "q2.3": f"{_Q2} and p_brand1 = 'MFGR#2239' and s_region = 'EUROPE'",
    "q3.1": f"{_Q3} and c_region = 'ASIA' and s_region = 'ASIA' and d_year >= 1992 and d_year <= 1997",
    "q3.2": f"{_Q3} and c_nation = 'UNITED STATES' and s_nation = 'UNITED STATES' "
            "and d_year >= 1992 and d_year <= 1997",
    "q3.3": f"{_Q3} and {_UK} and d_year >= 1992 and d_year <= 1997",
    "q3.4": f"{_Q3} and {_UK} and d_yearmonth = 'Dec1997'",
    "q4.1": f"{_Q4} and c_region = 'AMERICA' and s_region = 'AMERICA' "
            "and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2')",
    "q4.2": f"{_Q4} and c_region = 'AMERICA' and s_region = 'AMERICA' and (d_year = 1997 or d_year = 1998) "
            "and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2')",
    "q4.3": f"{_Q4} and c_region = 'AMERICA' and s_nation = 'UNITED STATES' "
            "and (d_year = 1997 or d_year = 1998) and p_category = 'MFGR#14'",
}
# ssb.md: fraction of lineorder rows that pass, on reference data at SF 1.
REFERENCE = {"q1.1": 2.0e-2, "q1.2": 7.1e-4, "q1.3": 7.8e-5, "q2.1": 7.7e-3, "q2.2": 1.8e-3, "q2.3": 1.9e-4,
             "q3.1": 4.1e-2, "q3.2": 1.4e-3, "q3.3": 5.6e-5, "q3.4": 8.3e-7, "q4.1": 1.5e-2, "q4.2": 3.6e-3,
             "q4.3": 7.4e-5}


# Per query, the filter on each dimension and the fraction of lines passing the lineorder-only filters.
# Every draw in lineorder is independent, so the expected fraction given the drawn dimension tables is
# the product of one factor per dimension.
FACTORS = {
    "q1.1": {"date": "d_year = 1993", "line": 3 / 11 * 24 / 50},
    "q1.2": {"date": "d_yearmonthnum = 199401", "line": 3 / 11 * 10 / 50},
    "q1.3": {"date": "d_weeknuminyear = 6 and d_year = 1994", "line": 3 / 11 * 5 / 50},
    "q2.1": {"part": "p_category = 'MFGR#12'", "supplier": "s_region = 'AMERICA'"},
    "q2.2": {"part": "p_brand1 between 'MFGR#2221' and 'MFGR#2228'", "supplier": "s_region = 'ASIA'"},
    "q2.3": {"part": "p_brand1 = 'MFGR#2239'", "supplier": "s_region = 'EUROPE'"},
    "q3.1": {"customer": "c_region = 'ASIA'", "supplier": "s_region = 'ASIA'", "date": "d_year <= 1997"},
    "q3.2": {"customer": "c_nation = 'UNITED STATES'", "supplier": "s_nation = 'UNITED STATES'",
             "date": "d_year <= 1997"},
    "q4.1": {"customer": "c_region = 'AMERICA'", "supplier": "s_region = 'AMERICA'",
             "part": "p_mfgr in ('MFGR#1', 'MFGR#2')"},
    "q4.2": {"customer": "c_region = 'AMERICA'", "supplier": "s_region = 'AMERICA'",
             "part": "p_mfgr in ('MFGR#1', 'MFGR#2')", "date": "d_year in (1997, 1998)"},
    "q4.3": {"customer": "c_region = 'AMERICA'", "supplier": "s_nation = 'UNITED STATES'",
             "part": "p_category = 'MFGR#14'", "date": "d_year in (1997, 1998)"},
}
# Fraction of each dimension's rows the filter keeps by the rules, and how many rows are drawn at SF 1
# (customers: the 20,000 that order); used for the sampling noise of a query's fraction at SF 1.
_SHARE = {"p_category = 'MFGR#12'": 1 / 25, "p_brand1 between 'MFGR#2221' and 'MFGR#2228'": 8 / 1000,
          "p_brand1 = 'MFGR#2239'": 1 / 1000, "p_mfgr in ('MFGR#1', 'MFGR#2')": 2 / 5,
          "p_category = 'MFGR#14'": 1 / 25}
_DRAWN = {"part": 200_000, "supplier": 2_000, "customer": 20_000}


def _customer_weights(ncust: int) -> np.ndarray:
    """Probability of each custkey (index = key) in lineorder: keys divisible by 3 move to a neighbour."""
    w = np.zeros(ncust + 1)
    keys = np.arange(1, ncust + 1)
    w[keys[keys % 3 != 0]] = 1.0
    for m in keys[keys % 3 == 0]:
        if m + 1 <= ncust:
            w[m + 1] += 0.5
            w[m - 1] += 0.5
        else:
            w[m - 1] += 1.0
    return w / w.sum()


def _expected_given_dims(con, q: str) -> float:
    """Fraction of lineorder rows expected to pass query ``q`` given the generated dimension tables."""
    sz = ssb.sizes(1.0)
    f = FACTORS[q].get("line", 1.0)
    for dim, cond in FACTORS[q].items():
        if dim == "date":
            days = con.execute(f"select count(*) from date where {cond} and d_datekey <= 19980802").fetchone()
            f *= days[0] / ssb.ORDER_DAYS
        elif dim == "part":
            f *= con.execute(f"select count(*) from part where {cond} and p_partkey <= {sz.partkey_range}"
                             ).fetchone()[0] / sz.partkey_range
        elif dim == "supplier":
            f *= con.execute(f"select count(*) from supplier where {cond}").fetchone()[0] / sz.supplier
        elif dim == "customer":
            keys = [r[0] for r in con.execute(f"select c_custkey from customer where {cond}").fetchall()]
            f *= _customer_weights(sz.customer)[keys].sum()
    return f


def _relative_noise(q: str, lines: int, fraction: float) -> float:
    """Relative standard deviation of q's fraction over independent SF 1 draws (dimension rows drawn,
    plus the lineorder rows; lines of one order share their customer and date, hence the factor 2)."""
    var = 4.0 / (lines * fraction)
    for dim, cond in FACTORS[q].items():
        if dim in _DRAWN:
            p = _SHARE.get(cond, 1 / 25 if "nation" in cond else 1 / 5)
            var += (1 - p) / (_DRAWN[dim] * p)
    return math.sqrt(var)


@pytest.fixture(scope="module")
def sf1():
    con = duck(ssb_arrow(1.0, workers=2))
    total = con.execute("select count(*) from lineorder").fetchone()[0]
    fractions = {q: con.execute(f"select count(*) {w}").fetchone()[0] / total for q, w in QUERIES.items()}
    return con, total, fractions


def test_selectivities_follow_the_rules_sf1(sf1):
    """Tight: each measured fraction matches the one the rules predict from the drawn dimension tables
    (catches lineorder bugs: key ranges, uniformity, dates, joins)."""
    con, total, fractions = sf1
    assert total > 5_900_000
    compared = 0
    for q in FACTORS:
        expected = _expected_given_dims(con, q)
        tolerance = 5 / math.sqrt(total * expected) + 0.005
        assert abs(fractions[q] / expected - 1) < tolerance, (q, fractions[q], expected, tolerance)
        compared += 1
    assert compared == 11


def test_selectivities_near_reference_sf1(sf1):
    """Within 10% of ssb.md (Q3.3/Q3.4 excluded as ssb.md says), widened to 3 standard deviations where
    a query keeps so few dimension rows at SF 1 that 10% is inside the sampling noise (Q2.3: ~200 parts
    of one brand; Q3.2, Q4.3: ~80 US suppliers). ssb.md's Q2.2 and Q3.1 are 11-12% above what the
    rules predict on average (its reference draw had 22.5% ASIA suppliers); they pass on the noise."""
    _, total, fractions = sf1
    report = {}
    for q in FACTORS:
        tolerance = max(0.10, 3 * _relative_noise(q, total, REFERENCE[q]))
        off = fractions[q] / REFERENCE[q] - 1
        report[q] = f"{fractions[q]:.3g} vs {REFERENCE[q]:.3g} ({off:+.1%}, tolerance {tolerance:.0%})"
    print(report)
    for q in FACTORS:
        tolerance = max(0.10, 3 * _relative_noise(q, total, REFERENCE[q]))
        assert abs(fractions[q] / REFERENCE[q] - 1) <= tolerance, report[q]
    assert len(report) == 11
