"""The co-processing cost model (cache/comodel.py): the race of the GPU (from the front) and CPU
workers (from the back) played out by hand on small cases, the set-up counted against the GPU, and
the decision: a measured rate must save enough, an unmeasured one is probed only when the probe fits."""

from __future__ import annotations

import pytest

from hetdb.cache.comodel import MEASURED_MARGIN, MIN_GAIN_S, PROBE_MARGIN, decide, estimate


def test_workers_take_from_the_back_only_what_they_finish_before_the_gpu_gets_there():
    # GPU 1 ms a row group over 10; two workers at 4 ms: each takes one (done at 4 ms, before the
    # GPU starts row groups 9 and 8), neither a second (done at 8 ms, after the GPU starts row group 7)
    est = estimate([1e-3] * 10, 4e-3, 2)
    assert est.cpu_row_groups == 2
    assert est.gpu_s == pytest.approx(10e-3) and est.co_s == pytest.approx(8e-3)
    assert est.gain_s == pytest.approx(2e-3)


def test_set_up_delays_the_gpu_and_can_eat_the_gain():
    est = estimate([1e-3] * 10, 4e-3, 2, setup_s=3e-3)
    assert est.cpu_row_groups == 2 and est.co_s == pytest.approx(11e-3) and est.gain_s < 0
    d = decide([1e-3] * 10, 4e-3 / MEASURED_MARGIN, True, 2, 3e-3)
    assert not d.go and "would save" in d.why
    assert decide([1e-3] * 10, 4e-3 / MEASURED_MARGIN, True, 2, 0.0).go


def test_a_long_scan_approaches_the_combined_rate():
    # GPU 10 row groups/ms, ten CPU workers at 1 ms each: 10 row groups/ms too; together 1000
    # row groups in about 50 ms
    est = estimate([0.1e-3] * 1000, 1e-3, 10)
    assert est.gpu_s == pytest.approx(0.1)
    assert est.co_s == pytest.approx(0.05, rel=0.03)
    assert 480 <= est.cpu_row_groups <= 520


def test_no_gain_worth_having_means_off():
    # a CPU worker slower than the whole scan takes nothing
    d = decide([1e-3] * 10, 20e-3, True, 15, 0.0)
    assert not d.go and d.est.cpu_row_groups == 0 and "no CPU worker finishes" in d.why
    # one row group of 100 saves 1% of the GPU's time: below MIN_GAIN_SHARE (a measured 78 ms is
    # taken as 97.5 ms: MEASURED_MARGIN)
    d = decide([1e-3] * 100, 78e-3, True, 1, 0.0)
    assert d.est.cpu_row_groups == 1 and 0 < d.est.gain_s < 0.05 * d.est.gpu_s and not d.go
    # and a tiny scan's gain stays under MIN_GAIN_S even when it is a large share
    d = decide([0.1e-3] * 4, 0.15e-3, True, 4, 0.0)
    assert d.est.gain_s < MIN_GAIN_S and not d.go


def test_without_a_measured_rate_only_a_probe_that_fits_is_taken():
    # the prior estimate times PROBE_MARGIN must end before the GPU reaches the last row group
    d = decide([1e-3] * 10, 8e-3 / PROBE_MARGIN, False, 15, 0.0)
    assert d.go and d.probe and d.est.cpu_row_groups == 1
    d = decide([1e-3] * 10, 10e-3 / PROBE_MARGIN, False, 15, 0.0)
    assert not d.go and d.probe and d.why.startswith("the GPU's estimated")
    assert not decide([], 1e-3, True, 4, 0.0).go


def test_a_gpu_slowed_by_the_cpu_workers_can_turn_co_processing_off_or_take_fewer_workers():
    # alone the GPU takes 10 ms for 20 row groups; four workers at 4 ms (5 ms with the margin) take
    # the last four and the whole takes 8 ms. A GPU 3x slower beside them makes the race longer;
    # 9x slower, it loses to the GPU alone whatever the workers take
    gpu = [0.5e-3] * 20
    fine = decide(gpu, 4e-3, True, 4, 0.0)
    assert fine.go and fine.workers == 4 and fine.est.co_s < fine.est.gpu_s
    est = estimate(gpu, 4e-3, 4, 0.0, slowdown=3.0)
    assert est.cpu_row_groups > 0 and est.co_s > estimate(gpu, 4e-3, 4).co_s
    slowed = decide(gpu, 4e-3, True, 4, 0.0, lambda w: 9.0)
    assert not slowed.go and "9.00x slower" in slowed.why
    # a GPU slowed far more by 16 workers than by 8: 8 win more (a CPU row group 10 ms, 100 of
    # them at 1 ms on the GPU alone: 16 workers 76 ms, 8 workers 72 ms, 4 workers 83.6 ms)
    slow = {16: 4.0, 8: 1.2, 4: 1.1, 2: 1.05, 1: 1.0}
    d = decide([1e-3] * 100, 10e-3, True, 16, 0.0, slow.get)
    assert d.go and d.workers == 8 and d.est.co_s == pytest.approx(72e-3)


def test_the_slowdown_is_a_running_mean_per_pipeline_and_worker():
    from hetdb.cache.rates import Rates

    rates = Rates()
    assert rates.gpu_slowdown("p", 8) == 1.0
    rates.observe_slowdown("p", 3.0, 4)  # 0.5 per worker
    assert rates.gpu_slowdown("p", 4) == pytest.approx(3.0) and rates.gpu_slowdown("p", 2) == pytest.approx(2.0)
    rates.observe_slowdown("p", 1.0, 4)  # (0.75 x 0.5 + 0.25 x 0)
    assert rates.gpu_slowdown("p", 4) == pytest.approx(2.5)
    rates.observe_slowdown("p", float("nan"), 4)  # (ignored)
    assert rates.gpu_slowdown("p", 4) == pytest.approx(2.5) and rates.gpu_slowdown("q", 4) == 1.0


def _through_the_smaller_shares(rates, key, seconds):
    """Co-processed runs of ``seconds`` at each smaller share of comodel.SPLIT_SCALES in turn (each
    share's two runs not faster than alone step it down)."""
    from hetdb.cache.comodel import SPLIT_SCALES, observe_outcome, outcome_refuses, split_scale

    for i in range(1, len(SPLIT_SCALES)):
        assert split_scale(rates, key) == SPLIT_SCALES[i]
        observe_outcome(rates, key, True, seconds)
        assert outcome_refuses(rates, key) == ""  # (one run at this share says nothing yet)
        observe_outcome(rates, key, True, seconds)
        if i + 1 < len(SPLIT_SCALES):
            assert outcome_refuses(rates, key) == ""  # (the next share)


def test_outcomes_stop_co_processing_that_did_not_pay_and_try_again_now_and_then():
    from hetdb.cache.comodel import EXPLORE_EVERY, SPLIT_SCALES, observe_outcome, outcome_refuses, split_scale
    from hetdb.cache.rates import Rates

    rates = Rates()
    assert outcome_refuses(rates, "p") == ""  # nothing measured
    assert split_scale(rates, "p") == SPLIT_SCALES[0] == 1.0
    observe_outcome(rates, "p", False, 0.020)
    observe_outcome(rates, "p", True, 1.5)  # (a first co-processed run compiling the CPU loop)
    assert outcome_refuses(rates, "p") == ""  # one co-processed run says nothing yet
    observe_outcome(rates, "p", True, 0.021)
    # not faster with the model's share: a smaller one is tried, its runs compared afresh
    assert outcome_refuses(rates, "p") == "" and split_scale(rates, "p") == SPLIT_SCALES[1] < 1.0
    _through_the_smaller_shares(rates, "p", 0.0205)
    why = outcome_refuses(rates, "p")
    assert "20.5 ms" in why and "20.0 ms" in why  # not faster with the smallest share either
    assert split_scale(rates, "p") == SPLIT_SCALES[-1]
    answers = [outcome_refuses(rates, "p") for _ in range(2 * EXPLORE_EVERY)]
    assert sum(a == "" for a in answers) == 2  # a run that tries again every EXPLORE_EVERY-th
    observe_outcome(rates, "p", True, 0.015)
    observe_outcome(rates, "p", True, 0.016)  # co-processed runs now clearly faster
    assert "a second run alone" in outcome_refuses(rates, "p")  # (than the one run alone so far)
    observe_outcome(rates, "p", False, 0.020)
    assert outcome_refuses(rates, "p") == ""
    assert outcome_refuses(rates, "other") == ""


def test_co_processing_faster_than_one_cold_run_alone_is_checked_against_a_second_run_alone():
    from hetdb.cache.comodel import observe_outcome, outcome_refuses
    from hetdb.cache.rates import Rates

    # SSB q1.1 at SF 20 on the H100 (s16 final): the first "auto" run alone 40 ms (cold), then
    # co-processed ~23-29 ms, while the GPU alone takes ~17 ms warm
    rates = Rates()
    observe_outcome(rates, "p", False, 0.040)
    observe_outcome(rates, "p", True, 0.0229)
    observe_outcome(rates, "p", True, 0.0288)
    why = outcome_refuses(rates, "p")
    assert "a second run alone" in why and "40.0 ms" in why
    observe_outcome(rates, "p", False, 0.0167)
    assert outcome_refuses(rates, "p") == ""  # (slower than the warm run alone: a smaller share next)
    _through_the_smaller_shares(rates, "p", 0.0229)
    why = outcome_refuses(rates, "p")
    assert "22.9 ms" in why and "16.7 ms" in why and "second" not in why  # stays on the GPU alone
    # where co-processing is faster than the warm runs alone too, it goes on
    faster = Rates()
    for coprocessed, s in ((False, 0.040), (True, 0.012), (True, 0.013), (False, 0.017)):
        observe_outcome(faster, "p", coprocessed, s)
    assert outcome_refuses(faster, "p") == ""


def test_workers_that_start_after_the_gpu_take_what_still_fits():
    # SSB q1.1 at SF 20 on the H100: 115 row groups at ~0.1 ms of link each, a CPU row group ~7 ms;
    # the workers start ~5 ms after the early scan's copies (its priming runs first)
    gpu = [0.1e-3] * 115
    assert decide(gpu, 7e-3, True, 14, 0.1e-3).go
    late = decide(gpu, 7e-3, True, 14, 0.1e-3, cpu_start_s=5e-3)
    assert not late.go and late.est.cpu_row_groups == 0
    assert estimate(gpu, 7e-3, 14, 0.0, 1.0, 4e-3).cpu_row_groups == 4 < estimate(gpu, 7e-3, 14).cpu_row_groups


def test_the_gpus_fixed_time_is_the_cpu_workers_time_too():
    # SSB q1.1 at SF 20 on the H100: 115 row groups at ~0.1 ms of link each, but ~16 ms end to end
    # alone (the query's start before the first copy, the kernels and the finish after the last):
    # workers starting 7 ms in with 4.9 ms a row group fit once that time counts
    from hetdb.cache.comodel import alone_seconds, observe_outcome
    from hetdb.cache.rates import Rates

    gpu = [0.1e-3] * 115
    bare = estimate(gpu, 4.9e-3, 14, 0.1e-3, 1.0, 7e-3)
    fixed = estimate(gpu, 4.9e-3, 14, 0.1e-3, 1.0, 7e-3, gpu_fixed_s=4.5e-3)
    assert bare.cpu_row_groups == 0 and fixed.cpu_row_groups == 14
    assert fixed.gpu_s == pytest.approx(16e-3) and fixed.co_s < fixed.gpu_s
    assert decide(gpu, 3.9e-3, True, 14, 0.1e-3, cpu_start_s=7e-3, gpu_fixed_s=4.5e-3).go
    assert not decide(gpu, 3.9e-3, True, 14, 0.1e-3, cpu_start_s=7e-3).go
    rates = Rates()
    assert alone_seconds(rates, "p") is None
    for s in (0.040, 0.016, 0.017):  # (the least: the first run alone was cold)
        observe_outcome(rates, "p", False, s)
    assert alone_seconds(rates, "p") == pytest.approx(0.016)


def test_a_smaller_share_that_pays_is_kept():
    from hetdb.cache.comodel import SPLIT_SCALES, observe_outcome, outcome_refuses, split_scale
    from hetdb.cache.rates import Rates

    # SSB q1.2 at SF 50 on the H200 (s24 g/): the model's share no faster than alone (31.6 ms), a
    # smaller one 27.3 ms
    rates = Rates()
    for s in (0.0316, 0.0317):
        observe_outcome(rates, "q1.2", False, s)
    observe_outcome(rates, "q1.2", True, 0.0339)
    observe_outcome(rates, "q1.2", True, 0.0330)
    assert outcome_refuses(rates, "q1.2") == "" and split_scale(rates, "q1.2") == SPLIT_SCALES[1]
    for s in (0.0273, 0.0270, 0.0275, 0.0272):
        observe_outcome(rates, "q1.2", True, s)
        assert outcome_refuses(rates, "q1.2") == ""
        assert split_scale(rates, "q1.2") == SPLIT_SCALES[1]  # (kept: faster than alone)
    assert split_scale(rates, "q1.1") == 1.0  # (another pipeline's outcome is its own)


def test_a_rate_no_worker_fits_is_measured_again_ever_more_rarely():
    from hetdb.cache.comodel import EXPLORE_EVERY, reprobe
    from hetdb.cache.rates import Rates

    rates = Rates()
    again = [n for n in range(1, 64 * EXPLORE_EVERY + 1) if reprobe(rates, "p")]
    assert again == [EXPLORE_EVERY, 4 * EXPLORE_EVERY, 16 * EXPLORE_EVERY, 64 * EXPLORE_EVERY]
    assert not reprobe(rates, "q")  # (per pipeline)
    rates.cpu_rate("p").observe(1, 0.3)
    assert rates.cpu_rate("p").observations == 1
    rates.forget_cpu("p")  # (the next scan probes it afresh: the default rate, no observation)
    assert rates.cpu_rate("p").observations == 0
