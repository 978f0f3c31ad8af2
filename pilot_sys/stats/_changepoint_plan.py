"""The plan of one detection: min size, critical value, seeded and edge intervals, family.

Everything a detection decides before it reads a value, from the caller's options and the
series length alone: the shortest segment, the critical value of binary segmentation, the
layouts of the seeded intervals and of the edge intervals at both ends, and the one Bonferroni
family they share. Separate so that the driver and the edge tests read one resolved plan.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from pilot_sys.stats._changepoint_null import kolmogorov_isf, kuiper_isf, kuiper_sf
from pilot_sys.stats._changepoint_result import Statistic
from pilot_sys.stats._changepoint_statistic import _MedianScan


def default_min_size(n: int) -> int:
    """Shortest segment when the caller does not choose one.

    A median needs a few dozen points to mean anything, and resolution finer than about sqrt(n)
    only invites false alarms on long series. The value is the power of two not above sqrt(n)
    (at least 10), so it stays fixed while a growing series is updated, which lets the
    incremental detector reuse earlier work.
    """
    root = math.isqrt(max(n, 1))
    return max(10, 1 << (root.bit_length() - 1))


@functools.lru_cache(maxsize=256)
def critical_value(significance: float, scans: int = 2, statistic: Statistic = "sign") -> float:
    """The adjusted statistic a split must exceed, at significance / scans per scan.

    Kuiper's quantile for the sign form (its statistic is the CUSUM range, which also catches a
    change that begins and ends inside the segment), Kolmogorov's for the median form. Cached:
    a session asks for the same few quantiles for every round, and Kuiper's is a bisection.
    """
    if not 0.0 < significance < 1.0:
        raise ValueError("significance must be between 0 and 1")
    alpha = significance / scans
    return kuiper_isf(alpha) if statistic == "sign" else kolmogorov_isf(alpha)


def seeded_intervals(n: int, min_size: int) -> np.ndarray:
    """Deterministic multi-scale intervals over [0, n) (seeded binary segmentation, decay 1/2).

    Lengths L = 4 min_size * 2^j up to n / 2; at each length the intervals start every L / 2
    (plus one ending at n), so every change sits in the middle half of an interval of every
    scale. About n / min_size intervals, 2 n readings per scale: scanning them all costs
    O(n log n). Positions are absolute, so an interval inside earlier readings is the same after
    an append and its scan can be reused. They let a change that a single split cannot isolate
    (a burst, or one warm-up per round of a multi-round session) be found inside a segment.
    """
    out: list[np.ndarray] = []
    length = 4 * min_size
    while 2 * length <= n:
        starts = np.arange(0, n - length + 1, length // 2, dtype=np.int64)
        if starts[-1] != n - length:
            starts = np.append(starts, n - length)
        out.append(np.stack([starts, starts + length], axis=1))
        length *= 2
    return np.concatenate(out) if out else np.empty((0, 2), dtype=np.int64)


# Longest edge interval, in min sizes: beyond about 8 min sizes an edge stretch is long enough
# for binary segmentation and the regular seeded grid (the gap is below ~2 sqrt(n)).
_EDGE_SPAN = 16


def edge_intervals(n: int, min_size: int) -> np.ndarray:
    """Intervals anchored at the two ends of [0, n) for the edge test: [0, L) and [n - L, n).

    A stretch of k readings at an end of the series (a warm-up, a cool-down) sits at the edge of
    every anchored interval, and is most visible in one of about 2k readings, where it is half
    the interval. Lengths therefore run from 2 min_size (the shortest interval that can hold a
    min_size stretch and a min_size rest) up by factors of sqrt(2), so some length is within
    19% of 2k, to min(n / 2, 16 min_size). Lengths are multiples of 4: both indicators (above
    the median; outside the interquartile range) then hold exactly L / 2 ones, and one exact
    null distribution serves both.
    """
    lengths = _edge_lengths(n // 2, min_size)
    rows = [(0, length) for length in lengths] + [(n - length, n) for length in lengths]
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


_EDGE_STEP = 2.0**0.5  # between lengths: some length is within 19% of twice any stretch


@functools.lru_cache(maxsize=256)
def _edge_lengths(longest: int, min_size: int) -> tuple[int, ...]:
    """Edge interval lengths up to ``longest`` (cached: the loop costs more than the lookup)."""
    lengths: list[int] = []
    j = 0
    while True:
        length = 4 * math.ceil(2 * min_size * _EDGE_STEP**j / 4 - 1e-9)
        if length > min(longest, _EDGE_SPAN * min_size):
            return tuple(lengths)
        if not lengths or length != lengths[-1]:
            lengths.append(length)
        j += 1


@dataclass(frozen=True)
class _Plan:
    """The parameters of one detection, resolved from the caller's options and the series length.

    One Bonferroni ``family`` covers the seeded intervals and the edge intervals of both ends, so
    the two searches after binary segmentation together add at most ``significance`` to its
    false-alarm rate.
    """

    n: int
    min_size: int
    scale: bool
    dependence: bool
    significance: float
    statistic: Statistic
    median_scan: _MedianScan | None  # None: the sign form
    scans: int  # indicators per segment (location, and scale when asked)
    threshold: float  # critical value of binary segmentation's tests
    intervals: np.ndarray  # seeded intervals, (k, 2)
    edge_lengths: tuple[int, ...]  # edge interval lengths at each end; () without edge tests
    family: int
    edge_level: float  # p-value an edge test must reach


def _plan(
    n: int,
    *,
    min_size: int | None,
    penalty: float | None,
    significance: float,
    scale: bool,
    dependence: bool,
    statistic: Statistic,
    median_scan: _MedianScan | None,
    seeded: bool,
    edges: bool,
) -> _Plan:
    size = default_min_size(n) if min_size is None else int(min_size)
    if size < 2:
        raise ValueError("min_size must be at least 2")
    scans = 2 if scale else 1
    threshold = (
        critical_value(significance, scans, statistic) if penalty is None else float(penalty)
    )
    if threshold <= 0:
        raise ValueError("penalty must be positive")
    intervals = seeded_intervals(n, size) if seeded else np.empty((0, 2), dtype=np.int64)
    with_edges = seeded and edges and median_scan is None  # seeded=False: binary segmentation alone
    lengths = _edge_lengths(n // 2, size) if with_edges else ()
    family = len(intervals) + 2 * len(lengths)
    # Edge tests are decided on p-values; an explicit penalty stands for the significance it
    # implies.
    implied = significance if penalty is None else min(1.0, scans * kuiper_sf(threshold))
    return _Plan(
        n=n,
        min_size=size,
        scale=scale,
        dependence=dependence,
        significance=significance,
        statistic=statistic,
        median_scan=median_scan,
        scans=scans,
        threshold=threshold,
        intervals=intervals,
        edge_lengths=lengths,
        family=family,
        edge_level=implied / max(family, 1),
    )
