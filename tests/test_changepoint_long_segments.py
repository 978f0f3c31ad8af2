"""Shortcuts of the one-by-one tests of long segments against their plain forms.

``_top_masks`` counts the readings at and above a cut by binary searches in sorted values, the
driver derives a piece's sorted values by deleting the other piece's copies (``_copy_index``),
and the edge tests keep one dependence estimate per end range: each must give exactly what the
plain form gives (a brute-force tie-broken ranking, ``np.searchsorted``, a fresh estimate), on
seeded readings with heavy ties and zeros of both signs.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats._changepoint_dependence import _SeriesDependence
from pilot_sys.stats._changepoint_edges import _EdgeTests
from pilot_sys.stats._changepoint_plan import _plan
from pilot_sys.stats._changepoint_ranks import position_keys
from pilot_sys.stats._changepoint_search import _copy_index
from pilot_sys.stats._changepoint_segment import _decisive, _scan_segment
from pilot_sys.stats._changepoint_statistic import _LazyKeys, _top_masks
from pilot_sys.stats.changepoint import detect


def _tied(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4_000))
    x = np.round(rng.normal(size=n) * rng.choice([0.3, 3.0, 30.0]), int(rng.integers(0, 3)))
    zeros = x == 0
    x[zeros] = np.where(rng.random(int(zeros.sum())) < 0.5, 0.0, -0.0)
    return x


def _top_by_rank(x: np.ndarray, begin: int, count: int) -> np.ndarray:
    """The ``count`` largest readings by (value, position key): a full ranking, no shortcut."""
    order = np.lexsort((position_keys(begin, begin + x.size), x))
    mask = np.zeros(x.size, dtype=bool)
    if count > 0:
        mask[order[x.size - count :]] = True
    return mask


@pytest.mark.parametrize("seed", range(40))
def test_top_masks_from_sorted_values_are_the_ranking(seed: int) -> None:
    x = _tied(seed)
    m = x.size
    begin = seed * 7_919
    counts = [m // 2, m // 4, m - m // 4, 0, m, int(np.random.default_rng(seed).integers(1, m + 1))]
    keys = _LazyKeys(begin, begin + m)
    for ordered in (np.sort(x), None):
        for wanted in (counts, counts[:1]):
            masks = _top_masks(x, keys, wanted, ordered)
            for count, mask in zip(wanted, masks, strict=True):
                assert np.array_equal(mask, _top_by_rank(x, begin, count)), (count, m)


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("penalty", [0.5, 3.0, 1e9])
def test_scan_from_sorted_values_is_the_scan_that_selects(seed: int, penalty: float) -> None:
    """With sorted values the spread masks are made only when the scale scan is needed; the
    scan (statistics, splits, factors, partial or whole) and its indicators are the same."""
    x = _tied(seed)
    rng = np.random.default_rng(seed)
    x[x.size // 3 :] += rng.normal(0.0, 2.0)  # a shift, often decisive alone
    begin, m = 1_000 * seed, x.size
    values = np.concatenate([np.zeros(begin), x])
    if m < 40:
        return
    scans = []
    for ordered in (np.sort(x), None):
        made: list = []
        scan = _scan_segment(
            values,
            begin,
            begin + m,
            min_size=8,
            base_penalty=0.5,
            scale=True,
            dependence=True,
            median_scan=None,
            indicators=made,
            ordered=ordered,
            decisive=_decisive(penalty, 1.0),
        )
        scans.append((scan, made))
    (fast, fast_made), (plain, plain_made) = scans
    assert repr(fast) == repr(plain)
    assert [k for k, _ in fast_made] == [k for k, _ in plain_made]
    for (_, a), (_, b) in zip(fast_made, plain_made, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(20))
def test_copy_index_is_the_offset_from_searchsorted(seed: int) -> None:
    ordered = np.sort(_tied(seed))
    expected = np.arange(ordered.size) - np.searchsorted(ordered, ordered, "left")
    assert np.array_equal(_copy_index(ordered), expected)
    assert _copy_index(ordered[:0]).size == 0


def test_edge_dependence_is_kept_by_range_and_equals_a_fresh_estimate() -> None:
    rng = np.random.default_rng(11)
    x = np.round(np.cumsum(rng.normal(size=60_000)) * 0.1, 1)
    plan = _plan(
        x.size,
        min_size=None,
        penalty=None,
        significance=0.01,
        scale=True,
        dependence=True,
        statistic="sign",
        median_scan=None,
        seeded=True,
        edges=True,
    )
    edges = _EdgeTests(x, plan)
    near = (55_000, 60_000)
    kept = edges._dependence(near)
    assert kept is not None and edges._dependence(near) is kept
    fresh = _SeriesDependence(x, [near], True)
    for split in (55_100, 57_000, 59_900, 57_000):
        assert kept.with_cut(split) == fresh.with_cut(split)


@pytest.mark.parametrize("digits", [2, 3, 6])
def test_peeled_series_give_the_same_result_as_the_plain_tests(digits: int) -> None:
    """A slow sine long enough for segments of 2**16 readings and more (the sorted pieces
    derived by deletion, the edge estimates kept), read back with few digits (heavy ties):
    the result equals the one with every long segment sorted afresh and every estimate new."""
    n = 300_000
    rng = np.random.default_rng(digits)
    x = 5.0 * np.sin(np.arange(n) / (n / 12)) + rng.normal(0.0, 1.0, n)
    x = np.array([float(f"{v:.{digits}g}") for v in x.tolist()])
    fast = detect(x).model_dump()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            _EdgeTests,
            "_dependence",
            lambda self, near: _SeriesDependence(self._values, [near], self._plan.scale),
        )
        mp.setattr("pilot_sys.stats._changepoint_search._SORT_REUSE_MIN", 10**9)
        plain = detect(x).model_dump()
    assert len(plain["changepoints"]) > 5
    assert fast == plain
