"""EDM change points: exactness of the fast paths, calibration on noise, accuracy, incremental
form."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilot_sys.stats._changepoint_null import kuiper_isf, kuiper_sf
from pilot_sys.stats._changepoint_ranks import (
    position_keys,
    ranks_from_order,
    segment_order,
    split_medians,
)
from pilot_sys.stats._changepoint_statistic import _cusum_scan
from pilot_sys.stats.changepoint import (
    IncrementalEDM,
    critical_value,
    default_min_size,
    dependence_factor,
    detect,
    detect_exact,
)


def _near(found: list[int], truth: list[int], margin: int) -> bool:
    return len(found) == len(truth) and all(
        abs(f - t) <= margin for f, t in zip(found, truth, strict=True)
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=2, max_value=600), st.integers(min_value=0, max_value=2**32 - 1))
def test_batched_split_medians_equal_numpy_medians(m: int, seed: int) -> None:
    ranks = np.random.default_rng(seed).permutation(m)
    order = np.argsort(ranks)
    splits = np.arange(1, m)
    left, right = split_medians(ranks, order, splits)
    np.testing.assert_array_equal(left, [np.median(ranks[:k]) for k in splits])
    np.testing.assert_array_equal(right, [np.median(ranks[k:]) for k in splits])


def test_tie_broken_ranks_are_a_permutation_in_value_order() -> None:
    values = np.array([3.0, 1.0, 3.0, 2.0, 1.0, 3.0])
    order = segment_order(values, position_keys(0, values.size))
    ranks = ranks_from_order(order)
    assert sorted(ranks.tolist()) == list(range(values.size))
    assert np.all(np.diff(values[order]) >= 0)  # sorted by value, ties in key order


def test_fast_median_form_equals_quadratic_reference() -> None:
    rng = np.random.default_rng(11)
    cases = [
        np.concatenate([rng.normal(3, 1, 150), rng.normal(0, 1, 600), rng.normal(1.5, 1, 150)]),
        np.concatenate([rng.standard_t(2, 400), rng.standard_t(2, 400) * 4]),
        rng.lognormal(0, 1, 700),
        np.round(np.concatenate([rng.exponential(2, 300), rng.exponential(1, 500)])),  # heavy ties
    ]
    for x in cases:
        fast = detect(x, statistic="median")
        exact = detect_exact(x)
        assert fast.changepoints == exact.changepoints
        assert [d.statistic for d in fast.details] == pytest.approx(
            [d.statistic for d in exact.details]
        )


def test_fast_median_grid_matches_exact_on_a_long_series() -> None:
    # n = 6000 leaves more than 2048 candidate splits, so the grid + refinement path runs.
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(0, 1, 2500), rng.normal(1, 1, 3500)])
    fast = detect(x, statistic="median", scale=False)
    exact = detect_exact(x, scale=False)
    assert fast.changepoints == exact.changepoints


def test_default_sign_form_agrees_with_exact_edm_on_decisions() -> None:
    rng = np.random.default_rng(21)
    for _ in range(4):
        null = rng.standard_t(3, 800)
        assert detect(null).changepoints == [] and detect_exact(null).changepoints == []
        shifted = np.concatenate([rng.normal(0, 1, 400), rng.normal(1.5, 1, 400)])
        assert _near(detect(shifted).changepoints, [400], 10)
        assert _near(detect_exact(shifted).changepoints, [400], 10)


def test_unbalanced_shift_is_located_where_the_exact_median_form_drifts() -> None:
    # A median stays in the majority component: the literal EDM split lands late, the sign form
    # does not.
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(5, 1, 300), rng.normal(0, 1, 2300)])
    assert _near(detect(x).changepoints, [300], 3)
    assert any(c > 400 for c in detect_exact(x).changepoints)  # a spurious split past the real one


def test_null_statistic_follows_kuiper() -> None:
    # Under no change the bridge-scaled CUSUM range is Kuiper-distributed: compare with an
    # independent simulation of sup B - inf B for a Brownian bridge.
    rng = np.random.default_rng(3)
    stats = np.array([_cusum_scan(np.cumsum(rng.random(4000) > 0.5), 1)[1] for _ in range(600)])
    walk = np.cumsum(rng.normal(size=(600, 4000)), axis=1)
    bridge = (walk - np.arange(1, 4001) / 4000 * walk[:, -1:]) / np.sqrt(4000)
    reference = np.maximum(bridge.max(axis=1), 0) - np.minimum(bridge.min(axis=1), 0)
    for q in (0.5, 0.9, 0.95):
        assert np.quantile(stats, q) == pytest.approx(np.quantile(reference, q), rel=0.08)
        assert kuiper_sf(float(np.quantile(reference, q))) == pytest.approx(1 - q, abs=0.03)
    assert kuiper_isf(0.05) == pytest.approx(1.747, abs=1e-3)  # published table value
    assert kuiper_isf(0.01) == pytest.approx(2.001, abs=1e-3)


@pytest.mark.parametrize(
    "sampler",
    [
        lambda rng, n: rng.normal(size=n),
        lambda rng, n: rng.standard_cauchy(n),
        lambda rng, n: rng.lognormal(0, 2, n),
        lambda rng, n: rng.pareto(1.1, n),
        lambda rng, n: rng.poisson(1.5, n).astype(float),  # quantised readings: most values tied
    ],
    ids=["normal", "cauchy", "lognormal", "pareto", "poisson-ties"],
)
def test_false_positive_rate_on_pure_noise_is_small_for_any_distribution(sampler) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    trials = 0
    alarms = 0
    for n in (40, 300, 3000):
        for _ in range(80):
            trials += 1
            alarms += bool(detect(sampler(rng, n)).changepoints)
    assert alarms / trials <= 0.03


def test_autocorrelated_noise_does_not_manufacture_change_points() -> None:
    rng = np.random.default_rng(9)
    alarms_adjusted = alarms_naive = 0
    for _ in range(60):
        e = rng.normal(size=3000)
        ar = np.empty_like(e)
        ar[0] = e[0]
        for i in range(1, e.size):
            ar[i] = 0.6 * ar[i - 1] + e[i]
        alarms_adjusted += bool(detect(ar).changepoints)
        alarms_naive += bool(detect(ar, dependence=False).changepoints)
    assert alarms_adjusted / 60 <= 0.08
    assert alarms_naive > alarms_adjusted  # the adjustment is what keeps the rate low


def test_dependence_factor_is_one_for_independent_and_large_for_dependent_signs() -> None:
    rng = np.random.default_rng(2)
    independent = rng.random(20000) > 0.5
    assert dependence_factor(np.cumsum(independent), (10000,)) == pytest.approx(1.0, abs=0.15)
    runs = np.repeat(rng.random(2000) > 0.5, 10)  # each sign repeated 10 times: variance ratio ~ 10
    assert dependence_factor(np.cumsum(runs), (10000,)) > 4.0


def test_decisions_do_not_depend_on_units_or_monotone_transforms() -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate(
        [rng.lognormal(0, 0.5, 500), rng.lognormal(0.4, 0.5, 700), rng.lognormal(0, 1.2, 400)]
    )
    base = detect(x)
    assert base.changepoints  # something to compare
    for transformed in (x * 1e-9, x * 1e6 + 3.0, np.log(x), np.sqrt(x)):
        assert detect(transformed).changepoints == base.changepoints


def test_level_shift_variance_change_and_cool_down_are_found() -> None:
    rng = np.random.default_rng(6)
    level = np.concatenate([rng.normal(0, 1, 2000), rng.normal(0.8, 1, 2000)])
    assert _near(detect(level).changepoints, [2000], 40)
    spread = np.concatenate([rng.normal(0, 1, 2000), rng.normal(0, 3, 2000)])
    result = detect(spread)
    assert _near(result.changepoints, [2000], 60)
    assert result.details[0].kind == "scale"
    cooldown = np.concatenate(
        [rng.normal(10, 1, 5000), 10 + np.linspace(0, 8, 500) + rng.normal(0, 1, 500)]
    )
    found = detect(cooldown).changepoints
    assert found and 5000 <= found[0] <= 5250 and all(c >= 5000 for c in found)


def test_isolated_outliers_do_not_create_change_points() -> None:
    rng = np.random.default_rng(8)
    misses = 0
    for _ in range(30):
        x = rng.normal(size=2000)
        x[rng.choice(2000, 12, replace=False)] = 1e6  # 0.6% wild readings
        misses += bool(detect(x).changepoints)
    assert misses <= 1


def test_warm_up_ramp_is_cut_off_and_the_stable_segment_dominates() -> None:
    rng = np.random.default_rng(12)
    ramp = np.linspace(50, 10, 600) + rng.normal(0, 1, 600)
    x = np.concatenate([ramp, rng.normal(10, 1, 6000), rng.normal(16, 1, 400)])
    result = detect(x)
    assert result.stable_segment is not None
    begin, end = result.stable_segment
    assert 450 <= begin <= 700 and 6550 <= end <= 6650
    assert result.segments[0].median > 30  # the first segment is the cold start
    assert "holds" in result.stable_reason


def test_no_stable_segment_without_a_majority() -> None:
    rng = np.random.default_rng(13)
    x = np.concatenate([rng.normal(0, 1, 1000), rng.normal(5, 1, 1000), rng.normal(10, 1, 1000)])
    result = detect(x)
    assert _near(result.changepoints, [1000, 2000], 5)
    assert result.stable_segment is None
    assert result.stable_reason.startswith("no stable phase")


def test_segments_cover_the_series_and_carry_their_medians() -> None:
    rng = np.random.default_rng(14)
    x = np.concatenate([rng.normal(0, 1, 700), rng.normal(4, 1, 900)])
    result = detect(x)
    assert result.segments[0].begin == 0 and result.segments[-1].end == x.size
    for seg in result.segments:
        assert seg.median == pytest.approx(float(np.median(x[seg.begin : seg.end])))
    assert result.n == x.size
    assert result.penalty == pytest.approx(critical_value(0.01, 2))


def test_min_size_and_penalty_are_honoured() -> None:
    rng = np.random.default_rng(15)
    x = np.concatenate([rng.normal(0, 1, 1000), rng.normal(3, 1, 150), rng.normal(0, 1, 1000)])
    assert _near(detect(x, min_size=50).changepoints, [1000, 1150], 5)
    coarse = detect(x, min_size=400).changepoints
    bounds = [0, *coarse, x.size]
    assert all(b - a >= 400 for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    assert detect(x, min_size=50, penalty=1e9).changepoints == []
    assert default_min_size(10**6) == 512 and default_min_size(100) == 10


def test_incremental_updates_agree_with_detect_on_the_concatenation() -> None:
    rng = np.random.default_rng(16)
    x = np.concatenate(
        [
            np.linspace(20, 5, 800) + rng.normal(0, 1, 800),
            np.round(rng.normal(5, 1, 9000), 1),  # ties
            rng.normal(7, 2, 1200),
        ]
    )
    inc = IncrementalEDM()
    pos = 0
    while pos < x.size:
        step = int(rng.integers(200, 1500))
        got = inc.update(x[pos : pos + step])
        pos = min(x.size, pos + step)
        want = detect(x[:pos])
        assert got.changepoints == want.changepoints
        assert got.stable_segment == want.stable_segment
    assert inc.n == x.size and np.array_equal(inc.values, x)


def test_bad_series_are_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        detect(np.array([1.0, np.nan, 2.0] * 20))
    with pytest.raises(ValueError, match="1-D"):
        detect(np.ones((4, 4)))
    with pytest.raises(ValueError, match="min_size"):
        detect(np.arange(100.0), min_size=1)


def test_short_series_have_no_change_points_and_one_segment() -> None:
    result = detect(np.arange(15.0))
    assert result.changepoints == [] and result.stable_segment == (0, 15)


def test_seeded_stage_finds_per_round_warm_ups_that_one_split_cannot() -> None:
    # Eight rounds, each starting cold: no single split of the whole series explains them.
    rng = np.random.default_rng(17)
    rounds, length, warm = 8, 1000, 100
    x = rng.normal(10, 1, rounds * length)
    for r in range(rounds):
        x[r * length : r * length + warm] += 3.0
    truth = sorted(
        {r * length for r in range(1, rounds)} | {r * length + warm for r in range(rounds)}
    )
    assert detect(x, seeded=False).changepoints == []
    assert _near(detect(x).changepoints, truth, 15)
    assert all(d.p_value < 0.01 for d in detect(x).details)


def test_seeded_intervals_cover_every_scale_down_to_four_min_sizes() -> None:
    from pilot_sys.stats.changepoint import seeded_intervals

    intervals = seeded_intervals(4096, 32)
    lengths = intervals[:, 1] - intervals[:, 0]
    assert lengths.max() == 2048 and lengths.min() == 128
    assert intervals.min() == 0 and intervals.max() == 4096
    for length in (2048, 1024, 512, 256, 128):  # each layer tiles [0, n) with half-overlaps
        starts = np.sort(intervals[lengths == length, 0])
        assert (
            starts[0] == 0
            and starts[-1] + length == 4096
            and np.all(np.diff(starts) <= length // 2)
        )
