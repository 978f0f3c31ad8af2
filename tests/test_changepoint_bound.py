"""The seeded intervals' bound (``_changepoint_bound``) never lies below the exact statistic, is
the exact statistic where no reading ties with a cut, and leaves ``detect`` unchanged.

The exact statistics come from ``_scan_intervals`` (itself checked against one-interval scans
and a from-the-definition computation in test_changepoint_batched.py); the detector reference
decides every seeded interval, bounded or not.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import _changepoint_search as cp_search
from pilot_sys.stats import _changepoint_segment as cp_segment
from pilot_sys.stats import changepoint as cp
from pilot_sys.stats._changepoint_bound import SeededBounds, packed, walk_extremes


def series(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Noise of several shapes, with ties of every density, and changes that make cuts move."""
    x = rng.standard_normal(n)
    if kind == "printed":  # ties at a cut now and then
        x = np.round(rng.lognormal(0.0, 0.3, n) * 5.0, 3)
    elif kind == "poisson":  # a handful of distinct values: every cut is tied
        x = rng.poisson(3.0, n).astype(np.float64)
    elif kind == "shifts":  # cuts far from the global quantiles
        x += np.repeat(rng.normal(0.0, 3.0, 8), -(-n // 8))[:n]
    elif kind == "warmup":  # a decaying start: readings far above the levels of the rest
        x += 20.0 * np.exp(-np.arange(n) / (n / 30))
    elif kind == "constant":
        x[n // 3 : 2 * n // 3] = 1.25
    return x


def exact_statistics(x: np.ndarray, starts: list[int], length: int, min_size: int) -> np.ndarray:
    scans, _ = cp_segment._scan_intervals(
        x, starts, length, min_size=min_size, base_penalty=np.inf, scale=True, dependence=False
    )
    return np.array([[stat for _, _, stat, _ in scan.scans] for scan in scans]).T


@pytest.mark.parametrize("kind", ["normal", "printed", "poisson", "shifts", "warmup", "constant"])
def test_bound_is_above_the_exact_statistic_and_tight_without_ties(kind: str) -> None:
    rng = np.random.default_rng(sum(map(ord, kind)))
    n, min_size = 20_011, 32  # n not a multiple of the block: the last intervals are unaligned
    x = series(kind, n, rng)
    bounds = SeededBounds(x, min_size)
    intervals = cp.seeded_intervals(n, min_size)
    tight = 0
    for length in np.unique(intervals[:, 1] - intervals[:, 0]).tolist():
        starts = intervals[intervals[:, 1] - intervals[:, 0] == length, 0]
        got = bounds.bounds(starts, length, scale=True)
        want = exact_statistics(x, starts.tolist(), length, min_size)
        assert np.all(np.isfinite(got))
        assert np.all(got >= want), (length, np.flatnonzero((got < want).any(axis=0)))
        for row, start in enumerate(starts.tolist()):
            segment = np.sort(x[start : start + length])
            cuts = segment[[length - length // 2, length - length // 4, length // 4]]
            if all(np.count_nonzero(segment == c) == 1 for c in cuts):
                assert np.array_equal(got[:, row], want[:, row]), (length, start)
                tight += 1
    if kind in ("normal", "shifts", "warmup"):
        assert tight == intervals.shape[0]  # continuous readings: every bound is exact
    if kind == "poisson":
        assert tight == 0


def test_walk_extremes_match_the_walk() -> None:
    rng = np.random.default_rng(1)
    ones = rng.random((40, 256)) < rng.random((40, 1))
    top, bottom = walk_extremes(packed(ones), 32)
    walk = np.cumsum(2 * ones.astype(int) - 1, axis=1)[:, 31 : 256 - 32]  # k = 32 .. 224
    assert np.array_equal(top, walk.max(axis=1))
    assert np.array_equal(bottom, walk.min(axis=1))


@pytest.mark.parametrize("kind", ["normal", "printed", "warmup", "shifts"])
def test_detect_with_the_bound_matches_deciding_every_interval(kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    x = series(kind, 40_000, rng) + np.where(np.arange(40_000) % 9_000 < 300, 1.5, 0.0)
    assert x.size >= cp_search._BOUND_MIN_READINGS
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cp_search._Scans, "hopeful", lambda self, keys, penalty, floor=1.0: keys)
        want = cp.detect(x)
    built: list[int] = []
    original = SeededBounds.__init__

    def counting(self: SeededBounds, values: np.ndarray, min_size: int) -> None:
        built.append(min_size)
        original(self, values, min_size)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SeededBounds, "__init__", counting)
        got = cp.detect(x)
    assert built, "the bound was not used"
    assert got == want
