"""Isolated outliers of a time-ordered series: far outside the bulk of the readings around them.

A reading is an outlier when it lies outside ``median +/- spread * (p99 - p1)`` of some window
of ``window`` consecutive readings that holds it (the rule of Traini et al. 2022 for JMH
iterations). The bulk's own range is the yardstick, so a garbage-collection pause or an
interrupt is an outlier and a level shift is not, save the readings at its edge that some
window holds as its 1% minority (``window // 100`` on each side): a change point found
without them moves by at most that many readings.
Change-point costs that assume normal noise (PELT's mean and variance) would otherwise cut a
segment around every such spike.

``guarded_outliers`` leaves the first readings of a run alone, as the study did: they are the
cold start itself, not noise around a level, and the slower an iteration the more of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

DEFAULT_WINDOW = 200
DEFAULT_SPREAD = 3.0


WINDOW_CELLS = 1 << 21  # readings copied per block of windows (16 MiB of float64)
# Series at least this long take each window's median and quantiles from running order
# statistics (scipy.ndimage's rank filter, O(n log window)) instead of sorting every window
# (O(n window)); shorter ones do not pay for importing scipy.ndimage. Both give the same
# quantiles (linear interpolation between order statistics), to rounding.
ROLLING_MIN = 1 << 15


def _bounds_sorted(x: np.ndarray, window: int, spread: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bound of every window, sorting each (numpy)."""
    windows = sliding_window_view(x, window)
    # numpy copies the windows it sorts: a block of them at a time keeps that copy to a few
    # MiB however long the series (all at once took window x 8 bytes per reading)
    lo = np.empty(windows.shape[0])
    hi = np.empty(windows.shape[0])
    step = max(1, WINDOW_CELLS // window)
    for start in range(0, windows.shape[0], step):
        block = windows[start : start + step]
        med = np.median(block, axis=1)
        p1, p99 = np.quantile(block, [0.01, 0.99], axis=1)
        lo[start : start + step] = med - spread * (p99 - p1)
        hi[start : start + step] = med + spread * (p99 - p1)
    return lo, hi


def _order_statistic(x: np.ndarray, rank: int, window: int) -> np.ndarray:
    """The ``rank``-th smallest (0-based) of every full window of ``window`` readings."""
    from scipy.ndimage import rank_filter

    # origin -(window // 2) puts window [i, i + window) at output i
    out = rank_filter(x, rank, size=window, mode="constant", origin=-(window // 2))
    return out[: x.size - window + 1]


def _partitioned_statistic(x: np.ndarray, rank: int, window: int) -> np.ndarray:
    """``_order_statistic`` by partitioning a copy of each window (the same values): for a
    few windows, where importing scipy.ndimage would cost more than the work."""
    return np.partition(sliding_window_view(x, window), rank, axis=1)[:, rank]


def _quantile_of_windows(
    x: np.ndarray,
    q: float,
    window: int,
    numpy_arithmetic: bool = False,
    statistic: Callable[[np.ndarray, int, int], np.ndarray] = _order_statistic,
) -> np.ndarray:
    """Linear interpolation between the order statistics around ``q (window - 1)``, in the
    arithmetic of pandas' rolling quantile and median (the same floats, bit for bit), or with
    ``numpy_arithmetic`` in that of ``np.quantile`` and ``np.median`` (which interpolate from
    the upper neighbour when the weight is 1/2 or more)."""
    h = q * (window - 1)
    low = int(h)
    below = statistic(x, low, window)
    if h == low:
        return below
    above = statistic(x, low + 1, window)
    if q == 0.5:
        return (below + above) / 2
    gamma = h - low
    if numpy_arithmetic and gamma >= 0.5:
        return above - (above - below) * (1 - gamma)
    return below + (above - below) * gamma


def _bounds_rolling(
    x: np.ndarray,
    window: int,
    spread: float,
    numpy_arithmetic: bool = False,
    statistic: Callable[[np.ndarray, int, int], np.ndarray] = _order_statistic,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bound of every window from running order statistics (or any other
    source of the same order statistics)."""
    med = _quantile_of_windows(x, 0.5, window, numpy_arithmetic, statistic)
    p1 = _quantile_of_windows(x, 0.01, window, numpy_arithmetic, statistic)
    p99 = _quantile_of_windows(x, 0.99, window, numpy_arithmetic, statistic)
    return med - spread * (p99 - p1), med + spread * (p99 - p1)


def _rolling_extreme(bounds: np.ndarray, window: int, highest: bool) -> np.ndarray:
    """For each reading, the highest (or lowest) bound among the ``window`` windows holding it.

    The sliding maximum of van Herk and Gil-Werman: running maxima forward and backward within
    blocks of ``window``, two per output, O(n) however wide the window (exact: no arithmetic).
    """
    sign = 1.0 if highest else -1.0
    values = sign * bounds
    padded = np.concatenate((np.full(window - 1, -np.inf), values, np.full(window - 1, -np.inf)))
    out_size = padded.size - window + 1
    blocks = -(-padded.size // window)
    full = np.concatenate((padded, np.full(blocks * window - padded.size, -np.inf)))
    rows = full.reshape(blocks, window)
    forward = np.maximum.accumulate(rows, axis=1).ravel()
    backward = np.maximum.accumulate(rows[:, ::-1], axis=1)[:, ::-1].ravel()
    start = np.arange(out_size)
    return sign * np.maximum(backward[start], forward[start + window - 1])


def _running_extreme(bounds: np.ndarray, window: int, highest: bool) -> np.ndarray:
    """``_rolling_extreme`` by scipy.ndimage's running maximum or minimum (the same values:
    no arithmetic), for the long series that already load it."""
    from scipy.ndimage import maximum_filter1d, minimum_filter1d

    fill = -np.inf if highest else np.inf
    padded = np.concatenate((bounds, np.full(window - 1, fill)))
    running = maximum_filter1d if highest else minimum_filter1d
    # origin (window - 1) // 2: output j is the extreme of bounds[j - window + 1 .. j]
    return running(padded, window, mode="constant", cval=fill, origin=(window - 1) // 2)


def window_outliers(
    values: np.ndarray,
    window: int = DEFAULT_WINDOW,
    spread: float = DEFAULT_SPREAD,
    *,
    rolling: bool | None = None,
) -> np.ndarray:
    """Mask of the outliers of ``values`` (all False when the series is shorter than a window).

    ``rolling`` chooses running order statistics (scipy.ndimage) over sorting every window;
    None: for a series of ROLLING_MIN readings or more. A shorter series gets the same mask
    either way, bit for bit (the sorted windows' arithmetic): a stretch of a long series can
    take the faster way that the series has already paid the import of."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < window:
        return np.zeros(x.size, dtype=bool)
    long = x.size >= ROLLING_MIN
    if rolling is None:
        rolling = long
    if rolling:
        lo, hi = _bounds_rolling(x, window, spread, numpy_arithmetic=not long)
    else:
        lo, hi = _bounds_sorted(x, window, spread)
    # outlier if any window holding it says so: compare with the highest lower bound and the
    # lowest upper bound among the windows that hold the reading
    extreme = _running_extreme if rolling else _rolling_extreme
    highest_lo = extreme(lo, window, highest=True)
    lowest_hi = extreme(hi, window, highest=False)
    return (x < highest_lo) | (x > lowest_hi)


# the study's guard: one reading of the run's time per this many seconds of work
GUARD_SECONDS = 0.1


def guard_length(mean_seconds: float, window: int = DEFAULT_WINDOW) -> int:
    """Readings at the start that ``guarded_outliers`` never flags.

    ``ceil(window / ln(1 + k))``, k = ceil(0.1 s / mean reading): the rule of Traini et al.
    2022: 18 readings for a 1 µs reading, 44 for 1 ms, 289 for 0.1 s or more.
    """
    if not math.isfinite(mean_seconds) or mean_seconds <= 0.0:
        return 0
    per_guard = math.ceil(GUARD_SECONDS / mean_seconds)
    return math.ceil(window / math.log1p(per_guard))


def guarded_outliers(
    values: np.ndarray,
    mean_seconds: float,
    window: int = DEFAULT_WINDOW,
    spread: float = DEFAULT_SPREAD,
) -> np.ndarray:
    """``window_outliers`` over the readings after the first ``guard_length(mean_seconds)``."""
    x = np.asarray(values, dtype=np.float64)
    mask = np.zeros(x.size, dtype=bool)
    guard = min(guard_length(mean_seconds, window), x.size)
    mask[guard:] = window_outliers(x[guard:], window, spread)
    return mask
