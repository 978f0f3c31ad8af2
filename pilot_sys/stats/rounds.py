"""Unit readings from many rounds: when are the rounds one stream, and when is each round one
sample?

Why
---
A session pools the kept unit readings of all its rounds and runs subsession analysis on them
(``ci.summarize``). That is right when every round measures the same level and only the noise
within a round matters. Real rounds differ: on a VM each round of a write test lands on a
different host state, so its level moves, and the between-round variance can be many times what
the readings inside a round predict. Then the pooled interval is too narrow: its subsessions are
shorter than a round, so they see within-round noise only, and the lag-1 check on subsession
means does not notice. On simulated sessions with a round effect, pooled intervals cover well
below their nominal level (benchmarks/results/session.md).

What
----
The rounds are the replicates: their means are independent draws of "what this round got",
whatever the correlation inside a round. So the variance of the session mean is estimated from
the spread of the round means (Cochran's ratio estimator, which weights rounds by their kept
readings, so it matches the pooled mean), with R - 1 degrees of freedom:

    M = sum(n_r m_r) / N,   Var(M) ~ R / (R - 1) * sum((n_r / N)^2 (m_r - M)^2)

This is what one sample per round would give, with each round's non-stable phases removed first.
It is used when

* the pooled analysis reports no interval (the rounds disagree so much that no subsession size
  passes the lag-1 check), or
* the rounds disagree more than the pooled interval allows: an F test of the round-level
  variance against the pooled one, at a deliberately liberal level (``HETEROGENEITY_LEVEL`` =
  0.25: the cost of a wrong switch is a wider interval, the cost of a missed one is false
  precision). After a switch the variance is the larger of the two estimates.

and only with at least ``MIN_ROUNDS`` (8) rounds and 50 effective unit readings (the same rules
as subsessions: a round is a natural subsession). A trend across round means (linear regression
on the round index, p < ``TREND_LEVEL``) means there is no stable level to estimate: no
interval. Rounds are not always independent either: consecutive round means of a write test on
a VM can be clearly correlated (the host's state changes over seconds). So the variance is
multiplied by the AR(1) factor (1 + r) / (1 - r) at the bias-corrected lag-1 r of the round
means when r > 0, and r >= ``WANDER_LAG1`` gives no interval.

A drifting or wandering session still averaged *something*: the interval over its round means
(their spread, trend included, without the lag-1 correction, since the trend is what correlates
them) is returned beside the refusal (``RoundsSummary.drifting``), so that a report can state
the session's average over a drifting level, labelled as such, rather than nothing.

``benchmarks/session_oracle.py --scenario units-rounds`` measures coverage and time on simulated
sessions with a round effect.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pilot_sys.stats import ci, subsession
from pilot_sys.stats import pi as pi_types
from pilot_sys.stats.line_fit import line_fit
from pilot_sys.stats.pi import PIType

HETEROGENEITY_LEVEL = 0.25  # F-test p below this: the rounds differ more than their readings say
TREND_LEVEL = 0.01  # slope of the round means over the round index significant at this: drift
WANDER_LAG1 = (
    0.9  # bias-corrected lag-1 of round means at or above this: a random walk, not a level
)
MIN_ROUNDS = subsession.MIN_SUBSESSIONS

Basis = Literal["samples", "rounds"]

DRIFT = "the round means drift"
WANDER = "consecutive round means are strongly correlated"


@dataclass(frozen=True)
class RoundLevel:
    """The round means' view of the session mean, on the analysis scale (reciprocals for rates)."""

    mean: float  # readings-weighted mean of the round means = the pooled mean
    variance: float  # of ``mean``
    rounds: int
    samples: int
    round_means: np.ndarray
    effective_samples: float  # within-round AR(1) count of the unit readings


@dataclass(frozen=True)
class RoundsSummary:
    """A ``ci.Summary`` plus which samples its interval rests on and why."""

    summary: ci.Summary
    basis: Basis
    heterogeneity_p: float | None  # F test of round-level against pooled variance (None: not run)
    # the round means drift or wander, so ``summary`` has no interval; this is the interval over
    # round means all the same: the session's average over a drifting level, not a stable one
    drifting: ci.Summary | None = None


def round_level(groups: Sequence[np.ndarray]) -> RoundLevel:
    """Cochran's ratio estimator over rounds (``groups``: each round's values, analysis scale)."""
    return _round_level(np.concatenate(groups), np.array([g.size for g in groups], dtype=np.int64))


def _round_level(x: np.ndarray, sizes: np.ndarray) -> RoundLevel:
    """``round_level`` of the rounds laid end to end in ``x``, ``sizes`` readings each."""
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    totals = np.add.reduceat(x, starts)
    n_total = float(x.size)
    means = totals / sizes
    mean = float(totals.sum() / n_total)
    r = sizes.size
    weights = sizes / n_total
    variance = float(r / (r - 1) * np.sum(weights**2 * (means - mean) ** 2)) if r > 1 else math.inf
    # lag-1 inside rounds only (each round centred on its own mean): the round effect is not noise
    d = x - np.repeat(means, sizes)
    products = d[:-1] * d[1:]
    products[starts[1:] - 1] = 0.0  # pairs that straddle two rounds
    den = float(np.dot(d, d))
    raw = float(products.sum()) / den if den > 0 else 0.0
    phi = float(subsession.bias_corrected_lag1(raw, max(int(n_total / r), 2)))
    return RoundLevel(
        mean=mean,
        variance=variance,
        rounds=r,
        samples=int(n_total),
        round_means=means,
        effective_samples=float(subsession.ar1_effective_size(int(n_total), phi)),
    )


def refusal(warnings: list[str]) -> str | None:
    """Why the rounds gave no interval (they drift or wander), from a summary's warnings."""
    for w in reversed(warnings):
        if w.startswith((ci.NO_INTERVAL + DRIFT, ci.NO_INTERVAL + WANDER)):
            return w.removeprefix(ci.NO_INTERVAL).split(":")[0]
    return None


def heterogeneity_p(level: RoundLevel, pooled: ci.Summary) -> float | None:
    """P(F >= observed) for round-level over pooled variance of the mean (None without a pooled
    interval)."""
    from scipy.special import fdtrc  # the survival function of F, without importing scipy.stats

    if pooled.subsession_variance is None or not pooled.n_subsessions or pooled.n_subsessions < 2:
        return None
    pooled_var = pooled.subsession_variance / pooled.n_subsessions
    if pooled_var <= 0:
        return 0.0 if level.variance > 0 else 1.0
    return float(fdtrc(level.rounds - 1, pooled.n_subsessions - 1, level.variance / pooled_var))


def trend_p(round_means: np.ndarray) -> float:
    """Two-sided p of a linear trend of the round means over the round index.

    Least squares (``line_fit``), with the slope's standard error and degrees of freedom
    corrected for lag-1 correlated residuals (effective size n (1 - r) / (1 + r) at the
    bias-corrected lag-1 r of the residuals, r >= 0; Santer et al. 2000): round means that merely
    wander, as they do on a VM (lag-1 around 0.2-0.5), would otherwise be called a drift several
    times as often as the 1% level says."""
    from scipy.special import stdtr

    n = round_means.size
    if np.ptp(round_means) == 0.0 or n < 4:
        return 1.0
    index = np.arange(n, dtype=np.float64)
    fit = line_fit(index, round_means)
    residuals = round_means - (fit.intercept + fit.slope * index)
    r = max(0.0, float(subsession.corrected_lag1(residuals)))
    effective = n * (1.0 - r) / (1.0 + r) if r < 1.0 else 0.0
    if effective <= 3.0:
        return 1.0  # too few independent rounds to call anything a trend
    if fit.stderr == 0.0:
        return 0.0
    # the slope's variance scales as 1 / (n - 2): rescale it to the effective count
    stderr = fit.stderr * math.sqrt((n - 2) / (effective - 2))
    t = abs(fit.slope) / stderr
    return float(2.0 * stdtr(effective - 2, -t))


def summarize_rounds(
    groups: Sequence[np.ndarray],
    pi_type: PIType = PIType.ARITHMETIC,
    confidence: float = ci.DEFAULT_CONFIDENCE,
    target: ci.CITarget | None = None,
    autocorr_limit: float = subsession.DEFAULT_AUTOCORR_LIMIT,
) -> RoundsSummary:
    """Mean and honest CI of unit readings kept from several rounds (time order within and across).

    Raises like ``ci.summarize`` (BadInput, InsufficientData for fewer than 8 readings in all)."""
    target = target or ci.CITarget()
    groups = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    sizes = np.array([g.size for g in groups if g.size], dtype=np.int64)
    samples = np.concatenate(groups) if groups else np.empty(0)
    pooled = ci.summarize(samples, pi_type, confidence, target, autocorr_limit)
    if sizes.size < MIN_ROUNDS or pi_type is PIType.PROPORTION:
        return RoundsSummary(pooled, "samples", None)
    level = _round_level(pi_types.to_analysis_scale(samples, pi_type), sizes)
    if level.effective_samples < subsession.MIN_EFFECTIVE_SAMPLES:
        return RoundsSummary(pooled, "samples", None)
    p = heterogeneity_p(level, pooled)
    if p is not None and p >= HETEROGENEITY_LEVEL:
        return RoundsSummary(pooled, "samples", p)
    variance = level.variance
    if p is not None:
        assert pooled.subsession_variance is not None and pooled.n_subsessions
        variance = max(variance, pooled.subsession_variance / pooled.n_subsessions)
        why = (
            f"the rounds differ more than the readings within them (F test p = {p:.2g}): "
            f"the interval is over {level.rounds} round means"
        )
    else:
        why = (
            f"the readings pooled across rounds give no interval (the rounds differ): "
            f"the interval is over {level.rounds} round means"
        )
    trend = trend_p(level.round_means)
    lag1 = float(subsession.corrected_lag1(level.round_means))
    refused = None
    if trend < TREND_LEVEL:
        refused = (
            f"{DRIFT} (linear trend p = {trend:.2g}): there is no stable level to estimate yet"
        )
    elif lag1 >= WANDER_LAG1:
        refused = f"{WANDER} (lag-1 {lag1:.2f}): the level wanders"
    if refused is not None:
        # the spread of the round means, trend included, without the lag-1 correction (the
        # trend is what correlates them): the range of levels this session's rounds averaged
        spread = why + (
            "; the round means drift, so this is the session's average over a drifting level"
        )
        drifting = _over_rounds(level, variance, 0.0, pooled, pi_type, confidence, target, spread)
        return RoundsSummary(_without_interval(pooled, refused), "rounds", p, drifting)
    if lag1 > 0:
        inflation = (1 + lag1) / (1 - lag1)
        variance *= inflation
        why += (
            f"; consecutive rounds are correlated (lag-1 {lag1:.2f}), "
            f"so the variance is {inflation:.2f}x the independent one"
        )
    return RoundsSummary(
        _over_rounds(level, variance, lag1, pooled, pi_type, confidence, target, why), "rounds", p
    )


def _without_interval(pooled: ci.Summary, reason: str) -> ci.Summary:
    return pooled.model_copy(
        update={
            "ci_low": None,
            "ci_high": None,
            "ci_width": None,
            "subsession_size": None,
            "n_subsessions": None,
            "subsession_variance": None,
            "autocorrelation": None,
            "ci_reached": False,
            "warnings": [*pooled.warnings, ci.NO_INTERVAL + reason],
            "required_sample_size": None,  # more samples of a moving level do not make an interval
        }
    )


def _over_rounds(
    level: RoundLevel,
    variance: float,
    lag1: float,
    pooled: ci.Summary,
    pi_type: PIType,
    confidence: float,
    target: ci.CITarget,
    why: str,
) -> ci.Summary:
    r = level.rounds
    half = ci.t_quantile(confidence, r - 1) * math.sqrt(variance)
    low, high = pi_types.interval_from_analysis_scale(level.mean - half, level.mean + half, pi_type)
    mean = pi_types.from_analysis_scale(level.mean, pi_type)
    width = high - low
    target_width = target.width(mean)
    per_round = variance * r  # variance of one (average-sized) round's mean
    if target_width > 0:
        analysis_width = ci.analysis_scale_width(target_width, level.mean, pi_type)
        rounds_needed = ci.required_count(per_round, analysis_width, confidence, MIN_ROUNDS)
    else:
        rounds_needed = r
    required = math.ceil(rounds_needed * level.samples / r)
    reached = width <= target_width
    warnings = [
        w for w in pooled.warnings if not w.startswith((ci.NO_INTERVAL, "about ", "CI width"))
    ]
    warnings.append(why)
    if not reached:
        warnings.append(
            f"CI width {width:.4g} is wider than the target {target_width:.4g} "
            f"({target.describe()}); about {max(rounds_needed - r, 1)} more rounds are needed"
        )
    return pooled.model_copy(
        update={
            "mean": mean,
            "ci_low": low,
            "ci_high": high,
            "ci_width": width,
            "subsession_size": round(level.samples / r),
            "n_subsessions": r,
            "subsession_variance": per_round,
            "autocorrelation": lag1,
            "effective_sample_size": level.effective_samples,
            "tail_dropped": 0,
            "target_width": target_width,
            "required_sample_size": required,
            "ci_reached": reached,
            "warnings": warnings,
        }
    )
