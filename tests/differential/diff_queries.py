"""The benchmark query texts and, per query, how its answer must be compared.

Ordering per query (see diff_check): TOTAL when the ORDER BY fixes every row's position (it covers
a unique key of the result: all group keys, or a unique column), the ORDER BY keys when it leaves ties
(then the answer is compared as a multiset and hetdb's order is checked against the keys), and
TOTAL also for single-row answers.
"""

from __future__ import annotations

from pathlib import Path

from diff_check import TOTAL, Ordering, OrderKey

import hetdb

QUERY_ROOT = Path(hetdb.__file__).parent / "bench" / "queries"
SHARED_SSB = Path("/work/shared/benchmarks/ssb")

DESC = True

SSB_ORDERING: dict[str, Ordering] = {
    "q1.1": TOTAL, "q1.2": TOTAL, "q1.3": TOTAL,          # one row
    "q2.1": TOTAL, "q2.2": TOTAL, "q2.3": TOTAL,          # d_year, p_brand1 = all group keys
    # d_year asc, revenue desc: two city/nation pairs may tie on revenue
    "q3.1": (OrderKey(2), OrderKey(3, DESC)), "q3.2": (OrderKey(2), OrderKey(3, DESC)),
    "q3.3": (OrderKey(2), OrderKey(3, DESC)), "q3.4": (OrderKey(2), OrderKey(3, DESC)),
    "q4.1": TOTAL, "q4.2": TOTAL, "q4.3": TOTAL,          # all group keys
}

TPCH_ORDERING: dict[str, Ordering] = {
    "q01": TOTAL,                                          # l_returnflag, l_linestatus (group keys)
    "q02": TOTAL,                                          # ..., s_name, p_partkey: unique per row
    "q03": (OrderKey(1, DESC), OrderKey(2)),               # revenue desc, o_orderdate: ties possible
    "q04": TOTAL,
    "q05": (OrderKey(1, DESC),),                           # revenue desc
    "q06": TOTAL,
    "q07": TOTAL,
    "q08": TOTAL,
    "q09": TOTAL,                                          # nation, o_year desc (group keys)
    "q10": (OrderKey(2, DESC),),                           # revenue desc limit 20
    "q11": (OrderKey(1, DESC),),                           # value desc
    "q12": TOTAL,
    "q13": TOTAL,                                          # custdist desc, c_count desc (c_count = key)
    "q14": TOTAL,
    "q15": TOTAL,                                          # s_suppkey
    "q16": TOTAL,                                          # supplier_cnt desc + all group keys
    "q17": TOTAL,
    "q18": (OrderKey(4, DESC), OrderKey(3)),               # o_totalprice desc, o_orderdate limit 100
    "q19": TOTAL,
    "q20": TOTAL,                                          # s_name is unique
    "q21": TOTAL,                                          # numwait desc, s_name (group key)
    "q22": TOTAL,
}

# Float results that are aggregates of many values (summation order differs between engines).
AGGREGATE_TOL = 1e-6
DEFAULT_TOL = 1e-9
TPCH_TOLERANCE = {"q01": AGGREGATE_TOL}


def load_queries(suite: str) -> dict[str, str]:
    """name -> SQL text of the suite's queries as shipped with hetdb (SSB falls back to /work/shared)."""
    folder = QUERY_ROOT / suite
    files = sorted(folder.glob("*.sql")) if folder.is_dir() else []
    if not files and suite == "ssb":
        files = sorted(SHARED_SSB.glob("q*.sql"))
    return {f.stem: f.read_text() for f in files}


def strip_sql(text: str) -> str:
    """The statement without comment lines or the trailing semicolon (for truncation corpora)."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("--")]
    return "\n".join(lines).strip().rstrip(";").strip()
