"""Comparing two results with Welch's unequal-variance t-test (the Pilot paper, §III-F).

A result enters the test as three numbers (mean, variance of one independent value, count of
independent values), which for autocorrelated samples are the subsession mean, subsession
variance and subsession count; so an old result can be compared without its raw samples.

Differences from the Pilot paper's formulas: the Welch-Satterthwaite degrees of freedom are not
floored (flooring makes the test needlessly conservative, and scipy does not floor either), and
the additional samples needed are found for the allocation that minimises their total (Neyman:
counts proportional to the standard deviations), never reducing a side below what it has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import stdtr

from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.stats.ci import (
    DEFAULT_CONFIDENCE,
    CITarget,
    ConfidenceInterval,
    Summary,
    summarize,
    t_quantile,
)
from pilot_sys.stats.pi import PIType
from pilot_sys.stats.subsession import DEFAULT_AUTOCORR_LIMIT

DEFAULT_THRESHOLD = 0.01  # the Pilot paper (§III-F): "usually 0.01"
MAX_GROWTH = 1e6  # beyond a million-fold more data a difference is, for practical purposes, zero


@dataclass(frozen=True)
class SampleStats:
    """What Welch's test needs of one result: mean, variance of one independent value, their
    count."""

    mean: float
    variance: float
    count: int

    @classmethod
    def from_summary(cls, summary: Summary) -> SampleStats:
        """The subsession statistics of a summary, on the PI's own scale.

        For a harmonic PI the summary's variance is of reciprocals; the delta method maps it to
        the rate scale: Var(1/m) ~ Var(m) / m^4.
        """
        if summary.subsession_variance is None or summary.n_subsessions is None:
            raise InsufficientData(
                "result", "has no confidence interval (too few effective samples) to compare"
            )
        variance = summary.subsession_variance
        if summary.pi_type is PIType.HARMONIC:
            variance = variance * summary.mean**4  # mean is 1/m, so 1/m^4 = mean^4
        return cls(mean=summary.mean, variance=variance, count=summary.n_subsessions)


@dataclass(frozen=True)
class WelchResult:
    """Welch's t-test of A - B, the CI of the difference and what more data would decide it."""

    difference: float  # mean A - mean B
    t: float
    dof: float  # Welch-Satterthwaite, not floored
    p_value: float  # two-sided
    ci: ConfidenceInterval  # of the difference
    threshold: float
    # more independent values A needs for p < threshold (0: decided; None: never)
    additional_a: int | None
    additional_b: int | None

    @property
    def significant(self) -> bool:
        return self.p_value < self.threshold


def _welch_core(
    ma: float, va: float, na: float, mb: float, vb: float, nb: float
) -> tuple[float, float, float, float]:
    """(t, dof, p, standard error) of Welch's test; vectorisation is not needed at two groups."""
    sa, sb = va / na, vb / nb
    se = math.sqrt(sa + sb)
    if se == 0.0:
        same = ma == mb
        return (
            (0.0 if same else math.copysign(math.inf, ma - mb)),
            float(na + nb - 2),
            (1.0 if same else 0.0),
            0.0,
        )
    t = (ma - mb) / se
    dof = (sa + sb) ** 2 / (sa**2 / (na - 1) + sb**2 / (nb - 1))
    p = float(2.0 * stdtr(dof, -abs(t)))  # two-sided: 2 P(T <= -|t|)
    return t, dof, p, se


def _additional(a: SampleStats, b: SampleStats, threshold: float) -> tuple[int | None, int | None]:
    """Smallest extra counts (Neyman allocation, never below the current counts) giving
    p < threshold."""
    if a.mean == b.mean:
        return None, None
    sda, sdb = math.sqrt(a.variance), math.sqrt(b.variance)
    share_a = sda / (sda + sdb) if sda + sdb > 0 else 0.5

    def counts(total: int) -> tuple[int, int]:
        return max(a.count, math.ceil(total * share_a)), max(
            b.count, math.ceil(total * (1.0 - share_a))
        )

    def decided(total: int) -> bool:
        na, nb = counts(total)
        return _welch_core(a.mean, a.variance, na, b.mean, b.variance, nb)[2] < threshold

    lo = a.count + b.count
    if decided(lo):
        return 0, 0
    hi = 2 * lo
    while not decided(hi):
        if hi > MAX_GROWTH * lo:
            return None, None
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decided(mid) else (mid, hi)
    na, nb = counts(hi)
    return na - a.count, nb - b.count


def welch(
    a: SampleStats,
    b: SampleStats,
    confidence: float = DEFAULT_CONFIDENCE,
    threshold: float = DEFAULT_THRESHOLD,
) -> WelchResult:
    """Welch's t-test of A against B with the CI of A - B at ``confidence``."""
    if a.count < 2 or b.count < 2:
        raise InsufficientData(
            "result", "Welch's test needs at least 2 independent values on each side"
        )
    if not 0.0 < threshold < 1.0:
        raise BadInput("threshold", f"must be between 0 and 1, got {threshold:g}")
    t, dof, p, se = _welch_core(a.mean, a.variance, a.count, b.mean, b.variance, b.count)
    diff = a.mean - b.mean
    half = t_quantile(confidence, dof) * se
    ci = ConfidenceInterval(
        mean=diff, low=diff - half, high=diff + half, dof=dof, level=confidence, std_error=se
    )
    more_a, more_b = _additional(a, b, threshold)
    return WelchResult(
        difference=diff,
        t=t,
        dof=dof,
        p_value=p,
        ci=ci,
        threshold=threshold,
        additional_a=more_a,
        additional_b=more_b,
    )


Verdict = Literal["a_higher", "a_lower", "undecided"]


@dataclass(frozen=True)
class Comparison:
    """Two series compared: their summaries, Welch's test, the verdict and samples still needed."""

    a: Summary
    b: Summary
    welch: WelchResult
    verdict: Verdict
    relative_difference: float | None  # (A - B) / B
    additional_samples_a: int | None  # raw samples (subsessions times subsession size)
    additional_samples_b: int | None


def compare_samples(
    a: np.ndarray,
    b: np.ndarray,
    pi_type: PIType = PIType.ARITHMETIC,
    confidence: float = DEFAULT_CONFIDENCE,
    threshold: float = DEFAULT_THRESHOLD,
    autocorr_limit: float = DEFAULT_AUTOCORR_LIMIT,
    target: CITarget | None = None,
) -> Comparison:
    """Summarise two series (each in time order) and compare their means with Welch's test.

    InsufficientData names "A" or "B" when one side has no interval to compare.
    """
    summaries = []
    for name, samples in (("A", a), ("B", b)):
        try:
            summaries.append(
                summarize(
                    samples,
                    pi_type=pi_type,
                    confidence=confidence,
                    target=target,
                    autocorr_limit=autocorr_limit,
                )
            )
        except BadInput as exc:
            raise type(exc)(name, exc.problem) from None
    sa, sb = summaries
    for name, s in (("A", sa), ("B", sb)):
        if not s.has_interval:
            raise InsufficientData(name, "; ".join(s.warnings))
    result = welch(
        SampleStats.from_summary(sa), SampleStats.from_summary(sb), confidence, threshold
    )
    verdict: Verdict = "undecided"
    if result.significant:
        verdict = "a_higher" if result.difference > 0 else "a_lower"

    def raw(extra: int | None, s: Summary) -> int | None:
        return None if extra is None else extra * (s.subsession_size or 1)

    rel = result.difference / sb.mean if sb.mean != 0 else None
    return Comparison(
        a=sa,
        b=sb,
        welch=result,
        verdict=verdict,
        relative_difference=rel,
        additional_samples_a=raw(result.additional_a, sa),
        additional_samples_b=raw(result.additional_b, sb),
    )
