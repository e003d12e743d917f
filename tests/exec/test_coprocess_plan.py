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
