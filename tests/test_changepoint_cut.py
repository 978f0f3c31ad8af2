"""The separating cut of a split's two sides, found by one merge, is the direct search's value.

The direct form (the detector's code before the merge) searches every candidate, the sorted left
sample then the sorted right one, in both samples and takes the first candidate where the two
empirical CDFs differ most. The merge must return that very element, bit for bit (the sign of a
zero included): ties inside a sample, ties across the samples and several equally good values are
where the tie-breaking shows.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import changepoint as cp
from pilot_sys.stats._changepoint_statistic import (
    _indicator_split,
    _LazyKeys,
    _merged_cut,
    _refine_split,
    _separating_cut,
)


def direct_cut(a: np.ndarray, b: np.ndarray) -> float:
    """The direct search over the candidates ``a`` then ``b`` (both sorted)."""
    candidates = np.concatenate([a, b])
    gap = np.abs(
        np.searchsorted(a, candidates, side="right") / a.size
        - np.searchsorted(b, candidates, side="right") / b.size
    )
    return float(candidates[int(np.argmax(gap))])


def same_bits(x: float, y: float) -> bool:
    return np.float64(x).tobytes() == np.float64(y).tobytes()


def samples(rng: np.random.Generator, kind: int) -> tuple[np.ndarray, np.ndarray]:
    na, nb = (int(v) for v in rng.integers(1, 80, 2))
    levels = int(rng.integers(1, 8))
    if kind == 0:  # few integer values: ties inside and across the samples
        a, b = rng.integers(0, levels, na), rng.integers(0, levels, nb)
    elif kind == 1:  # continuous, shifted: one best value, no ties
        a, b = rng.normal(0.0, 1.0, na), rng.normal(0.5, 1.0, nb)
    elif kind == 2:  # signed zeros: equal values with different bits
        a, b = rng.choice([-0.0, 0.0, 1.0], na), rng.choice([-0.0, 0.0, 1.0, 2.0], nb)
    else:  # overlapping half-integer grids: values held by one sample only
        a, b = rng.integers(0, levels, na) * 0.5, rng.integers(1, levels + 1, nb) * 0.5
    return np.sort(a.astype(np.float64)), np.sort(b.astype(np.float64))


@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_merged_cut_is_the_direct_searchs_element(kind: int) -> None:
    rng = np.random.default_rng(100 + kind)
    for _ in range(2000):
        a, b = samples(rng, kind)
        assert same_bits(_merged_cut(a, b), direct_cut(a, b)), (a, b)


def test_first_best_value_of_the_left_sample_wins() -> None:
    # |F_a - F_b| is 1/2 at 1.0 (only b holds it) and at 4.0 (only a holds it): the direct search
    # meets a's candidates first, so 4.0 wins although 1.0 is smaller.
    a, b = np.array([3.0, 4.0]), np.array([1.0, 5.0])
    assert direct_cut(a, b) == 4.0
    assert _merged_cut(a, b) == 4.0
    # When no value of a is among the best, b's first best value is taken.
    a, b = np.array([5.0, 10.0]), np.array([1.0, 2.0])
    assert direct_cut(a, b) == _merged_cut(a, b) == 2.0


def test_separating_cut_thins_both_sides_as_before() -> None:
    rng = np.random.default_rng(5)
    left = rng.integers(0, 50, 45_000).astype(np.float64)
    right = rng.integers(5, 55, 61_000).astype(np.float64)
    a = np.sort(left[:: left.size // 20_000])
    b = np.sort(right[:: right.size // 20_000])
    assert same_bits(_separating_cut(left, right), direct_cut(a, b))


def reference_refine(
    series: np.ndarray, split: int, min_size: int, window: tuple[int, int] | None
) -> int:
    """``_refine_split`` of the location kind as it was: the direct cut, every round run out."""
    m = series.size
    for _ in range(3):
        left, right = series[:split], series[split:]
        a = np.sort(left[:: max(1, left.size // 20_000)])
        b = np.sort(right[:: max(1, right.size // 20_000)])
        cut = direct_cut(a, b)
        if window is None:
            moved = _indicator_split(series > cut, min_size)
        else:
            counts = np.cumsum(series > cut)
            first, last = window
            drift = np.abs(
                counts[first - 1 : last] - counts[-1] / m * np.arange(last + 1.0)[first:]
            )
            moved = first + int(np.argmax(drift))
        if moved == split:
            break
        split = moved
    return split


def test_refined_split_is_the_direct_rounds_split() -> None:
    """Stopping when a round's cut repeats the last one (its indicator, hence its split, would
    too) and the merged cut leave every refined split where the direct rounds put it."""
    rng = np.random.default_rng(11)
    min_size = 16
    for trial in range(300):
        m = int(rng.integers(4 * min_size, 3000))
        change = int(rng.integers(min_size, m - min_size))
        shift = float(rng.choice([0.3, 1.0, 3.0]))
        if trial % 2:  # tied readings
            series = rng.integers(0, 5, m).astype(np.float64)
            series[change:] += rng.integers(0, 2)
        else:
            series = rng.normal(0.0, 1.0, m)
            series[change:] += shift
        split = int(rng.integers(min_size, m - min_size))
        window = None if trial % 3 else (min_size, m - min_size)
        keys = _LazyKeys(0, m)
        got = _refine_split(series, keys, split, min_size, "location", window=window)
        assert got == reference_refine(series, split, min_size, window), trial


def test_refined_sides_are_the_pieces_sorted() -> None:
    """The sorted pieces handed to the pieces' own scans are exactly their values sorted, and
    are handed over only when the last round sorted them whole at the returned split."""
    rng = np.random.default_rng(12)
    handed = 0
    for trial in range(200):
        m = int(rng.integers(64, 90_000 if trial % 20 == 0 else 3000))
        series = rng.normal(0.0, 1.0, m)
        series[m // 3 :] += float(rng.choice([0.5, 2.0]))
        if trial % 2:
            series = np.round(series)  # ties
        sides: list[np.ndarray] = []
        split = _refine_split(series, _LazyKeys(0, m), m // 2, 16, "location", sides=sides)
        if sides:
            handed += 1
            assert np.array_equal(sides[0], np.sort(series[:split]))
            assert np.array_equal(sides[1], np.sort(series[split:]))
        else:
            assert max(split, m - split) >= 40_000 or trial % 20 == 0
    assert handed > 150


@pytest.mark.parametrize("zeros", [False, True])
def test_segment_medians_are_numpys_bit_for_bit(zeros: bool) -> None:
    """Medians taken from the sorted values a scan or a re-placement made are np.median's,
    signed zeros included (a zero median is left to np.median)."""
    rng = np.random.default_rng(21)
    levels = np.repeat(rng.choice([-2.0, 0.0, 1.0, 3.0], 12), 700)
    if zeros:  # -0.0 and 0.0 around the median of the zero-level segments
        x = levels + rng.choice([-1.0, -0.0, 0.0, 1.0], levels.size)
    else:
        x = levels + rng.normal(0.0, 0.5, levels.size)
    result = cp.detect(x)
    assert len(result.changepoints) >= 5
    for segment in result.segments:
        expected = float(np.median(x[segment.begin : segment.end]))
        assert same_bits(segment.median, expected)
