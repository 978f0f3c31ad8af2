"""Overhead measurement: the Welch comparison against statsmodels, the interleaving, the probe."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.power import TTestIndPower
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.monitor.overhead import (
    SimulatedProbe,
    WorkloadProbe,
    estimate_overhead,
    interleaved_schedule,
    measure_monitor_cost,
)
from pilot_sys.workload.base import PISpec, RoundOutput


def _statsmodels_welch(on: np.ndarray, off: np.ndarray) -> tuple[float, float, float]:
    cm = CompareMeans(DescrStatsW(on), DescrStatsW(off))
    _, p, _ = cm.ttest_ind(usevar="unequal")
    lo, hi = cm.tconfint_diff(alpha=0.05, usevar="unequal")
    return float(p), float(lo), float(hi)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_duration_overhead_matches_statsmodels_welch(seed: int) -> None:
    rng = np.random.default_rng(seed)
    off = rng.normal(2.0, 0.03, size=12)
    on = rng.normal(2.04, 0.05, size=9)  # unequal sizes and variances: Welch, not Student
    est = estimate_overhead(on, off, higher_is_better=False)
    p, lo, hi = _statsmodels_welch(on, off)
    assert est.overhead == pytest.approx((on.mean() - off.mean()) / off.mean(), rel=1e-12)
    assert est.p_value == pytest.approx(p, rel=1e-9)
    assert est.ci_low == pytest.approx(lo / off.mean(), rel=1e-9)
    assert est.ci_high == pytest.approx(hi / off.mean(), rel=1e-9)
    assert est.n_on == 9 and est.n_off == 12


def test_throughput_overhead_is_the_loss_with_the_interval_mirrored() -> None:
    off = np.array([100.0, 101.0, 99.0, 100.5, 99.5])
    on = np.array([97.0, 98.0, 96.5, 97.5, 98.5])
    est = estimate_overhead(on, off, higher_is_better=True, pi="write_bw")
    p, lo, hi = _statsmodels_welch(on, off)
    # mean_off = 100, mean_on = 97.5: monitoring cost 2.5% of the throughput.
    assert est.overhead == pytest.approx(0.025, rel=1e-12)
    assert est.ci_low == pytest.approx(-hi / 100.0, rel=1e-9)
    assert est.ci_high == pytest.approx(-lo / 100.0, rel=1e-9)
    assert est.p_value == pytest.approx(p, rel=1e-9)
    assert est.detectable
    assert "no detectable" not in est.describe()


def test_hand_computed_case() -> None:
    # on: mean 11, var 1 (n=3); off: mean 10, var 1 (n=3) -> se = sqrt(1/3 + 1/3), df = 4.
    est = estimate_overhead([10.0, 11.0, 12.0], [9.0, 10.0, 11.0], higher_is_better=False)
    se = np.sqrt(2.0 / 3.0)
    t = 1.0 / se
    from scipy.stats import t as student_t

    assert est.df == pytest.approx(4.0)
    assert est.overhead == pytest.approx(0.1)
    assert est.se == pytest.approx(se / 10.0)
    assert est.p_value == pytest.approx(2 * student_t.sf(t, 4))
    assert est.ci_high - est.overhead == pytest.approx(student_t.ppf(0.975, 4) * se / 10.0)


def test_no_detectable_overhead_reports_what_could_have_been_detected() -> None:
    rng = np.random.default_rng(7)
    off = rng.normal(1.0, 0.01, size=20)
    on = rng.normal(1.0, 0.01, size=20)
    est = estimate_overhead(on, off, higher_is_better=False)
    assert not est.detectable
    assert est.ci_low < 0 < est.ci_high
    assert "no detectable overhead at this precision" in est.describe()
    # Equal n and variances: compare with statsmodels' power solver (Cohen's d in sd units).
    sd = np.sqrt((on.var(ddof=1) + off.var(ddof=1)) / 2)
    d = TTestIndPower().solve_power(nobs1=20, alpha=0.05, power=0.8, ratio=1.0)
    assert est.min_detectable == pytest.approx(d * sd / off.mean(), rel=0.05)


def test_identical_readings_are_exact() -> None:
    est = estimate_overhead([1.1, 1.1, 1.1], [1.0, 1.0, 1.0], higher_is_better=False)
    assert est.overhead == pytest.approx(0.1)
    assert est.ci_low == pytest.approx(0.1) and est.ci_high == pytest.approx(0.1)
    assert est.p_value == 0.0 and est.detectable


def test_too_few_rounds_and_bad_numbers_are_refused() -> None:
    with pytest.raises(InsufficientData, match="at least 2 rounds"):
        estimate_overhead([1.0], [1.0, 2.0], higher_is_better=False)
    with pytest.raises(BadInput, match="finite"):
        estimate_overhead([1.0, float("nan")], [1.0, 2.0], higher_is_better=False)
    with pytest.raises(BadInput, match="unmonitored mean is 0"):
        estimate_overhead([1.0, 2.0], [0.0, 0.0], higher_is_better=False)


def test_schedule_is_balanced_random_blocks_and_reproducible() -> None:
    order = interleaved_schedule(50, random.Random(3))
    blocks = [tuple(order[i : i + 2]) for i in range(0, 100, 2)]
    assert all(set(b) == {True, False} for b in blocks)
    firsts = sum(b[0] for b in blocks)
    assert 10 < firsts < 40  # a coin per block, not ABAB
    assert order == interleaved_schedule(50, random.Random(3))
    with pytest.raises(BadInput, match="--pairs"):
        interleaved_schedule(1, random.Random(0))


class _StandInSampler:
    """Marks itself running (the fake workload slows down by 5% while one runs) and logs its
    life; each one reports a different cost, as real samplers of different rounds do."""

    running = 0
    made: list[_StandInSampler] = []

    def __init__(self, rate_hz: float) -> None:
        self.rate_hz = rate_hz
        self.index = len(_StandInSampler.made)
        self.log: list[tuple[str, float]] = []
        _StandInSampler.made.append(self)

    def start(self) -> None:
        _StandInSampler.running += 1
        self.log.append(("start", time.monotonic()))

    def stop(self) -> None:
        _StandInSampler.running -= 1
        self.log.append(("stop", time.monotonic()))

    def cost(self) -> dict[str, float]:
        # No per-sample figure and no wake-up count: the probe derives them.
        self.log.append(("cost", time.monotonic()))
        return {
            "cpu_seconds_per_second": 1e-3 * (1 + self.index % 4),
            "memory_bytes": 1e6 * (1 + self.index % 3),
        }


class _FakeWorkload:
    name = "fake"

    def __init__(self) -> None:
        self.calls: list[bool] = []
        self.durations: list[float] = []
        self.rng = np.random.default_rng(0)

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="ops", unit="ops/s")]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        monitored = _StandInSampler.running > 0
        self.calls.append(monitored)
        duration = work_amount * (1.05 if monitored else 1.0) * (1 + self.rng.normal(0, 0.002))
        self.durations.append(duration)
        return RoundOutput(
            work_amount=work_amount, duration=duration, readings={"ops": 1000 / duration}
        )

    def data_path_args(self) -> list[str]:
        return []


def _factory(rate: float) -> _StandInSampler:
    return _StandInSampler(rate)


def _arms(workload: _FakeWorkload, first: int) -> tuple[np.ndarray, np.ndarray]:
    """The durations the workload itself saw from round ``first`` on: monitored, unmonitored."""
    seen = np.array(workload.durations[first:])
    monitored = np.array(workload.calls[first:])
    return seen[monitored], seen[~monitored]


def test_workload_probe_interleaves_and_compares_what_the_workload_saw(tmp_path: Path) -> None:
    workload = _FakeWorkload()
    _StandInSampler.made.clear()
    probe = WorkloadProbe(
        workload, work_amount=2.0, pairs=6, sampler_factory=_factory, workdir=tmp_path, seed=1
    )
    m = probe.measure(50.0)
    assert workload.calls[0] is False  # the uncounted warm-up round runs unmonitored
    assert workload.calls[1:] == m.schedule
    # The comparison is of the arms as the workload lived them, by statsmodels' Welch test.
    on, off = _arms(workload, first=1)
    assert sorted(m.readings_on) == sorted(on) and sorted(m.readings_off) == sorted(off)
    p, lo, hi = _statsmodels_welch(on, off)
    assert m.estimate.overhead == pytest.approx(on.mean() / off.mean() - 1, rel=1e-9)
    assert m.estimate.p_value == pytest.approx(p, rel=1e-9)
    interval = (m.estimate.ci_low, m.estimate.ci_high)
    assert interval == pytest.approx((lo / off.mean(), hi / off.mean()))
    # One sampler per monitored round, started before and stopped after it, its cost read last;
    # the measurement's cost is the mean over those rounds (memory: the largest).
    samplers = _StandInSampler.made
    assert len(samplers) == sum(m.schedule) == 6
    assert all([event for event, _ in s.log] == ["start", "stop", "cost"] for s in samplers)
    costs = [s.cost() for s in samplers]
    per_second = np.mean([c["cpu_seconds_per_second"] for c in costs])
    assert m.monitor_cost is not None
    assert m.monitor_cost.cpu_seconds_per_second == pytest.approx(per_second)
    assert m.monitor_cost.cpu_seconds_per_sample == pytest.approx(per_second / 50.0)
    assert m.monitor_cost.wakeups_per_second == 50.0
    assert m.monitor_cost.memory_bytes == max(c["memory_bytes"] for c in costs)
    # A higher-is-better reading: the overhead is the loss of throughput.
    rate_probe = WorkloadProbe(
        workload,
        work_amount=2.0,
        pi="ops",
        pairs=6,
        sampler_factory=_factory,
        workdir=tmp_path,
        seed=2,
    )
    assert rate_probe.higher_is_better
    before = len(workload.durations)
    rated = rate_probe.measure(50.0)
    on, off = _arms(workload, first=before + 1)  # after its own warm-up round
    loss = 1 - (1000 / on).mean() / (1000 / off).mean()
    assert rated.estimate.overhead == pytest.approx(loss, rel=1e-9)
    with pytest.raises(BadInput, match="no reading 'latency'"):
        WorkloadProbe(
            workload, pi="latency", pairs=2, sampler_factory=_factory, workdir=tmp_path
        ).measure(20.0)


def test_monitor_cost_alone_samples_for_the_time_asked() -> None:
    _StandInSampler.made.clear()
    cost = measure_monitor_cost(40.0, seconds=0.05, sampler_factory=_factory)
    (sampler,) = _StandInSampler.made
    (start, started), (stop, stopped), (read, _) = sampler.log
    assert (start, stop, read) == ("start", "stop", "cost")
    assert stopped - started >= 0.05
    assert cost.cpu_seconds_per_sample == pytest.approx(1e-3 / 40.0)
    assert cost.wakeups_per_second == 40.0  # a sampler that counts no wake-ups: one a tick


def test_a_simulated_overhead_is_covered_by_its_interval_at_the_stated_rate() -> None:
    """Over many seeds, the 95% interval holds the simulated probe's true overhead about 95% of
    the time: the probe and the comparison together are calibrated."""
    truth = 1e-4 * 50.0
    covered = [
        (
            m := SimulatedProbe(lambda r: 1e-4 * r, noise=0.003, pairs=10, seed=seed).measure(50.0)
        ).estimate.ci_low
        <= truth
        <= m.estimate.ci_high
        for seed in range(400)
    ]
    # Binomial(400, 0.95): three standard deviations are 0.033.
    assert 0.917 <= np.mean(covered) <= 0.983


def test_trimmed_comparison_matches_statsmodels_yuen_and_resists_an_outlier() -> None:
    from scipy.stats import trim_mean
    from statsmodels.stats.oneway import anova_oneway

    rng = np.random.default_rng(11)
    off = rng.normal(1.0, 0.01, size=20)
    on = rng.normal(1.03, 0.01, size=20)
    on[4] = 0.5  # a round that a neighbour's burst... made impossibly fast: one wild value
    plain = estimate_overhead(on, off, higher_is_better=False)
    robust = estimate_overhead(on, off, higher_is_better=False, trim=0.1)
    # Welch-Yuen, F = t^2 for 2 groups
    ref = anova_oneway([on, off], use_var="unequal", trim_frac=0.1)
    assert robust.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert robust.df == pytest.approx(ref.df[1], rel=1e-9)
    assert robust.overhead == pytest.approx(trim_mean(on, 0.1) / trim_mean(off, 0.1) - 1, rel=1e-12)
    assert robust.detectable and robust.overhead == pytest.approx(0.03, abs=0.01)
    assert not plain.detectable  # the outlier inflates the plain variance past significance
    with pytest.raises(BadInput, match="--trim"):
        estimate_overhead(on, off, higher_is_better=False, trim=0.5)


def test_unmonitored_rounds_can_run_the_uninstrumented_variant(tmp_path: Path) -> None:
    instrumented, plain = _FakeWorkload(), _FakeWorkload()
    probe = WorkloadProbe(
        instrumented,
        uninstrumented=plain,
        pairs=3,
        warmup_rounds=0,
        sampler_factory=_factory,
        workdir=tmp_path,
        seed=0,
    )
    m = probe.measure(10.0)
    assert instrumented.calls == [True] * 3 and plain.calls == [False] * 3
    assert m.estimate.overhead == pytest.approx(0.05, abs=0.01)
