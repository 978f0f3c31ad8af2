"""The highest sampling rate whose overhead stays within a budget (the Pilot paper, §III-B, last
paragraph).

The Pilot paper proposed Newton's method on ``g(r) = overhead(r) - budget`` and never built it. Here
``overhead(r)`` is *measured* (interleaved monitored/unmonitored rounds, Welch's test, see
``overhead.py``), so it is noisy and its derivative cannot be taken directly. The derivative
comes from a local model instead:

* before any workload round, the sampler's own accounted cost gives ``overhead(r) ~ c * r``
  (``c`` = CPU seconds per sample: the worst case, where every CPU cycle of the sampler is taken
  from the workload, as for a CPU-bound loop sharing the sampler's core);
* after each measurement, a weighted least-squares line ``overhead = a + b * r`` through the
  measured points (weights 1/se^2, i.e. by their precision, times a kernel in log-rate around
  the latest rate, so the line is local) plus the anchor ``overhead(0) = 0`` (no sampling, no
  overhead; weighted like the least precise measurement), so one measurement already gives a
  secant through the origin and later ones average the noise.

Each Newton step goes to the root of that model. The step is safeguarded: a bracket
``[r_lo, r_hi]`` where ``g`` changes sign is kept from the measurements; a step that leaves the
bracket falls back to bisection in log-rate (rates span decades; halving in log space treats
20->40 Hz like 50->100 Hz), or, while that end of the bracket is still only a bound, to the
bound itself; a non-increasing model (noise can make the slope <= 0) does the same in the
direction the measurement points; the rate stays within the bounds below; and at most
``max_measurements`` workload measurements are spent. It stops when ``|g|`` at the measured
rate is within that measurement's CI half-width (for ``upper``, where g is the CI upper bound
itself: ``-halfwidth / 2 <= g <= 0``, half because that bound's own error is about one standard
error): the measurement cannot tell the overhead there from the budget, so another step would
only chase noise; but only once a measured rate on the other side of the target brackets it
(a measurement too imprecise to tell g from 0 says nothing of where the root is until the other
side is seen): before that, the next step is a *bracket* step, to the rate the model puts as far
beyond the target as the measurement is uncertain. A measurement whose whole overhead interval
lies below zero (the monitored rounds ran faster) is not a point of the curve at all: sampling
cannot speed a workload up, so it is noise or drift between the two kinds of round; it is
measured again (a fresh interleaved measurement), and twice below zero ends the search without
an answer (``negative_overhead``, exit 6). The answer is therefore as precise as one
measurement: about ``halfwidth / budget`` in relative rate (see benchmarks/results/tuner.md);
more ``pairs`` buy precision. When the slowest useful rate fails the ``upper`` target only for
want of precision (the CI straddles the budget) and the measurements left can buy the pairs
needed, it measures there again and pools the rounds instead of giving up.

Two search targets: ``upper`` (what ``pilot-sys tune`` and ``run --overhead-budget`` use)
solves ``ci_high(r) = budget``, so the chosen rate is *shown* to be within the budget at the
stated confidence, which is what a reviewer of the numbers needs; ``estimate`` solves
``overhead(r) = budget`` for the point estimate, the rate whose overhead is as likely over the
budget as under it. The synthetic validation checks the search against the true optimum with
it; no command offers it, since its answer is by construction not shown within the budget.

Whatever the target, the budget is *met* only when the overhead's interval at the chosen rate
lies within it (its upper bound at most the budget). Otherwise the answer is one of two
measured outcomes, not an error: *undecided* (the interval straddles the budget: more pairs of
rounds or a quieter machine would decide it) or *over budget* (the interval lies above the
budget even at the slowest useful rate). ``TuneResult.exit_code`` gives each its own code.

Bounds from the other side:
* the slowest useful rate: a spike of length T is seen at its full height only if a whole
  sampling interval lies inside it; whatever the spike's phase that holds iff the interval is
  at most T/2 (the next tick after the spike starts can be up to one interval late, and the
  interval must then still fit). So ``r_min = 2 / T``: 20 Hz for 100 ms spikes.
* the counters' resolution: per-CPU times in /proc/stat tick at USER_HZ
  (``os.sysconf('SC_CLK_TCK')``, 100 Hz on Linux); sampling faster adds cost, not information,
  so ``r_max = USER_HZ`` unless the user overrides it.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, computed_field

from pilot_sys import units
from pilot_sys.errors import BadInput, ExitCode, MeasuredOutcome
from pilot_sys.monitor.overhead import (
    DURATION_PI,
    MonitorCost,
    OverheadEstimate,
    OverheadMeasurement,
    OverheadProbe,
    SamplerFactory,
    WorkloadProbe,
    default_sampler_factory,
    measure_monitor_cost,
)
from pilot_sys.workload.base import Workload

DEFAULT_BUDGET = 0.01  # 1% of the PI
DEFAULT_MIN_SPIKE_S = 0.1
DEFAULT_MAX_MEASUREMENTS = 6
SAMPLES_PER_SPIKE = 2  # see the module docstring: a whole interval must fit inside the spike
BRACKET_RESOLUTION = 1.05  # a bracket narrower than 5% in rate is as good as converged
SAME_RATE = 0.01  # rates within 1% are the same measurement point
LOCAL_WIDTH = 0.5  # the local model's kernel width in ln(rate): points within ~1.6x weigh most


def percent(fraction: float) -> str:
    """A budget for people: 0.01 -> "1 %", 0.005 -> "0.5 %", 1e-5 -> "0.001 %"."""
    return units.percent(fraction, None)


class TuneTarget(StrEnum):
    ESTIMATE = "estimate"  # overhead point estimate = budget
    UPPER = "upper"  # CI upper bound of the overhead = budget (shown within budget)


class TuneStatus(StrEnum):
    CONVERGED = "converged"  # g within the measurement's CI at the chosen rate
    AT_MAX_RATE = "at_max_rate"  # target met even at the fastest useful rate
    # at the slowest useful rate the overhead's interval straddles the budget: not shown either way
    UNDECIDED = "undecided"
    OVER_BUDGET = "over_budget"  # the interval lies above the budget even at the slowest rate
    MAX_MEASUREMENTS = "max_measurements"  # ran out of measurements before converging
    # the monitored rounds ran significantly *faster* than the unmonitored ones, twice at the
    # same rate: something other than the monitor differs between them; no rate is an answer
    NEGATIVE = "negative_overhead"


class StepKind(StrEnum):
    PRIOR = "prior"  # first rate, from the sampler's accounted per-sample cost
    NEWTON = "newton"
    BISECTION = "bisection"  # Newton left the bracket or the model was not increasing
    BOUND = "bound"  # Newton went past a bound not yet measured: try the bound itself
    POOLED = "pooled"  # the same rate again, pooled with the last measurement for a narrower CI
    # the same rate again, a fresh interleaved measurement: the last one's whole interval lay
    # below zero (monitoring cannot speed a workload up: that was noise or drift, not a point)
    REPEAT = "repeat"
    # the other side of the target, from a measurement that could not tell g from 0: converging
    # needs the bracket
    BRACKET = "bracket"


class RateBounds(BaseModel):
    """The range of rates worth considering, and why."""

    min_hz: float
    max_hz: float
    min_reason: str
    max_reason: str


def slowest_useful_rate(min_spike_s: float) -> float:
    """The slowest rate that still sees a spike of ``min_spike_s`` at full height (2 / T)."""
    if not (min_spike_s > 0 and math.isfinite(min_spike_s)):
        raise BadInput("--min-spike", f"must be a positive duration, got {min_spike_s}")
    return SAMPLES_PER_SPIKE / min_spike_s


def counter_resolution_hz() -> float:
    """USER_HZ: the tick of per-CPU times in /proc/stat; faster sampling reads the same counts."""
    return float(os.sysconf("SC_CLK_TCK"))


def rate_bounds(
    min_spike_s: float = DEFAULT_MIN_SPIKE_S, max_rate_hz: float | None = None
) -> RateBounds:
    """``[2 / min_spike, USER_HZ]``, or the user's ``max_rate_hz`` in place of USER_HZ."""
    low = slowest_useful_rate(min_spike_s)
    if max_rate_hz is None:
        high = counter_resolution_hz()
        max_reason = (
            f"counter resolution: USER_HZ = {high:g} Hz (faster adds cost, not information)"
        )
        if low > high:
            raise BadInput(
                "--min-spike",
                f"{min_spike_s * 1e3:g} ms spikes need {low:g} Hz, above the counters' resolution "
                f"{high:g} Hz (USER_HZ); use a longer --min-spike or --max-rate {low:g} to sample "
                "faster anyway",
            )
    else:
        if not (max_rate_hz > 0 and math.isfinite(max_rate_hz)):
            raise BadInput("--max-rate", f"must be a positive rate in Hz, got {max_rate_hz}")
        high = float(max_rate_hz)
        max_reason = f"set by the user: {high:g} Hz"
        if low > high:
            raise BadInput(
                "--max-rate",
                f"{high:g} Hz is below the slowest useful rate {low:g} Hz "
                f"(2 samples per {min_spike_s * 1e3:g} ms spike); raise --max-rate or lengthen "
                "--min-spike",
            )
    min_reason = f"{SAMPLES_PER_SPIKE} samples per {min_spike_s * 1e3:g} ms spike"
    return RateBounds(min_hz=low, max_hz=high, min_reason=min_reason, max_reason=max_reason)


class LinearModel(BaseModel):
    """``overhead(r) = intercept + slope * r``, the tuner's local model."""

    intercept: float
    slope: float

    def predict(self, rate_hz: float) -> float:
        return self.intercept + self.slope * rate_hz


def fit_overhead_model(
    rates: np.ndarray,
    overheads: np.ndarray,
    ses: np.ndarray,
    around: float | None = None,
    width: float = LOCAL_WIDTH,
) -> LinearModel:
    """Weighted least squares of ``overhead = a + b * r`` with the anchor ``overhead(0) = 0``.

    Weights are 1/se^2 (precision) times, when ``around`` is given, a Gaussian kernel in
    log-rate of ``width`` around that rate, so that the line is *local*: a curved overhead
    (contention growing faster than the rate) is followed near where Newton is stepping, not
    averaged over far-away points. The anchor gets the smallest weight of the measurements, so
    with a single measurement the line is the secant through the origin. Pure function.
    """
    r = np.asarray(rates, dtype=float)
    o = np.asarray(overheads, dtype=float)
    se = np.maximum(np.asarray(ses, dtype=float), 1e-12)
    w = 1.0 / se**2
    if around is not None:
        w = w * np.exp(-0.5 * (np.log(r / around) / width) ** 2)
    x = np.concatenate(([0.0], r))
    y = np.concatenate(([0.0], o))
    wt = np.concatenate(([w.min()], w))
    design = np.column_stack((np.ones_like(x), x))
    sw = np.sqrt(wt)
    coef, *_ = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)
    return LinearModel(intercept=float(coef[0]), slope=float(coef[1]))


class TuneIteration(BaseModel):
    """One workload measurement of the search."""

    index: int
    rate_hz: float
    step: StepKind
    predicted: float | None  # the model's overhead at this rate before measuring it
    overhead: float
    ci_low: float
    ci_high: float
    p_value: float
    g: float  # the target function at this rate: overhead (or ci_high) minus the budget
    slope: float  # the model's d overhead / d rate after this measurement, per Hz
    bracket_low_hz: float
    bracket_high_hz: float
    elapsed_s: float


class TuneResult(BaseModel):
    """What the tuner found, how, and what it cost."""

    status: TuneStatus
    converged: bool
    rate_hz: float
    budget: float  # fraction of the PI
    target: TuneTarget
    overhead: OverheadEstimate | None  # measured at rate_hz (None if never measured there)
    monitor_cost: MonitorCost | None = None  # the sampler's cost in the monitored rounds at rate_hz
    calibration: MonitorCost | None = None  # the sampler alone, before any round: the first model
    bounds: RateBounds
    prior_slope: float  # overhead per Hz from the sampler's accounted cost
    iterations: list[TuneIteration] = Field(default_factory=list)
    measurements: list[OverheadMeasurement] = Field(default_factory=list)
    elapsed_s: float
    message: str

    def overhead_section(self) -> dict[str, Any]:
        """The session's ``overhead`` entry (``SessionManifest.overhead``, read by the report)."""
        est = self.overhead
        test = (
            "Welch's test" if est is None or est.trim == 0 else f"Yuen's test (trim {est.trim:g})"
        )
        pairs = (
            f"{est.n_on}+{est.n_off} interleaved on/off rounds"
            if est is not None
            else "no rounds at this rate"
        )
        return {
            "sampling_rate_hz": self.rate_hz,
            "rate_chosen_by": "tuner",
            "measured_overhead": est.overhead if est is not None else None,
            "measured_overhead_ci": [est.ci_low, est.ci_high] if est is not None else None,
            "p_value": est.p_value if est is not None else None,
            "method": (
                f"{pairs}, {test}; Newton's method, {len(self.iterations)} measurement(s), "
                f"budget {percent(self.budget)} ({self.target.value}), {self.status.value}"
            ),
            "budget": self.budget,
            "status": self.status.value,
            "message": self.message,
        }

    @computed_field  # type: ignore[prop-decorator]
    @property
    def met(self) -> bool:
        """Whether the measurement at the chosen rate shows the budget held: the overhead's
        interval lies within it (its upper bound at most the budget)."""
        return (
            self.overhead is not None
            and self.overhead.ci_high <= self.budget
            and self.status is not TuneStatus.NEGATIVE
        )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """0 met; 4 out of measurements first; 7 shown over the budget even at the slowest
        useful rate; 6 the measurement cannot decide (see ``ExitCode``)."""
        if self.status is TuneStatus.MAX_MEASUREMENTS:
            return int(ExitCode.LIMIT_REACHED)
        if self.status is TuneStatus.NEGATIVE:
            return int(ExitCode.UNDECIDED)
        if self.met:
            return int(ExitCode.OK)
        if self.status is TuneStatus.OVER_BUDGET:
            return int(ExitCode.OVER_BUDGET)
        return int(ExitCode.UNDECIDED)

    def raise_unless_shown(self, option: str = "--budget") -> None:
        """A ``MeasuredOutcome`` (exit 6 or 7) when the budget is neither shown met nor left
        for more measurements to settle."""
        if self.exit_code in (ExitCode.UNDECIDED, ExitCode.OVER_BUDGET):
            raise MeasuredOutcome(option, self.message, self.exit_code)


class _End(BaseModel):
    """One end of the bracket; ``measured`` False while it is only a bound."""

    rate: float
    measured: bool


def _target_g(est: OverheadEstimate, budget: float, target: TuneTarget) -> float:
    """g at a measured rate: the overhead (or its CI upper bound) minus the budget."""
    value = est.ci_high if target is TuneTarget.UPPER else est.overhead
    return value - budget


def _update_bracket(
    lo: _End, hi: _End, rate: float, g: float, bounds: RateBounds
) -> tuple[_End, _End]:
    """lo: the fastest rate seen within the target; hi: the slowest seen over it.

    Noise can contradict an older end (within the target above a rate seen over it): the newer
    measurement wins and the contradicted end goes back to its bound.
    """
    if g <= 0:
        if rate >= lo.rate:
            lo = _End(rate=rate, measured=True)
        if hi.rate <= lo.rate:
            hi = _End(rate=bounds.max_hz, measured=False)
    else:
        if rate <= hi.rate:
            hi = _End(rate=rate, measured=True)
        if lo.rate >= hi.rate:
            lo = _End(rate=bounds.min_hz, measured=False)
    return lo, hi


def significantly_negative(est: OverheadEstimate) -> bool:
    """The whole interval below zero: the monitored rounds ran faster than the unmonitored ones.
    Sampling cannot speed a workload up, so this is noise or drift between the two kinds of
    round (caches, frequency, order), a measurement to repeat, never a point to step from."""
    return est.ci_high < 0


def _verdict(
    est: OverheadEstimate,
    budget: float,
    rate: float,
    bounds: RateBounds,
    target: TuneTarget,
    bracketed: bool = True,
) -> TuneStatus | None:
    """Whether the measurement at ``rate`` ends the search, and how. ``bracketed``: a measured
    rate lies on the other side of the target; converging needs it (a measurement too wide to
    tell g from 0 says nothing about where the root is until the other side is seen)."""
    g, tolerance = _target_g(est, budget, target), est.halfwidth
    if g <= 0 and rate >= bounds.max_hz * (1 - 1e-9):
        return TuneStatus.AT_MAX_RATE
    # At the slowest rate, over the target: the estimate over the budget by more than the
    # interval (estimate), or the interval's upper bound over it (upper). Over the budget when
    # the whole interval is; else the measurement cannot tell.
    margin = 0.0 if target is TuneTarget.UPPER else tolerance
    if g > margin and rate <= bounds.min_hz * (1 + 1e-9):
        return TuneStatus.OVER_BUDGET if est.ci_low > budget else TuneStatus.UNDECIDED
    return TuneStatus.CONVERGED if _within(est, budget, target) and bracketed else None


def _within(est: OverheadEstimate, budget: float, target: TuneTarget) -> bool:
    """The measurement cannot tell g from 0: another step would only chase noise. For the
    upper target g is the CI upper bound, whose own sampling error is about one standard
    error (half the half-width): a larger gap under the budget is real, and Newton closes it."""
    g, tolerance = _target_g(est, budget, target), est.halfwidth
    return (-tolerance / 2 <= g <= 0) if target is TuneTarget.UPPER else (abs(g) <= tolerance)


def _bracketing_rate(
    model: LinearModel,
    rate: float,
    g: float,
    tolerance: float,
    target: TuneTarget,
    lo: _End,
    hi: _End,
) -> float | None:
    """Where to look for the other side of the target from a measurement that cannot tell g
    from 0: the rate the model puts as far beyond the target as the measurement is uncertain
    (half a half-width for the upper target, a half-width for the estimate), or the bound in
    that direction when the model does not rise."""
    beyond = tolerance / 2 if target is TuneTarget.UPPER else tolerance
    up = g <= 0
    if model.slope > 0 and math.isfinite(model.slope):
        step = ((beyond - g) if up else -(beyond + g)) / model.slope
        nxt = rate + step
    else:
        nxt = hi.rate if up else lo.rate
    # at least a 5 % step (a closer rate is the same point: BRACKET_RESOLUTION), inside the
    # bracket; None when there is no room left in that direction
    nxt = max(nxt, rate * BRACKET_RESOLUTION) if up else min(nxt, rate / BRACKET_RESOLUTION)
    nxt = min(max(nxt, lo.rate), hi.rate)
    return None if abs(nxt - rate) <= SAME_RATE * rate else nxt


def _is_measured(rate: float, measured: list[OverheadMeasurement]) -> bool:
    return any(abs(rate - x.rate_hz) <= SAME_RATE * x.rate_hz for x in measured)


def _next_rate(
    model: LinearModel,
    rate: float,
    g: float,
    shift: float,
    budget: float,
    lo: _End,
    hi: _End,
    bounds: RateBounds,
    measured: list[OverheadMeasurement],
    target: TuneTarget,
) -> tuple[StepKind, float] | None:
    """The safeguarded Newton step from ``rate``; None when the bracket admits nothing new.

    Newton on the model's g, g(r) = a + b*r + shift - budget (``shift`` is the CI half-width
    when the target is the CI upper bound), whose root is one step away for a line.
    """
    clamp = lambda r: float(min(max(r, bounds.min_hz), bounds.max_hz))  # noqa: E731
    bisect = (StepKind.BISECTION, math.sqrt(lo.rate * hi.rate))
    step, nxt = StepKind.NEWTON, math.nan
    if model.slope > 0 and math.isfinite(model.slope):
        nxt = rate - (model.predict(rate) + shift - budget) / model.slope
    # Leaving the bracket (or a model that does not rise): bisect when the bracket is real,
    # i.e. the end in the direction of travel was measured; otherwise try that bound itself.
    if not math.isfinite(nxt):
        down = g > 0  # the model gives no direction; the measurement does
        end = lo if down else hi
        step, nxt = bisect if end.measured else (StepKind.BOUND, end.rate)
    elif nxt <= lo.rate:
        step, nxt = bisect if lo.measured else (StepKind.BOUND, lo.rate)
    elif nxt >= hi.rate:
        step, nxt = bisect if hi.measured else (StepKind.BOUND, hi.rate)
    nxt = clamp(nxt)
    near = next((x for x in measured if abs(nxt - x.rate_hz) <= SAME_RATE * x.rate_hz), None)
    if near is None:
        return step, nxt
    # The model sends us back to a rate already measured and not accepted: nudge past it in
    # the direction its own measurement points (down if it was over the target).
    over = _target_g(near.estimate, budget, target) > 0
    nudged = clamp(near.rate_hz * (1 - 2 * SAME_RATE if over else 1 + 2 * SAME_RATE))
    if lo.rate < nudged < hi.rate and not _is_measured(nudged, measured):
        return step, nudged
    if lo.measured:
        return None
    return StepKind.BISECTION, clamp(bisect[1])


def _worth_pooling(
    m: OverheadMeasurement, budget: float, target: TuneTarget, remaining: int, per_measurement: int
) -> bool:
    """Whether the measurements left could show the CI upper bound at this rate within the
    budget."""
    if (
        target is not TuneTarget.UPPER
        or remaining < 1
        or per_measurement < 1
        or m.estimate.ci_low > budget
    ):
        return False
    needed = pairs_needed(m.estimate, budget)
    have = min(m.estimate.n_on, m.estimate.n_off)
    return needed is not None and needed <= have + remaining * per_measurement


def newton_tune(
    probe: OverheadProbe,
    *,
    budget: float = DEFAULT_BUDGET,
    bounds: RateBounds,
    prior_slope: float,
    max_measurements: int = DEFAULT_MAX_MEASUREMENTS,
    target: TuneTarget = TuneTarget.UPPER,
    calibration: MonitorCost | None = None,
    on_iteration: Callable[[TuneIteration], None] | None = None,
) -> TuneResult:
    """Safeguarded Newton's method on ``g(r) = overhead(r) - budget`` over measured overheads.

    ``prior_slope`` (overhead per Hz, e.g. from ``prior_slope_from_cost``) sets the first rate;
    ``on_iteration`` sees each measurement as it completes (for live progress).
    """
    if not (0 < budget < 1):
        raise BadInput("--budget", f"must be between 0% and 100% of the PI, got {budget:.4g}")
    if max_measurements < 1:
        raise BadInput("--max-measurements", f"must be at least 1, got {max_measurements}")
    started = time.monotonic()
    lo = _End(rate=bounds.min_hz, measured=False)
    hi = _End(rate=bounds.max_hz, measured=False)
    measured: list[OverheadMeasurement] = []
    iterations: list[TuneIteration] = []
    # Nothing suggests a cost: try the fastest useful rate first.
    rate = (
        min(max(budget / prior_slope, bounds.min_hz), bounds.max_hz)
        if prior_slope > 0
        else bounds.max_hz
    )
    step = StepKind.PRIOR
    model = LinearModel(intercept=0.0, slope=max(prior_slope, 0.0))
    status: TuneStatus | None = None
    chosen: OverheadMeasurement | None = None

    negative: OverheadMeasurement | None = None  # the last significantly negative measurement
    # a measurement that could not tell g from 0 before the other side was seen: the answer
    # once a measurement on the other side brackets it
    candidate: OverheadMeasurement | None = None
    for index in range(max_measurements):
        predicted = model.predict(rate)
        fresh = probe.measure(rate)
        m = measured.pop().pooled_with(fresh) if step is StepKind.POOLED else fresh
        g = _target_g(m.estimate, budget, target)
        if significantly_negative(m.estimate):
            # not a point of the curve: kept out of the bracket and the model, measured again
            it = _iteration(index, rate, step, predicted, m, g, model, lo, hi, started)
            iterations.append(it)
            if on_iteration is not None:
                on_iteration(it)
            if step is StepKind.REPEAT:
                status, negative = TuneStatus.NEGATIVE, m
                break
            negative, step = m, StepKind.REPEAT
            continue
        measured.append(m)
        lo, hi = _update_bracket(lo, hi, rate, g, bounds)
        model = fit_overhead_model(
            np.array([x.rate_hz for x in measured]),
            np.array([x.estimate.overhead for x in measured]),
            np.array([x.estimate.se for x in measured]),
            around=rate,
        )
        it = _iteration(index, rate, step, predicted, m, g, model, lo, hi, started)
        iterations.append(it)
        if on_iteration is not None:
            on_iteration(it)

        tolerance = m.estimate.halfwidth
        bracketed = hi.measured if g <= 0 else lo.measured
        status = _verdict(m.estimate, budget, rate, bounds, target, bracketed)
        remaining = max_measurements - index - 1
        if status is TuneStatus.UNDECIDED and _worth_pooling(
            m, budget, target, remaining, len(fresh.readings_on)
        ):
            # Not shown within the budget at the slowest rate only for want of precision, and
            # the measurements left can buy it: measure there again and pool.
            status, step = None, StepKind.POOLED
            continue
        if status is not None:
            chosen = m
            break
        if candidate is not None:
            cg = _target_g(candidate.estimate, budget, target)
            end, other = (lo, hi) if cg <= 0 else (hi, lo)
            if end.measured and end.rate == candidate.rate_hz and other.measured:
                status, chosen = TuneStatus.CONVERGED, candidate  # now bracketed
                break
            if end.rate != candidate.rate_hz:
                candidate = None  # a newer measurement took its place
        if _within(m.estimate, budget, target) and not bracketed:
            # converging needs the bracket: look for the other side before calling this the root
            nxt_rate = _bracketing_rate(model, rate, g, tolerance, target, lo, hi)
            if nxt_rate is not None and not _is_measured(nxt_rate, measured):
                candidate, step, rate = m, StepKind.BRACKET, nxt_rate
                continue
        if lo.measured and hi.measured and hi.rate <= lo.rate * BRACKET_RESOLUTION:
            status, chosen = TuneStatus.CONVERGED, _at(measured, lo.rate)
            break
        shift = tolerance if target is TuneTarget.UPPER else 0.0
        nxt = _next_rate(model, rate, g, shift, budget, lo, hi, bounds, measured, target)
        if nxt is None:  # nothing new to measure inside the bracket: as narrow as the data allow
            status, chosen = TuneStatus.CONVERGED, _at(measured, lo.rate)
            break
        step, rate = nxt

    if status is TuneStatus.NEGATIVE:
        chosen = negative
    elif status is None:
        status = TuneStatus.MAX_MEASUREMENTS
        chosen = _at(measured, lo.rate) if lo.measured else None
    final_rate = chosen.rate_hz if chosen is not None else bounds.min_hz
    if status in (TuneStatus.UNDECIDED, TuneStatus.OVER_BUDGET):
        final_rate = bounds.min_hz
    result = TuneResult(
        status=status,
        converged=status in (TuneStatus.CONVERGED, TuneStatus.AT_MAX_RATE),
        rate_hz=final_rate,
        budget=budget,
        target=target,
        overhead=chosen.estimate if chosen is not None else None,
        monitor_cost=chosen.monitor_cost if chosen is not None else None,
        calibration=calibration,
        bounds=bounds,
        prior_slope=prior_slope,
        iterations=iterations,
        measurements=measured,
        elapsed_s=time.monotonic() - started,
        message="",
    )
    result.message = _explain(result)
    return result


def _iteration(
    index: int,
    rate: float,
    step: StepKind,
    predicted: float | None,
    m: OverheadMeasurement,
    g: float,
    model: LinearModel,
    lo: _End,
    hi: _End,
    started: float,
) -> TuneIteration:
    return TuneIteration(
        index=index + 1,
        rate_hz=rate,
        step=step,
        predicted=predicted,
        overhead=m.estimate.overhead,
        ci_low=m.estimate.ci_low,
        ci_high=m.estimate.ci_high,
        p_value=m.estimate.p_value,
        g=g,
        slope=model.slope,
        bracket_low_hz=lo.rate,
        bracket_high_hz=hi.rate,
        elapsed_s=time.monotonic() - started,
    )


def _at(measured: list[OverheadMeasurement], rate: float) -> OverheadMeasurement | None:
    """The measurement taken at ``rate`` (the latest one if several)."""
    hits = [m for m in measured if abs(m.rate_hz - rate) <= 1e-9 * max(rate, 1.0)]
    return hits[-1] if hits else None


def overhead_text(est: OverheadEstimate) -> str:
    """``+0.77 % [+0.30 %, +1.25 %]``: the overhead and its interval."""
    pct = lambda x: units.percent(x, 2, signed=True)  # noqa: E731
    return f"{pct(est.overhead)} [{pct(est.ci_low)}, {pct(est.ci_high)}]"


PRACTICAL_PAIRS_FACTOR = 20  # more than 20x the pairs measured is not advice worth giving


def _decide_advice(est: OverheadEstimate, budget: float) -> str:
    """What would decide a measurement whose interval straddles the budget."""
    needed, have = pairs_needed(est, budget), min(est.n_on, est.n_off)
    if needed is not None and needed > PRACTICAL_PAIRS_FACTOR * have:
        more = (
            f"a quieter machine would decide it (at this noise more pairs would take about "
            f"{needed}, {have} now)"
        )
    else:
        more = f"{_pairs_advice(est, budget)} or a quieter machine would decide it"
    return f"{more}; or raise the budget, or lengthen --min-spike to sample slower"


def _explain(result: TuneResult) -> str:
    """One sentence that says what was found and what to do about it."""
    budget = percent(result.budget)
    est = result.overhead
    at = f" (overhead {overhead_text(est)})" if est else ""
    n = len(result.iterations)
    slowest = f"the slowest useful rate {result.bounds.min_hz:g} Hz"
    if result.status in (TuneStatus.AT_MAX_RATE, TuneStatus.CONVERGED) and est is not None:
        if not result.met:  # only the estimate target gets here: its interval may reach over
            return (
                f"{result.rate_hz:.1f} Hz is where the estimate lands{at}, but its interval "
                f"reaches over the budget {budget}: the data cannot tell whether this rate "
                f"keeps within it; {_decide_advice(est, result.budget)}"
            )
        if result.status is TuneStatus.AT_MAX_RATE:
            return (
                f"the budget {budget} is met even at the fastest useful rate "
                f"{result.rate_hz:g} Hz{at}; {result.bounds.max_reason}"
            )
        return (
            f"{result.rate_hz:.1f} Hz keeps the overhead's interval within {budget}{at} "
            f"after {n} measurement(s)"
        )
    if result.status is TuneStatus.NEGATIVE and est is not None:
        return (
            f"no answer: at {result.rate_hz:.1f} Hz the monitored rounds ran faster than the "
            f"unmonitored ones in two interleaved measurements (overhead {overhead_text(est)}, "
            "all of its interval below zero); sampling cannot speed a workload up, so something "
            "else differs between the two kinds of round (caches, CPU frequency, a drifting "
            "level); run on a quieter machine, with more --pairs, or a workload that does not "
            "drift"
        )
    if result.status is TuneStatus.UNDECIDED and est is not None:
        why = ""
        if est.detectable and est.overhead > result.budget / 2:
            room = units.percent(max(result.budget - est.overhead, 0.0), 2)
            why = f"; the overhead is real and close to the budget (room {room})"
        return (
            f"undecided: at {slowest} the overhead is {overhead_text(est)}, an interval that "
            f"straddles the budget {budget}, so this measurement cannot decide whether the "
            f"budget holds{why}; {_decide_advice(est, result.budget)}"
        )
    if result.status is TuneStatus.OVER_BUDGET and est is not None:
        return (
            f"the budget {budget} cannot be met: even at {slowest} "
            f"({result.bounds.min_reason}) the overhead is {overhead_text(est)}, all of its "
            "interval above the budget; raise the budget, or lengthen --min-spike to sample "
            "slower"
        )
    if est is None:
        return (
            f"no rate was shown within {budget} in {n} measurement(s); the slowest useful rate "
            f"{result.rate_hz:g} Hz was not measured; raise --max-measurements"
        )
    return (
        f"not converged after {n} measurement(s); {result.rate_hz:.1f} Hz is the fastest rate "
        f"measured within {budget}{at}; raise --max-measurements for a closer answer"
    )


def pairs_needed(est: OverheadEstimate, budget: float) -> int | None:
    """Pairs of rounds that would bring the CI upper bound under the budget at this noise.

    The half-width shrinks as 1/sqrt(pairs) and must fit between the estimate (0 if negative:
    an overhead below zero is noise) and the budget; None when the estimate itself is over it.
    """
    room = budget - max(est.overhead, 0.0)
    if room <= 0 or est.halfwidth <= 0:
        return None
    return math.ceil(min(est.n_on, est.n_off) * (est.halfwidth / room) ** 2)


def _pairs_advice(est: OverheadEstimate, budget: float) -> str:
    needed = pairs_needed(est, budget)
    if needed is None:
        return "more pairs of rounds (--pairs)"
    have = min(est.n_on, est.n_off)
    return f"more pairs of rounds (--pairs; about {needed} at this noise, {have} now)"


def prior_slope_from_cost(cost: MonitorCost | None, share: float = 1.0) -> float:
    """Overhead per Hz if the sampler's CPU time is taken from the workload (``share`` of it).

    The sources' threads (remote hosts' scrapes) count too: they run as often as the sampler
    ticks, up to their own cap. ``share = 1`` is a CPU-bound workload sharing the sampler's
    core (the worst case); with idle cores the true slope is lower and the first measurement
    corrects it.
    """
    if cost is None:
        return 0.0
    return max(cost.total_cpu_seconds_per_sample, 0.0) * share


def tune_for_workload(
    workload: Workload,
    budget: float = DEFAULT_BUDGET,
    *,
    work_amount: float = 1.0,
    pi: str = DURATION_PI,
    higher_is_better: bool | None = None,
    min_spike_s: float = DEFAULT_MIN_SPIKE_S,
    max_rate_hz: float | None = None,
    max_measurements: int = DEFAULT_MAX_MEASUREMENTS,
    pairs: int = 8,
    trim: float = 0.0,
    confidence: float = 0.95,
    target: TuneTarget = TuneTarget.UPPER,
    sampler_factory: SamplerFactory | None = None,
    workdir: Path | None = None,
    seed: int | None = None,
    uninstrumented: Workload | None = None,
    allow_unreachable: bool = False,
    budget_option: str = "--budget",
    on_iteration: Callable[[TuneIteration], None] | None = None,
) -> TuneResult:
    """Tune the sampling rate for a real workload (a command or an in-process function).

    Runs one unmonitored warm-up round, spends about one second calibrating the sampler alone
    (its per-sample cost is the first model), then at most ``max_measurements`` interleaved
    measurements of ``2 * pairs`` rounds.
    ``uninstrumented`` is the workload with its own unit-reading instrumentation off, for the
    unmonitored rounds (see ``WorkloadProbe``). Raises ``MeasuredOutcome`` (exit 6 undecided, 7
    over the budget; one line) when the budget is not shown met even at the slowest useful
    rate, unless ``allow_unreachable``.
    """
    started = time.monotonic()
    bounds = rate_bounds(min_spike_s, max_rate_hz)
    factory = sampler_factory or default_sampler_factory
    with tempfile.TemporaryDirectory(prefix="pilot-sys-tune-") as tmp:
        probe = WorkloadProbe(
            workload,
            work_amount=work_amount,
            pi=pi,
            higher_is_better=higher_is_better,
            pairs=pairs,
            sampler_factory=factory,
            workdir=workdir or Path(tmp),
            trim=trim,
            confidence=confidence,
            seed=seed,
            uninstrumented=uninstrumented,
        )
        probe.warm_up()  # a workload that cannot run fails before the calibration is spent
        cost = measure_monitor_cost(bounds.max_hz, seconds=1.0, sampler_factory=factory)
        result = newton_tune(
            probe,
            budget=budget,
            bounds=bounds,
            prior_slope=prior_slope_from_cost(cost),
            max_measurements=max_measurements,
            target=target,
            calibration=cost,
            on_iteration=on_iteration,
        )
    result.elapsed_s = time.monotonic() - started  # the warm-up and the calibration included
    if not allow_unreachable:
        result.raise_unless_shown(budget_option)
    return result


def tune_function(
    func: Callable[[int], Any], budget: float = DEFAULT_BUDGET, *, work_amount: int, **options: Any
) -> TuneResult:
    """Tune for an in-process Python function ``func(work_amount)``, timed per round.

    The sampler thread then shares the interpreter with the function (the GIL included), which
    is exactly the overhead an in-process benchmark pays. ``options`` are those of
    ``tune_for_workload``.
    """
    from pilot_sys.workload.pyfunc import FunctionWorkload

    return tune_for_workload(FunctionWorkload(func), budget, work_amount=work_amount, **options)
