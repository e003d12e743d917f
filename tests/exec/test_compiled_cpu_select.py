"""The first probe of a compiled CPU loop tested in its selection loop (a direct table's slot or a
hash table's bitmap filter, branch-free, before the body): NULL and out-of-range probe keys, direct
and hashed builds, inner and semi joins, against DuckDB and the operators (cpu_compile=False)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.cpu.codegen import pipeline_py  # noqa: E402
from hetdb.exec import compiled_cpu_kernels  # noqa: E402


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(21)
    n = 40_000
    near = rng.integers(-50, 3000, n)          # into `small` (direct table), some below its range
    far = rng.integers(0, 5_000_000, n)        # into `wide` (hash table with a bitmap filter)
    fact = pa.table({"a": pa.array(near, pa.int64(), mask=rng.random(n) < 0.05),
                     "b": pa.array(far, pa.int64(), mask=rng.random(n) < 0.05),
                     "v": pa.array(rng.integers(-100, 100, n), pa.int64())})
    small_keys = np.arange(0, 2500)
    small = pa.table({"a": pa.array(small_keys, pa.int64()), "g": pa.array(small_keys % 5, pa.int32())})
    wide_keys = np.unique(np.concatenate([rng.choice(far, 15_000), rng.integers(0, 5_000_000, 3000)]))
    wide = pa.table({"b": pa.array(wide_keys, pa.int64()), "h": pa.array(wide_keys % 7, pa.int32())})
    return {"fact": fact, "small": small, "wide": wide}


# (the dimension filters keep a middling share of their rows: the loop tests such a first probe)
QUERIES = [
    "SELECT s.g, count(*), sum(f.v) FROM fact f JOIN small s ON f.a = s.a WHERE s.g < 2 GROUP BY s.g",
    "SELECT w.h, count(*), sum(f.v) FROM fact f JOIN wide w ON f.b = w.b WHERE w.h > 3 GROUP BY w.h",
    "SELECT s.g, w.h, count(*), min(f.v) FROM fact f JOIN small s ON f.a = s.a JOIN wide w ON f.b = w.b "
    "WHERE s.g <> 1 AND w.h < 5 GROUP BY s.g, w.h",
    "SELECT count(*), sum(v) FROM fact f WHERE EXISTS (SELECT 1 FROM small s WHERE s.a = f.a AND s.g = 3)",
]


def test_first_probe_in_the_selection_loop(tmp_path, monkeypatch) -> None:
    tables = _tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=8192)
    duck = duck_tables(tables)
    tested = []
    probe_test = pipeline_py._Gen._probe_test

    def spy(self, st):
        cond = probe_test(self, st)
        tested.append((st.layout, cond is not None))
        return cond

    monkeypatch.setattr(pipeline_py._Gen, "_probe_test", spy)
    compiled_cpu_kernels._SPEC_KERNELS.clear()
    for threads in (1, 3):
        with hetdb.connect(db.path, device="cpu", threads=threads) as con, \
                hetdb.connect(db.path, device="cpu", threads=threads, cpu_compile=False) as ops:
            for sql in QUERIES:
                got = con.sql(sql).arrow()
                assert got.num_rows > 0, sql
                assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, \
                    f"{sql}\n{con.explain(sql, analyze=True)}"
                assert mismatch(got, ops.sql(sql).arrow(), ()) is None, sql
    assert ("direct", True) in tested and ("hash", True) in tested, tested
