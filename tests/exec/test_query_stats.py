"""Result.stats of a finished query (exec/run_stats.py): the totals over its operators are made at
the first read of any kind, equal the sums over the operators' statistics, and a value the engine
set before that read is kept."""

from __future__ import annotations

import copy
import json
import pickle

import pyarrow as pa

import hetdb
from hetdb.exec.run_stats import QueryStats


def _db(tmp_path):
    con = hetdb.connect(str(tmp_path / "db"))
    con.register("src", pa.table({"k": [i % 7 for i in range(5000)], "v": list(range(5000))}))
    con.sql("CREATE TABLE t AS SELECT * FROM src")
    return con


def test_totals_are_made_at_the_first_read_and_match_the_operators(tmp_path):
    with _db(tmp_path) as con:
        reads = [lambda s: s["bytes_read"], lambda s: s.get("pages_read"), lambda s: "routes" in s,
                 lambda s: sorted(s), lambda s: len(s), lambda s: dict(s), lambda s: json.loads(json.dumps(s, default=str)),
                 lambda s: pickle.loads(pickle.dumps({k: v for k, v in s.items() if k != "operators"})),
                 lambda s: copy.copy(s), lambda s: {**s}]
        full = None
        for read in reads:
            stats = con.sql("SELECT k, sum(v) FROM t WHERE v > 100 GROUP BY k ORDER BY k").stats
            assert isinstance(stats, QueryStats)
            assert "bytes_read" not in dict.keys(stats)  # (not made yet)
            read(stats)
            assert dict.__contains__(stats, "bytes_read"), read
            keys = set(dict.keys(stats))
            full = keys if full is None else full
            assert keys == full
        ops = stats["operators"].values()
        assert stats["bytes_read"] == sum(s.bytes_read for s in ops)
        assert stats["pages_read"] == sum(s.pages_read for s in ops)
        assert stats["routes"]["pages"] and sum(s.rows_in for s in ops) > 0  # (it read pages, by some path)
        assert stats["rows"] == 7 and stats["plan_seconds"] >= 0


def test_a_value_set_before_the_first_read_is_kept():
    stats = QueryStats({"rows": 3}, lambda: {"bytes_read": 10, "cpu_fallbacks": {}})
    stats.update({"cpu_fallbacks": {"query on the CPU": 1}})
    assert stats["cpu_fallbacks"] == {"query on the CPU": 1} and stats["bytes_read"] == 10
    assert stats == {"rows": 3, "cpu_fallbacks": {"query on the CPU": 1}, "bytes_read": 10}
    assert type(pickle.loads(pickle.dumps(stats))) is dict
