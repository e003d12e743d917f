"""The window operator's host loops for frames (backend/cpu/window_stats): the fused multiply-add of
the quantile interpolation against exact rationals, frame_mode, frame_quantile and frame_variance
(narrow frames directly, wide ones by prefix sums) over the runs of
window_exclude (a frame less an excluded stretch, the row itself kept for TIES) against Python
references on random inputs, sizes not multiples of anything, empty input."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from hetdb.backend.cpu import window as K
from hetdb.backend.cpu import window_stats as KS


def test_fma_rounds_once() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20_000):
        a, b, c = rng.uniform(-1e6, 1e6), rng.random(), float(rng.integers(-50, 50))
        exact = float(Fraction(a) * Fraction(b) + Fraction(c))
        assert KS.fma(a, b, c) == exact
    assert math.isnan(KS.fma(np.inf, 0.0, 1.0)) and KS.fma(2.0, 3.0, np.inf) == np.inf


def _runs(rng, n, exclude):
    """Random ROWS frames (n preceding .. m following) per partition with an exclusion of the row
    (current_row), its run of equal keys (group) or that run but the row (ties)."""
    part_start = rng.random(n) < 0.05
    if n:
        part_start[0] = True
    peer_start = part_start | (rng.random(n) < 0.4)
    ps, pe, gs, ge = K.boundaries(part_start, peer_start)
    reach = 6 if n < 2000 else 90  # wide frames: frame_variance's prefix sums
    fs, fe = K.rows_frame(ps, pe, 1, int(rng.integers(0, reach)), 3, int(rng.integers(0, reach)))
    rows = np.arange(n, dtype=np.int64)
    if exclude is None:
        return fs, fe, fe, fe, np.zeros(n, bool), ps
    xs, xe = (rows, rows + 1) if exclude == "current_row" else (gs, ge)
    le = np.minimum(fe, np.maximum(fs, xs))
    rs = np.maximum(fs, np.minimum(fe, xe))
    tie = (fs <= rows) & (rows < fe) if exclude == "ties" else np.zeros(n, bool)
    return fs, le, rs, fe, tie, ps


def _members(i, ls, le, rs, re, tie):
    return list(range(ls[i], le[i])) + ([i] if tie[i] else []) + list(range(rs[i], re[i]))


@pytest.mark.parametrize("exclude", [None, "current_row", "group", "ties"])
@pytest.mark.parametrize("n", [0, 1, 997, 3000])
def test_frame_mode_and_quantile_follow_their_references(exclude, n) -> None:
    rng = np.random.default_rng(n + 7)
    codes = rng.integers(0, 5, n).astype(np.int64)
    valid = rng.random(n) < 0.85
    xs = rng.normal(size=n).round(2)
    ls, le, rs, re, tie, ps = _runs(rng, n, exclude)
    mode = KS.frame_mode(codes, valid, ls, le, rs, re, tie)
    q, ok = KS.frame_quantile(xs, valid, ls, le, rs, re, tie, 0.3)
    var, var_ok = KS.frame_variance(xs, valid, ls, le, rs, re, tie, ps, 1)
    for i in range(n):
        rows = [j for j in _members(i, ls, le, rs, re, tie) if valid[j]]
        assert var_ok[i] == (len(rows) > 1)
        if len(rows) > 1:
            assert var[i] == pytest.approx(np.var([xs[j] for j in rows], ddof=1), rel=1e-9, abs=1e-12)
        if not rows:
            assert mode[i] == -1 and not ok[i]
            continue
        counts = Counter(codes[j] for j in rows)
        top = max(counts.values())
        assert mode[i] == next(j for j in rows if counts[codes[j]] == top)  # ties: the first met
        v = sorted(xs[j] for j in rows)
        pos = 0.3 * (len(v) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        assert ok[i] and q[i] == pytest.approx(v[lo] + (v[hi] - v[lo]) * (pos - lo), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("exclude", [None, "current_row", "group", "ties"])
@pytest.mark.parametrize("n", [0, 1, 801, 3000])
def test_frame_distinct_disc_and_reductions_follow_their_references(exclude, n) -> None:
    rng = np.random.default_rng(n + 11)
    codes = rng.integers(0, 7, n).astype(np.int64)
    values = (codes * 3 - 5).astype(np.int64)  # one value per code
    valid = rng.random(n) < 0.8
    key = rng.integers(-20, 20, n).astype(np.int64)
    ls, le, rs, re, tie, _ = _runs(rng, n, exclude)
    distinct = KS.frame_distinct(codes, valid, ls, le, rs, re, tie)
    disc = KS.frame_quantile_disc(key, valid, ls, le, rs, re, tie, 0.3)
    per_code = np.zeros(7, np.int64)
    per_code[codes] = values
    isum, fsum, cnt = KS.frame_distinct_sum(codes, per_code.astype(np.float64), per_code, valid, ls, le, rs, re, tie)
    _, bits, ok_bits = KS.frame_reduce(KS.BIT_OR, values, values.astype(np.float64), valid, ls, le, rs, re, tie)
    prod, _, ok_prod = KS.frame_reduce(KS.PRODUCT, values, values.astype(np.float64) / 4, valid, ls, le, rs, re, tie)
    for i in range(n):
        rows = [j for j in _members(i, ls, le, rs, re, tie) if valid[j]]
        seen = sorted({int(codes[j]) for j in rows})
        assert distinct[i] == len(seen) == cnt[i]
        assert isum[i] == sum(int(per_code[c]) for c in seen) and fsum[i] == pytest.approx(float(isum[i]))
        assert ok_bits[i] == ok_prod[i] == bool(rows)
        if not rows:
            assert disc[i] == -1
            continue
        ordered = sorted(rows, key=lambda j: key[j])
        assert key[disc[i]] == key[ordered[max(0, math.ceil(len(rows) * 0.3) - 1)]]
        acc = 0
        for j in rows:
            acc |= int(values[j])
        assert bits[i] == acc
        assert prod[i] == pytest.approx(math.prod(values[j] / 4 for j in rows), rel=1e-12)


@pytest.mark.parametrize("exclude", [None, "current_row", "ties"])
@pytest.mark.parametrize("n", [0, 1, 500])
def test_frame_moments_follow_numpy(exclude, n) -> None:
    from hetdb.backend.cpu import window_moments as KM

    rng = np.random.default_rng(n + 3)
    y, x = rng.normal(size=n), rng.normal(size=n) * 3 + 1
    both = rng.random(n) < 0.85
    ls, le, rs, re, tie, _ = _runs(rng, n, exclude)
    got = {op: KM.frame_moments(KM.OPS.index(op), y, x, both, ls, le, rs, re, tie)
           for op in ("skewness", "covar_samp", "corr", "regr_slope", "regr_count")}
    for i in range(n):
        rows = [j for j in _members(i, ls, le, rs, re, tie) if both[j]]
        assert got["regr_count"][0][i] == len(rows)
        yy, xx = y[rows], x[rows]
        c = len(rows)
        if c <= 2:
            assert not got["skewness"][1][i]
        else:
            d = yy - yy.mean()
            want = math.sqrt(c * (c - 1)) / (c - 2) * (d ** 3).mean() / (d ** 2).mean() ** 1.5
            assert got["skewness"][0][i] == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert got["covar_samp"][1][i] == (c >= 2)
        if c >= 2:
            assert got["covar_samp"][0][i] == pytest.approx(np.cov(xx, yy)[0, 1], rel=1e-9, abs=1e-12)
            assert got["corr"][0][i] == pytest.approx(np.corrcoef(xx, yy)[0, 1], rel=1e-9, abs=1e-12)
            assert got["regr_slope"][0][i] == pytest.approx(np.polyfit(xx, yy, 1)[0], rel=1e-7, abs=1e-9)
