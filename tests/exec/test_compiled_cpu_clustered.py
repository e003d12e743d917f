"""Probes of compiled CPU loops into builds of repeated keys that read their payload from copies in the
join table's key order (Probe.clustered, codegen/probe_py.py), forced on every such probe here
(cluster_payload_rows=0): NULL keys (valid_idx), nullable payload, a plain-string build column read as
its build row (a group key), packed keys, residuals, marking, materializing and aggregating sinks,
with the prefetch passes at 3 threads and without them at 1 thread, against DuckDB."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))
sys.path.insert(0, str(Path(__file__).parent))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402
from test_compiled_cpu_prefetch import QUERIES, _tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.cpu import tuning  # noqa: E402
from hetdb.backend.cpu.codegen import probe_py  # noqa: E402
from hetdb.exec import compiled_cpu_kernels  # noqa: E402

MORE = [
    # a plain-string build column grouped by (read as its build row) and a nullable payload column
    "SELECT m.note, count(*), sum(m.wn), min(f.v) FROM fact f JOIN many m ON f.c = m.c GROUP BY m.note",
    "SELECT f.d, count(m.wn), sum(m.wn), max(m.w) FROM fact f JOIN many m ON f.c = m.c WHERE m.wn > 10 GROUP BY f.d",
    # right semi / anti joins (the build rows a probe matches are marked)
    "SELECT count(*), sum(m.w) FROM many m WHERE m.c IN (SELECT c FROM fact WHERE v > 50)",
    "SELECT count(*), sum(m.w) FROM many m WHERE m.c NOT IN (SELECT c FROM fact WHERE v > 50 AND c IS NOT NULL)",
    "SELECT f.c, m.note, m.wn FROM fact f JOIN many m ON f.c = m.c WHERE f.v > 97 ORDER BY f.c, m.note, m.wn",
]


def _more_tables() -> dict[str, pa.Table]:
    tables = _tables()
    rng = np.random.default_rng(9)
    many = tables["many"]
    m = many.num_rows
    note = [None if x % 11 == 0 else f"note-{x:05d}" for x in rng.integers(0, 3000, m)]
    wn = pa.array(rng.integers(0, 100, m), pa.int64(), mask=rng.random(m) < 0.1)
    tables["many"] = many.append_column("note", pa.array(note, pa.string())).append_column("wn", wn)
    return tables


@pytest.mark.parametrize("prefetch_bytes,threads", [(0, 3), (1 << 62, 1)])
def test_clustered_payload_matches_duckdb(tmp_path, monkeypatch, prefetch_bytes: int, threads: int) -> None:
    tables = _more_tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    made: list[str] = []
    inner = probe_py.clustered_payload

    def spy(side, cid):
        made.append(cid)
        return inner(side, cid)

    monkeypatch.setattr(probe_py, "clustered_payload", spy)
    monkeypatch.setattr("hetdb.exec.compiled_cpu_args.clustered_payload", spy)
    monkeypatch.setitem(tuning.values, "cluster_payload_rows", 0)
    monkeypatch.setattr(probe_py, "_IN_ORDER_SHARE", 1.1)  # (copies for builds in key order too)
    monkeypatch.setattr(compiled_cpu_kernels, "PREFETCH_BYTES", prefetch_bytes)
    compiled_cpu_kernels._SPEC_KERNELS.clear()
    ran = 0
    try:
        with hetdb.connect(db.path, device="cpu", threads=threads) as con:
            for sql in QUERIES + MORE:
                got = con.sql(sql).arrow()
                assert got.num_rows > 0, sql
                assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, \
                    f"{sql}\n{con.explain(sql, analyze=True)}"
                ran += 1
    finally:
        compiled_cpu_kernels._SPEC_KERNELS.clear()
    assert ran == len(QUERIES + MORE)
    assert {"w", "wn", "note"} <= {cid.split("#")[0] for cid in made}, sorted(set(made))


def test_scattered_tells_builds_in_key_order() -> None:
    class T:
        scattered = None

        def __init__(self, order):
            self.order = np.asarray(order, np.int64)

    rng = np.random.default_rng(3)
    assert not probe_py.scattered(T(np.arange(10_000)))
    blocks = np.concatenate([np.arange(i * 1000, (i + 1) * 1000) for i in rng.permutation(10)])
    assert not probe_py.scattered(T(blocks))          # a few sorted runs (workers' batches)
    assert probe_py.scattered(T(rng.permutation(10_000)))
    assert not probe_py.scattered(T([7]))


def test_no_copies_when_the_reservation_is_refused(tmp_path, monkeypatch) -> None:
    """Copies the memory budget refuses are not made: the probes read the build rows in place."""
    from hetdb.exec.memory import Reservation

    tables = _more_tables()
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    made: list[str] = []
    inner = probe_py.clustered_payload
    monkeypatch.setattr(probe_py, "clustered_payload", lambda side, cid: made.append(cid) or inner(side, cid))
    monkeypatch.setattr("hetdb.exec.compiled_cpu_args.clustered_payload", probe_py.clustered_payload)
    monkeypatch.setattr(Reservation, "try_grow", lambda self, nbytes: False)
    monkeypatch.setitem(tuning.values, "cluster_payload_rows", 0)
    monkeypatch.setattr(probe_py, "_IN_ORDER_SHARE", 1.1)
    compiled_cpu_kernels._SPEC_KERNELS.clear()
    sql = MORE[0]
    try:
        with hetdb.connect(db.path, device="cpu", threads=2) as con:
            got = con.sql(sql).arrow()
    finally:
        compiled_cpu_kernels._SPEC_KERNELS.clear()
    assert got.num_rows > 0 and mismatch(got, duck_tables(tables).sql(sql).to_arrow_table(), ()) is None
    assert made == []
