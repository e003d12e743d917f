"""Probes of compiled CPU loops looked up a block of rows at a time with prefetches (Probe.prefetch,
codegen/probe_prefetch.py), forced on every probe here (the threshold set to 0 bytes): unique and
non-unique builds, direct, hashed and packed keys, NULL keys on both sides (a build with NULL keys
reads its rows through valid_idx), bitmap/bloom filters, inner, left, semi and anti joins, residuals,
materializing and aggregating sinks, at 1 and 3 threads, against DuckDB and the operators."""

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
    rng = np.random.default_rng(5)
    n = 30_000
    far = rng.integers(0, 4_000_000, n)
    fact = pa.table({
        "a": pa.array(rng.integers(-20, 2200, n), pa.int64(), mask=rng.random(n) < 0.04),
        "b": pa.array(far, pa.int64(), mask=rng.random(n) < 0.04),
        "c": pa.array(rng.integers(0, 300, n), pa.int64()),
        "d": pa.array(rng.integers(0, 40, n), pa.int32()),
        "v": pa.array(rng.integers(-100, 100, n), pa.int64())})
    small_keys = np.arange(0, 2000)
    small = pa.table({"a": pa.array(small_keys, pa.int64()), "g": pa.array(small_keys % 5, pa.int32())})
    wide_keys = np.unique(np.concatenate([rng.choice(far, 4000), rng.integers(0, 4_000_000, 3000)]))
    wide = pa.table({"b": pa.array(wide_keys, pa.int64()), "h": pa.array(wide_keys % 7, pa.int32())})
    m = 5000  # several rows per key, some keys NULL
    many = pa.table({"c": pa.array(rng.integers(0, 400, m), pa.int64(), mask=rng.random(m) < 0.05),
                     "d": pa.array(rng.integers(0, 40, m), pa.int32()),
                     "w": pa.array(rng.integers(0, 1000, m), pa.int64())})
    return {"fact": fact, "small": small, "wide": wide, "many": many}


QUERIES = [
    "SELECT s.g, count(*), sum(f.v) FROM fact f JOIN small s ON f.a = s.a GROUP BY s.g",
    # literals k0..k3 before the probe (the passes' locals once took a literal's name)
    "SELECT s.g, count(*) FROM fact f JOIN small s ON f.a = s.a "
    "WHERE f.v > -90 AND f.v < 90 AND f.d <> 3 AND f.c > 2 GROUP BY s.g",
    "SELECT w.h, count(*), sum(f.v) FROM fact f JOIN wide w ON f.b = w.b WHERE w.h > 3 GROUP BY w.h",
    "SELECT s.g, w.h, count(*), min(f.v) FROM fact f JOIN small s ON f.a = s.a JOIN wide w ON f.b = w.b "
    "GROUP BY s.g, w.h",
    # non-unique build with NULL keys (valid_idx), its payload summed
    "SELECT f.d, count(*), sum(m.w) FROM fact f JOIN many m ON f.c = m.c GROUP BY f.d",
    # two keys packed into one
    "SELECT count(*), sum(m.w), sum(f.v) FROM fact f JOIN many m ON f.c = m.c AND f.d = m.d",
    "SELECT s.g, count(*), sum(s.a) FROM fact f LEFT JOIN small s ON f.a = s.a GROUP BY s.g",
    "SELECT count(*), sum(v) FROM fact f WHERE EXISTS (SELECT 1 FROM many m WHERE m.c = f.c AND m.w > 900)",
    "SELECT count(*), sum(v) FROM fact f WHERE NOT EXISTS (SELECT 1 FROM wide w WHERE w.b = f.b)",
    "SELECT count(*), sum(v) FROM fact f WHERE EXISTS (SELECT 1 FROM many m WHERE m.c = f.c AND m.w > f.v + 950)",
    # materializing pipelines: the joined rows feed a hash build, a sort
    "SELECT x.g, count(*) FROM (SELECT s.g, f.c FROM fact f JOIN small s ON f.a = s.a) x "
    "JOIN many m ON x.c = m.c GROUP BY x.g",
    "SELECT f.v, m.w, f.c FROM fact f JOIN many m ON f.c = m.c WHERE f.v > 95 ORDER BY f.v, m.w, f.c",
]


def test_prefetched_probes_match_duckdb(tmp_path, monkeypatch) -> None:
    tables = _tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    fetched: list[int] = []
    passes = pipeline_py._Gen._prefetch_passes

    def spy(self, stages, taken):
        lines = passes(self, stages, taken)
        fetched.append(len(self.fetched))
        return lines

    monkeypatch.setattr(pipeline_py._Gen, "_prefetch_passes", spy)
    monkeypatch.setattr(compiled_cpu_kernels, "PREFETCH_BYTES", 0)
    compiled_cpu_kernels._SPEC_KERNELS.clear()
    ran = 0
    for threads in (1, 3):
        with hetdb.connect(db.path, device="cpu", threads=threads) as con, \
                hetdb.connect(db.path, device="cpu", threads=threads, cpu_compile=False) as ops:
            for sql in QUERIES:
                got = con.sql(sql).arrow()
                assert got.num_rows > 0, sql
                assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, \
                    f"{sql}\n{con.explain(sql, analyze=True)}"
                assert mismatch(got, ops.sql(sql).arrow(), ()) is None, sql
                ran += 1
    compiled_cpu_kernels._SPEC_KERNELS.clear()
    assert ran == 2 * len(QUERIES)
    assert sum(1 for f in fetched if f) >= 8, fetched
