"""Dual-gate steady-state detection and the three-regime report for per-iteration latencies.

A run is three regimes glued together: a cold tail (page faults, frequency ramp, JIT), a warm-up
transient, and the steady state the reader cares about. Averaging them gives a number that is
neither. The detector (seed 003) cuts the time-ordered latencies into windows and declares the
steady state to start at the first window of ``history`` consecutive windows whose median
(throughput gate) AND tail percentile (p99.9 gate) both stay put: the median settles first,
the tail only once the rare slow paths have warmed too, so both are required.

Defaults and why:

* ``history = 5`` consecutive windows, median drift <= 2% and p99.9 drift <= 10% of their mean
  (the seed's values, JMH-like): tight enough to catch JIT/cache settling in the body, loose
  enough for a tail that is always noisier than the body.
* Drift is also allowed up to what sampling noise alone produces: a gate passes when the range
  of its ``history`` window statistics is within ``max(tolerance * mean, 4 * SE)``, SE being the
  root-mean-square standard error of that statistic within the windows, estimated without
  assuming a distribution from the order statistics bracketing it. (Four SEs bound the range of
  five independent estimates about 97% of the time.) Without this, a stationary but noisy series
  is "never steady" merely because its windows are small.
* Window size from the data when not given: a p99.9 means something only with about
  ``tail_samples = 10`` readings above it, i.e. 10,000 per window; windows are that long when
  the run allows at least ``2 * history`` windows, otherwise shorter (n / (2 * history), at
  least 20), and then the tail gate uses the highest percentile that still has 10 readings
  above it per window (``tail_quantile`` in the result says which one was used).

Three-regime report: ``warmup_iterations`` (= steady_state_start), ``time_to_steady_state``
(seconds from timestamps when given, else the sum of the warm-up latencies converted with
``seconds_per_unit``), ``cold_start_cost`` (sum of the latencies of the iterations before the
steady state, in the latencies' unit), ``cold_start_excess`` (the same minus what those
iterations would have cost at the steady-state median: the price of being cold) and the
steady-state distribution with exact percentiles (numpy, linear interpolation).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.errors import InsufficientData
from pilot_sys.stats.settle import DEFAULT_MIN_STEADY, DEFAULT_TOLERANCE, MIN_READINGS, settle

Method = Literal["model", "segments", "dual-gate"]
DEFAULT_METHOD: Method = "model"
DEFAULT_HISTORY = 5
DEFAULT_MEDIAN_TOLERANCE = 0.02
DEFAULT_TAIL_TOLERANCE = 0.10
DEFAULT_TAIL_QUANTILE = 0.999
DEFAULT_TAIL_SAMPLES = 10
MIN_WINDOW = 20
NOISE_RANGE = 4.0


class SteadyDistribution(BaseModel):
    """Latency distribution of the steady state (exact percentiles of the readings)."""

    model_config = ConfigDict(frozen=True)

    n: int
    mean: float
    median: float
    p99: float
    p999: float
    max: float


class SteadyState(BaseModel):
    """Where the steady state starts, why, and what the cold start and the steady state cost."""

    model_config = ConfigDict(frozen=True)

    n: int
    steady_state_start: int | None = Field(
        description="0-based index of the first steady iteration"
    )
    steady_state_end: int | None = Field(
        default=None,
        description="0-based index after the last steady iteration (n unless the steady state "
        "changed later)",
    )
    later_changes: list[str] = Field(
        default_factory=list,
        description="changes of the steady state after its end, in words (model method)",
    )
    reason: str
    warmup_iterations: int | None
    time_to_steady_state: float | None = Field(
        description="seconds until the steady state starts; None when neither timestamps nor "
        "the latencies' unit give seconds"
    )
    cold_start_cost: float = Field(
        description="sum of latencies before the steady state (all, if never reached)"
    )
    cold_start_excess: float | None = Field(
        description="cold_start_cost minus warm-up iterations at steady median"
    )
    steady: SteadyDistribution | None
    raw: SteadyDistribution
    method: Method = "model"
    too_short: bool = Field(
        default=False, description="too few readings for the method to show a steady state"
    )
    # segments method
    changepoints: list[int] | None = Field(default=None, description="segment starts (segments)")
    tolerance: float | None = Field(default=None, description="level difference that counts")
    # dual-gate method
    window: int | None = None
    history: int | None = None
    median_tolerance: float | None = None
    tail_tolerance: float | None = None
    tail_quantile: float | None = Field(
        default=None, description="percentile of the tail gate (0.999 unless windows are short)"
    )


def choose_window(
    n: int, history: int = DEFAULT_HISTORY, tail_samples: int = DEFAULT_TAIL_SAMPLES
) -> int:
    """Window length from the data: 10 readings above p99.9 if the run allows, else
    n / (2 history)."""
    ideal = math.ceil(tail_samples / (1.0 - DEFAULT_TAIL_QUANTILE))
    return max(MIN_WINDOW, min(ideal, n // (2 * history)))


def tail_quantile_for(window: int, tail_samples: int = DEFAULT_TAIL_SAMPLES) -> float:
    """The highest percentile (at most p99.9) with ``tail_samples`` readings above it per window."""
    return min(DEFAULT_TAIL_QUANTILE, 1.0 - tail_samples / window)


def _distribution(values: np.ndarray) -> SteadyDistribution:
    p50, p99, p999 = np.percentile(values, [50.0, 99.0, 99.9])
    # the mean in a scaled space: readings near the largest float would overflow their sum
    exponent = int(np.frexp(np.max(np.abs(values)))[1]) if values.size else 0
    mean = float(np.ldexp(np.ldexp(values, -exponent).mean(), exponent))
    return SteadyDistribution(
        n=int(values.size),
        mean=mean,
        median=float(p50),
        p99=float(p99),
        p999=float(p999),
        max=float(values.max()),
    )


def _window_statistic(ordered: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Quantile q of each sorted window and its distribution-free standard error.

    SE from the order statistics at q +/- sqrt(q (1-q) / w) (the binomial spread of the rank of
    the sample quantile): half their distance approximates one standard error.
    """
    w = ordered.shape[1]
    value = np.quantile(ordered, q, axis=1, method="linear")
    delta = math.sqrt(q * (1.0 - q) / w)
    lo = int(min(w - 1, max(0, math.floor(w * (q - delta)))))
    hi = int(min(w - 1, max(0, math.ceil(w * (q + delta)) - 1)))
    return value, 0.5 * (ordered[:, hi] - ordered[:, lo])


def _gate(
    stat: np.ndarray, se: np.ndarray, history: int, tolerance: float
) -> tuple[np.ndarray, np.ndarray]:
    """For every run of ``history`` windows: does it pass, and its drift relative to the
    allowance."""
    runs = sliding_window_view(stat, history)
    spread = runs.max(axis=1) - runs.min(axis=1)
    centre = np.abs(runs.mean(axis=1))
    noise = NOISE_RANGE * np.sqrt(np.mean(sliding_window_view(se, history) ** 2, axis=1))
    allowance = np.maximum(tolerance * centre, noise)
    with np.errstate(divide="ignore", invalid="ignore"):
        drift = np.where(allowance > 0, spread / allowance, np.where(spread > 0, np.inf, 0.0))
    return drift <= 1.0, drift


def detect_steady_state(
    latencies: np.ndarray,
    *,
    method: Method = DEFAULT_METHOD,
    timestamps: np.ndarray | None = None,
    seconds_per_unit: float | None = 1.0,
    tolerance: float = DEFAULT_TOLERANCE,
    penalty: float | None = None,
    min_steady: float = DEFAULT_MIN_STEADY,
    window: int | None = None,
    history: int = DEFAULT_HISTORY,
    median_tolerance: float = DEFAULT_MEDIAN_TOLERANCE,
    tail_tolerance: float = DEFAULT_TAIL_TOLERANCE,
) -> SteadyState:
    """Steady state of time-ordered per-iteration ``latencies`` and the three-regime report.

    ``method="segments"`` (default): where the level settles (``pilot_sys.stats.settle``:
    ``tolerance``, ``penalty``, ``min_steady``). ``method="dual-gate"``: the windowed detector of
    the module doc (``window``, ``history``, ``median_tolerance``, ``tail_tolerance``).
    ``timestamps`` (seconds, one per iteration) give time_to_steady_state directly; otherwise it
    is the sum of warm-up latencies times ``seconds_per_unit`` (1e-3 for milliseconds, ...).
    A series too short for the method is answered ``too_short`` (no steady state can be shown);
    InsufficientData only for an empty one.
    """
    values = np.asarray(latencies, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D series, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("latencies hold NaN or infinite values")
    if history < 2:
        raise ValueError("history must be at least 2 windows")
    n = values.size
    stamps = None
    if timestamps is not None:
        stamps = np.asarray(timestamps, dtype=np.float64)
        if stamps.shape != values.shape:
            raise ValueError("timestamps must have one entry per latency")
    if n == 0:
        raise InsufficientData("latencies", "no readings")
    if method == "model":
        return _from_model(values, stamps, seconds_per_unit)
    if method == "segments":
        if n < MIN_READINGS:
            return _too_short(
                values, MIN_READINGS, stamps, dict(method=method, tolerance=tolerance)
            )
        found = settle(
            values,
            tolerance=tolerance,
            penalty=penalty,
            min_steady=min_steady,
            seconds_per_unit=1.0 if seconds_per_unit is None else seconds_per_unit,
        )
        extra = dict(method=method, changepoints=found.changepoints, tolerance=tolerance)
        return _report(values, found.start, found.reason, stamps, seconds_per_unit, extra)
    size = choose_window(n, history) if window is None else int(window)
    if size < 2:
        raise ValueError("window must be at least 2 iterations")
    n_windows = n // size
    if n < history * MIN_WINDOW or n_windows < history:
        needed = history * max(size, MIN_WINDOW)
        return _too_short(values, needed, stamps, dict(method=method, window=size, history=history))
    q_tail = tail_quantile_for(size)
    ordered = np.sort(values[: n_windows * size].reshape(n_windows, size), axis=1)
    medians, median_se = _window_statistic(ordered, 0.5)
    tails, tail_se = _window_statistic(ordered, q_tail)
    median_ok, median_drift = _gate(medians, median_se, history, median_tolerance)
    tail_ok, tail_drift = _gate(tails, tail_se, history, tail_tolerance)
    both = np.flatnonzero(median_ok & tail_ok)
    tail_name = f"p{round(100 * q_tail, 2):g}"
    extra = dict(
        method=method,
        window=size,
        history=history,
        median_tolerance=median_tolerance,
        tail_tolerance=tail_tolerance,
        tail_quantile=q_tail,
    )
    if both.size == 0:
        reason = _no_steady_reason(
            median_ok, tail_ok, median_drift, tail_drift, tail_name, size, history
        )
        return _report(values, None, reason, stamps, seconds_per_unit, extra)
    start = int(both[0]) * size
    reason = (
        f"median and {tail_name} of {history} consecutive windows of {size} iterations "
        "stayed within "
        f"{100 * median_tolerance:g}% and {100 * tail_tolerance:g}% (or their sampling noise) "
        f"from iteration {start}"
    )
    return _report(values, start, reason, stamps, seconds_per_unit, extra)


def _from_model(
    values: np.ndarray, stamps: np.ndarray | None, seconds_per_unit: float | None
) -> SteadyState:
    """The steady state of the one model of a series (``pilot_sys.stats.series_model``)."""
    from pilot_sys.stats.series_model import describe_change, series_model

    model = series_model(values)
    extra: dict[str, object] = dict(method="model", changepoints=model.changepoints)
    if model.too_short:
        return _too_short(values, 2 * model.min_size, stamps, extra)
    if model.steady is None:
        return _report(values, None, model.reason, stamps, seconds_per_unit, extra)
    begin, end = model.steady
    later = [describe_change(model, k) for k in model.later_changes]
    reason = model.reason
    if begin:
        reason = f"the warm-up ends at iteration {begin}: {reason}"
    extra["later_changes"] = later
    return _report(values, begin, reason, stamps, seconds_per_unit, extra, end=end)


def _too_short(
    values: np.ndarray, needed: int, stamps: np.ndarray | None, extra: dict[str, object]
) -> SteadyState:
    """The answer for a series too short for the method: no steady state can be shown."""
    readings = f"{values.size} reading{'' if values.size == 1 else 's'}"
    reason = f"too short to show a steady state: {readings}, at least {needed} needed"
    report = _report(values, None, reason, stamps, 1.0, extra)
    return report.model_copy(update={"too_short": True})


def _report(
    values: np.ndarray,
    start: int | None,
    reason: str,
    stamps: np.ndarray | None,
    seconds_per_unit: float | None,
    extra: dict[str, object],
    end: int | None = None,
) -> SteadyState:
    """The three-regime report for a steady state [start, end) (start None: never reached;
    end None: to the end of the series). ``seconds_per_unit`` None: the unit is unknown, and
    without timestamps no time in seconds is given."""
    with np.errstate(over="ignore"):  # sums beyond the float range: the caller refuses them
        return _report_in_range(values, start, reason, stamps, seconds_per_unit, extra, end)


def _report_in_range(
    values: np.ndarray,
    start: int | None,
    reason: str,
    stamps: np.ndarray | None,
    seconds_per_unit: float | None,
    extra: dict[str, object],
    end: int | None,
) -> SteadyState:
    raw = _distribution(values)
    if start is None:
        return SteadyState(
            n=values.size,
            steady_state_start=None,
            reason=reason,
            warmup_iterations=None,
            time_to_steady_state=None,
            cold_start_cost=float(values.sum()),
            cold_start_excess=None,
            steady=None,
            raw=raw,
            **extra,  # type: ignore[arg-type]
        )
    stop = values.size if end is None else end
    steady = _distribution(values[start:stop])
    warm = values[:start]
    seconds: float | None
    if stamps is not None:
        seconds = float(stamps[start] - stamps[0])
    elif seconds_per_unit is not None:
        seconds = float(warm.sum()) * seconds_per_unit
    else:
        seconds = None
    return SteadyState(
        n=values.size,
        steady_state_start=start,
        steady_state_end=stop,
        reason=reason,
        warmup_iterations=start,
        time_to_steady_state=seconds,
        cold_start_cost=float(warm.sum()),
        cold_start_excess=float(warm.sum() - start * steady.median),
        steady=steady,
        raw=raw,
        **extra,  # type: ignore[arg-type]
    )


def _no_steady_reason(
    median_ok: np.ndarray,
    tail_ok: np.ndarray,
    median_drift: np.ndarray,
    tail_drift: np.ndarray,
    tail_name: str,
    size: int,
    history: int,
) -> str:
    """Explain which gate never passed, with the closest it came."""
    where = f"in any {history} consecutive windows of {size} iterations"
    if not median_ok.any() and not tail_ok.any():
        return (
            f"no steady state reached: neither the median nor the {tail_name} settled {where} "
            f"(best drift {median_drift.min():.2f}x and {tail_drift.min():.2f}x the allowance); "
            "run longer"
        )
    if not median_ok.any():
        return (
            f"no steady state reached: the median never settled {where} "
            f"(best drift {median_drift.min():.2f}x the allowance); run longer"
        )
    if not tail_ok.any():
        return (
            f"no steady state reached: the {tail_name} never settled {where} "
            f"(best drift {tail_drift.min():.2f}x the allowance); run longer"
        )
    return (
        f"no steady state reached: the median and the {tail_name} settled, but never in the same "
        f"{history} consecutive windows of {size} iterations; run longer"
    )
