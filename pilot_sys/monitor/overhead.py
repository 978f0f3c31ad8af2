"""How much monitoring slows the workload down, measured rather than assumed (the Pilot paper,
§III-C).

The workload runs in rounds with the sampler on and off, interleaved in randomised blocks
(each block holds one monitored and one unmonitored round, in a random order), so that slow
drift of a shared machine falls on both arms alike. The two arms' readings are compared with
Welch's t-test (unequal variances: the monitor may well change the spread too), the project's
own (``pilot_sys.stats.compare.welch``); optionally on trimmed means (Yuen's test), which a
round hit by a neighbour's burst cannot drag around. The overhead is the relative loss of the
performance index, positive when monitoring made it worse:

    lower is better (duration, latency):  overhead = (mean_on - mean_off) / mean_off
    higher is better (throughput, IOPS):  overhead = (mean_off - mean_on) / mean_off

Its confidence interval is Welch's interval of the difference of the means divided by the
unmonitored mean. The denominator's own uncertainty is left out on purpose: it scales an
overhead of about 1% by a relative error of about 1%, i.e. it moves the bounds by ~0.01
percentage points, and leaving it out keeps the interval and the p-value the same test.

When the difference is not significant the answer is "no detectable overhead at this
precision", together with the smallest overhead these data could have detected
(``min_detectable``): an honest bound instead of a bare "0%".

The monitor's own cost (CPU seconds per second, per sample, wake-ups per second, memory) is
read from the sampler itself and reported next to the overhead: it is the direct view of what
the comparison sees indirectly.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, Field

from pilot_sys import units
from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.stats.compare import SampleStats, welch
from pilot_sys.workload.base import RoundOutput, Workload

DURATION_PI = "duration"  # the round's wall-clock time, which every workload has


class OverheadEstimate(BaseModel):
    """The monitored-vs-unmonitored comparison of one performance index; fractions, not %."""

    pi: str
    higher_is_better: bool
    n_on: int
    n_off: int
    mean_on: float  # the trimmed mean when trim > 0
    mean_off: float
    overhead: float  # fraction of mean_off; > 0 means monitoring made the PI worse
    ci_low: float
    ci_high: float
    p_value: float  # Welch's two-sided test of "no difference"
    confidence: float
    df: float  # Welch-Satterthwaite degrees of freedom
    se: float  # standard error of the overhead fraction
    detectable: bool  # p_value < 1 - confidence
    min_detectable: float  # smallest overhead detectable at `power` with these data
    power: float
    trim: float = 0.0  # fraction trimmed from each end (Yuen's test); 0 is Welch's test

    @property
    def halfwidth(self) -> float:
        """Half the CI width: the precision of this measurement."""
        return (self.ci_high - self.ci_low) / 2.0

    def describe(self) -> str:
        """One line for people, in percent."""
        pct = lambda x: units.percent(x, 2, signed=True)  # noqa: E731
        shown = f"{pct(self.overhead)} [{pct(self.ci_low)}, {pct(self.ci_high)}]"
        if self.detectable:
            return f"{shown} (p = {self.p_value:.2g})"
        return (
            f"no detectable overhead at this precision: {shown} "
            f"(p = {self.p_value:.2g}; could detect >= {units.percent(self.min_detectable, 2)})"
        )


def estimate_overhead(
    on: Sequence[float] | np.ndarray,
    off: Sequence[float] | np.ndarray,
    *,
    higher_is_better: bool,
    pi: str = DURATION_PI,
    confidence: float = 0.95,
    power: float = 0.8,
    trim: float = 0.0,
) -> OverheadEstimate:
    """Welch comparison of readings with monitoring ``on`` and ``off``; pure, no I/O.

    ``trim`` > 0 compares trimmed means instead (Yuen's test, Welch's test on the trimmed
    means with winsorized variances): on a shared machine a round that a neighbour's burst
    hit is an outlier in one arm, and trimming 10-20% from each end keeps it from deciding
    the answer while staying a test of location like the plain mean.
    """
    from scipy import stats  # here: scipy.stats takes seconds to import, `run` never needs it

    if not 0.0 <= trim < 0.5:
        raise BadInput("--trim", f"must be at least 0 and below 0.5, got {trim}")
    a = np.asarray(on, dtype=float)
    b = np.asarray(off, dtype=float)
    if a.size < 2 or b.size < 2:
        raise InsufficientData(
            "readings", f"need at least 2 rounds per arm, got {a.size} on and {b.size} off"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise BadInput("readings", "a reading is not a finite number")
    mean_on, mean_off = float(stats.trim_mean(a, trim)), float(stats.trim_mean(b, trim))
    if mean_off == 0.0:
        raise BadInput(
            "readings", "the unmonitored mean is 0; an overhead relative to it is undefined"
        )
    alpha = 1.0 - confidence
    diff = mean_on - mean_off
    sign = -1.0 if higher_is_better else 1.0  # overhead = sign * diff / mean_off
    scale = sign / abs(mean_off)
    if trim == 0.0:
        # The project's Welch test, the same one `pilot-sys compare` uses (exact readings, with
        # no spread in either arm, come back as a zero-width interval).
        res = welch(
            SampleStats(mean=mean_on, variance=float(a.var(ddof=1)), count=int(a.size)),
            SampleStats(mean=mean_off, variance=float(b.var(ddof=1)), count=int(b.size)),
            confidence=confidence,
            threshold=alpha,
        )
        df, p_value, lo, hi, se_diff = (
            res.dof,
            res.p_value,
            res.ci.low,
            res.ci.high,
            res.ci.std_error,
        )
    elif np.ptp(a) == 0.0 and np.ptp(b) == 0.0:
        # Identical readings within each arm: Yuen's statistic is undefined; the data are exact.
        df = float(a.size + b.size - 2)
        p_value = 1.0 if diff == 0.0 else 0.0
        lo = hi = diff
        se_diff = 0.0
    else:
        yuen = stats.ttest_ind(a, b, equal_var=False, trim=trim)
        df = float(yuen.df)
        p_value = float(yuen.pvalue)
        interval = yuen.confidence_interval(confidence_level=confidence)
        lo, hi = float(interval.low), float(interval.high)
        se_diff = (hi - lo) / (2.0 * float(stats.t.ppf(1.0 - alpha / 2.0, df)))
    bounds = sorted((lo * scale, hi * scale))
    # Smallest true difference a two-sided Welch test at level alpha finds with probability
    # `power` (normal-theory approximation with t quantiles, adequate for planning).
    t_alpha = float(stats.t.ppf(1.0 - alpha / 2.0, df))
    t_power = float(stats.t.ppf(power, df))
    return OverheadEstimate(
        pi=pi,
        higher_is_better=higher_is_better,
        n_on=int(a.size),
        n_off=int(b.size),
        mean_on=mean_on,
        mean_off=mean_off,
        overhead=diff * scale,
        ci_low=bounds[0],
        ci_high=bounds[1],
        p_value=p_value,
        confidence=confidence,
        df=df,
        se=se_diff / abs(mean_off),
        detectable=p_value < alpha,
        min_detectable=(t_alpha + t_power) * se_diff / abs(mean_off),
        power=power,
        trim=trim,
    )


def interleaved_schedule(pairs: int, rng: random.Random) -> list[bool]:
    """Randomised blocks: each pair of rounds is (on, off) or (off, on) by a coin toss.

    Strict ABAB would line a periodic disturbance (a cron job, another tenant's loop) up with
    one arm; a random order within each block cannot be lined up with, and the blocks keep the
    two arms balanced in time.
    """
    if pairs < 2:
        raise BadInput("--pairs", f"need at least 2 pairs of rounds for a comparison, got {pairs}")
    order: list[bool] = []
    for _ in range(pairs):
        first = rng.random() < 0.5
        order += [first, not first]
    return order


class MonitorCost(BaseModel):
    """The monitor's own cost, read from the sampler's accounting."""

    rate_hz: float
    cpu_seconds_per_second: float  # CPU time the sampler used per second of sampling
    cpu_seconds_per_sample: float
    wakeups_per_second: float
    memory_bytes: float
    # the sources' threads here (remote scrapes), per second and per sampler tick
    source_cpu_seconds_per_second: float = 0.0
    # what the remote hosts' engines spent serving the samples, per second, summed over hosts
    # (where the engine reports its own CPU time; 0 without remote hosts)
    remote_cpu_seconds_per_second: float = 0.0

    @property
    def total_cpu_seconds_per_sample(self) -> float:
        """This host's CPU per tick, sources included: the tuner's first model of overhead.

        A remote host's source asks it once per tick up to its own cap
        (``remote.source.MAX_RATE_HZ``), so below the cap each tick costs one remote sample per
        host: the sources' CPU per second over the rate they ran at, not over the tick rate."""
        from pilot_sys.monitor.remote.source import MAX_RATE_HZ

        source_rate = min(self.rate_hz, MAX_RATE_HZ)
        return self.cpu_seconds_per_sample + self.source_cpu_seconds_per_second / source_rate

    def with_remote(self, per_host: Mapping[str, float]) -> MonitorCost:
        """This cost with the remote hosts' engine CPU per second added."""
        total = float(sum(per_host.values()))
        return self.model_copy(update={"remote_cpu_seconds_per_second": total})

    @classmethod
    def from_sampler(cls, rate_hz: float, cost: Any) -> MonitorCost:
        """Adapt the sampler's ``SamplerCost`` (a pydantic model, a mapping or an object with
        fields)."""
        if isinstance(cost, Mapping):
            data = dict(cost)
        else:
            data = cost.model_dump() if hasattr(cost, "model_dump") else dict(vars(cost))
        per_s = float(data["cpu_seconds_per_second"])
        per_sample = data.get("cpu_seconds_per_sample")
        seconds = float(data.get("seconds") or 0.0)
        source_cpu = float(data.get("source_cpu_seconds") or 0.0)
        return cls(
            source_cpu_seconds_per_second=source_cpu / seconds if seconds > 0 else 0.0,
            rate_hz=rate_hz,
            cpu_seconds_per_second=per_s,
            cpu_seconds_per_sample=float(per_sample) if per_sample is not None else per_s / rate_hz,
            wakeups_per_second=float(data.get("wakeups_per_second", rate_hz)),
            memory_bytes=float(data.get("memory_bytes", 0.0)),
        )

    @classmethod
    def mean(cls, costs: Sequence[MonitorCost]) -> MonitorCost | None:
        """The average over several monitored rounds (memory: the largest)."""
        if not costs:
            return None
        return cls(
            rate_hz=float(np.mean([c.rate_hz for c in costs])),
            cpu_seconds_per_second=float(np.mean([c.cpu_seconds_per_second for c in costs])),
            cpu_seconds_per_sample=float(np.mean([c.cpu_seconds_per_sample for c in costs])),
            wakeups_per_second=float(np.mean([c.wakeups_per_second for c in costs])),
            memory_bytes=float(max(c.memory_bytes for c in costs)),
            source_cpu_seconds_per_second=float(
                np.mean([c.source_cpu_seconds_per_second for c in costs])
            ),
            remote_cpu_seconds_per_second=float(
                np.mean([c.remote_cpu_seconds_per_second for c in costs])
            ),
        )

    def describe(self) -> str:
        """``1.27 % of a CPU (126 µs/sample), 100 wake-ups/s, 16.0 MiB``, and what sampling the
        remote hosts cost here and on the hosts when there are any."""
        remote = ""
        if self.source_cpu_seconds_per_second or self.remote_cpu_seconds_per_second:
            remote = (
                f"; remote hosts: {units.percent(self.source_cpu_seconds_per_second, 2)} of a CPU "
                f"here, {units.percent(self.remote_cpu_seconds_per_second, 2)} on the hosts"
            )
        return (
            f"{units.percent(self.cpu_seconds_per_second, 2)} of a CPU "
            f"({units.duration(self.cpu_seconds_per_sample)}/sample), "
            f"{self.wakeups_per_second:.0f} wake-ups/s, {units.size(self.memory_bytes)}{remote}"
        )


class OverheadMeasurement(BaseModel):
    """One interleaved measurement at one sampling rate, with everything it saw."""

    rate_hz: float
    estimate: OverheadEstimate
    monitor_cost: MonitorCost | None = None
    readings_on: list[float] = Field(default_factory=list)
    readings_off: list[float] = Field(default_factory=list)
    schedule: list[bool] = Field(default_factory=list)  # True = monitored round, in run order
    elapsed_s: float = 0.0

    def pooled_with(self, later: OverheadMeasurement) -> OverheadMeasurement:
        """This measurement and a later one at the same rate as one: more rounds, a narrower CI.

        The readings are pooled and compared again with the same test and settings; both
        measurements interleaved their arms, so the pooled arms stay balanced in time.
        """
        est = self.estimate
        on = self.readings_on + later.readings_on
        off = self.readings_off + later.readings_off
        costs = [c for c in (self.monitor_cost, later.monitor_cost) if c is not None]
        return OverheadMeasurement(
            rate_hz=self.rate_hz,
            estimate=estimate_overhead(
                on,
                off,
                higher_is_better=est.higher_is_better,
                pi=est.pi,
                confidence=est.confidence,
                power=est.power,
                trim=est.trim,
            ),
            monitor_cost=MonitorCost.mean(costs),
            readings_on=on,
            readings_off=off,
            schedule=self.schedule + later.schedule,
            elapsed_s=self.elapsed_s + later.elapsed_s,
        )


class SamplerLike(Protocol):
    """What the overhead measurement needs of a sampler (``pilot_sys.monitor.sampler.Sampler``)."""

    def start(self) -> None: ...

    def stop(self) -> Any: ...

    def cost(self) -> Any: ...


SamplerFactory = Callable[[float], SamplerLike]


def default_sampler_factory(rate_hz: float) -> SamplerLike:
    """The bare sampler: every dynamic plug-in, no component graph, no per-process probe.

    It is not what a session samples with; ``run --overhead-budget`` and ``tune`` pass
    ``pilot_sys.session.monitoring.session_sampler_factory``'s (the session's graph and the
    round's own processes), so that the overhead they report is the session's."""
    from pilot_sys.monitor.sampler import Sampler

    return Sampler(rate_hz=rate_hz)


def round_reading(output: RoundOutput, pi: str) -> float:
    """The number a round contributes to the comparison: its duration or one of its readings."""
    if pi == DURATION_PI:
        return float(output.duration)
    if pi not in output.readings:
        known = ", ".join(sorted(output.readings)) or "none"
        raise BadInput("--pi", f"the workload reported no reading {pi!r} (it reported: {known})")
    return float(output.readings[pi])


class OverheadProbe(Protocol):
    """Anything that can measure the overhead at a sampling rate (the tuner's only view of it)."""

    def measure(self, rate_hz: float) -> OverheadMeasurement: ...


class WorkloadProbe:
    """Measures a real workload: interleaved monitored/unmonitored rounds at a rate.

    ``pi`` is ``"duration"`` (lower is better) or a reading the workload reports, with
    ``higher_is_better`` saying which way is worse. ``warmup_rounds`` unmonitored rounds run
    once, before the first measurement, and are not counted: the first round of a process pays
    for cold caches and page faults that have nothing to do with monitoring.

    Each round keeps its output in ``workdir/round-NNNN`` (default: a new temporary directory,
    left in place so that a surprising reading can be traced to its round's output).

    ``uninstrumented``, when given, is the same workload with its own measurement switched off
    (e.g. fio without per-window bandwidth logs): the unmonitored rounds run it, so the
    comparison covers unit-reading instrumentation as well as the sampler (the Pilot paper, §III-C;
    only the readings, which both variants report, are compared).
    """

    def __init__(
        self,
        workload: Workload,
        *,
        work_amount: float = 1.0,
        pi: str = DURATION_PI,
        higher_is_better: bool | None = None,
        pairs: int = 8,
        warmup_rounds: int = 1,
        sampler_factory: SamplerFactory | None = None,
        workdir: Path | None = None,
        confidence: float = 0.95,
        trim: float = 0.0,
        seed: int | None = None,
        uninstrumented: Workload | None = None,
    ) -> None:
        self.workload = workload
        self.uninstrumented = uninstrumented or workload
        self.trim = trim
        self.work_amount = work_amount
        self.pi = pi
        self.higher_is_better = (
            (pi != DURATION_PI) if higher_is_better is None else higher_is_better
        )
        self.pairs = pairs
        self.warmup_rounds = warmup_rounds
        self.sampler_factory = sampler_factory or default_sampler_factory
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="pilot-sys-overhead-"))
        self.confidence = confidence
        self.rng = random.Random(seed)
        self._round = 0
        self._warmed_up = False

    def _run(self, rate_hz: float | None) -> tuple[float, MonitorCost | None]:
        """One round, monitored at ``rate_hz`` or unmonitored (None); the sampler is set up
        before and torn down after the round, so only its sampling falls inside the round."""
        self._round += 1
        round_dir = self.workdir / f"round-{self._round:04d}"
        if round_dir.is_symlink():  # never write a round's output through a planted link
            raise BadInput(str(round_dir), "is a symbolic link; rounds are kept in real folders")
        round_dir.mkdir(parents=True, exist_ok=True)
        sampler = self.sampler_factory(rate_hz) if rate_hz is not None else None
        if sampler is not None:
            sampler.start()
        workload = self.workload if rate_hz is not None else self.uninstrumented
        try:
            output = workload.run_round(self.work_amount, round_dir)
        finally:
            if sampler is not None:
                sampler.stop()
        cost = (
            MonitorCost.from_sampler(rate_hz, sampler.cost())
            if sampler is not None and rate_hz
            else None
        )
        return round_reading(output, self.pi), cost

    def warm_up(self) -> None:
        """The uncounted unmonitored rounds (once); a workload that cannot run fails here, early."""
        if not self._warmed_up:
            for _ in range(self.warmup_rounds):
                self._run(None)
            self._warmed_up = True

    def measure(self, rate_hz: float) -> OverheadMeasurement:
        started = time.monotonic()
        self.warm_up()
        schedule = interleaved_schedule(self.pairs, self.rng)
        on: list[float] = []
        off: list[float] = []
        costs: list[MonitorCost] = []
        for monitored in schedule:
            value, cost = self._run(rate_hz if monitored else None)
            (on if monitored else off).append(value)
            if cost is not None:
                costs.append(cost)
        estimate = estimate_overhead(
            on,
            off,
            higher_is_better=self.higher_is_better,
            pi=self.pi,
            confidence=self.confidence,
            trim=self.trim,
        )
        return OverheadMeasurement(
            rate_hz=rate_hz,
            estimate=estimate,
            monitor_cost=MonitorCost.mean(costs),
            readings_on=on,
            readings_off=off,
            schedule=schedule,
            elapsed_s=time.monotonic() - started,
        )


class SimulatedProbe:
    """A workload whose slowdown is a known function of the rate, plus Gaussian noise.

    Each round's duration is ``base * (1 + overhead_fn(rate))`` when monitored and ``base``
    when not, times ``1 + N(0, noise)``; the readings then go through the same Welch
    comparison as real ones. It validates the tuner against a known optimum with fixed seeds
    (tests, ``benchmarks/tuner_synthetic.py``) without spending minutes of machine time.
    """

    def __init__(
        self,
        overhead_fn: Callable[[float], float],
        *,
        noise: float = 0.003,
        pairs: int = 10,
        base: float = 1.0,
        seed: int = 0,
        confidence: float = 0.95,
    ) -> None:
        self.overhead_fn = overhead_fn
        self.noise = noise
        self.pairs = pairs
        self.base = base
        self.rng = np.random.default_rng(seed)
        self.confidence = confidence
        self.calls = 0

    def measure(self, rate_hz: float) -> OverheadMeasurement:
        self.calls += 1
        jitter = self.rng.normal(0.0, self.noise, size=(2, self.pairs))
        on = self.base * (1.0 + self.overhead_fn(rate_hz)) * (1.0 + jitter[0])
        off = self.base * (1.0 + jitter[1])
        estimate = estimate_overhead(on, off, higher_is_better=False, confidence=self.confidence)
        return OverheadMeasurement(
            rate_hz=rate_hz,
            estimate=estimate,
            readings_on=on.tolist(),
            readings_off=off.tolist(),
            schedule=[True, False] * self.pairs,
        )


def measure_monitor_cost(
    rate_hz: float, seconds: float = 1.0, sampler_factory: SamplerFactory | None = None
) -> MonitorCost:
    """The sampler's own cost with nothing else running: its CPU time, wake-ups and memory.

    This is the direct measurement of the monitor; it also gives the tuner its first model
    (overhead ~ CPU seconds per sample x rate) before any workload round is spent.
    """
    sampler = (sampler_factory or default_sampler_factory)(rate_hz)
    sampler.start()
    try:
        time.sleep(seconds)
    finally:
        sampler.stop()
    return MonitorCost.from_sampler(rate_hz, sampler.cost())
