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
