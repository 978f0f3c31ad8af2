"""The dependence factor that deflates a split statistic for autocorrelated readings.

Separate from the scans because it is its own estimate (overlapping batch means of an
indicator's long-run variance) used in three places: inside a scanned segment, as the
series-wide floor of the seeded intervals, and for the edge tests at each end of the series.
"""

from __future__ import annotations

import numpy as np

from pilot_sys.stats._changepoint_result import ChangeKind
from pilot_sys.stats._changepoint_statistic import _cumsum, _indicators, _LazyKeys

# Windows of the dependence factor formed at a time: a block stays in cache, and a long segment
# allocates no array of its length (fresh pages cost more than the arithmetic)
_FACTOR_BLOCK = 1 << 16


def dependence_factor(counts: np.ndarray, cuts: tuple[int, ...]) -> float:
    """Long-run / short-run variance ratio of a 0/1 indicator, centred within pieces at ``cuts``.

    ``counts`` is the indicator's cumulative sum. Overlapping batch means with batch length
    ~ 4 (m/100)^(2/9) (the Newey-West bandwidth) estimate the same quantity as a Bartlett-kernel
    sum of autocovariances, in four O(m) passes instead of O(m * lags). Centring within the
    pieces the change would create keeps the change itself from looking like dependence.
    Never below 1: independence is the best case, not a reward.
    """
    m = counts.size
    batch = int(4.0 * (m / 100.0) ** (2.0 / 9.0))
    if batch < 2 or m < 4 * batch:
        return 1.0
    bounds = [0, *sorted(c for c in cuts if 0 < c < m), m]
    variance = 0.0
    previous = 0
    centres: list[tuple[int, int, float]] = []  # windows [a, b) and the count they expect
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b <= a:
            continue
        ones = int(counts[b - 1]) - previous
        previous = int(counts[b - 1])
        p = ones / (b - a)
        variance += (b - a) * p * (1.0 - p)
        centres.append((a, max(a, min(b, m - batch + 1)), batch * p))
    if variance <= 0.0:
        return 1.0
    total = 0.0
    windows = m - batch + 1
    for first in range(0, windows, _FACTOR_BLOCK):
        last = min(first + _FACTOR_BLOCK, windows)
        # window i sums the indicator over [i, i + batch): counts[i + batch - 1] - counts[i - 1]
        block = counts[first + batch - 1 : last + batch - 1].astype(np.float64)
        if first:
            block -= counts[first - 1 : last - 1]
        else:
            block[1:] -= counts[: last - 1]
        for a, b, expected in centres:
            if a < last and b > first:
                block[max(a, first) - first : min(b, last) - first] -= expected
        # einsum's own loop: a BLAS dot of more than ~10,000 readings starts threads, whose
        # start-up and spinning cost many times the sum itself (and more on a busy machine)
        total += float(np.einsum("i,i->", block, block))
    obm = total / (batch * windows)
    return max(1.0, obm / (variance / m))


class _SeriesDependence:
    """Dependence factor of a stretch of the series, indicators taken within each unsplit segment.

    Short seeded intervals estimate their own long-run variance from a handful of batches,
    which under-corrects for autocorrelation; the estimate over the whole series (with its
    larger batch) is the floor they use instead. ``with_cut`` centres the indicators also at a
    candidate's split, so that a real edge stretch (a run of readings on one side of the median)
    is not counted as dependence against itself, the rule ``dependence_factor`` applies within
    an interval. ``segments`` must tile one stretch [first begin, last end) of the series.
    """

    def __init__(
        self,
        values: np.ndarray,
        segments: list[tuple[int, int]],
        scale: bool,
        known: dict[tuple[int, int], list[tuple[ChangeKind, np.ndarray]]] | None = None,
    ) -> None:
        ordered = sorted(segments)
        self._source = (values, ordered, scale)
        self._known = known or {}  # indicators of segments a scan already made
        self._origin, stop = ordered[0][0], ordered[-1][1]
        self._cuts = frozenset(b - self._origin for b, _ in ordered if self._origin < b < stop)
        self._counts: list[np.ndarray] | None = None
        self._memo: dict[int, float] = {}

    def _factor(self, cuts: frozenset[int]) -> float:
        if self._counts is None:  # built on first use: most edge tests never need it
            values, segments, scale = self._source
            parts: dict[ChangeKind, list[np.ndarray]] = {}
            for b, e in segments:
                made = self._known.get((b, e)) or _indicators(values[b:e], _LazyKeys(b, e), scale)
                for kind, indicator in made:
                    parts.setdefault(kind, []).append(indicator)
            self._counts = [_cumsum(np.concatenate(p)) for p in parts.values()]
        return max(dependence_factor(c, tuple(sorted(cuts))) for c in self._counts)

    @property
    def base(self) -> float:
        return self._factor(self._cuts)

    def with_cut(self, split: int) -> float:
        """The factor with the pieces also cut at ``split`` (an absolute position)."""
        if split not in self._memo:
            self._memo[split] = self._factor(self._cuts | {split - self._origin})
        return self._memo[split]
