"""Readings that cannot be window outliers, told cheaply, so that only the rest pay for ranks.

``outliers.window_outliers`` flags a reading outside ``median +/- spread * (p99 - p1)`` of some
window holding it: on a long series, six running order statistics over every window (a few
hundred milliseconds a million readings), although nearly every reading lies far inside every
bound. Bounds on those statistics from the order statistics of short blocks of readings
(``window // 8``; one sort of each block, linear in the series) show that for most readings:

* the window's median is at most the largest, over the blocks covering the window, of a block
  quantile high enough that more than half of the window lies at or below it (and at least
  the smallest of a low one, likewise);
* its p99 is at least the q-th largest reading of the blocks it contains (q: the order
  statistic p99 interpolates from), and its p1 at most their q'-th smallest;

so every window's lower bound is below ``median bound - spread * (p99 bound - p1 bound)``, and
a reading above the largest such figure among the windows that can hold it (and below the
matching upper one), by a margin beyond rounding, is no outlier. The readings left are judged
exactly, each with the windows around it, by the same arithmetic as the whole series: the
mask is the same, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from pilot_sys.stats.outliers import (
    DEFAULT_SPREAD,
    _bounds_rolling,
    _partitioned_statistic,
    _rolling_extreme,
    _running_extreme,
)

# a window is screened by blocks of this share of it; below MIN_BLOCK readings a block says
# too little (and a series shorter than SCREEN_WINDOWS windows is ranked whole)
BLOCK_SHARE = 8
MIN_BLOCK = 4
SCREEN_WINDOWS = 4
# rounding in a window's bound: a few operations on readings up to the largest in size
MARGIN = 1e-10
# doubtful readings whose windows hold at most this many readings in all are ranked by
# partitioning copies of their windows (numpy), more by running order statistics (scipy)
PARTITION_CELLS = 1 << 21
# start blocks whose contained blocks' extremes are gathered at once (bounds the copies)
STARTS_AT_ONCE = 1 << 15


def _plan(window: int) -> tuple[int, int, int, int, int, int, int] | None:
    """Block size, blocks covering and contained in any window starting in one block, the block
    ranks bounding the median from above and below, and how many of the largest and smallest
    readings of the contained blocks bound p99 and p1; None where blocks cannot say."""
    size = window // BLOCK_SHARE
    if size < MIN_BLOCK:
        return None
    cover = 1 + (size + window - 2) // size
    inside = window // size - 1
    outside = cover * size - window  # readings of the covering blocks outside the window
    h = 0.5 * (window - 1)
    below, above = int(h), math.ceil(h)
    # more than ``above`` readings of the window at or below the bound (the covering blocks'
    # rank-r readings and all below them, less the readings outside the window)
    rank_up = -(-(above + 1 + outside) // cover) - 1
    # at least ``window - below`` readings at or above it
    rank_down = size - -(-(window - below + outside) // cover)
    top = window - int(0.99 * (window - 1))  # p99 >= the top-th largest reading
    bottom = int(0.01 * (window - 1)) + 2  # p1 <= the bottom-th smallest
    if not (0 <= rank_down <= rank_up < size and max(top, bottom) <= min(size, inside * size)):
        return None
    return size, cover, inside, rank_up, rank_down, top, bottom


def certified(x: np.ndarray, window: int, spread: float = DEFAULT_SPREAD) -> np.ndarray:
    """Mask of the readings that no window of ``window`` readings holding them calls an
    outlier, shown from block order statistics (False: not shown, maybe an outlier)."""
    n = x.size
    sure = np.zeros(n, dtype=bool)
    plan = _plan(window)
    if plan is None or n < SCREEN_WINDOWS * window or not np.all(np.isfinite(x)):
        return sure
    size, cover, inside, rank_up, rank_down, top, bottom = plan
    blocks = np.sort(x[: n // size * size].reshape(-1, size), axis=1)
    starts = blocks.shape[0] - cover + 1  # start blocks whose windows lie in whole blocks
    if starts <= 0:
        return sure
    median_up = sliding_window_view(blocks[:, rank_up], cover).max(axis=1)
    median_down = sliding_window_view(blocks[:, rank_down], cover).min(axis=1)
    contained = blocks[1 : 1 + starts + inside - 1]
    highs = sliding_window_view(contained[:, size - top :], (inside, top))[:, 0]
    lows = sliding_window_view(contained[:, :bottom], (inside, bottom))[:, 0]
    p99_low, p1_high = np.empty(starts), np.empty(starts)
    for first in range(0, starts, STARTS_AT_ONCE):  # the gathered readings a few MiB at once
        part = slice(first, first + STARTS_AT_ONCE)
        high = highs[part].reshape(-1, inside * top)
        low = lows[part].reshape(-1, inside * bottom)
        p99_low[part] = np.partition(high, high.shape[1] - top, axis=1)[:, high.shape[1] - top]
        p1_high[part] = np.partition(low, bottom - 1, axis=1)[:, bottom - 1]
    width = spread * (p99_low - p1_high)
    low_bound = median_up - width  # above every lower bound of the windows starting there
    high_bound = median_down + width  # below every upper bound
    # a reading of block J is held by windows starting in blocks J - reach .. J
    reach = -(-(window - 1) // size)
    pad = np.full(reach, -np.inf)
    highest_low = sliding_window_view(np.concatenate((pad, low_bound)), reach + 1).max(axis=1)
    lowest_high = sliding_window_view(np.concatenate((-pad, high_bound)), reach + 1).min(axis=1)
    margin = MARGIN * (1.0 + 2.0 * spread) * float(np.max(np.abs(x)))
    end = starts * size  # readings held by windows starting in later blocks are not judged
    held = x[:end].reshape(starts, size)
    sure[:end] = (
        (held >= (highest_low + margin)[:, None]) & (held <= (lowest_high - margin)[:, None])
    ).ravel()
    return sure


def outliers_among(
    x: np.ndarray,
    begin: int,
    end: int,
    window: int,
    sure: np.ndarray,
    numpy_arithmetic: bool,
    spread: float = DEFAULT_SPREAD,
) -> np.ndarray:
    """``window_outliers`` (running order statistics, in the arithmetic named) of the whole
    series over readings [begin, end): the readings ``sure`` clears are no outliers; the rest
    are judged with the windows around them, in runs."""
    mask = np.zeros(end - begin, dtype=bool)
    left = np.flatnonzero(~sure[begin:end]) + begin
    if left.size == 0:
        return mask
    # runs of doubtful readings, joined where the windows around them would overlap
    breaks = np.flatnonzero(np.diff(left) > 2 * window) + 1
    runs = [
        (int(run[0]), int(run[-1]) + 1, max(int(run[0]) - (window - 1), 0))
        for run in np.split(left, breaks)
    ]
    cells = window * sum(min(hi + window - 1, x.size) - a for _, hi, a in runs)
    few = cells <= PARTITION_CELLS  # order statistics and extremes without scipy.ndimage
    statistic = _partitioned_statistic if few else None
    extreme = _rolling_extreme if few else _running_extreme
    for lo, hi, a in runs:
        part = x[a : min(hi + window - 1, x.size)]
        if statistic is None:
            bottom, top = _bounds_rolling(part, window, spread, numpy_arithmetic)
        else:
            bottom, top = _bounds_rolling(part, window, spread, numpy_arithmetic, statistic)
        highest_lo = extreme(bottom, window, highest=True)
        lowest_hi = extreme(top, window, highest=False)
        judged = (part < highest_lo) | (part > lowest_hi)
        mask[lo - begin : hi - begin] = judged[lo - a : hi - a]
    return mask
