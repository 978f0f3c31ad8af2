"""Welch's test against scipy and a hand-computed case; the additional-samples search."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from scipy.signal import lfilter

from pilot_sys.errors import InsufficientData
from pilot_sys.stats.compare import SampleStats, _welch_core, compare_samples, welch
from pilot_sys.stats.pi import PIType


def stats_of(x: np.ndarray) -> SampleStats:
    return SampleStats(mean=float(x.mean()), variance=float(x.var(ddof=1)), count=x.size)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_scipy_welch(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(10, 1, 30), rng.normal(10.5, 3, 12)
    ours = welch(stats_of(a), stats_of(b), confidence=0.9)
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert ours.t == pytest.approx(ref.statistic)
    assert ours.p_value == pytest.approx(ref.pvalue)
    assert ours.dof == pytest.approx(ref.df)
    low, high = ref.confidence_interval(0.9)
    assert (ours.ci.low, ours.ci.high) == pytest.approx((low, high))


def test_hand_computed_case() -> None:
    # A: mean 10, var 4, n 5; B: mean 7, var 9, n 10. se^2 = 0.8 + 0.9 = 1.7
    r = welch(SampleStats(10, 4, 5), SampleStats(7, 9, 10))
    assert r.t == pytest.approx(3 / math.sqrt(1.7))
    # dof = 1.7^2 / (0.8^2/4 + 0.9^2/9) = 2.89 / (0.16 + 0.09) = 11.56
    assert r.dof == pytest.approx(11.56)
    assert r.p_value == pytest.approx(2 * sps.t.sf(3 / math.sqrt(1.7), r.dof))


def test_additional_samples_are_the_fewest_that_decide() -> None:
    a, b = SampleStats(10.0, 4.0, 10), SampleStats(10.8, 9.0, 10)
    r = welch(a, b, threshold=0.01)
    assert not r.significant and r.additional_a and r.additional_b
    na, nb = a.count + r.additional_a, b.count + r.additional_b
    assert _welch_core(a.mean, a.variance, na, b.mean, b.variance, nb)[2] < 0.01
    # Neyman allocation: counts in the ratio of the standard deviations (2 : 3)
    assert na / nb == pytest.approx(2 / 3, rel=0.02)
    # one fewer in total is not enough
    assert _welch_core(a.mean, a.variance, na - 1, b.mean, b.variance, nb - 1)[2] >= 0.01
    decided = welch(SampleStats(10, 1, 100), SampleStats(12, 1, 100))
    assert decided.significant and decided.additional_a == 0 == decided.additional_b
    equal = welch(SampleStats(5, 1, 20), SampleStats(5, 1, 20))
    assert equal.p_value == pytest.approx(1.0) and equal.additional_a is None


def test_compare_samples_on_correlated_series() -> None:
    rng = np.random.default_rng(3)
    a = 100 + lfilter([1.0], [1.0, -0.6], rng.standard_normal(3000))
    b = 101 + lfilter([1.0], [1.0, -0.6], rng.standard_normal(3000))
    c = compare_samples(a, b)
    assert c.verdict == "a_lower"
    assert c.welch.ci.low < -1.0 < c.welch.ci.high
    assert c.welch.dof < 2 * 3000 / (
        c.a.subsession_size or 1
    )  # counts are subsessions, not raw samples
    same = compare_samples(a, a + 0.001)
    assert same.verdict == "undecided"
    assert same.additional_samples_a is not None
    assert (
        same.additional_samples_a % (same.a.subsession_size or 1) == 0
    )  # raw samples = subsessions x q


def test_compare_harmonic_uses_rates() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.uniform(90, 110, 2000), rng.uniform(80, 100, 2000)
    c = compare_samples(a, b, pi_type=PIType.HARMONIC)
    assert c.a.mean == pytest.approx(1 / np.mean(1 / a))
    assert c.verdict == "a_higher"
    assert c.welch.difference == pytest.approx(c.a.mean - c.b.mean)


def test_compare_refuses_without_interval() -> None:
    rng = np.random.default_rng(5)
    with pytest.raises(InsufficientData) as err:
        compare_samples(rng.normal(size=500), lfilter([1.0], [1.0, -0.97], rng.normal(size=300)))
    assert err.value.where == "B"
