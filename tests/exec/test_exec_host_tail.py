"""Small-result pipelines placed on the host (engine.host_tail): on the GPU, pipelines that only read
earlier results (sort, top-n, projections, the final collect) run on the CPU backend when their input
is small. Here a CPU connection's engine gets the reference backend as its "host" backend, so the
placement, the moves of results between backends and EXPLAIN's account run without a GPU."""

from __future__ import annotations

from exec_plan_helpers import check
from reference_backend import ReferenceBackend

import hetdb
from hetdb.exec.engine import host_tail

QUERIES = [
    ("select b, count(*) as n, sum(a) as s from fact group by b order by b nulls first", True),
    ("select a, sum(c) as s from fact where a is not null group by a order by s desc, a limit 7", True),
    ("select b, max(d) as m from fact group by b having count(*) > 300 order by m", True),
    ("select a from fact where k < 40 union all select a from dim order by a nulls last", True),
    ("select s, count(*) as n from dim group by s order by n desc, s nulls first", True),
    ("select count(*) as groups, sum(n) as total from (select a, count(*) as n from fact group by a) q",
     True),
]


def test_small_results_run_on_the_host_backend(db, duck) -> None:
    compared = placed = 0
    with hetdb.connect(db.path, device="cpu") as con:
        engine = con._get_engine()
        engine.tail_backend = ReferenceBackend()
        for sql, ordered in QUERIES:
            res = con.sql(sql)
            check(res.arrow(), duck, sql, ordered=ordered)
            placed += res.stats["host_pipelines"] > 0
            compared += 1
        text = con.explain(QUERIES[0][0], analyze=True)
    assert compared == len(QUERIES) and placed == len(QUERIES)
    assert "on the host:" in text and "not a fallback" in text and "Host: " in text, text


def test_large_inputs_stay_where_they_are(db, duck, monkeypatch) -> None:
    import hetdb.exec.engine as engine_mod

    monkeypatch.setattr(engine_mod, "HOST_RESULT_ROWS", 10)
    sql = "select k, a from fact where k < 100 order by k"
    with hetdb.connect(db.path, device="cpu") as con:
        con._get_engine().tail_backend = ReferenceBackend()
        res = con.sql(sql)
    check(res.arrow(), duck, sql, ordered=True, min_rows=100)
    assert res.stats["host_pipelines"] == 0  # 100 rows > 10: the sort stays on the device


def test_tail_excludes_builds_and_scans(db) -> None:
    sql = ("select d.s, count(*) as n from fact f join (select a, s from dim group by a, s) d "
           "on f.a = d.a group by d.s order by n")
    with hetdb.connect(db.path, device="cpu") as con:
        engine = con._get_engine()
        entry, _ = engine.planned(sql)
    physical = entry.physical
    tail = host_tail(physical)
    for p in physical.pipelines:
        if p.pid in tail:
            assert type(p.source).__name__ in ("ResultSource", "UnionSource")
            assert type(p.sink).__name__ != "HashBuild"
    assert physical.result_pipeline in tail
    assert any(type(p.sink).__name__ == "HashBuild" and p.pid not in tail for p in physical.pipelines)
