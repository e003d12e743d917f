"""Collective exchanges on a local Ray cluster of CPU workers (exchange="collective": the path the
GPU workers take with NCCL, here through a Ray mailbox with the host codecs): answers identical to
DuckDB and to the object-store exchange, every hash and broadcast exchange through the group."""

from __future__ import annotations

import pytest
from diff_check import run_differential
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries

import hetdb
from hetdb.errors import HetdbError

pytestmark = pytest.mark.usefixtures("ray_cluster")


def _check(data, queries, orderings, con, tolerances=None) -> int:
    compared, failures = 0, []
    for name, sql in queries.items():
        outcome = run_differential(f"collective {name}", sql, lambda q: con.sql(q).arrow(), data.reference(sql),
                                   orderings[name], (tolerances or {}).get(name, 1e-9))
        compared += outcome.compared
        if outcome.failure:
            failures.append(outcome.failure)
    assert not failures, "\n".join(map(str, failures))
    return compared


def test_ssb_through_a_collective_exchange(ssb_dist) -> None:
    queries = {k: v for k, v in load_queries("ssb").items() if k in ("q1.1", "q2.1", "q3.1", "q4.1")}
    assert len(queries) == 4
    with hetdb.connect(ssb_dist.path, device="cpu", workers=2, exchange="collective",
                       shuffle_compression=True) as con:
        con._dist.broadcast_rows = 0  # every keyed join repartitions both sides
        assert _check(ssb_dist, queries, SSB_ORDERING, con) == 4
        stats = con.sql(queries["q2.1"]).stats
        assert stats["exchange"] == "mailbox" and stats["gpu_workers"] == 0
        collective = [s for s in stats["stages"] if s.get("collective")]
        assert collective and all(s["collective"] == "MailboxMember" for s in collective)
        sent = [m for s in collective for m in s["messages"]]
        # the messages between the two workers went compressed through the group
        assert sent and all(m[4] < m[3] for m in sent if m[2] >= 1000)
        assert sum(m[4] for m in sent) < sum(m[3] for m in sent) / 2
        assert stats["bytes_shuffled"] == sum(m[4] for s in stats["stages"] for m in s["messages"])
        text = con.explain(queries["q2.1"], analyze=True)
        assert "collective exchange (MailboxMember)=" in text and "exchange bytes received: worker 0=" in text


def test_tpch_joins_through_a_collective_exchange(tpch_dist) -> None:
    queries = {k: v for k, v in load_queries("tpch").items() if k in ("q03", "q05", "q18")}
    assert len(queries) == 3
    with hetdb.connect(tpch_dist.path, device="cpu", workers=3, exchange="collective",
                       batch_rows=1000) as con:
        assert _check(tpch_dist, queries, TPCH_ORDERING, con, TPCH_TOLERANCE) == 3
        assert con.sql(queries["q05"]).stats["exchange"] == "mailbox"


def test_exchange_option_is_checked(ssb_dist) -> None:
    with pytest.raises(HetdbError, match="exchange must be"):
        hetdb.connect(ssb_dist.path, device="cpu", workers=2, exchange="carrier pigeon")
    with pytest.raises(HetdbError, match="worker_gpus must be"):
        hetdb.connect(ssb_dist.path, device="cpu", workers=2, worker_gpus=3)
    with hetdb.connect(ssb_dist.path, device="cpu", workers=2) as con:
        # no GPU in the cluster: CPU workers, the object store
        stats = con.sql("select count(*) from lineorder").stats
        assert stats["exchange"] == "object store" and stats["gpu_workers"] == 0
