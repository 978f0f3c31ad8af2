"""Dual-gate steady state and the three-regime report."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pilot_sys.errors import InsufficientData
from pilot_sys.stats.steady import (
    DEFAULT_HISTORY,
    MIN_WINDOW,
    choose_window,
    detect_steady_state,
    tail_quantile_for,
)


def _warm_series(n: int, seed: int, tau: float = 400.0) -> np.ndarray:
    """Cold tail decaying from ~380 to 4 (seed 003's shape) plus lognormal noise."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    return 4.0 + 376.0 * np.exp(-i / tau) + 0.5 * rng.lognormal(0.0, 0.3, n)


def test_cold_tail_is_cut_and_steady_percentiles_are_exact() -> None:
    lat = _warm_series(100_000, seed=1)
    result = detect_steady_state(lat, method="dual-gate")
    start = result.steady_state_start
    assert start is not None
    # 376 exp(-i/400) falls below 2% of the ~4.5 floor after ~2800 iterations;
    # windows are 10^4 long.
    assert result.window == 10_000 and start == 10_000
    steady = lat[start:]
    assert result.steady is not None
    assert result.steady.n == steady.size
    assert result.steady.median == pytest.approx(np.median(steady))
    assert result.steady.p99 == pytest.approx(np.percentile(steady, 99))
    assert result.steady.p999 == pytest.approx(np.percentile(steady, 99.9))
    assert result.steady.max == steady.max()
    assert result.raw.p999 > 10 * result.steady.p999  # the cold tail inflates the raw tail
    assert result.warmup_iterations == start
    assert result.cold_start_cost == pytest.approx(lat[:start].sum())
    assert result.cold_start_excess == pytest.approx(lat[:start].sum() - start * np.median(steady))
    assert result.time_to_steady_state == pytest.approx(lat[:start].sum())
    assert "from iteration 10000" in result.reason


def test_time_to_steady_state_uses_timestamps_or_the_latency_unit() -> None:
    lat_ms = _warm_series(20_000, seed=2, tau=150.0)
    start_times = np.concatenate([[0.0], np.cumsum(lat_ms[:-1]) * 1e-3]) + 100.0
    with_stamps = detect_steady_state(lat_ms, method="dual-gate", timestamps=start_times)
    in_ms = detect_steady_state(lat_ms, method="dual-gate", seconds_per_unit=1e-3)
    start = with_stamps.steady_state_start
    assert start is not None and start == in_ms.steady_state_start
    assert with_stamps.time_to_steady_state == pytest.approx(start_times[start] - start_times[0])
    assert in_ms.time_to_steady_state == pytest.approx(lat_ms[:start].sum() * 1e-3)


def test_stationary_series_is_steady_from_the_start() -> None:
    rng = np.random.default_rng(3)
    for sample in (
        rng.lognormal(0, 1, 20_000),
        rng.exponential(1.0, 20_000),
        rng.normal(100, 5, 20_000),
    ):
        result = detect_steady_state(sample, method="dual-gate")
        assert result.steady_state_start == 0
        assert result.cold_start_cost == 0.0 and result.time_to_steady_state == 0.0


def test_a_run_that_never_settles_is_a_valid_explained_answer() -> None:
    rng = np.random.default_rng(4)
    drifting = np.linspace(10.0, 2.0, 30_000) + rng.normal(0, 0.1, 30_000)
    result = detect_steady_state(drifting, method="dual-gate")
    assert result.steady_state_start is None and result.steady is None
    assert result.reason.startswith("no steady state reached") and "run longer" in result.reason
    assert result.cold_start_cost == pytest.approx(drifting.sum())
    assert result.warmup_iterations is None and result.time_to_steady_state is None


def test_tail_gate_waits_for_a_slow_path_the_median_gate_misses() -> None:
    # Seed 003's bimodal warm-up: 1 in 100 iterations takes a slow path whose cost decays late.
    rng = np.random.default_rng(5)
    n = 400_000
    i = np.arange(n)
    lat = 1.0 + 0.05 * rng.random(n)
    slow = rng.random(n) < 0.01
    lat[slow] += 5.0 + 20.0 * np.exp(-i[slow] / 60_000)
    dual = detect_steady_state(lat, method="dual-gate")
    median_only = detect_steady_state(lat, method="dual-gate", tail_tolerance=1e9)
    assert median_only.steady_state_start == 0
    assert dual.steady_state_start is not None and dual.steady_state_start >= 150_000
    assert "p99.9" in dual.reason


def test_noisy_but_stationary_windows_pass_through_the_noise_allowance() -> None:
    # Small windows of a heavy-tailed series: the median's sampling error alone exceeds 2%.
    rng = np.random.default_rng(6)
    sample = rng.lognormal(0, 1.5, 3000)
    result = detect_steady_state(sample, method="dual-gate")
    assert result.window == 300 and result.tail_quantile == pytest.approx(1 - 10 / 300)
    assert result.steady_state_start is not None


def test_window_sizing_rules() -> None:
    assert choose_window(1_000_000) == 10_000
    assert choose_window(50_000) == 5_000
    assert choose_window(150) == MIN_WINDOW
    assert tail_quantile_for(10_000) == pytest.approx(0.999)
    assert tail_quantile_for(1_000) == pytest.approx(0.99)
    lat = _warm_series(30_000, seed=7, tau=100.0)
    assert detect_steady_state(lat, method="dual-gate", window=500).window == 500


def test_too_few_samples_are_answered_and_bad_arguments_refused() -> None:
    short = detect_steady_state(np.ones(DEFAULT_HISTORY * MIN_WINDOW - 1), method="dual-gate")
    assert short.too_short and short.steady_state_start is None
    assert short.reason == "too short to show a steady state: 99 readings, at least 100 needed"
    assert detect_steady_state(np.ones(1000), method="dual-gate", window=400).too_short
    two = detect_steady_state(np.array([3.0, 1.0]))
    assert two.too_short and two.reason.endswith("2 readings, at least 20 needed")
    assert two.raw.n == 2 and two.raw.max == 3.0 and two.cold_start_cost == 4.0
    with pytest.raises(InsufficientData, match="no readings"):
        detect_steady_state(np.array([]))
    with pytest.raises(ValueError, match="NaN"):
        detect_steady_state(np.array([1.0, np.nan] * 100), method="dual-gate")
    with pytest.raises(ValueError, match="timestamps"):
        detect_steady_state(np.ones(500), method="dual-gate", timestamps=np.ones(10))


@pytest.mark.live
def test_real_python_workload_warms_up_and_settles() -> None:
    # A real warm-up on this machine: the first calls of a freshly compiled function pay for
    # allocation and caches; time every iteration with perf_counter_ns.
    def work(buf: list[int]) -> int:
        total = 0
        for v in buf:
            total += v * v
        return total

    data = list(range(200))
    lat = np.empty(20_000)
    for k in range(lat.size):
        t0 = time.perf_counter_ns()
        work(data)
        lat[k] = (time.perf_counter_ns() - t0) * 1e-3  # microseconds
    result = detect_steady_state(lat, method="dual-gate", seconds_per_unit=1e-6)
    assert result.raw.n == lat.size
    if result.steady_state_start is not None:
        assert result.steady is not None
        assert result.steady.median == pytest.approx(np.median(lat[result.steady_state_start :]))
        assert result.time_to_steady_state == pytest.approx(
            lat[: result.steady_state_start].sum() * 1e-6
        )
    else:  # a noisy shared VM may never settle; then the answer must say so
        assert "no steady state reached" in result.reason


def test_analyze_warmup_steady_says_why_it_kept_every_sample() -> None:
    from pilot_sys.cli.analyze import find_stable_part

    noise = 1 + 0.02 * np.random.default_rng(13).standard_normal(3000)
    part, warnings = find_stable_part(np.linspace(2.0, 1.0, 3000) * noise, "steady")
    assert not part.found and (part.begin, part.end) == (0, 3000)
    assert warnings[0].startswith(
        "warm-up removal (steady): no steady part: readings [0, 3000) (100.0% of the series) "
        "follow a trend"
    )
    part, warnings = find_stable_part(np.ones(12), "steady")
    assert not part.found
    assert warnings == [
        "warm-up removal (steady): too short to show a change: 12 readings, two segments of 10 "
        "needed; no reading is called warm-up; all samples are used"
    ]
