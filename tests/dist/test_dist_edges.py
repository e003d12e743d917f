"""Distributed edge cases vs DuckDB and one worker: skewed and all-equal join keys, NULL keys, empty
tables and partitions, tiny batches, repartitioned (not broadcast) joins, non-decomposable
aggregates, subqueries, and the lowering itself."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.dist.lowering import DistPlan, Stage, lower
from hetdb.dist.runtime import WorkerLostError, WorkerTimeoutError
from hetdb.plan import logical as L
from hetdb.storage import ColumnSpec, Database

pytestmark = pytest.mark.usefixtures("ray_cluster")

QUERIES = {
    "skew_join_agg": "select f.k, count(*) c, sum(f.v) s from fact f join dim d on f.k = d.k group by f.k",
    "all_equal_self_join": "select count(*) c, sum(a.v + b.v) s from eq a join eq b on a.k = b.k",
    "left_join_null_keys": "select count(*) c, count(d.name) n, sum(f.v) s from fact f left join dim d "
                           "on f.k = d.k",
    "full_join": "select count(*) c, count(f.k) fk, count(d.k) dk from fact f full join dim d on f.k = d.k",
    "right_join_group": "select d.name, count(f.v) c from fact f right join dim d on f.k = d.k group by d.name",
    "distinct_avg": "select k, count(distinct v) dv, avg(v) a from fact group by k",
    "global_avg": "select avg(v) a, min(k) lo, max(k) hi, count(k) ck from fact",
    "empty_table": "select count(*) c, sum(v) s, min(k) m from empty",
    "empty_group": "select k, count(*) c from empty group by k",
    "empty_join": "select count(*) c from fact f join empty e on f.k = e.k",
    "filtered_away": "select k, sum(v) s from fact where id < 3 group by k",
    "topn": "select id, v from fact order by v desc, id limit 7",
    "limit_offset_sorted": "select id from fact order by id limit 5 offset 10",
    "union_all": "select k, count(*) c from (select k from fact union all select k from dim) t group by k",
    "not_in_nulls": "select count(*) c from fact where k not in (select k from dim2)",
    "in_subquery": "select count(*) c from fact where k in (select k from dim where name < 'n30')",
    "scalar_subquery": "select count(*) c from fact where v > (select avg(v) from fact)",
    "exists": "select count(*) c from dim d where exists (select 1 from fact f where f.k = d.k and f.v > 900)",
    "string_key_join": "select d.name, count(*) c from fact f join dim d on 'n' || cast(f.k as varchar) = d.name "
                       "group by d.name",
    "avg_decimal": "select k, avg(p) a, sum(p) s, avg(v) av, count(*) c from fact group by k",
    "global_avg_decimal": "select avg(p) a, avg(v) av from fact where id > 100",
    "count_distinct": "select k, count(distinct v) dv, sum(distinct v) sv, min(v) mn, max(distinct v) mx "
                      "from fact group by k",
    "global_distinct": "select count(distinct v) dv, avg(distinct k) ak from fact",
    "distinct_strings": "select count(distinct name) c from dim where k < 50",
    "window_stats": "select k, stddev_samp(v) sd, median(v) md, arg_max(v, id) am, "
                    "string_agg(cast(v as varchar), ',' order by v, id) sa from fact where id < 150 group by k",
    "window_rank": "select id, k, rank() over (partition by k order by v desc, id) r from fact where id < 150",
    "window_global": "select id, sum(v) over (order by id rows between 2 preceding and current row) s "
                     "from fact where id < 100",
}


def _tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(7)
    n = 6000
    k = np.where(rng.random(n) < 0.9, 1, rng.integers(0, 80, n))  # 90% of the rows share key 1
    kmask = rng.random(n) < 0.05
    fact = pa.table({"id": pa.array(np.arange(n), pa.int64()),
                     "k": pa.array(k, pa.int64(), mask=kmask),
                     "v": pa.array(rng.integers(0, 1000, n), pa.int64()),
                     "p": pa.array([None if i % 11 == 0 else (i * 7919) % 100_003 - 50_000 for i in range(n)], pa.int32()).cast(
                         pa.decimal128(12, 2))})
    dim = pa.table({"k": pa.array(np.arange(60), pa.int64()),
                    "name": pa.array([f"n{i}" for i in range(60)])})
    dim2 = pa.table({"k": pa.array([3, None, 5], pa.int64())})
    eq = pa.table({"k": pa.array(np.full(300, 7), pa.int64()), "v": pa.array(np.arange(300), pa.int64())})
    empty = pa.table({"k": pa.array([], pa.int64()), "v": pa.array([], pa.int64())})
    return {"fact": fact, "dim": dim, "dim2": dim2, "eq": eq, "empty": empty}


@dataclass
class Data:
    path: str
    duck: duckdb.DuckDBPyConnection


@pytest.fixture(scope="module")
def edge_db(tmp_path_factory) -> Data:
    path = str(tmp_path_factory.mktemp("dist-edges") / "db")
    db = Database.open(path, create=True)
    duck = duckdb.connect()
    for name, table in _tables().items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=True) for f in table.schema]
        with db.create_table(name, schema, rows_per_page=500) as writer:
            if table.num_rows:
                writer.append_arrow(table)
        duck.register(f"{name}_arrow", table)
        duck.execute(f"create table {name} as select * from {name}_arrow")
    return Data(path, duck)


def _rows(table: pa.Table) -> list[tuple]:
    cols = [c.to_pylist() for c in table.columns]
    rows = [tuple(round(x, 6) if isinstance(x, float) else x for x in r) for r in zip(*cols)]
    return sorted(rows, key=lambda r: tuple((x is None, str(type(x)), x if x is not None else 0) for x in r))


@pytest.mark.parametrize("workers,broadcast_rows,batch_rows", [
    (3, 0, 7), pytest.param(2, 10_000, None, marks=pytest.mark.slow)])
def test_edges_match_duckdb_one_worker_and_explain(edge_db, workers, broadcast_rows, batch_rows) -> None:
    opts = {"batch_rows": batch_rows, "cpu_compile": False} if batch_rows else {}
    one = hetdb.connect(edge_db.path, device="cpu", **opts)
    with hetdb.connect(edge_db.path, device="cpu", workers=workers, **opts) as con:
        con._dist.broadcast_rows = broadcast_rows  # 0: every keyed join repartitions both sides
        for name, sql in QUERIES.items():
            got = con.sql(sql)
            truth = _rows(edge_db.duck.sql(sql).to_arrow_table())
            assert _rows(got.arrow()) == truth, name
            assert _rows(one.sql(sql).arrow()) == truth, name
            assert got.stats["workers"] == workers
        sql = QUERIES["skew_join_agg"]
        stats = con.sql(sql).stats
        kinds = {s["stage"] for s in stats["stages"]}
        assert len(kinds) >= 4 and stats["bytes_shuffled"] > 0 and not stats["dist_fallback"]
        # a plan that falls back to one worker reads whole tables there
        plan = con._get_engine().logical_plan(QUERIES["global_avg"])
        table, fb_stats = con._dist.run(DistPlan([Stage(0, plan.input, "result", single=True)], plan, workers,
                                                 fallback="forced"))
        assert _rows(table) == _rows(edge_db.duck.sql(QUERIES["global_avg"]).to_arrow_table())
        assert fb_stats["dist_fallback"] == "forced" and fb_stats["bytes_shuffled"] == 0
        text = con.explain(sql, analyze=True)
        plain = con.explain(sql)
    assert "exchange on [" in plain and "bytes sent" not in plain
    assert f"worker {workers - 1}: rows out=" in text and "exchange bytes received: worker 0=" in text
    assert f"share 0/{workers}" in text and "Total:" in text
    one.close()


def test_lowering_exchanges_and_one_worker(edge_db) -> None:
    with hetdb.connect(edge_db.path, device="cpu") as con:
        plan = con._get_engine().logical_plan(QUERIES["skew_join_agg"] + " order by c desc limit 3")
    single = lower(plan, 1)
    assert [s.exchange for s in single.stages] == ["result"]
    hashed = lower(plan, 2, broadcast_rows=0, row_counts={"fact": 6000, "dim": 60})
    kinds = [s.exchange for s in hashed.stages]
    assert kinds.count("hash") == 3 and kinds[-1] == "result" and "gather" in kinds, kinds
    assert any(s.note == "partial aggregation" for s in hashed.stages)
    bcast = lower(plan, 2, row_counts={"fact": 6000, "dim": 60})
    assert "broadcast" in [s.exchange for s in bcast.stages]


@dataclass(frozen=True)
class _Unknown(L.Node):
    child: L.Node

    def inputs(self) -> tuple[L.Node, ...]:
        return (self.child,)

    @property
    def schema(self):
        return self.child.schema

    def label(self) -> str:
        return "Unknown"


def test_unsupported_node_runs_on_one_worker_with_reason(edge_db) -> None:
    with hetdb.connect(edge_db.path, device="cpu") as con:
        plan = con._get_engine().logical_plan("select k from dim")
    odd = L.Output(_Unknown(plan.input), plan.fields)
    dplan = lower(odd, 3)
    assert len(dplan.stages) == 1 and dplan.stages[0].single
    assert "no distributed lowering for _Unknown" in dplan.fallback


@pytest.mark.parametrize("workers", [0, -1, "2"])
def test_bad_worker_count_is_a_typed_error(edge_db, workers) -> None:
    with pytest.raises(hetdb.HetdbError, match="workers must be a positive integer"):
        hetdb.connect(edge_db.path, device="cpu", workers=workers)


def test_registered_frame_runs_in_process_with_reason(edge_db) -> None:
    frame = pa.table({"k": pa.array([1, 2, 3], pa.int64())})
    with hetdb.connect(edge_db.path, device="cpu", workers=2) as con:
        con.register("frame_src", frame)
        res = con.sql("select count(*) c from fact f join frame_src s on f.k = s.k")
        truth = edge_db.duck.sql("select count(*) c from fact where k in (1, 2, 3)").fetchall()
    assert res.fetchall() == truth and "runs in this process" in res.stats["dist_fallback"]


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal rows in any order, floats compared bit for bit (exact partial aggregates)."""
    return sorted(zip(*(c.to_pylist() for c in a.columns)), key=repr) == \
        sorted(zip(*(c.to_pylist() for c in b.columns)), key=repr)


TWO_LEVEL = ("skew_join_agg", "avg_decimal", "global_avg_decimal", "count_distinct", "global_distinct",
             "right_join_group", "string_key_join", "not_in_nulls", "exists", "window_stats")


def test_two_level_compressed_exchange_matches_one_worker(edge_db) -> None:
    """4 workers on two logical hosts: every repartition goes through both levels, compressed; the
    answers are the one-worker answers exactly (avg from exact sums) and DuckDB's. Then the same
    workers on one host without compression: one level, raw bytes."""
    with hetdb.connect(edge_db.path, device="cpu") as one:
        expected = {name: one.sql(QUERIES[name]).arrow() for name in TWO_LEVEL}
        one_count_distinct = expected["count_distinct"]
    with hetdb.connect(edge_db.path, device="cpu", workers=4, worker_hosts=["a", "a", "b", "b"],
                       shuffle_compression=True) as con:
        con._dist.broadcast_rows = 0
        for name in TWO_LEVEL:
            res = con.sql(QUERIES[name])
            assert _same(res.arrow(), expected[name]), name
            assert _rows(res.arrow()) == _rows(edge_db.duck.sql(QUERIES[name]).to_arrow_table()), name
            assert res.stats["hosts"] == 2 and not res.stats["dist_fallback"], name
        stats = con.sql(QUERIES["skew_join_agg"]).stats
        assert 0 < stats["bytes_shuffled"] < stats["bytes_shuffled_raw"]
        text = con.explain(QUERIES["skew_join_agg"], analyze=True)
        bcast = con.explain(QUERIES["exists"], analyze=True)
        # only the batches leaving a host compressed: fewer bytes on the wire than raw, more than all
        con._dist.compress = "across_hosts"
        across = con.sql(QUERIES["skew_join_agg"]).stats
        assert _same(con.sql(QUERIES["count_distinct"]).arrow(), one_count_distinct)
        assert stats["bytes_shuffled"] < across["bytes_shuffled"] < across["bytes_shuffled_raw"]
        # the same workers on their one real host, uncompressed: a one-level exchange of Arrow tables
        con._dist.compress, con._dist.host_labels = False, None
        res = con.sql(QUERIES["count_distinct"])
        assert _same(res.arrow(), one_count_distinct)
        assert res.stats["bytes_shuffled"] == res.stats["bytes_shuffled_raw"] > 0 and res.stats["hosts"] == 1
        plain = con.explain(QUERIES["skew_join_agg"], analyze=True)
    # 2 hosts x 2 workers, hash: each worker sends 1 message inside its host, each relay 1 across
    assert text.count("messages: level 1: 4 inside hosts = ") >= 3, text
    assert text.count("level 2: 0 inside hosts = 0 bytes; 4 across hosts = ") >= 3, text
    # broadcast: each worker sends 1 message to its host's other worker and 1 to the other host
    # (one level: 2), whose relay hands it on to its host's other worker
    assert "messages: level 1: 4 inside hosts = " in bcast and "level 2: 4 inside hosts = " in bcast, bcast
    assert "inside hosts = 0 bytes" not in bcast.split("messages: level 1: ")[1].split("|")[0]
    assert "; 4 across hosts = " in bcast.split("messages: level 1: ")[1].split("|")[0], bcast
    assert "wire=" in text and "encode=" in text and "decode inputs=" in text
    # one host: 4 workers send 3 messages each per exchange, all inside the host
    assert "messages (one level): 12 inside hosts = " in plain and "; 0 across hosts = 0 bytes" in plain


@pytest.mark.parametrize("options,match", [
    ({"shuffle_compression": "yes"}, "shuffle_compression must be True, False or 'across_hosts'"),
    ({"worker_hosts": [0, 1]}, "worker_hosts must list one host label"),
    ({"worker_retries": -1}, "worker_retries must be a non-negative integer"),
    ({"worker_timeout": 0}, "worker_timeout must be a positive number")])
def test_bad_dist_options_are_typed_errors(edge_db, options, match) -> None:
    with pytest.raises(hetdb.HetdbError, match=match):
        hetdb.connect(edge_db.path, device="cpu", workers=3, **options)


def test_dist_option_without_workers_is_a_typed_error(edge_db) -> None:
    with pytest.raises(hetdb.HetdbError, match="worker_hosts: option.* of distributed queries"):
        hetdb.connect(edge_db.path, device="cpu", worker_hosts=[0])


# ~90M joined rows (90% of fact shares one key): seconds on any machine, so a kill lands mid-query
HEAVY = ("select count(*) c, sum(a.v - b.v) s from (select k, v from fact union all select k, v from fact "
         "union all select k, v + 1 from fact) a join fact b on a.k = b.k")


def _kill_mid_query(con, sql: str, victim: int) -> tuple[dict, float]:
    """Runs ``sql`` in a thread and kills worker ``victim``'s process while it runs."""
    pid = con._dist.worker_info()[victim][0]
    out: dict = {}

    def go() -> None:
        try:
            out["result"] = con.sql(sql)
        except hetdb.HetdbError as e:
            out["error"] = e
        out["end"] = time.monotonic()

    thread = threading.Thread(target=go)
    thread.start()
    time.sleep(0.3)
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive(), "the query hangs after its worker was killed"
    assert out["end"] > killed, "the query ended before the kill: make HEAVY heavier"
    return out, pid


@pytest.mark.slow
def test_killed_worker_fails_typed_then_retries(edge_db) -> None:
    truth = edge_db.duck.sql(HEAVY).fetchall()
    with hetdb.connect(edge_db.path, device="cpu", workers=3, worker_retries=0) as con:
        out, pid = _kill_mid_query(con, HEAVY, 1)
        err = out.get("error")
        assert isinstance(err, WorkerLostError) and err.workers == [1], out
        assert f"worker 1 (pid {pid}, node " in str(err)
        # the dead worker was replaced: the next query runs on 3 workers again
        res = con.sql(HEAVY)
        assert res.fetchall() == truth and res.stats["workers"] == 3
        assert con._dist.worker_info()[1][0] != pid
        con._dist.retries = 1
        out, pid = _kill_mid_query(con, HEAVY, 2)
        res = out["result"]
        assert res.fetchall() == truth and res.stats["workers"] == 2
        assert f"worker 2 (pid {pid}" in res.stats["workers_lost"][0]
        assert con.sql(HEAVY).stats["workers"] == 3
        # a worker that hangs (stopped, not dead): a typed error once no task finished for 3 s
        con._dist.timeout = 3
        stopped = con._dist.worker_info()[0][0]
        os.kill(stopped, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises(WorkerTimeoutError, match=f"worker 0 \\(pid {stopped},.* within worker_timeout=3 s"):
                con.sql(HEAVY)
            assert time.monotonic() - t0 < 60
        finally:
            os.kill(stopped, signal.SIGCONT)
        con._dist.timeout = None
        res = con.sql(HEAVY)
        assert res.fetchall() == truth and res.stats["workers"] == 3
        assert con._dist.worker_info()[0][0] != stopped


@pytest.mark.slow
def test_killed_worker_in_a_collective_exchange(edge_db) -> None:
    """A worker killed while the others may wait for it in a collective exchange: the whole group is
    replaced and the query runs again on it (no hang, the right answer)."""
    truth = edge_db.duck.sql(HEAVY).fetchall()
    with hetdb.connect(edge_db.path, device="cpu", workers=2, exchange="collective") as con:
        con._dist.broadcast_rows = 0
        before = [pid for pid, _ in con._dist.worker_info()]
        out, pid = _kill_mid_query(con, HEAVY, 1)
        res = out["result"]
        assert res.fetchall() == truth and res.stats["workers"] == 2 and res.stats["exchange"] == "mailbox"
        assert f"worker 1 (pid {pid}" in res.stats["workers_lost"][0]
        assert not set(before) & {p for p, _ in con._dist.worker_info()}
        assert con.sql(HEAVY).fetchall() == truth


COMPILED = ("skew_join_agg", "all_equal_self_join", "empty_join", "string_key_join", "right_join_group")


def test_compiled_loops_on_received_rows(edge_db) -> None:
    """2 workers, every keyed join repartitioned: the stages after an exchange run in the compiled
    CPU loops (received rows scanned like a table, strings dictionary-coded) with skewed, all-equal
    and empty inputs, and answer as DuckDB and one worker do."""
    with hetdb.connect(edge_db.path, device="cpu") as one, \
            hetdb.connect(edge_db.path, device="cpu", workers=2) as con:
        con._dist.broadcast_rows = 0
        for name in COMPILED:
            truth = _rows(edge_db.duck.sql(QUERIES[name]).to_arrow_table())
            got = con.sql(QUERIES[name]).arrow()
            assert _rows(got) == truth and _same(got, one.sql(QUERIES[name]).arrow()), name
        text = con.explain(QUERIES["skew_join_agg"], analyze=True)
    # the join of received rows with the received build side, aggregated in one compiled loop
    assert "ExchangeScan hash from stage" in text and "compiled into one CPU loop" in text, text
