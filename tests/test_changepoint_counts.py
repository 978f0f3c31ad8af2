"""Running counts and bridge scans of the detector's indicators against plain forms.

``_cumsum`` and the rounds' ``_running`` convert an indicator to integers first and sum in
place, and ``_indicator_split`` carries the count of earlier chunks into each chunk's first
entry: each must give exactly the integers (and so the splits) of ``np.cumsum`` in 64 bits,
across chunk boundaries and on arrays long enough for numpy's buffered casting. The bridge
scans form values only in the blocks ``_changepoint_blocks`` keeps: those blocks must hold
every copy of the whole bridge's extremes, and the scans give its first argmax and argmin.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import _changepoint_blocks
from pilot_sys.stats import _changepoint_flat as flat
from pilot_sys.stats._changepoint_statistic import (
    _bridge_extremes,
    _cumsum,
    _cusum_scan,
    _indicator_split,
)


def _plain(indicator: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.cumsum(indicator.astype(np.int64), axis=axis)


@pytest.mark.parametrize("n", [1, 2, 8_191, 65_536, 65_537, 300_001])
def test_cumsum_is_the_plain_running_count(n: int) -> None:
    rng = np.random.default_rng(n)
    indicator = rng.random(n) < rng.random()
    counts = _cumsum(indicator)
    assert counts.dtype == np.int32
    assert np.array_equal(counts, _plain(indicator))


@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_along_an_axis_is_the_plain_running_count(axis: int) -> None:
    indicators = np.random.default_rng(5).random((3, 70_001)) < 0.4
    if axis == 0:
        indicators = np.ascontiguousarray(indicators.T)
    assert np.array_equal(_cumsum(indicators, axis=axis), _plain(indicators, axis=axis))


@pytest.mark.parametrize(
    ("n", "min_size", "share"),
    [(40, 4, 0.5), (65_536, 8, 0.3), (65_600, 5, 0.5), (200_003, 16, 0.1), (262_144, 4, 0.9)],
)
def test_indicator_split_is_the_scan_of_the_plain_counts(
    n: int, min_size: int, share: float
) -> None:
    rng = np.random.default_rng(n)
    shift = rng.integers(min_size, n - min_size)
    indicator = rng.random(n) < np.where(np.arange(n) < shift, share, 1.0 - share)
    assert _indicator_split(indicator, min_size) == _cusum_scan(_plain(indicator), min_size)[0]
    drifting = rng.random(n) < np.linspace(0.2, 0.8, n)  # a weak change: the extremes wander
    assert _indicator_split(drifting, min_size) == _cusum_scan(_plain(drifting), min_size)[0]


def test_round_running_count_is_the_plain_one() -> None:
    x = np.random.default_rng(9).normal(size=70_000)
    rnd = flat._Round.enter(x, [(0, 30_000), (30_000, 69_000), (69_000, 70_000)], 8)
    indicator = rnd.inline > 0.2
    assert np.array_equal(rnd._running(indicator), _plain(indicator))


def _plain_bridge(indicator: np.ndarray, min_size: int) -> np.ndarray:
    """The bridge at every split min_size <= k <= m - min_size, in one array."""
    m = indicator.size
    counts = _plain(indicator)
    p = float(counts[-1]) / m
    k = np.arange(min_size, m - min_size + 1)
    bridge = k.astype(np.float64) * -p
    bridge += counts[k - 1]
    return bridge


def _indicators(seed: int) -> tuple[np.ndarray, int]:
    """A steep change, a weak one, none, an epidemic one, or p = 1/2 (many equal extremes)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 60_000))
    min_size = int(rng.integers(2, 40))
    shape = seed % 5
    if shape == 0:
        probability = np.where(np.arange(n) < rng.integers(0, n), 0.2, 0.8)
    elif shape == 1:
        probability = np.linspace(0.45, 0.55, n)
    elif shape == 2:
        probability = np.full(n, rng.random())
    elif shape == 3:
        a, b = sorted(rng.integers(0, n, 2))
        probability = np.where((np.arange(n) >= a) & (np.arange(n) < b), 0.9, 0.3)
    else:
        return np.tile([True, False], n // 2 + 1)[:n], min_size
    return rng.random(n) < probability, min_size


@pytest.mark.parametrize("block", [8, 64, 512])
@pytest.mark.parametrize("seed", range(20))
def test_bridge_ranges_hold_every_extreme_and_the_split_is_the_plain_one(
    seed: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_changepoint_blocks, "BLOCK", block)
    indicator, min_size = _indicators(seed)
    m = indicator.size
    if m < 2 * min_size + 1:
        return
    bridge = _plain_bridge(indicator, min_size)
    p = float(np.count_nonzero(indicator)) / m
    if 0.0 < p < 1.0:
        ranges = _changepoint_blocks.bridge_ranges(indicator, min_size, p, m - min_size + 1)
        inside = np.zeros(bridge.size, dtype=bool)
        for first, last in ranges:
            inside[first - min_size : last - min_size] = True
        assert inside[bridge == bridge.max()].all()
        assert inside[bridge == bridge.min()].all()
        from_counts = _changepoint_blocks.counts_ranges(
            _plain(indicator), min_size, p, m - min_size + 1
        )
        assert from_counts == ranges
        top, peak, bottom, trough = _bridge_extremes(_cumsum(indicator), min_size, p)
        assert (top, peak) == (int(np.argmax(bridge)), float(bridge.max()))
        assert (bottom, trough) == (int(np.argmin(bridge)), float(bridge.min()))
    assert _indicator_split(indicator, min_size) == _cusum_scan(_plain(indicator), min_size)[0]
