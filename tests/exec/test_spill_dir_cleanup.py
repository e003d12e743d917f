"""A query's spill directory: made only when an operator spills (exec/hostutil.make_spill_dir) and
then removed when the query ends; a query that spills nothing leaves nothing and removes nothing."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

import hetdb
from hetdb.exec import hostutil


def test_a_spilling_query_removes_its_directory_and_others_make_none(tmp_path) -> None:
    spill = tmp_path / "spill"
    rng = np.random.default_rng(5)
    t = pa.table({"k": rng.integers(0, 30_000, 120_000), "v": rng.integers(0, 100, 120_000)})
    made: list[str] = []
    every: list[str] = []
    real = hostutil.make_spill_dir

    def spy(directory: str) -> None:
        made.append(directory)
        every.append(directory)
        real(directory)

    hostutil.make_spill_dir = spy
    try:
        with hetdb.connect(str(tmp_path / "db"), device="cpu", spill_dir=str(spill), host_memory_limit=2_000_000,
                           create=True) as con:
            con.register("src", t)
            con.sql("CREATE TABLE t AS SELECT * FROM src")
            res = con.sql("SELECT k, sum(v) AS s FROM t GROUP BY k ORDER BY k")
            assert res.arrow().num_rows == len(np.unique(t["k"].to_numpy())) > 0
            assert res.stats["spilled_partitions"] > 0 and made  # it spilled, into its own directory
            assert not os.listdir(spill)  # ... which went with the query
            made.clear()
            assert con.sql("SELECT count(*) FROM t").fetchall() == [(120_000,)]
            assert not made and not os.listdir(spill)
    finally:
        hostutil.make_spill_dir = real
    assert every and not set(every) & hostutil._SPILL_DIRS  # the directories made were removed (and forgotten)
