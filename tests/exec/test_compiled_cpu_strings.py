"""Compiled CPU loops grouping by plain-string build columns (TPC-H q10: GROUP BY c_custkey, c_name,
c_address, ... with customer strings that are not dictionary-encoded): the loop groups by the build
row, the strings are put in afterwards and the aggregation merges groups whose strings are equal
(several build rows with one name). Against DuckDB and the operators (cpu_compile=False) on tables
whose string pages are plain, with NULL strings, NULL and unmatched keys, LEFT joins, several
threads."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.exec.compiled_cpu import CPU_COMPILED  # noqa: E402
from hetdb.exec.memory import Reservation  # noqa: E402


def _tables() -> dict[str, pa.Table]:
    rng = random.Random(11)
    n_cust = 3000
    # names repeat every 1100 customers (equal strings on several build rows); addresses are unique
    names = [None if i % 31 == 0 else f"customer-{(i * 7) % 1100:06d}" for i in range(n_cust)]
    addrs = [None if i % 43 == 0 else f"addr {i} " + ("é" if i % 3 == 0 else "z") * (i % 40) for i in range(n_cust)]
    cust = pa.table({"k": pa.array(range(n_cust), pa.int64()), "name": pa.array(names, pa.string()),
                     "addr": pa.array(addrs, pa.string()),
                     "bal": pa.array([rng.randint(-999, 9999) for _ in range(n_cust)], pa.int32())})
    n = 30000
    ck = [None if rng.random() < 0.05 else rng.randint(0, n_cust + 150) for _ in range(n)]
    amt = [None if rng.random() < 0.05 else rng.uniform(-10, 100) for _ in range(n)]
    ords = pa.table({"ck": pa.array(ck, pa.int64()), "amt": pa.array(amt, pa.float64()),
                     "q": pa.array([rng.randint(1, 50) for _ in range(n)], pa.int32())})
    return {"cust": cust, "ords": ords}


TABLES = _tables()

QUERIES = {
    "q10_like": "SELECT c.k, c.name, c.addr, c.bal, sum(o.amt), count(*) FROM ords o JOIN cust c ON o.ck = c.k "
                "WHERE o.q > 10 GROUP BY c.k, c.name, c.addr, c.bal",
    "equal_strings_merge": "SELECT c.name, count(*), sum(o.q), min(o.amt) FROM ords o JOIN cust c ON o.ck = c.k "
                           "GROUP BY c.name",
    "left_join_null_strings": "SELECT c.name, c.addr, count(*), count(o.amt) FROM ords o LEFT JOIN cust c "
                              "ON o.ck = c.k WHERE o.q < 5 GROUP BY c.name, c.addr",
    "top_k": "SELECT c.k, c.name, sum(o.amt) AS rev FROM ords o JOIN cust c ON o.ck = c.k GROUP BY c.k, c.name "
             "ORDER BY rev DESC, c.k LIMIT 20",
    "filtered_build": "SELECT c.name, o.q > 25 AS m, count(*) FROM ords o JOIN cust c ON o.ck = c.k "
                      "WHERE c.bal > 100 GROUP BY c.name, m",
}


@pytest.fixture(scope="module")
def sdb(tmp_path_factory):
    return stored_tables(tmp_path_factory.mktemp("cpuplain"), TABLES)


@pytest.mark.parametrize("threads", [1, 3])
def test_plain_string_build_keys_group_by_build_row(sdb, threads) -> None:
    duck = duck_tables(TABLES)
    compared = 0
    with hetdb.connect(sdb.path, device="cpu", threads=threads) as con, \
            hetdb.connect(sdb.path, device="cpu", threads=threads, cpu_compile=False) as ops:
        for name, sql in QUERIES.items():
            got = con.sql(sql).arrow()
            assert got.num_rows > 0, name
            text = con.explain(sql, analyze=True)
            assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, f"{name}\n{text}"
            assert mismatch(got, ops.sql(sql).arrow(), ()) is None, name
            agg = [line for line in text.splitlines() if "HashAggregate" in line]
            assert any(CPU_COMPILED in line for line in agg), f"{name}\n{text}"
            assert "plain (not dictionary-encoded)" not in text, f"{name}\n{text}"
            compared += 1
    assert compared == len(QUERIES)



class _Capped(Reservation):
    """An aggregation's reservation that refuses to grow past ``CAP`` bytes (the limit reached by
    the aggregation alone, the join builds untouched)."""

    CAP = 0

    def try_grow(self, nbytes: int) -> bool:
        return self.nbytes + nbytes <= self.CAP and super().try_grow(nbytes)


@pytest.mark.parametrize("cap", [0, 4000, 500_000])
def test_build_row_keys_when_the_aggregation_spills(sdb, monkeypatch, cap) -> None:
    """Partial states keyed by build rows get their strings before the aggregation spills or
    merges them as strings (rows of one string on two build rows must meet in one group): refused
    at once (cap 0), after some partial states (4000) and at the final merge (500000)."""
    from hetdb.exec.operators import aggregate

    monkeypatch.setattr(_Capped, "CAP", cap)
    init = aggregate._AggState.__init__

    def capped(self, ctx, key_dtypes):
        init(self, ctx, key_dtypes)
        self.reservation = _Capped(ctx.memory)
        ctx.cleanup.append(self.reservation.close)

    monkeypatch.setattr(aggregate._AggState, "__init__", capped)
    duck = duck_tables(TABLES)
    for name in ("equal_strings_merge", "q10_like"):
        sql = QUERIES[name]
        with hetdb.connect(sdb.path, device="cpu", threads=3) as con:
            got = con.sql(sql).arrow()
            assert got.num_rows > 0, name
            assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, f"{cap} {name}"
            text = con.explain(sql, analyze=True)
            assert any(CPU_COMPILED in line for line in text.splitlines() if "HashAggregate" in line), text
