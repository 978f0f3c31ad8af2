"""Where the level settles: PELT segments, the outlier rule and the Kalibera walk-back."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.errors import InsufficientData
from pilot_sys.stats.outliers import guard_length, guarded_outliers, window_outliers
from pilot_sys.stats.pelt import pelt_meanvar
from pilot_sys.stats.settle import (
    differs,
    dominant_run,
    normal_differs,
    ratio_interval,
    settle,
    settled_start,
)
from pilot_sys.stats.steady import detect_steady_state
from tests.optimal_partition import optimal_partition


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("penalty", [8.0, 20.0])
@pytest.mark.parametrize("min_size", [2, 7])
def test_pelt_equals_brute_force_optimal_partitioning(
    seed: int, penalty: float, min_size: int
) -> None:
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(0, 1, 50), rng.normal(2, 1, 40), rng.normal(2, 3, 60)])
    assert pelt_meanvar(x, penalty, min_size).changepoints == optimal_partition(
        x, penalty, min_size
    )


def test_pelt_finds_a_mean_step_and_a_variance_step() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(10, 1, 400), rng.normal(13, 1, 300), rng.normal(13, 4, 300)])
    cuts = pelt_meanvar(x, 20 * math.log(x.size)).changepoints
    assert len(cuts) == 2 and abs(cuts[0] - 400) <= 3 and abs(cuts[1] - 700) <= 15


def test_ratio_interval_of_long_segments_is_the_normal_one() -> None:
    # over EXACT_RESAMPLE readings the means are drawn from their normal approximation:
    # ratio 2; relative variance 1/(5000*4) + 1/(5000*1); half width 1.96 * 2 * sqrt(that)
    rng = np.random.default_rng(20)
    a, b = rng.normal(2.0, 1.0, 5000), rng.normal(1.0, 1.0, 5000)
    low, high = ratio_interval(a, b)
    ratio = a.mean() / b.mean()
    rel = a.var() / (5000 * a.mean() ** 2) + b.var() / (5000 * b.mean() ** 2)
    assert (low + high) / 2 == pytest.approx(ratio, rel=2e-3)
    assert (high - low) / 2 == pytest.approx(1.959964 * ratio * math.sqrt(rel), rel=0.05)


def test_ratio_interval_of_a_skewed_short_segment_is_its_bootstrap() -> None:
    # 30 readings, two of them 9x slower: one draw in eight holds neither, so the interval of
    # last / segment reaches up to 1 (same level), further above the ratio than below it
    segment = np.r_[np.full(28, 1.0), 9.0, 9.0] + np.linspace(0, 0.01, 30)
    last = 1.0 + 0.01 * np.random.default_rng(21).standard_normal(3000)
    low, high = ratio_interval(last, segment)
    # independent reference: a plain percentile bootstrap with another generator
    rng = np.random.default_rng(22)
    ref = np.array(
        [
            rng.choice(last, last.size).mean() / rng.choice(segment, segment.size).mean()
            for _ in range(4000)
        ]
    )
    ref_low, ref_high = np.quantile(ref, [0.025, 0.975])
    assert low == pytest.approx(ref_low, abs=0.02) and high == pytest.approx(ref_high, abs=0.02)
    ratio = last.mean() / segment.mean()
    assert high - ratio > ratio - low and high > 0.95
    assert not differs(last, segment)  # two slow readings are no proof of another level
    assert differs(last, 1.2 * segment[:28])  # 20% slower throughout is


def test_walk_back_stops_at_the_first_segment_that_differs_from_the_last() -> None:
    # segments: 20 | 10.2 | 10 | 10.1 ; only the first differs by more than 5% from the last
    x = np.concatenate(
        [np.full(100, 20.0), np.full(100, 10.2), np.full(100, 10.0), np.full(100, 10.1)]
    )
    x = x + np.tile([-0.01, 0.01], 200)
    assert settled_start(x, [100, 200, 300]) == 100
    assert settled_start(x, [100, 200, 300], tolerance=0.001) == 300
    assert settled_start(x[100:], [100, 200]) == 0


def test_outliers_are_spikes_not_steps() -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(10, 0.1, 1000), rng.normal(20, 0.1, 1000)])
    x[[300, 1500]] = [40.0, 60.0]
    flagged = np.flatnonzero(window_outliers(x))
    assert {300, 1500} <= set(flagged.tolist())
    # only the 1% edge of the step (window // 100 = 2 readings a side) is taken as outliers
    assert set(range(990, 1010)) & set(flagged.tolist()) <= {998, 999, 1000, 1001}


def test_dominant_run_joins_the_pieces_of_one_phase_and_leaves_the_edges() -> None:
    rng = np.random.default_rng(14)
    level = np.r_[np.linspace(0.5, 1.0, 50), np.ones(900), np.linspace(1.0, 0.6, 50)]
    x = 100 * level * (1 + 0.02 * rng.standard_normal(1000))
    # a detector that cut the stable phase in three: the pieces join, warm-up and cool-down stay out
    assert dominant_run(x, [50, 400, 700, 950], tolerance=0.0) == (50, 950)
    # the same level with three times the noise from 700 on is another state
    y = x.copy()
    y[700:950] = 100 + 3 * (y[700:950] - 100)
    assert dominant_run(y, [50, 400, 700, 950], tolerance=0.0) == (50, 700)
    # 3 % lower from 700 on: a difference at tolerance 0, none at Kalibera's 5 %
    z = x.copy()
    z[700:950] *= 0.97
    assert dominant_run(z, [50, 400, 700, 950], tolerance=0.0) == (50, 700)
    assert dominant_run(z, [50, 400, 700, 950], tolerance=0.05) == (50, 950)
    assert normal_differs(x[50:400], 0.9 * x[400:700]) and not normal_differs(x[50:400], x[400:700])


def test_the_guard_keeps_the_first_readings_of_a_run() -> None:
    # 1 ms iterations: ceil(0.1 s / 1 ms) = 100, guard ceil(200 / ln 101) = 44 readings
    assert guard_length(1e-3) == 44 and guard_length(1e-6) == 18 and guard_length(2.0) == 289
    rng = np.random.default_rng(12)
    x = 1e-3 * (1 + 0.01 * rng.standard_normal(2000))
    x[[5, 30, 500]] = 0.05  # two cold iterations in the guard, a pause after it
    assert set(np.flatnonzero(window_outliers(x)).tolist()) == {5, 30, 500}
    assert np.flatnonzero(guarded_outliers(x, float(x.mean()))).tolist() == [500]


def _noisy(levels: list[tuple[float, int]], seed: int, sd: float = 0.02) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([level * (1 + sd * rng.standard_normal(k)) for level, k in levels])


def test_settles_at_a_step_and_ignores_outlier_bursts() -> None:
    x = _noisy([(1.3, 300), (1.0, 2700)], seed=5)
    x[[900, 901, 902, 2000]] *= 30.0  # GC pauses in the steady part
    found = settle(x)
    # the window rule takes the step's edge readings (1% of a window) for outliers, and left-out
    # readings join the later segment: the start may come up to two readings early
    assert found.start is not None and 298 <= found.start <= 300


def test_stationary_series_is_steady_from_the_start() -> None:
    assert settle(_noisy([(1.0, 3000)], seed=6)).start == 0


def test_a_difference_under_the_tolerance_is_no_warm_up() -> None:
    x = _noisy([(1.03, 500), (1.0, 2500)], seed=7, sd=0.01)
    assert settle(x).start == 0
    assert settle(x, tolerance=0.01).start == 500


def test_the_end_still_moving_is_no_steady_state() -> None:
    rng = np.random.default_rng(8)
    drift = np.linspace(2.0, 1.0, 3000) * (1 + 0.02 * rng.standard_normal(3000))
    found = settle(drift)
    assert found.start is None and found.reason.startswith("no steady state")
    late = _noisy([(1.0, 2700), (1.5, 300)], seed=9)
    assert settle(late).start is None  # 300 settled readings < a sixth of 3000


def test_issue_15_two_levels_is_not_steady_from_iteration_0() -> None:
    rng = np.random.default_rng(10)
    x = np.concatenate([rng.normal(5, 0.5, 15_000), rng.normal(8, 0.5, 5_000)])
    result = detect_steady_state(x, method="segments")
    assert result.steady_state_start is not None and abs(result.steady_state_start - 15_000) <= 5
    assert result.steady is not None and result.steady.median == pytest.approx(8.0, abs=0.05)


@pytest.mark.slow
def test_issue_15_half_a_million_warm_up_in_ten_million() -> None:
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.normal(5, 0.5, 500_000), rng.normal(3, 0.5, 9_500_000)])
    t0 = time.perf_counter()
    result = detect_steady_state(x, method="segments")
    seconds = time.perf_counter() - t0
    assert result.steady_state_start is not None and abs(result.steady_state_start - 500_000) <= 50
    assert seconds < 20.0  # about 1.5 s on an idle core; generous for a loaded CI machine


def test_short_series() -> None:
    with pytest.raises(InsufficientData, match="19 readings: at least 20"):
        settle(np.ones(19))
    assert settle(np.ones(20)).start == 0
    assert settle(np.r_[np.full(10, 2.0), np.full(30, 1.0)] + np.tile([0.0, 0.001], 20)).start == 10


def _dev_set() -> Path | None:
    root = Path(__file__).resolve().parents[1]
    for shared in (root.parent / "shared", root.parent.parent / "shared"):
        if (shared / "data" / "jmh-steady-dev" / "labels.json").is_file():
            return shared / "data" / "jmh-steady-dev"
    return None


@pytest.mark.skipif(_dev_set() is None, reason="the JMH dev set (shared/data) is not here")
@pytest.mark.parametrize(("name", "fork"), [("d007", 2), ("d007", 7), ("d027", 4)])
def test_real_jmh_forks_get_the_studys_labels(name: str, fork: int) -> None:
    # a warm-up of 2,045 iterations, a run whose end still moves, a 28-iteration warm-up
    data = _dev_set()
    assert data is not None
    x = np.load(data / "series.npz")[name][fork]
    label = json.loads((data / "labels.json").read_text())[name]["steady_state_starts"][fork]
    start = detect_steady_state(x, method="segments").steady_state_start
    assert (-1 if start is None else max(start - 1, 0)) == label
