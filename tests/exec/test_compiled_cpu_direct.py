"""Direct group slots in the compiled CPU loop (pipeline_py.Aggregate.direct): when every group key
is a join build's column of known range, the group is found by the keys' mixed-radix number instead
of a hash probe. Answers against DuckDB, with NULL keys (a left join's unmatched rows, NULLs in the
build), dictionary strings, booleans, decimals, dates and more groups than a table starts with."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.exec import compiled_cpu  # noqa: E402
from hetdb.exec.compiled_cpu import CPU_COMPILED  # noqa: E402

N = 30_000
QUERIES = [
    # 46 x 8 values: several hundred groups (the table grows past its first 64 with the slots kept)
    ("SELECT d1.g, d1.s, count(*), sum(f.v), min(f.v) FROM fact f JOIN dim1 d1 ON f.k1 = d1.id "
     "GROUP BY d1.g, d1.s", True),
    # a left join's unmatched rows give NULL keys; NULLs in the build column too
    ("SELECT d2.dec, d2.day, d1.b, count(*), sum(f.v) FROM fact f JOIN dim1 d1 ON f.k1 = d1.id "
     "LEFT JOIN dim2 d2 ON f.k2 = d2.id GROUP BY d2.dec, d2.day, d1.b", True),
    ("SELECT d1.b, avg(f.v), count(f.v) FROM fact f JOIN dim1 d1 ON f.k1 = d1.id WHERE f.v > 0 GROUP BY d1.b",
     True),
    # the build's keys span more slots than direct tables take: hashed as before
    ("SELECT d2.big, count(*) FROM fact f JOIN dim2 d2 ON f.k2 = d2.id GROUP BY d2.big", False),
    # one scanned integer key whose range the zone maps give (int32, int64 with NULLs, date)
    ("SELECT k2, count(*), sum(v) FROM fact GROUP BY k2", True),
    ("SELECT kn, count(*), sum(v), max(v) FROM fact WHERE v > 10 GROUP BY kn", True),
    ("SELECT dt, count(*) FROM fact f JOIN dim1 d1 ON f.k1 = d1.id WHERE d1.b GROUP BY dt", True),
    # a scanned key spanning more slots than direct tables take, and two scanned keys: hashed
    ("SELECT wide, count(*) FROM fact GROUP BY wide", False),
    ("SELECT k1, k2, count(*) FROM fact GROUP BY k1, k2", False),
]


@pytest.fixture(scope="module")
def tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(5)
    n1, n2 = 400, 300
    words = np.array(["red", "green", "blue", "cyan", "ochre", "teal", "plum", "sand"])
    return {
        "fact": pa.table({"k1": pa.array(rng.integers(0, n1, N), pa.int32()),
                          "k2": pa.array(rng.integers(0, n2 + 50, N), pa.int32()),  # some miss dim2
                          "v": pa.array(rng.integers(-50, 100, N), pa.int64(), mask=rng.random(N) < 0.05),
                          "kn": pa.array(rng.integers(-3000, 60_000, N), pa.int64(), mask=rng.random(N) < 0.1),
                          "dt": pa.array(rng.integers(18000, 18900, N).astype("datetime64[D]")),
                          "wide": pa.array(rng.integers(0, 1 << 20, N), pa.int64())}),
        "dim1": pa.table({"id": pa.array(np.arange(n1), pa.int32()),
                          "g": pa.array(rng.integers(-5, 41, n1), pa.int32(), mask=rng.random(n1) < 0.05),
                          "s": pa.array(words[rng.integers(0, len(words), n1)]),
                          "b": pa.array(rng.random(n1) < 0.5, pa.bool_(), mask=rng.random(n1) < 0.1)}),
        "dim2": pa.table({"id": pa.array(np.arange(n2), pa.int32()),
                          "dec": pa.array([None if i % 17 == 0 else Decimal(f"{(i % 9) - 4}.25") for i in range(n2)],
                                          pa.decimal128(8, 2)),
                          "day": pa.array(rng.integers(19000, 19004, n2).astype("datetime64[D]")),
                          "big": pa.array(rng.integers(0, 1 << 40, n2), pa.int64())}),
    }


@pytest.fixture(scope="module")
def db(tmp_path_factory, tables):
    return stored_tables(tmp_path_factory.mktemp("direct") / "db", tables, rows_per_page=4096)


@pytest.mark.parametrize("threads,batch_rows", [(1, None), (2, None), (4, 7), (2, 1000)])
def test_direct_groups_match_duckdb(db, tables, monkeypatch, threads, batch_rows) -> None:
    duck = duck_tables(tables)
    chosen = []
    ranges = compiled_cpu.direct_ranges

    def spy(plan, sink, probes, scan_range=None):
        got = ranges(plan, sink, probes, scan_range)
        chosen.append(got is not None)
        return got

    monkeypatch.setattr(compiled_cpu, "direct_ranges", spy)
    with hetdb.connect(db.path, device="cpu", threads=threads, batch_rows=batch_rows) as con:
        for sql, direct in QUERIES:
            chosen.clear()
            want = duck.sql(sql).to_arrow_table()
            assert want.num_rows > 1, sql
            assert mismatch(con.sql(sql).arrow(), want, ()) is None, sql
            assert direct in chosen, (sql, chosen)
            assert CPU_COMPILED in con.explain(sql, analyze=True), sql


def test_scan_key_range_from_zone_maps(tmp_path) -> None:
    """A stored integer column's range over its zone maps: pages of only NULLs add nothing; a column
    without integer bounds (strings) has none. The grouped answer with such a key is DuckDB's."""
    from hetdb.exec.compiled_cpu_kernels import scan_key_range

    n = 3 * 4096
    k = np.arange(n, dtype=np.int64) % 5000 - 7
    mask = np.zeros(n, bool)
    mask[:4096] = True  # the first page: NULLs only
    tables = {"t": pa.table({"k": pa.array(k, pa.int64(), mask=mask), "s": pa.array([f"x{i % 3}" for i in range(n)])})}
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    reader = db.table("t")
    assert scan_key_range(reader, "k") == (int(k[4096:].min()), int(k[4096:].max()))
    assert scan_key_range(reader, "s") is None
    sql = "SELECT k, count(*) FROM t GROUP BY k"
    with hetdb.connect(db.path, device="cpu", threads=2) as con:
        assert mismatch(con.sql(sql).arrow(), duck_tables(tables).sql(sql).to_arrow_table(), ()) is None
