"""The work-per-second (WPS) regression: duration = alpha + work / v.

The method of the Pilot paper (§III-A) and of Pilot's documentation on warm-up and cool-down
detection.

For workloads that give one duration per round and no unit readings: rounds of different work
amounts w take t = alpha + w / v seconds, where alpha is the net fixed cost of setup, warm-up
and cool-down and v the stable throughput. OLS over (w, t) estimates both.

* Correlated rounds (a cache that stays warm from one round to the next) are merged: adjacent
  rounds are averaged in groups of q (the averaged point obeys the same model, unlike a sum),
  with q the smallest size whose residuals have |lag-1 autocorrelation| <= the limit.
* The CI of v comes from Student's t with n - 2 degrees of freedom on the slope 1/v, mapped
  through 1/x (a fixed 2 x standard error, as the original Pilot tool uses, is too narrow for
  few rounds).
* The prediction error is the residual standard error relative to the mean duration: how far a
  round's duration typically falls from the line.
* Useful work amounts have a lower bound from alpha: a round whose fixed cost alpha is more than
  ``overhead_fraction`` of its duration mostly measures overhead. t >= alpha / f gives
  w >= v * alpha * (1 - f) / f. The default f = 0.1 keeps alpha at most a tenth of a round,
  the same tolerance as the default 10% CI target. Everything stays in seconds and work units,
  so alpha and the durations it is compared with are in the same unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.stats.ci import DEFAULT_CONFIDENCE, t_quantile
from pilot_sys.stats.line_fit import LineFit, line_fit
from pilot_sys.stats.subsession import DEFAULT_AUTOCORR_LIMIT, lag1_autocorrelation

DEFAULT_OVERHEAD_FRACTION = 0.1
MIN_POINTS = 3  # two parameters plus one degree of freedom for the error


@dataclass(frozen=True)
class WPSFit:
    """The fitted line t = alpha + w / v with CIs, merge size and the alpha-based work bound."""

    alpha: float  # seconds
    alpha_ci_low: float
    alpha_ci_high: float
    v: float  # work units per second
    v_low: float  # CI of v; inf when the slope's CI reaches 0
    v_high: float
    slope: float  # seconds per work unit, 1 / v
    slope_std_error: float
    dof: int
    confidence: float
    prediction_error: float  # residual standard error / mean duration
    residual_std: float  # seconds
    subsession_size: int  # rounds merged per point
    n_points: int  # points after merging
    autocorrelation: float  # lag-1 of the residuals at the chosen merge size
    min_useful_work: float  # work units; rounds below it are dominated by alpha
    overhead_fraction: float
    warnings: list[str] = field(default_factory=list)

    @property
    def v_ci_low(self) -> float:
        return self.v_low

    @property
    def v_ci_high(self) -> float:
        return self.v_high


def merge_rounds(values: np.ndarray, q: int) -> np.ndarray:
    """Average consecutive groups of q rounds, dropping the n mod q oldest (as subsession
    analysis does)."""
    k = values.size // q
    return values[values.size - k * q :].reshape(k, q).mean(axis=1)


def _ols(w: np.ndarray, t: np.ndarray) -> tuple[LineFit, np.ndarray]:
    res = line_fit(w, t)
    return res, t - (res.intercept + res.slope * w)


def min_useful_work(
    alpha: float, v: float, overhead_fraction: float = DEFAULT_OVERHEAD_FRACTION
) -> float:
    """Smallest work amount whose round spends at most ``overhead_fraction`` of its time on
    alpha."""
    if not 0.0 < overhead_fraction < 1.0:
        raise BadInput("overhead_fraction", f"must be between 0 and 1, got {overhead_fraction:g}")
    if alpha <= 0 or not math.isfinite(v) or v <= 0:
        return 0.0
    return v * alpha * (1.0 - overhead_fraction) / overhead_fraction


def fit(
    work: np.ndarray,
    seconds: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
    autocorr_limit: float = DEFAULT_AUTOCORR_LIMIT,
    overhead_fraction: float = DEFAULT_OVERHEAD_FRACTION,
) -> WPSFit:
    """Fit duration = alpha + work / v to rounds in the order they ran."""
    w = np.asarray(work, dtype=np.float64).ravel()
    t = np.asarray(seconds, dtype=np.float64).ravel()
    if w.size != t.size:
        raise BadInput("rounds", f"{w.size} work amounts but {t.size} durations")
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(t))):
        raise BadInput("rounds", "work amounts and durations must be finite numbers")
    if np.any(t <= 0):
        raise BadInput("rounds", "durations must be > 0 seconds")
    if w.size < MIN_POINTS:
        raise InsufficientData(
            "rounds", f"{w.size} round(s); the WPS regression needs at least {MIN_POINTS}"
        )
    if np.ptp(w) == 0:
        raise InsufficientData(
            "rounds", "all rounds have the same work amount; the regression needs different ones"
        )

    warnings: list[str] = []
    chosen: tuple[int, np.ndarray, np.ndarray, float] | None = None
    best: tuple[int, np.ndarray, np.ndarray, float] | None = None
    for q in range(1, w.size // MIN_POINTS + 1):
        wq, tq = merge_rounds(w, q), merge_rounds(t, q)
        if np.ptp(wq) == 0:
            continue
        _, resid = _ols(wq, tq)
        r = float(lag1_autocorrelation(resid)) if wq.size > 2 else 0.0
        if best is None or abs(r) < abs(best[3]):
            best = (q, wq, tq, r)
        if abs(r) <= autocorr_limit:
            chosen = (q, wq, tq, r)
            break
    if chosen is None:
        if best is None:
            raise InsufficientData("rounds", "no merge of rounds leaves different work amounts")
        chosen = best
        warnings.append(
            f"round residuals stay autocorrelated (best lag-1 {best[3]:+.2f} "
            f"at {best[0]} merged rounds, limit {autocorr_limit}); "
            "the CI of v may be too narrow: run more rounds"
        )
    q, wq, tq, r = chosen
    res, resid = _ols(wq, tq)
    dof = wq.size - 2
    tq_ = t_quantile(confidence, dof)
    slope, se = float(res.slope), float(res.stderr)
    s_low, s_high = slope - tq_ * se, slope + tq_ * se
    if slope <= 0:
        raise InsufficientData(
            "rounds", "durations do not grow with the work amount; no throughput can be fitted"
        )
    v = 1.0 / slope
    v_low = 1.0 / s_high
    v_high = 1.0 / s_low if s_low > 0 else math.inf
    if math.isinf(v_high):
        warnings.append(
            "the CI of the slope reaches 0: v has no finite upper bound yet; run more rounds"
        )
    alpha = float(res.intercept)
    a_half = tq_ * float(res.intercept_stderr)
    resid_std = float(np.sqrt(np.sum(resid**2) / dof)) if dof > 0 else 0.0
    return WPSFit(
        alpha=alpha,
        alpha_ci_low=alpha - a_half,
        alpha_ci_high=alpha + a_half,
        v=v,
        v_low=v_low,
        v_high=v_high,
        slope=slope,
        slope_std_error=se,
        dof=dof,
        confidence=confidence,
        prediction_error=resid_std / float(np.mean(tq)),
        residual_std=resid_std,
        subsession_size=q,
        n_points=int(wq.size),
        autocorrelation=r,
        min_useful_work=min_useful_work(alpha, v, overhead_fraction),
        overhead_fraction=overhead_fraction,
        warnings=warnings,
    )
