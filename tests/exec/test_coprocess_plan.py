"""exec/coprocess_plan.py's small decisions: the GPU's slowdown beside CPU workers the race counts."""

from __future__ import annotations

import pytest

from hetdb.cache.rates import Rates
from hetdb.exec import coprocess_plan


def test_the_gpus_slowdown_is_the_prior_per_worker_until_a_scan_measured_it(monkeypatch):
    monkeypatch.setattr(coprocess_plan, "PRIOR_SLOWDOWN_PER_WORKER", 0.02)
    rates = Rates()
    assert coprocess_plan.gpu_slowdown(rates, "p", 14) == pytest.approx(1.28)
    assert coprocess_plan.gpu_slowdown(rates, "p", 0) == 1.0
    rates.observe_slowdown("p", 1.0, 7)  # (measured: no slowdown at all)
    assert coprocess_plan.gpu_slowdown(rates, "p", 14) == 1.0
    assert coprocess_plan.gpu_slowdown(rates, "q", 7) == pytest.approx(1.14)


def test_the_first_runs_whose_workers_decoded_pages_teach_no_outcome(monkeypatch):
    """A co-processed run whose CPU workers decoded pages to keep them ran its share on the Python
    path: the first DECODING_RUNS_UNCOUNTED of a pipeline are not outcomes (else one such run kept
    the pipeline on the GPU alone for good); past them, and runs that decoded nothing, count."""
    from types import SimpleNamespace

    monkeypatch.setattr(coprocess_plan, "DECODING_RUNS_UNCOUNTED", 2)
    monkeypatch.setattr(coprocess_plan, "_DECODING_RUNS", {})
    decoding = SimpleNamespace(decoded_pages=True, key="p")
    assert [coprocess_plan._decoding_run(decoding) for _ in range(3)] == [True, True, False]
    assert coprocess_plan._decoding_run(SimpleNamespace(decoded_pages=True, key="q"))  # (per pipeline)
    assert not coprocess_plan._decoding_run(SimpleNamespace(decoded_pages=False, key="r"))


@pytest.fixture(scope="module")
def ssb(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))
    from diff_data import build_ssb

    import hetdb

    path = str(tmp_path_factory.mktemp("coplan") / "ssb")
    build_ssb(path, 0.01, 4096)
    with hetdb.connect(path, device="cpu") as con:
        yield con


def _fact_key(engine, sql: str) -> str:
    entry, _ = engine.planned(sql)
    physical = entry.physical
    fact = next(p for p in physical.pipelines
                if type(p.source).__name__ == "TableScan" and p.source.scan.table == "lineorder")
    names = list(dict.fromkeys(fact.source.scan.column_names))
    return coprocess_plan.pipeline_key(engine.db.table("lineorder"), fact, names, physical)


def test_queries_of_one_shape_with_other_constants_learn_apart(ssb):
    """The pipeline key of co-processing's rates and outcomes tells SSB q1.1, q1.2 and q1.3 apart
    (one shape, other constants in the fact filters and the date build's), q3.2 from q3.3 (other
    constants in the builds only), and is the same for a query run again."""
    from diff_queries import load_queries  # (tests/differential: the fixture put it on the path)

    queries = load_queries("ssb")
    engine = ssb._get_engine()
    keys = {q: _fact_key(engine, queries[q]) for q in ("q1.1", "q1.2", "q1.3", "q3.2", "q3.3")}
    shape = {q: k.rsplit(":", 1)[0] for q, k in keys.items()}
    assert shape["q1.1"] == shape["q1.2"] == shape["q1.3"]  # (same columns, probes, aggregates)
    assert len(set(keys.values())) == 5
    assert _fact_key(engine, queries["q1.2"]) == keys["q1.2"]
    # a constant in a build's filter alone tells two queries apart
    q = queries["q1.1"]
    assert "1993" in q
    assert _fact_key(engine, q.replace("1993", "1994")) != keys["q1.1"]
