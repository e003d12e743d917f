"""Hash builds kept between runs of one physical plan (exec/kept_builds.py): every TPC-H query run
three times on one connection equals DuckDB each time while later runs take the dimension builds an
earlier run kept (EXPLAIN ANALYZE says so); a new version of a table they read builds again; the
``reuse_fused_state`` option switches them off. Builds are kept on the GPU only: the CPU tests switch
that on (``kept_builds.enabled``) to run the bookkeeping for real on the CPU backend; the gpu-marked
test runs it on the device, where no device memory may be left behind beyond what the store keeps."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from diff_data import build_tpch, dataset  # noqa: E402
from diff_queries import TPCH_ORDERING, TPCH_TOLERANCE, load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb import types as T  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402
from hetdb.exec import kept_builds  # noqa: E402
from hetdb.exec.kept_builds import KEPT, KEPT_INPUT  # noqa: E402


@pytest.fixture(scope="module")
def tpch_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("kept-builds-tpch"), "tpch-0.01",
                   lambda p: build_tpch(p, 0.01, 4096))


@pytest.fixture
def kept_on_cpu(monkeypatch):
    monkeypatch.setattr(kept_builds, "enabled", lambda ctx: True)


def _every_query_three_times(db, device: str, **options) -> tuple[int, int]:
    """(queries compared, queries whose later runs took a kept build); asserts every answer."""
    queries = load_queries("tpch")
    compared = kept = 0
    with hetdb.connect(db.path, device=device, **options) as con:
        for name, sql in queries.items():
            ref = db.reference(sql)
            runs = [con.sql(sql) for _ in range(2)]
            text = con.explain(sql, analyze=True)  # a third run
            runs.append(con.sql(sql))
            for res in runs:
                diff = mismatch(res.arrow(), ref, TPCH_ORDERING[name], TPCH_TOLERANCE.get(name, 1e-9))
                assert diff is None, f"{name}: {diff}\n{text}"
                if device == "gpu":
                    assert res.stats["gpu_leaked_bytes"] == 0, name
                compared += 1
            kept += KEPT in text
    assert compared == 3 * len(queries) == 66
    return compared, kept


def test_tpch_with_kept_builds_matches_duckdb(tpch_db, kept_on_cpu) -> None:
    _, kept = _every_query_three_times(tpch_db, "cpu")
    assert kept >= 10, kept  # q02, q05, q07, q08, q09, q10, q11, q16, q20, q21 ... keep dimension builds


def test_q02_later_runs_skip_every_dimension_build(tpch_db, kept_on_cpu) -> None:
    sql = load_queries("tpch")["q02"]
    with hetdb.connect(tpch_db.path, device="cpu") as con:
        first = con.explain(sql, analyze=True)
        later = con.explain(sql, analyze=True)
    assert KEPT not in first
    builds = [line for line in later.splitlines() if "HashBuild" in line]
    # region, nation, supplier, part (twice each but the shared region): kept or not needed
    assert sum(KEPT in line or KEPT_INPUT in line for line in builds) >= 6, later
    assert sum(KEPT in line for line in builds) >= 3, later
    with hetdb.connect(tpch_db.path, device="cpu", reuse_fused_state=False) as con:
        con.sql(sql).arrow()
        assert KEPT not in con.explain(sql, analyze=True)


def test_a_new_table_version_builds_again(tmp_path, kept_on_cpu) -> None:
    from hetdb.storage import ColumnSpec, Database

    db = Database.open(str(tmp_path / "db"), create=True)
    fact = pa.table({"k": pa.array([i % 10 for i in range(2000)], pa.int32()),
                     "v": pa.array(list(range(2000)), pa.int64())})

    def dim(keep: int) -> pa.Table:
        return pa.table({"k": pa.array(list(range(10)), pa.int32()),
                         "g": pa.array([i % keep for i in range(10)], pa.int32())})

    specs = {"f": [ColumnSpec("k", T.INT32), ColumnSpec("v", T.INT64)],
             "d": [ColumnSpec("k", T.INT32), ColumnSpec("g", T.INT32)]}
    for name, tab in (("f", fact), ("d", dim(2))):
        with db.create_table(name, specs[name], rows_per_page=500) as w:
            w.append_arrow(tab)
    # the build side (d, filtered) is the smaller one; its rows are kept, then the table changes
    sql = "select f.k, f.v from f, d where f.k = d.k and d.g = 0 order by f.v limit 5"
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as con:
        assert con.sql(sql).arrow()["k"].to_pylist() == [0, 2, 4, 6, 8]
        assert KEPT in con.explain(sql, analyze=True)
        with db.create_table("d", specs["d"], rows_per_page=500, replace=True) as w:
            w.append_arrow(dim(3))
        text = con.explain(sql, analyze=True)
        after = con.sql(sql).arrow()["k"].to_pylist()
        again = con.sql(sql).arrow()["k"].to_pylist()
    assert KEPT not in text, text
    assert after == again == [0, 3, 6, 9, 0]


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_tpch_with_kept_builds_on_the_gpu(tpch_db) -> None:
    _, kept = _every_query_three_times(tpch_db, "gpu")
    assert kept >= 5, kept


@pytest.mark.usefixtures("emulated_fusion")
def test_kept_builds_next_to_fused_and_swapped_pipelines(tmp_path, kept_on_cpu) -> None:
    """The GPU's fusion planner (emulated on the CPU, test_gpu_fusion_planning.py) defers fact-side
    builds into their consumer's kernel: a deferred build (empty until its consumer scans it) is
    never kept, and kept dimension builds feed the dense tables of later fused runs."""
    import duckdb
    from test_gpu_fusion_planning import CHAIN_SQL, build_chain_db

    from hetdb.bench.compare import compare_tables

    tables = build_chain_db(str(tmp_path / "db"))
    duck = duckdb.connect()
    for name, tab in tables.items():
        duck.register(name, tab)
    sqls = [CHAIN_SQL, "select b, sum(v) as s from f, d2 where f.k2 = d2.k2 and b <> 'b3' group by b",
            "select f.k1, f.v, d1.a from f, d1 where f.k1 = d1.k1 and d1.a = 'a9' order by f.v desc, f.k1 limit 7"]
    texts = []
    with hetdb.connect(str(tmp_path / "db"), device="cpu", reuse_fused_state=True) as con:
        for sql in sqls:
            want = duck.sql(sql).to_arrow_table()
            assert want.num_rows > 0
            for _ in range(3):
                got = con.sql(sql).arrow()
                assert compare_tables(got, want, ordered="order by" in sql) is None, sql
            texts.append(con.explain(sql, analyze=True))
    assert "join sides swapped" in texts[0], texts[0]
    assert KEPT in texts[2], texts[2]  # the d1 build of the top-N


def test_a_kept_build_is_shared_by_its_copy(db, duck, kept_on_cpu) -> None:
    """A subplan bound twice (exec/shared_results.py) still runs once when its first pipeline's build
    is kept: the copy takes the kept result, as it took the first run's (the same texts every run)."""
    from test_shared_results import QUERIES, SHARED

    kept = 0
    with hetdb.connect(db.path, device="cpu") as con:
        for name, (sql, shared) in QUERIES.items():
            want = duck.sql(sql).to_arrow_table()
            for _ in range(2):
                assert mismatch(con.sql(sql).arrow(), want, ()) is None, name
            text = con.explain(sql, analyze=True)
            assert text.count(SHARED) == shared, f"{name}\n{text}"
            kept += KEPT in text
    assert kept >= 2, kept  # build_twice, build_other_filter keep their dimension builds


def test_a_kept_side_whose_hash_table_no_probe_made_makes_it_on_demand() -> None:
    # keep_build keeps a GPU build whose hash table no probe asked for (fused kernels probe dense
    # tables) without making it: a copy whose table is made when a later run's probe asks, equal
    # to the one the build would have made; a side whose table was made is kept as it is
    import numpy as np

    from hetdb.backend.cpu import CpuBackend
    from hetdb.column import Batch, Column
    from hetdb.exec.operators.join_build import BuildSide
    from hetdb.exec.operators.join_tables import _LazyTable, hash_table, unmade_copy

    backend = CpuBackend()
    keys = np.array([7, 3, 11, 5], np.int64)
    batch = Batch({"__key0": Column(T.INT64, data=keys), "v": Column(T.INT64, data=keys * 10)}, 4)
    made = []

    def make():
        made.append(1)
        return hash_table(backend, batch, 1, [None])

    side = BuildSide(batch, _LazyTable(make), None, [None], False, True)
    copy = unmade_copy(side, backend, 1)
    assert copy is not None and copy.batch is side.batch and not made
    assert isinstance(copy.hash_table, _LazyTable)
    table = copy.table  # made on demand, without the original's reservation
    assert table is not None and not made
    eager, _ = hash_table(backend, batch, 1, [None])
    probe = [np.array([5, 6, 7], np.int64)]
    assert [a.tolist() for a in backend.join_probe(table, probe, "inner")] == \
        [a.tolist() for a in backend.join_probe(eager, probe, "inner")]
    side.table  # noqa: B018 - a probe made the original's
    assert made == [1] and unmade_copy(side, backend, 1) is None


def test_a_kept_sides_hash_table_made_later_counts_with_its_entry() -> None:
    # the after-query leak check counts an entry's arrays (FusedState.device_arrays): a kept side's
    # hash table made by a later run's probe must be among them, and the cache told so (mutations)
    import numpy as np

    from hetdb.backend.cpu import CpuBackend
    from hetdb.cache.device_cache import DevicePageCache
    from hetdb.cache.fused_state import FusedState
    from hetdb.column import Batch, Column
    from hetdb.exec.operators.join_build import BuildSide
    from hetdb.exec.operators.join_tables import _LazyTable, hash_table, unmade_copy

    class Budget:
        limit_bytes, used_bytes = 1 << 30, 0

        def try_reserve(self, n):
            return True

        def release(self, n):
            pass

    backend = CpuBackend()
    keys = np.array([4, 8, 15, 16, 23, 42], np.int64)
    batch = Batch({"__key0": Column(T.INT64, data=keys)}, 6)
    side = BuildSide(batch, _LazyTable(lambda: hash_table(backend, batch, 1, [None])), None, [None], False, True)
    cache = DevicePageCache(Budget())
    before = cache.mutations
    kept = unmade_copy(side, backend, 1, on_made=cache.arrays_changed)
    entry = FusedState(None, 0, kept, "kept", arrays=[batch.columns["__key0"]], extra_bytes=96 * 6)
    assert len(entry.device_arrays()) == 1 and cache.mutations == before
    assert kept.table is not None  # a later run's probe makes it
    assert cache.mutations == before + 1
    made = entry.device_arrays()[1:]
    assert made and all(hasattr(a, "shape") for a in made)
