"""Short segments tested in rounds (``_changepoint_rounds``, ``_changepoint_flat``) against
the one-by-one path.

The rounds are a fast path only: every change point, statistic, p-value, kind and segment
median must be exactly what testing the segments one at a time (``_Scans.test``) gives, on
seeded series with many change points, tied stretches, and each option that changes the scans.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import _changepoint_flat as flat
from pilot_sys.stats import _changepoint_rounds as rounds
from pilot_sys.stats import _changepoint_search as search
from pilot_sys.stats._changepoint_dependence import dependence_factor
from pilot_sys.stats._changepoint_plan import _plan
from pilot_sys.stats._changepoint_statistic import (
    _bridge_extremes,
    _cumsum,
    _indicators,
    _LazyKeys,
    _merged_cut,
    _refine_split,
)
from pilot_sys.stats.changepoint import detect


def _walk(n: int, seed: int) -> np.ndarray:
    return 100.0 + np.cumsum(np.random.default_rng(seed).normal(0.0, 0.05, n))


def _sine(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 5.0 * np.sin(np.arange(n) / (n / 40)) + rng.normal(0.0, 1.0, n)


def _steps_with_ties(n: int, seed: int) -> np.ndarray:
    """Level steps every few hundred readings; a third of the stretches rounded to integers
    (tied readings, left to the one-by-one path), one stretch with signed zeros."""
    rng = np.random.default_rng(seed)
    levels = np.repeat(rng.normal(0.0, 3.0, n // 300 + 1), 300)[:n]
    x = levels + rng.normal(0.0, 1.0, n)
    tied = (np.arange(n) // 1000) % 3 == 1
    x[tied] = np.round(x[tied])
    x[n // 2 : n // 2 + 50] = np.where(np.arange(50) % 2 == 0, 0.0, -0.0)
    return x


SERIES = {"walk": _walk, "sine": _sine, "steps_with_ties": _steps_with_ties}


def _both(x: np.ndarray, **options: object) -> tuple[dict, dict, int]:
    """detect with and without rounds, and how many segments the rounds tested."""
    tested = 0
    real = rounds.bisect_rounds

    def counting(values: np.ndarray, segments: list[tuple[int, int]], **kw: object):
        nonlocal tested
        outcome = real(values, segments, **kw)
        tested += len(outcome.tests)
        return outcome

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search, "bisect_rounds", counting)
        fast = detect(x, **options).model_dump()
        mp.setattr(search._Detection, "rounds", False)
        plain = detect(x, **options).model_dump()
    return fast, plain, tested


@pytest.mark.parametrize("name", sorted(SERIES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rounds_give_the_one_by_one_result(name: str, seed: int) -> None:
    x = SERIES[name](30_000, seed)
    fast, plain, tested = _both(x, min_size=16)
    assert tested > 50  # the rounds did test most segments
    assert len(plain["changepoints"]) > 20
    assert fast == plain


@pytest.mark.parametrize(
    "options",
    [{"scale": False}, {"dependence": False}, {"seeded": False}, {"edges": False}, {}],
    ids=["no-scale", "no-dependence", "no-seeded", "no-edges", "defaults"],
)
def test_rounds_match_under_each_option(options: dict) -> None:
    x = _walk(40_000, 5)
    fast, plain, tested = _both(x, **options)
    assert tested > 0
    assert fast == plain


def _round_of(x: np.ndarray, segments: list[tuple[int, int]], min_size: int) -> flat._Round:
    return flat._Round.enter(x, segments, min_size)


def test_extremes_are_the_bridge_extremes_of_each_segment() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=5_000)
    segments = [(0, 700), (700, 2_000), (2_500, 2_540), (3_000, 5_000)]
    rnd = _round_of(x, segments, 8)
    indicator = rnd.inline > 0.3
    ext = rnd.extremes(indicator)
    for i, (b, e) in enumerate(segments):
        counts = _cumsum(x[b:e] > 0.3)
        p = float(counts[-1]) / (e - b)
        top, peak, bottom, trough = _bridge_extremes(counts, 8, p)
        assert (int(ext.top[i]), float(ext.peak[i])) == (8 + top, peak)
        assert (int(ext.bottom[i]), float(ext.trough[i])) == (8 + bottom, trough)
        start = int(rnd.starts[i])
        assert np.array_equal(ext.counts[start : start + e - b], counts)


def test_children_hold_each_piece_sorted() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=6_000)
    segments = [(0, 1_000), (1_000, 3_000), (3_000, 6_000)]
    rnd = _round_of(x, segments, 10)
    kids, short = rnd.children([400, None, 3_015], 20)
    assert kids is not None and short is not None
    assert list(zip(short.begins.tolist(), short.ends.tolist(), strict=True)) == [(3_000, 3_015)]
    assert np.array_equal(short.ordered, np.sort(x[3_000:3_015]))
    assert np.array_equal(short.inline, x[3_000:3_015])
    assert sorted(short.order.tolist()) == list(range(3_000, 3_015))
    # (3000, 3015) is shorter than min_len: left out; the unsplit segment has no pieces
    pieces = [(0, 400), (400, 1_000), (3_015, 6_000)]
    assert list(zip(kids.begins.tolist(), kids.ends.tolist(), strict=True)) == pieces
    for i, (b, e) in enumerate(pieces):
        start = int(kids.starts[i])
        order = kids.order[start : start + e - b]
        assert np.array_equal(kids.ordered[start : start + e - b], np.sort(x[b:e]))
        assert sorted(order.tolist()) == list(range(b, e))
        assert np.array_equal(kids.inline[start : start + e - b], x[b:e])


def test_refined_locations_are_refine_split() -> None:
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.normal(0, 1, 900), rng.normal(0.8, 1, 600), rng.normal(size=3_000)])
    x[1_500:] += np.linspace(0.0, 2.0, 3_000)
    segments = [(0, 1_500), (1_500, 4_500)]
    rnd = _round_of(x, segments, 16)
    starts = [300, 1_000]
    splits = list(starts)
    rounds._refine_locations(rnd, [0, 1], splits)
    for (b, e), start, split in zip(segments, starts, splits, strict=True):
        expected = _refine_split(x[b:e], _LazyKeys(b, e), start, 16, "location")
        assert split == expected


@pytest.mark.parametrize("decimals", [None, 1], ids=["distinct", "tied"])
def test_refined_locations_match_on_many_segments(decimals: int | None) -> None:
    """Segments of every length with a shift, a change of spread or a trend, split in the
    middle (equal sides often tie the best cut between the two sides) or anywhere: each
    re-placed exactly as ``_refine_split`` places it (about 2% of these need the third round,
    a few the tie rule of ``_merged_cut``)."""
    rng = np.random.default_rng(8)
    pieces, segments, starts, at = [], [], [], 0
    for j in range(3_000):
        m = int(rng.integers(64, 3_000))
        x = rng.normal(size=m)
        change = int(rng.integers(m // 8, m - m // 8))
        if j % 3 == 0:
            x[change:] += rng.normal(0.0, 1.5)
        elif j % 3 == 1:
            x[change:] *= 3.0
        else:
            x += np.linspace(0.0, rng.normal(0.0, 3.0), m)
        starts.append(int(rng.integers(16, m - 16)) if j % 2 else m // 2)
        pieces.append(x)
        segments.append((at, at + m))
        at += m
    x = np.concatenate(pieces)
    if decimals is not None:  # runs of equal readings, some of them zeros of either sign
        x = np.round(x, decimals)
    rnd = _round_of(x, segments, 16)
    splits = list(starts)
    rounds._refine_locations(rnd, list(range(len(segments))), splits)
    expected = [
        _refine_split(x[b:e], _LazyKeys(b, e), start, 16, "location")
        for (b, e), start in zip(segments, starts, strict=True)
    ]
    assert splits == expected


def test_dependence_factors_are_dependence_factor() -> None:
    """Autocorrelated indicators of many lengths, with one or two cuts (an epidemic change),
    some too short for a batch: each factor exactly ``dependence_factor``'s."""
    rng = np.random.default_rng(9)
    lengths = [int(m) for m in rng.integers(30, 20_000, 120)]
    segments, at = [], 0
    for m in lengths:
        segments.append((at, at + m))
        at += m
    noise = rng.normal(size=at)
    ar = np.empty(at)
    ar[0] = noise[0]
    for t in range(1, at):  # AR(1), so the factors are well above 1
        ar[t] = 0.8 * ar[t - 1] + noise[t]
    rnd = _round_of(ar, segments, 8)
    indicator = rnd.inline > 0.0
    counts = rnd.extremes(indicator).counts
    wanted = {}
    for i, m in enumerate(lengths):
        cut = int(rng.integers(1, m))
        wanted[i] = (cut,) if i % 2 else (min(cut, m - cut), max(cut, m - cut))
    factors = rounds._dependence_factors(rnd, counts, wanted)
    for i, (b, e) in enumerate(segments):
        expected = dependence_factor(_cumsum(ar[b:e] > 0.0), wanted[i])
        assert factors[i] == expected
    assert max(factors.values()) > 2.0


@pytest.mark.parametrize("scale", [True, False])
def test_recorded_medians_and_indicators_are_the_plain_ones(scale: bool) -> None:
    """Every median and indicator a round records (tested segments and pieces too short to
    test) is what ``np.median`` and ``_indicators`` give for that segment."""
    x = _walk(20_000, 3)
    x[9_000:13_000] = np.round(x[9_000:13_000])  # one segment tied: tested one by one
    segments = [(b, b + 4_000) for b in range(1_000, 13_001, 4_000)]
    plan = _plan(
        x.size,
        min_size=16,
        penalty=None,
        significance=0.01,
        scale=scale,
        dependence=True,
        statistic="sign",
        median_scan=None,
        seeded=True,
        edges=True,
    )
    out = rounds.bisect_rounds(
        x, segments, min_size=16, penalty=plan.threshold, scale=scale, dependence=True, keep=True
    )
    assert len(out.indicators) > 20 and len(out.medians) > 20
    for (b, e), median in out.medians.items():
        assert median == float(np.median(x[b:e]))
    for (b, e), made in out.indicators.items():
        expected = _indicators(x[b:e], _LazyKeys(b, e), scale)
        assert [k for k, _ in made] == [k for k, _ in expected]
        for (_, got), (_, want) in zip(made, expected, strict=True):
            assert np.array_equal(got, want)


def test_merged_cuts_when_neighbouring_segments_share_a_value() -> None:
    """Runs of equal readings end at each segment's end even when the next segment (in the flat
    arrays) starts with the same value: every cut is ``_merged_cut``'s of its own segment."""
    rng = np.random.default_rng(11)
    low = np.minimum(np.round(rng.normal(0.0, 1.0, 300), 1), 1.0)  # its largest: 1.0, tied
    high = np.maximum(np.round(rng.normal(2.0, 1.0, 300), 1), 1.0)  # its smallest: 1.0, tied
    x = np.concatenate([low, high, low[::-1]])
    segments = [(0, 300), (300, 600), (600, 900)]
    rnd = _round_of(x, segments, 16)
    at = np.array([100, 150, 200])
    cuts = flat._merged_cuts(rnd, at)
    for (b, e), split, cut in zip(segments, at.tolist(), cuts, strict=True):
        expected = _merged_cut(np.sort(x[b : b + split]), np.sort(x[b + split : e]))
        assert float(rnd.ordered[cut]) == expected
