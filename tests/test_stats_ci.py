"""CIs, PI types, required sample sizes and summarize, against scipy/statsmodels and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.signal import lfilter
from statsmodels.stats.proportion import proportion_confint

from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.stats.ci import CITarget, required_count, summarize, t_interval, wilson_half_width
from pilot_sys.stats.pi import PIType


def test_t_interval_matches_scipy() -> None:
    ci = t_interval(10.0, 4.0, 16, 0.9)
    low, high = sps.t.interval(0.9, 15, loc=10.0, scale=0.5)
    assert (ci.low, ci.high, ci.dof, ci.std_error) == pytest.approx((low, high, 15, 0.5))
    assert ci.width == pytest.approx(high - low)


def test_required_count_hand_checked() -> None:
    # variance 1, width 1 at 95%: 2 t_{k-1} / sqrt(k) <= 1 first holds at k = 18 (t_17 = 2.1098)
    k = required_count(1.0, 1.0, 0.95)
    assert k == 18
    assert (
        2 * sps.t.ppf(0.975, k - 1) / math.sqrt(k)
        <= 1.0
        < 2 * sps.t.ppf(0.975, k - 2) / math.sqrt(k - 1)
    )
    assert required_count(0.0, 1.0, 0.95, 8) == 8


def test_wilson_matches_statsmodels() -> None:
    z = sps.norm.ppf(0.975)
    for k, n in [(30, 100), (0, 50), (50, 50)]:
        centre, half = wilson_half_width(k / n, n, z)
        assert (centre - half, centre + half) == pytest.approx(
            proportion_confint(k, n, 0.05, method="wilson"), abs=1e-12
        )


def test_iid_summary_is_close_to_the_naive_interval() -> None:
    x = np.random.default_rng(7).normal(50.0, 2.0, 4000)
    s = summarize(x)
    naive = sps.t.interval(0.95, x.size - 1, loc=x.mean(), scale=sps.sem(x))
    assert s.subsession_size is not None and s.subsession_size <= 2
    assert s.ci_low < 50.0 < s.ci_high  # type: ignore[operator]
    assert s.ci_width == pytest.approx(naive[1] - naive[0], rel=0.15)


def test_correlated_summary_is_wider_than_naive_and_required_scales_with_q() -> None:
    rng = np.random.default_rng(8)
    x = 100 + lfilter([1.0], [1.0, -0.8], rng.standard_normal(5000))
    s = summarize(x, target=CITarget(absolute=0.1))
    naive = 2 * sps.t.ppf(0.975, x.size - 1) * sps.sem(x)
    assert s.ci_width > 2 * naive  # the long-run sd is 3x the naive one at phi = 0.8
    assert not s.ci_reached
    q, k = s.subsession_size, s.n_subsessions
    assert q and k and q > 1
    k_req = required_count(s.subsession_variance, 0.1, 0.95, 8)  # type: ignore[arg-type]
    assert s.required_sample_size == k_req * q
    assert s.samples_still_needed == s.required_sample_size - 5000


def test_harmonic_mean_of_rates() -> None:
    # two units of equal work: at 1 and 3 units/s the average rate is 2 / (1 + 1/3) = 1.5
    rng = np.random.default_rng(9)
    rates = rng.choice([1.0, 3.0], size=2000)
    s = summarize(rates, pi_type=PIType.HARMONIC)
    assert s.mean == pytest.approx(1 / np.mean(1 / rates))
    recip = summarize(1 / rates)  # the interval is the reciprocal interval, endpoints swapped
    assert (s.ci_low, s.ci_high) == pytest.approx((1 / recip.ci_high, 1 / recip.ci_low))  # type: ignore[operator]
    with pytest.raises(BadInput, match="needs values > 0"):
        summarize(np.r_[rates, 0.0], pi_type=PIType.HARMONIC)


def test_proportion_iid_equals_wilson() -> None:
    x = (np.random.default_rng(10).random(1000) < 0.2).astype(float)
    s = summarize(x, pi_type=PIType.PROPORTION)
    assert s.mean == pytest.approx(x.mean())
    assert s.ci_low < x.mean() < s.ci_high  # type: ignore[operator]
    low, high = proportion_confint(int(x.sum()), x.size, 0.05, method="wilson")
    assert s.ci_width == pytest.approx(high - low, rel=0.2)
    with pytest.raises(BadInput, match="0/1"):
        summarize(np.r_[x, 0.5], pi_type=PIType.PROPORTION)


def test_no_interval_when_too_correlated() -> None:
    x = lfilter([1.0], [1.0, -0.95], np.random.default_rng(11).standard_normal(200))
    s = summarize(x)
    assert s.ci_low is s.ci_high is s.ci_width is None
    assert not s.ci_reached
    assert s.required_sample_size and s.required_sample_size > 200
    assert any("no confidence interval" in w for w in s.warnings)


def test_insufficient_and_bad_options() -> None:
    with pytest.raises(InsufficientData):
        summarize(np.arange(5.0))
    with pytest.raises(BadInput):
        summarize(np.arange(50.0), confidence=1.5)


@settings(max_examples=25, deadline=None)
@given(
    shift=st.floats(-1e6, 1e6),
    scale=st.floats(1e-3, 1e3),
    seed=st.integers(0, 2**32 - 1),
)
def test_ci_endpoints_are_shift_and_scale_equivariant(
    shift: float, scale: float, seed: int
) -> None:
    x = lfilter([1.0], [1.0, -0.5], np.random.default_rng(seed).standard_normal(800))
    base = summarize(x)
    moved = summarize(shift + scale * x)
    assert moved.subsession_size == base.subsession_size
    if base.ci_low is None:
        assert moved.ci_low is None
        return
    tol = 1e-7 * (abs(shift) + scale * (abs(base.ci_low) + abs(base.ci_high) + 1))
    assert moved.ci_low == pytest.approx(shift + scale * base.ci_low, abs=tol)
    assert moved.ci_high == pytest.approx(shift + scale * base.ci_high, abs=tol)


def test_trend_and_constant_series() -> None:
    trend = summarize(np.arange(1.0, 101.0))
    assert trend.ci_low is None and trend.required_sample_size is None
    assert any("trend" in w for w in trend.warnings)
    const = summarize(np.full(100, 3.0))
    assert (const.ci_low, const.ci_high) == (3.0, 3.0)
    assert any("all samples are equal" in w for w in const.warnings)
