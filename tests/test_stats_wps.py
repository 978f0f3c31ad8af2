"""WPS regression against statsmodels OLS, an exact line, merging of correlated rounds, the alpha
bound."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.stats.wps import fit, merge_rounds, min_useful_work


def test_slope_ci_matches_statsmodels() -> None:
    rng = np.random.default_rng(0)
    w = rng.permutation(np.linspace(1e6, 5e7, 40))  # bytes
    t = 0.4 + w / 2e8 + rng.normal(0, 0.01, w.size)  # seconds; v = 200 MB/s, alpha = 0.4 s
    f = fit(w, t, confidence=0.95)
    ols = sm.OLS(t, sm.add_constant(w)).fit()
    (a_lo, a_hi), (s_lo, s_hi) = ols.conf_int(0.05)
    assert f.subsession_size == 1
    assert f.alpha == pytest.approx(ols.params[0])
    assert (f.alpha_ci_low, f.alpha_ci_high) == pytest.approx((a_lo, a_hi))
    assert f.slope == pytest.approx(ols.params[1])
    assert (f.v_low, f.v_high) == pytest.approx((1 / s_hi, 1 / s_lo))
    assert f.v_low < 2e8 < f.v_high
    assert f.prediction_error == pytest.approx(np.sqrt(ols.scale) / t.mean())


def test_exact_line_and_alpha_bound_by_hand() -> None:
    w = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    f = fit(w, 2.0 + w / 5.0, overhead_fraction=0.1)
    assert (f.alpha, f.v) == pytest.approx((2.0, 5.0))
    # alpha = 2 s must be at most 10% of a round: t >= 20 s, i.e. w >= 5 * (20 - 2) = 90
    assert f.min_useful_work == pytest.approx(90.0)
    assert min_useful_work(2.0, 5.0, 0.5) == pytest.approx(10.0)  # t >= 4 s -> w >= 10
    assert min_useful_work(-1.0, 5.0) == 0.0


def test_correlated_rounds_are_merged() -> None:
    rng = np.random.default_rng(1)
    n = 120
    w = rng.uniform(1, 10, n)
    drift = np.repeat(rng.normal(0, 0.5, n // 6), 6)  # blocks of 6 rounds share a disturbance
    f = fit(w, 1.0 + w / 4.0 + drift + rng.normal(0, 0.05, n))
    assert f.subsession_size > 1
    assert abs(f.autocorrelation) <= 0.1
    assert f.n_points == n // f.subsession_size
    np.testing.assert_allclose(merge_rounds(np.arange(7.0), 3), [2.0, 5.0])


def test_bad_rounds() -> None:
    with pytest.raises(InsufficientData):
        fit(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    with pytest.raises(InsufficientData, match="same work amount"):
        fit(np.full(5, 3.0), np.arange(1.0, 6.0))
    with pytest.raises(BadInput):
        fit(np.arange(5.0), np.array([1.0, 2.0, -3.0, 4.0, 5.0]))
