"""The shared rank statistics: vectorised tau-b and rho equal scipy's, and the per-item Spearman interval is
seeded, covers its point and is scipy's rho on every draw."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from beirx.rank_agreement import draws, rho_rows, spearman_interval, tau_b_rows


def test_vectorised_tau_and_rho_equal_scipy():
    """The bootstrap's tau-b and rho, computed for all draws at once, are scipy's, ties included."""
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 4, (200, 6)).astype(float), rng.integers(0, 4, 6).astype(float)
    assert np.allclose(tau_b_rows(x, y), [kendalltau(row, y).statistic for row in x], equal_nan=True)
    assert np.allclose(rho_rows(x, y), [spearmanr(row, y).statistic for row in x], equal_nan=True)
    assert np.isnan(tau_b_rows(np.ones((1, 3)), np.array([1.0, 2.0, 3.0])))[0]
    ys = rng.integers(0, 4, (200, 6)).astype(float)  # a row of y for every row of x
    assert np.allclose(rho_rows(x, ys), [spearmanr(a, b).statistic for a, b in zip(x, ys)], equal_nan=True)


def test_spearman_interval_is_scipys_rho_with_a_seeded_percentile_interval():
    rng = np.random.default_rng(3)
    x = rng.normal(size=40)
    y = x + rng.normal(scale=1.0, size=40)
    rho, p, interval = spearman_interval(x, y, resamples=500, seed=11)
    assert rho == spearmanr(x, y).statistic and p == spearmanr(x, y).pvalue
    picks = draws(40, 500, 11)  # the same draws, one at a time through scipy
    by_hand = [spearmanr(x[i], y[i]).statistic for i in picks]
    assert interval == pytest.approx((np.percentile(by_hand, 2.5), np.percentile(by_hand, 97.5)))
    assert interval[0] < rho < interval[1]
    assert spearman_interval(x, y, resamples=500, seed=11) == (rho, p, interval)  # seeded
    assert spearman_interval(x, y, resamples=500, seed=12)[2] != interval
    assert spearman_interval([1, 2], [2, 1]) == (None, None, None)
    assert spearman_interval([1, 1, 1], [1, 2, 3]) == (None, None, None)


def test_no_interval_when_rho_is_undefined_on_too_many_draws():
    """One item of 30 set apart: about e^-1 of the draws leave it out, rho is undefined on them, and the defined
    draws alone would be an interval conditioned on drawing it."""
    x = np.array([0.0] * 29 + [1.0])
    y = np.arange(30, dtype=float)
    rho, p, interval = spearman_interval(x, y, resamples=400, seed=0)
    assert rho == spearmanr(x, y).statistic and interval is None
    x[:10] = 1.0  # a third set apart: (2/3)^30 of the draws miss them, every draw is defined
    assert spearman_interval(x, y, resamples=400, seed=0)[2] is not None
