"""Short segments with tied readings in rounds (``_changepoint_flat._top``, the pieces too short
to test) against the one-by-one forms.

Readings rounded to a few digits (as the CLI reads a file back) tie in almost every segment: the
rounds split the readings tied at a cut by position keys for all segments at once, and record
the indicators of the pieces too short to test from their sorted readings. Both must be exactly
what ``_top_masks`` and ``_indicators`` give segment by segment, and ``detect``'s whole output
exactly what testing every segment one by one gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import _changepoint_flat as flat
from pilot_sys.stats import _changepoint_rounds as rounds
from pilot_sys.stats import _changepoint_search as search
from pilot_sys.stats._changepoint_statistic import _indicators, _LazyKeys, _top_masks
from pilot_sys.stats.changepoint import detect


def _tied_segments(seed: int, n: int = 12_000) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Readings with few distinct values (some zeros of either sign), cut into segments of
    random lengths from 16 readings up."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=n) * rng.choice([0.5, 2.0, 20.0]), int(rng.integers(0, 2)))
    zeros = rng.random(n) < 0.05
    x[zeros] = np.where(rng.random(int(zeros.sum())) < 0.5, 0.0, -0.0)
    cuts = np.sort(rng.choice(np.arange(40, n - 40, 17), 25, replace=False))
    bounds = [0, *cuts.tolist(), n]
    segments = [(b, e) for b, e in zip(bounds[:-1], bounds[1:], strict=True) if e - b >= 16]
    return x, segments


@pytest.mark.parametrize("seed", range(12))
def test_top_is_top_masks_of_each_segment(seed: int) -> None:
    x, segments = _tied_segments(seed)
    rnd = flat._Round.enter(x, segments, 4)
    rng = np.random.default_rng(seed)
    sizes = rnd.sizes
    wanted = [sizes // 2, sizes // 4, sizes - sizes // 4, 1 + rng.integers(0, sizes), sizes]
    for counts in wanted:
        mask = flat._top(rnd, counts)
        for i, (b, e) in enumerate(segments):
            expected = _top_masks(x[b:e], _LazyKeys(b, e), [int(counts[i])])[0]
            start = int(rnd.starts[i])
            assert np.array_equal(mask[start : start + e - b], expected), (b, e, counts[i])


def test_top_breaks_ties_when_a_segment_is_one_value() -> None:
    x = np.zeros(200)
    x[100:] = 1.0
    segments = [(0, 100), (100, 200)]
    rnd = flat._Round.enter(x, segments, 4)
    mask = flat._top(rnd, np.array([37, 50]))
    assert mask[:100].sum() == 37 and mask[100:].sum() == 50
    for i, (b, e) in enumerate(segments):
        count = [37, 50][i]
        assert np.array_equal(mask[b:e], _top_masks(x[b:e], _LazyKeys(b, e), [count])[0])


@pytest.mark.parametrize("scale", [True, False])
def test_short_pieces_of_tied_segments_keep_their_indicators(scale: bool) -> None:
    """Every unsplit piece the rounds report carries the indicators ``_indicators`` forms, so
    the series-wide dependence floor never sorts it again."""
    rng = np.random.default_rng(5)
    x = np.round(np.repeat(rng.normal(0.0, 3.0, 80), 150) + rng.normal(0.0, 1.0, 12_000))
    segments = [(0, 3_000), (3_000, 7_500), (7_500, 12_000)]
    out = rounds.bisect_rounds(
        x, segments, min_size=16, penalty=1.5, scale=scale, dependence=True, keep=True
    )
    short = [(b, e) for b, e in out.unsplit if e - b < 32]
    assert len(short) >= 3
    for b, e in out.unsplit:
        made = out.indicators[(b, e)]
        expected = _indicators(x[b:e], _LazyKeys(b, e), scale)
        assert [kind for kind, _ in made] == [kind for kind, _ in expected]
        for (_, got), (_, want) in zip(made, expected, strict=True):
            assert np.array_equal(got, want)


def _with_and_without_rounds(x: np.ndarray, **options: object) -> tuple[dict, dict]:
    with pytest.MonkeyPatch.context() as mp:
        fast = detect(x, **options).model_dump()
        mp.setattr(search._Detection, "rounds", False)
        plain = detect(x, **options).model_dump()
    return fast, plain


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("digits", [1, 2, 3])
def test_rounded_series_give_the_one_by_one_result(seed: int, digits: int) -> None:
    """A random walk and a slow sine read back with a few significant digits: heavy ties."""
    rng = np.random.default_rng(seed)
    n = 40_000
    walk = 100.0 + np.cumsum(rng.normal(0.0, 0.05, n))
    sine = 5.0 * np.sin(np.arange(n) / (n / 40)) + rng.normal(0.0, 1.0, n)
    for x in (walk, sine):
        tied = np.array([float(f"{v:.{digits + 1}g}") for v in x.tolist()])
        fast, plain = _with_and_without_rounds(tied, min_size=16)
        assert len(plain["changepoints"]) > 10
        assert fast == plain


@pytest.mark.parametrize("min_size", [4, 5, 8, 33])
def test_small_min_sizes_give_the_one_by_one_result(min_size: int) -> None:
    rng = np.random.default_rng(min_size)
    x = np.round(np.repeat(rng.normal(0.0, 2.0, 400), 25) + rng.normal(0.0, 1.0, 10_000))
    fast, plain = _with_and_without_rounds(x, min_size=min_size)
    assert fast == plain
