"""Confidence intervals, CI targets, the sample size a target needs, and ``summarize``.

``summarize`` is the one call the CLI and the session engine make: PI type -> analysis scale ->
subsession analysis (see ``subsession`` for why its intervals are honest under autocorrelation) ->
Student-t interval over the subsession means -> back to the PI's scale -> how many raw samples
the target width needs. When the data cannot support an interval it returns one without CI
fields and says why in ``warnings``, instead of printing a number that would mislead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, computed_field

from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.stats import pi as pi_types
from pilot_sys.stats import subsession
from pilot_sys.stats.pi import PIType

DEFAULT_CONFIDENCE = 0.95
DEFAULT_TARGET_PERCENT = 10.0  # the Pilot paper (§IV): the desired CI width is 10% of the mean
NO_INTERVAL = "no confidence interval: "  # the start of the warning that says why there is none
NEAR_UNIT_ROOT = 0.99  # lag-1 above this: a trend or random walk, no sample size will do


@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided interval ``[low, high]`` around ``mean`` at confidence ``level``."""

    mean: float
    low: float
    high: float
    dof: float
    level: float
    std_error: float
    width: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", self.high - self.low)


def t_quantile(confidence: float, dof: float) -> float:
    """Two-sided Student-t quantile: P(|T| <= value) = confidence."""
    from scipy.special import stdtrit  # scipy.special, not scipy.stats: a bad-input exit stays fast

    return float(stdtrit(dof, 0.5 + confidence / 2.0))


def t_half_width(
    variance: np.ndarray | float, count: np.ndarray | int, confidence: float = DEFAULT_CONFIDENCE
) -> np.ndarray:
    """Half-width t_{count-1} sqrt(variance / count), vectorised (the benchmark runs thousands at
    once)."""
    from scipy.special import stdtrit

    count = np.asarray(count)
    return stdtrit(count - 1, 0.5 + confidence / 2.0) * np.sqrt(np.asarray(variance) / count)


def t_interval(
    mean: float, variance: float, count: int, confidence: float = DEFAULT_CONFIDENCE
) -> ConfidenceInterval:
    """CI of a mean of ``count`` independent values with sample variance ``variance``
    (dof = count - 1)."""
    if count < 2:
        raise InsufficientData(
            "samples", f"a t-interval needs at least 2 independent values, got {count}"
        )
    se = math.sqrt(variance / count)
    half = t_quantile(confidence, count - 1) * se
    return ConfidenceInterval(
        mean=mean, low=mean - half, high=mean + half, dof=count - 1, level=confidence, std_error=se
    )


def wilson_half_width(p: float, n_eff: float, quantile: float) -> tuple[float, float]:
    """Centre and half-width of the Wilson score interval for a proportion p from n_eff trials.

    Wilson rather than Wald: it stays inside [0, 1] and has a non-zero width at p = 0 or 1, where
    the Wald interval collapses to a point.
    """
    z2 = quantile * quantile
    denom = 1.0 + z2 / n_eff
    centre = (p + z2 / (2.0 * n_eff)) / denom
    half = quantile / denom * math.sqrt(p * (1.0 - p) / n_eff + z2 / (4.0 * n_eff * n_eff))
    return centre, half


def required_count(
    variance: float, target_width: float, confidence: float, min_count: int = 2
) -> int:
    """Smallest k >= min_count with 2 t_{k-1} sqrt(variance / k) <= target_width.

    The width decreases in k, so bisection between min_count and the bound from t_{min_count-1}
    finds it exactly.
    """
    if target_width <= 0:
        raise BadInput("target", f"the CI target width must be > 0, got {target_width:g}")
    if variance <= 0:
        return min_count

    def width(k: int) -> float:
        return 2.0 * t_quantile(confidence, k - 1) * math.sqrt(variance / k)

    lo = max(min_count, 2)
    if width(lo) <= target_width:
        return lo
    hi = max(
        lo + 1, math.ceil((2.0 * t_quantile(confidence, lo - 1)) ** 2 * variance / target_width**2)
    )
    while hi - lo > 1:  # width(lo) > target >= width(hi)
        mid = (lo + hi) // 2
        if width(mid) <= target_width:
            hi = mid
        else:
            lo = mid
    return hi


class CITarget(BaseModel):
    """The CI width to reach: an absolute width, or a percentage of the mean (default 10%)."""

    model_config = ConfigDict(frozen=True)

    percent: float | None = Field(default=DEFAULT_TARGET_PERCENT, gt=0)
    absolute: float | None = Field(default=None, gt=0)

    def width(self, mean: float) -> float:
        """Full width (high - low) the interval must not exceed."""
        if self.absolute is not None:
            return self.absolute
        return abs(mean) * (self.percent or DEFAULT_TARGET_PERCENT) / 100.0

    def describe(self) -> str:
        return (
            f"{self.absolute:g}" if self.absolute is not None else f"{self.percent:g}% of the mean"
        )


class Summary(BaseModel):
    """Everything a user needs to trust (or distrust) one mean; the JSON fields of ``analyze``.

    ``mean`` is over the samples the interval uses (the tail that fills no subsession is left
    out); without an interval it is over all samples. ``subsession_variance`` is the variance of
    one subsession mean, so the mean's variance is subsession_variance / n_subsessions (on the
    analysis scale: reciprocals for harmonic PIs).
    """

    model_config = ConfigDict(frozen=True)

    pi_type: PIType
    confidence: float
    sample_size: int
    mean: float
    ci_low: float | None
    ci_high: float | None
    ci_width: float | None
    subsession_size: int | None
    n_subsessions: int | None
    subsession_variance: float | None
    autocorrelation: float | None  # bias-corrected lag-1 of the subsession means
    # Geyer's integrated autocorrelation time of the samples; None: too few samples to estimate
    autocorrelation_time: float | None
    effective_sample_size: float | None
    tail_dropped: int
    target_width: float
    target: str
    required_sample_size: int | None  # raw samples in total for the target width (scales with q)
    ci_reached: bool
    warnings: list[str] = Field(default_factory=list)

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def samples_still_needed(self) -> int | None:
        if self.required_sample_size is None:
            return None
        return max(0, self.required_sample_size - self.sample_size)


def _no_interval(
    samples: np.ndarray,
    values: np.ndarray,
    pi_type: PIType,
    confidence: float,
    target: CITarget,
    limit: float,
    min_subsessions: int,
    reason: str,
) -> Summary:
    n = samples.size
    tau, _ = subsession.integrated_autocorrelation_time(values)
    phi = float(subsession.corrected_lag1(values))
    mean = pi_types.point_estimate(samples, pi_type)
    warnings = [f"{NO_INTERVAL}{reason}"]
    required: int | None = None
    if phi >= NEAR_UNIT_ROOT:
        warnings.append(
            f"the samples trend or wander (lag-1 autocorrelation {phi:.3f}): there is no stable "
            "mean to estimate; remove the warm-up or trend (`pilot-sys analyze --warmup`, "
            "`pilot-sys changepoints`) or check the measurement"
        )
    else:
        required = min_subsessions * subsession.ar1_min_subsession_size(phi, limit)
        # and enough effective samples under AR(1): n (1 - phi) / (1 + phi) >= the minimum
        if phi > 0:
            required = max(
                required, math.ceil(subsession.MIN_EFFECTIVE_SAMPLES * (1 + phi) / (1 - phi))
            )
        required = max(required, n + 1)
        warnings.append(
            f"about {required} samples are needed for one "
            f"(an AR(1)-based estimate, lag-1 {phi:.2f})"
        )
    return _without_interval(
        pi_type, confidence, n, mean, target, required, warnings, autocorrelation_time=float(tau)
    )


def too_few_for_interval(
    samples: np.ndarray,
    pi_type: PIType = PIType.ARITHMETIC,
    confidence: float = DEFAULT_CONFIDENCE,
    target: CITarget | None = None,
    min_subsessions: int = subsession.MIN_SUBSESSIONS,
) -> Summary:
    """The mean of fewer than ``min_subsessions`` samples, without an interval and with why.

    The answer for a series too short for ``summarize``: what can be said (the mean, how many
    samples an interval needs at the least) and nothing estimated from too few samples (their
    autocorrelation is left unknown)."""
    target = target or CITarget()
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        raise InsufficientData("samples", "no samples")
    pi_types.validate(x, pi_type)
    mean = pi_types.point_estimate(x, pi_type)
    reason = (
        f"{NO_INTERVAL}{x.size} sample(s); at least {min_subsessions} are needed for a "
        "confidence interval"
    )
    return _without_interval(
        pi_type, confidence, int(x.size), mean, target, min_subsessions, [reason]
    )


def _without_interval(
    pi_type: PIType,
    confidence: float,
    n: int,
    mean: float,
    target: CITarget,
    required: int | None,
    warnings: list[str],
    autocorrelation_time: float | None = None,
) -> Summary:
    """A summary that gives the mean and why there is no interval (nothing else estimated)."""
    return Summary(
        pi_type=pi_type,
        confidence=confidence,
        sample_size=n,
        mean=mean,
        ci_low=None,
        ci_high=None,
        ci_width=None,
        subsession_size=None,
        n_subsessions=None,
        subsession_variance=None,
        autocorrelation=None,
        autocorrelation_time=autocorrelation_time,
        effective_sample_size=(
            n / autocorrelation_time if autocorrelation_time is not None else None
        ),
        tail_dropped=0,
        target_width=target.width(mean),
        target=target.describe(),
        required_sample_size=required,
        ci_reached=False,
        warnings=warnings,
    )


def summarize(
    samples: np.ndarray,
    pi_type: PIType = PIType.ARITHMETIC,
    confidence: float = DEFAULT_CONFIDENCE,
    target: CITarget | None = None,
    autocorr_limit: float = subsession.DEFAULT_AUTOCORR_LIMIT,
    min_subsessions: int = subsession.MIN_SUBSESSIONS,
) -> Summary:
    """Mean, honest CI and required sample size of one series of samples (time order matters).

    Raises BadInput for samples the PI type cannot use and InsufficientData for fewer than
    ``min_subsessions`` samples; a series too correlated for an interval gets a Summary without one.
    """
    if not 0.0 < confidence < 1.0:
        raise BadInput("confidence", f"must be between 0 and 1 (exclusive), got {confidence:g}")
    if not 0.0 < autocorr_limit < 1.0:
        raise BadInput(
            "autocorr-limit", f"must be between 0 and 1 (exclusive), got {autocorr_limit:g}"
        )
    target = target or CITarget()
    samples = np.asarray(samples, dtype=np.float64).ravel()
    n = samples.size
    if n < min_subsessions:
        raise InsufficientData(
            "samples",
            f"{n} sample(s); at least {min_subsessions} are needed for a confidence interval",
        )
    pi_types.validate(samples, pi_type)
    values = pi_types.to_analysis_scale(samples, pi_type)
    try:
        sub = subsession.analyze(values, autocorr_limit, min_subsessions)
    except InsufficientData as exc:
        return _no_interval(
            samples,
            values,
            pi_type,
            confidence,
            target,
            autocorr_limit,
            min_subsessions,
            exc.problem,
        )

    k, q = sub.n_subsessions, sub.q
    quantile = t_quantile(confidence, k - 1)
    warnings: list[str] = []
    if np.ptp(values) == 0.0 and pi_type is not PIType.PROPORTION:
        warnings.append(
            "all samples are equal: the CI has zero width; "
            "check that the measurement resolves differences"
        )
    if pi_type is PIType.PROPORTION:
        p = sub.mean
        per_sample = sub.variance * q  # long-run variance of one 0/1 outcome
        design_effect = per_sample / (p * (1 - p)) if 0 < p < 1 else 1.0
        n_eff = k * q / design_effect
        centre, half = wilson_half_width(p, n_eff, quantile)
        low, high, mean = centre - half, centre + half, p
    else:
        half = float(t_half_width(sub.variance, k, confidence))
        low, high = pi_types.interval_from_analysis_scale(sub.mean - half, sub.mean + half, pi_type)
        mean = pi_types.from_analysis_scale(sub.mean, pi_type)
        if math.isinf(high):
            warnings.append(
                "the interval's upper end is unbounded: "
                "the rates are too variable for a harmonic mean CI"
            )
    width = high - low
    target_width = target.width(mean)
    required = _required_samples(sub, pi_type, mean, target_width, confidence, min_subsessions)
    reached = width <= target_width
    if not reached:
        warnings.append(
            f"CI width {width:.4g} is wider than the target {target_width:.4g} "
            f"({target.describe()}); about {max(required - n, 0)} more samples are needed"
        )
    return Summary(
        pi_type=pi_type,
        confidence=confidence,
        sample_size=n,
        mean=mean,
        ci_low=low,
        ci_high=high,
        ci_width=width,
        subsession_size=q,
        n_subsessions=k,
        subsession_variance=sub.variance,
        autocorrelation=sub.autocorrelation,
        autocorrelation_time=sub.autocorrelation_time,
        effective_sample_size=sub.effective_sample_size,
        tail_dropped=sub.tail_dropped,
        target_width=target_width,
        target=target.describe(),
        required_sample_size=required,
        ci_reached=reached,
        warnings=warnings,
    )


def analysis_scale_width(target_width: float, analysis_mean: float, pi_type: PIType) -> float:
    """The full width on the analysis scale that maps to ``target_width`` on the PI's scale.

    For rates, a width W on the rate scale around 1/m is a half-width h on the reciprocal scale
    around m with 1/(m-h) - 1/(m+h) = W, so h = (sqrt(1 + W^2 m^2) - 1) / W."""
    if pi_type is not PIType.HARMONIC:
        return target_width
    m = analysis_mean
    return 2.0 * (math.sqrt(1.0 + (target_width * m) ** 2) - 1.0) / target_width


def _required_samples(
    sub: subsession.SubsessionResult,
    pi_type: PIType,
    mean: float,
    target_width: float,
    confidence: float,
    min_subsessions: int,
) -> int:
    """Raw samples needed for the target width: required subsessions times the subsession size q."""
    if target_width <= 0:
        return sub.q * sub.n_subsessions
    if pi_type is PIType.HARMONIC:
        k = required_count(
            sub.variance,
            analysis_scale_width(target_width, sub.mean, pi_type),
            confidence,
            min_subsessions,
        )
    elif pi_type is PIType.PROPORTION:
        # Wilson width for n_eff trials, then back to raw samples through the design effect
        design_effect = sub.variance * sub.q / (mean * (1 - mean)) if 0 < mean < 1 else 1.0
        quantile = t_quantile(confidence, sub.n_subsessions - 1)
        lo, hi = 1, 2
        while 2.0 * wilson_half_width(mean, hi, quantile)[1] > target_width:
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if 2.0 * wilson_half_width(mean, mid, quantile)[1] <= target_width:
                hi = mid
            else:
                lo = mid
        raw = math.ceil(hi * design_effect)
        k = max(min_subsessions, math.ceil(raw / sub.q))
    else:
        k = required_count(sub.variance, target_width, confidence, min_subsessions)
    return k * sub.q
