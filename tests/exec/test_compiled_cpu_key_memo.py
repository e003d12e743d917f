"""A compiled CPU loop's hash probe keeps its last key's lookup (pipeline_py._lookup, ``mk<p>``):
a probe column that repeats its keys in runs (sorted, as lineitem's l_orderkey) with NULLs and keys
no build row has between them, into unique and non-unique hashed builds, in inner, semi, anti,
left and marking joins, aggregating and materializing, against DuckDB and the operators."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from exec_plan_helpers import compiled_answers, duck_tables, stored_tables

from hetdb.backend.cpu.codegen import pipeline_py


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(11)
    n = 40_000
    runs = np.sort(rng.integers(0, 50_000_000, n // 4))
    key = np.repeat(runs, rng.integers(1, 8, runs.shape[0]))[:n]  # runs of 1-7 equal keys
    n = key.shape[0]
    fact = pa.table({"k": pa.array(key, pa.int64(), mask=rng.random(n) < 0.03),
                     "v": pa.array(rng.integers(-100, 100, n), pa.int64())})
    held = np.unique(rng.choice(runs, runs.shape[0] // 3))  # a third of the keys have build rows
    one = pa.table({"k": pa.array(held, pa.int64()), "g": pa.array(held % 5, pa.int32())})
    rep = np.repeat(held[::2], 2)
    many = pa.table({"k": pa.array(rep, pa.int64()), "w": pa.array(np.arange(rep.shape[0]) % 11, pa.int64())})
    return {"fact": fact, "one": one, "many": many}


QUERIES = [
    "SELECT o.g, count(*), sum(f.v) FROM fact f JOIN one o ON f.k = o.k GROUP BY o.g",
    "SELECT count(*), sum(m.w), sum(f.v) FROM fact f JOIN many m ON f.k = m.k",
    "SELECT count(*), sum(v) FROM fact f WHERE f.k IN (SELECT k FROM many)",
    "SELECT count(*), sum(v) FROM fact f WHERE f.k NOT IN (SELECT k FROM one WHERE k IS NOT NULL)",
    "SELECT o.g, count(*), sum(f.v) FROM fact f LEFT JOIN one o ON f.k = o.k GROUP BY o.g",
    "SELECT count(*), sum(v) FROM fact f WHERE EXISTS (SELECT 1 FROM many m WHERE m.k = f.k AND m.w <> f.v)",
    "SELECT x.g, count(*) FROM (SELECT o.g, f.k FROM fact f JOIN one o ON f.k = o.k) x "
    "JOIN many m ON x.k = m.k GROUP BY x.g",
]


def test_probe_key_memo_matches_duckdb(tmp_path, monkeypatch) -> None:
    tables = _tables()
    stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    memos: list[int] = []
    generate = pipeline_py._Gen.generate

    def spy(self):
        out = generate(self)
        memos.append(len(self.memo))
        return out

    monkeypatch.setattr(pipeline_py._Gen, "generate", spy)
    monkeypatch.setattr(pipeline_py, "KEY_MEMO", True)  # (off by default: see pipeline_py)
    from hetdb.exec import compiled_cpu_kernels

    compiled_cpu_kernels._SPEC_KERNELS.clear()  # loops generated without the memo are not reused
    ran = [n for n, _, _ in compiled_answers(str(tmp_path / "db"), duck, QUERIES)]
    assert len(ran) == 2 * len(QUERIES)
    assert sum(memos) > 0  # some loop kept its last key's lookup (the builds are hashed, not direct)
