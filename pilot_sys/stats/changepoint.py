"""E-Divisive with Medians (EDM) change points and the dominant stable segment.

EDM (James, Kejariwal and Matteson, arXiv:1411.7955) splits a series where the weighted
difference between the median before and the median after a split is largest, then recurses
into both halves (binary segmentation). What makes a split *real* is the part Pilot got wrong: it
accepted the first split whenever the two medians differed, which on pure noise they always do.

Two forms of the median statistic share one calibrated acceptance rule:

* ``statistic="sign"`` (default): the median difference measured in probability, i.e. the
  difference between the two sides' empirical CDFs at the pooled median,
  ``k (m-k) / m * |F_left(M) - F_right(M)|`` (a CUSUM of "above the pooled median"). It is the
  first-order (Bahadur) expansion of EDM's ``k (m-k) / m * |med_left - med_right|``, but its
  argmax is consistent: the literal median difference keeps growing past an unbalanced change
  (a median stays inside the majority component until the minority is half the side), so its
  split can land up to twice as far from the start as the real change. The test uses the range
  of the CUSUM, so a change that starts and ends inside a segment (a burst) is not half-cancelled.
  No sort is needed to test: one selection of the pooled median and one cumulative sum, O(m).
  An accepted split is then re-placed with the indicator cut midway between the two sides.
* ``statistic="median"``: the literal EDM median difference on ranks, computed exactly at every
  split (short segments) or on a grid refined near its peaks (long ones) with batched prefix
  order statistics; ``detect_exact`` is its quadratic brute-force reference.

Acceptance: on exchangeable data (no change) the tie-broken ranks of a segment are a uniform
random permutation whatever the distribution, and both statistics, scaled by
``1 / sqrt(m p (1-p))``, tend to functionals of a Brownian bridge: Kuiper's distribution for the
CUSUM range, Kolmogorov's for the literal median form. So the false-positive rate of a split test
on pure noise is ``significance`` for every distribution and every n, and no decision depends on
units or on any monotone transform of the data.
Real readings are autocorrelated, so the statistic is divided by the square root of an
overlapping-batch-means long-run variance factor of the indicator sequence (never below 1).
A second scan on the indicator "outside the pooled interquartile range" catches changes of
spread with an unchanged median; the two scans share a Bonferroni budget.

Binary segmentation tests the whole segment first, so a pattern that no single split explains
(one warm-up per round of a multi-round session, a burst) can hide. A second stage scans the
segments it could not split with seeded multi-scale intervals (Kovacs et al., "Seeded binary
segmentation", 2020), Bonferroni-corrected over all intervals so that stage adds at most
``significance`` to the false-alarm rate; accepted splits go back to binary segmentation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.stats._changepoint_null import kolmogorov_isf, kolmogorov_sf, kuiper_isf, kuiper_sf
from pilot_sys.stats._changepoint_ranks import (
    position_keys,
    ranks_from_order,
    segment_order,
    split_medians,
)

DEFAULT_SIGNIFICANCE = 0.01
# The median form scans every split of segments with at most this many candidates (then it is
# exactly the quadratic reference); longer ones use a grid of about _GRID_POINTS splits.
_EXHAUSTIVE_LIMIT = 2048
_GRID_POINTS = 1024
_REFINED_PEAKS = 4

ChangeKind = Literal["location", "scale"]
Statistic = Literal["sign", "median"]


class ChangePoint(BaseModel):
    """One accepted split and the evidence for it."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(description="0-based index where the new segment starts")
    statistic: float = Field(
        description="dependence-adjusted statistic: Kuiper (sign form) or Kolmogorov (median form) under no change"
    )
    p_value: float = Field(description="Bonferroni-combined p-value of the split test")
    kind: ChangeKind = Field(description="location: the median moved; scale: the spread moved")


class Segment(BaseModel):
    """A run of readings between two change points, with its median in the data's units."""

    model_config = ConfigDict(frozen=True)

    begin: int
    end: int  # exclusive
    median: float

    @property
    def size(self) -> int:
        return self.end - self.begin


class ChangePoints(BaseModel):
    """The result of EDM on one series: change points, segments and the dominant stable segment."""

    model_config = ConfigDict(frozen=True)

    n: int
    changepoints: list[int] = Field(description="sorted 0-based indices where a new segment starts")
    stable_segment: tuple[int, int] | None = Field(
        description="[begin, end) of the longest segment, only when it holds more than 50% of samples"
    )
    segments: list[Segment]
    details: list[ChangePoint]
    min_size: int
    significance: float
    penalty: float = Field(description="critical value of the adjusted statistic a split had to exceed")
    statistic: Statistic

    @property
    def stable_reason(self) -> str:
        """Why there is or is not a stable segment, in words a reader can check."""
        if self.stable_segment is not None:
            begin, end = self.stable_segment
            return f"segment [{begin}, {end}) holds {100.0 * (end - begin) / self.n:.1f}% of the samples"
        longest = max((s.size for s in self.segments), default=0)
        share = 100.0 * longest / self.n if self.n else 0.0
        return f"no stable phase: the longest segment holds {share:.1f}% of the samples (more than 50% needed)"


class _Split(BaseModel):
    """The outcome of testing one segment [begin, end)."""

    model_config = ConfigDict(frozen=True)

    begin: int
    end: int
    index: int | None  # absolute index of the accepted split, None when rejected
    statistic: float
    p_value: float
    kind: ChangeKind


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


def dependence_factor(counts: np.ndarray, cuts: tuple[int, ...]) -> float:
    """Long-run / short-run variance ratio of a 0/1 indicator, centred within the pieces at ``cuts``.

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
    windows = counts[batch - 1 :].astype(np.float64)  # window i sums the indicator over [i, i + batch)
    windows[1:] -= counts[: m - batch]
    variance = 0.0
    previous = 0
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b <= a:
            continue
        ones = int(counts[b - 1]) - previous
        previous = int(counts[b - 1])
        p = ones / (b - a)
        variance += (b - a) * p * (1.0 - p)
        windows[a : max(a, min(b, m - batch + 1))] -= batch * p
    if variance <= 0.0:
        return 1.0
    obm = float(windows @ windows) / (batch * (m - batch + 1))
    return max(1.0, obm / (variance / m))


class _LazyKeys:
    """Tie-break keys of a segment, computed only if a tie or a sort needs them."""

    def __init__(self, begin: int, end: int) -> None:
        self._range = (begin, end)
        self._keys: np.ndarray | None = None

    @property
    def array(self) -> np.ndarray:
        if self._keys is None:
            self._keys = position_keys(*self._range)
        return self._keys


def _top_masks(values: np.ndarray, keys: _LazyKeys, counts: list[int]) -> list[np.ndarray]:
    """Masks of the ``count`` largest values for each count, ties broken by key.

    One multi-k selection (np.partition) finds every cut value in O(m); no sort.
    """
    m = values.size
    kth = sorted({m - c for c in counts if 0 < c <= m})
    ordered = np.partition(values, kth) if kth else values
    masks = []
    for count in counts:
        if count <= 0:
            masks.append(np.zeros(m, dtype=bool))
            continue
        cut = ordered[m - count]
        above = values > cut
        tied = values == cut
        need = count - int(np.count_nonzero(above))
        n_tied = int(np.count_nonzero(tied))
        if need == n_tied:
            masks.append(above | tied)
            continue
        tied_keys = keys.array[tied]
        key_cut = np.partition(tied_keys, n_tied - need)[n_tied - need]
        masks.append(above | (tied & (keys.array >= key_cut)))
    return masks


def _indicators(values: np.ndarray, keys: _LazyKeys, scale: bool) -> list[tuple[ChangeKind, np.ndarray]]:
    """Above the pooled median; and outside the pooled interquartile range (spread)."""
    m = values.size
    quarter = m // 4
    if not scale:
        return [("location", _top_masks(values, keys, [m // 2])[0])]
    upper_half, top_quarter, above_bottom_quarter = _top_masks(values, keys, [m // 2, quarter, m - quarter])
    return [("location", upper_half), ("scale", top_quarter | ~above_bottom_quarter)]


_POSITIONS = np.arange(0, dtype=np.float64)


def _positions(stop: int) -> np.ndarray:
    """0, 1, ..., stop - 1 as float64, from a grow-only cache (saves an allocation per scan)."""
    global _POSITIONS
    if _POSITIONS.size < stop:
        _POSITIONS = np.arange(max(stop, 2 * _POSITIONS.size), dtype=np.float64)
    return _POSITIONS[:stop]


def _cusum_scan(counts: np.ndarray, min_size: int) -> tuple[int, float, tuple[int, ...]]:
    """Best split of a 0/1 indicator, the bridge-scaled CUSUM range, and the cuts it implies.

    ``counts`` is the indicator's cumulative sum. The range max C - min C (with C = 0 at both
    ends) equals max |C| for a single change and also sees a change that starts and ends inside
    the segment, which max |C| half-cancels. The split is the extreme farther from zero; the
    other extreme, when interior, is the second cut of such an epidemic change.
    """
    m = counts.size
    p = float(counts[-1]) / m
    if p <= 0.0 or p >= 1.0:
        return m // 2, 0.0, (m // 2,)
    bridge = _positions(m - min_size + 1)[min_size:] * -p
    bridge += counts[min_size - 1 : m - min_size]
    top, bottom = int(np.argmax(bridge)), int(np.argmin(bridge))
    high, low = max(0.0, float(bridge[top])), min(0.0, float(bridge[bottom]))
    scale = math.sqrt(m * p * (1.0 - p))
    split = min_size + (top if high >= -low else bottom)
    cuts = tuple(sorted({min_size + top if high > 0 else split, min_size + bottom if low < 0 else split}))
    return split, (high - low) / scale, cuts


_CUT_SAMPLE = 20_000


def _separating_cut(left: np.ndarray, right: np.ndarray) -> float:
    """The value c that best separates two samples: argmax |F_left(c) - F_right(c)|.

    Thresholding there makes the two sides' indicator means as different as they can be, so the
    CUSUM of the indicator peaks most sharply at the change. Order-only (invariant to monotone
    transforms); each side is thinned to a deterministic stride of at most 20,000 readings,
    which places the cut to within a fraction of a percentile.
    """
    a = np.sort(left[:: max(1, left.size // _CUT_SAMPLE)])
    b = np.sort(right[:: max(1, right.size // _CUT_SAMPLE)])
    candidates = np.concatenate([a, b])
    gap = np.abs(np.searchsorted(a, candidates, side="right") / a.size - np.searchsorted(b, candidates, side="right") / b.size)
    return float(candidates[int(np.argmax(gap))])


def _refine_split(
    values: np.ndarray, keys: _LazyKeys, split: int, min_size: int, kind: ChangeKind, rounds: int = 3
) -> int:
    """Re-place an accepted split with the indicator cut that best separates the two sides.

    After an unbalanced change the pooled median (or pooled interquartile range) sits deep inside
    the majority side, where the CUSUM drifts slowly and its argmax wanders; cutting where the
    two sides' distributions differ most (of the values, or of the rank distance from the
    pooled median for a change of spread) makes both drifts large and the estimate sharp. Only
    the location moves: acceptance was decided by the calibrated test.
    """
    m = values.size
    if kind == "location":
        series = values
    else:
        ranks = ranks_from_order(segment_order(values, keys.array))
        series = np.abs(2 * ranks - (m - 1)).astype(np.float64)
    for _ in range(rounds):
        cut = _separating_cut(series[:split], series[split:])
        moved = _cusum_scan(np.cumsum(series > cut), min_size)[0]
        if moved == split:
            break
        split = moved
    return split


def _median_statistic(m: int, splits: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """EDM's k (m-k)/m |med_left - med_right| with rank medians, scaled to the Brownian bridge."""
    k = splits.astype(np.float64)
    return 2.0 * k * (m - k) * np.abs(left - right) / m**2.5


def _median_scan_fast(ranks: np.ndarray, order: np.ndarray, min_size: int) -> tuple[int, float]:
    """Best split of the literal median statistic: coarse grid, then every split near its peaks."""
    m = ranks.size
    lo, hi = min_size, m - min_size
    if hi - lo + 1 <= _EXHAUSTIVE_LIMIT:
        splits = np.arange(lo, hi + 1)
    else:
        step = -(-(hi - lo + 1) // _GRID_POINTS)
        grid = np.arange(lo, hi + 1, step)
        left, right = split_medians(ranks, order, grid)
        coarse = _median_statistic(m, grid, left, right)
        peaks = np.argsort(-coarse, kind="stable")[:_REFINED_PEAKS]
        windows = [np.arange(max(lo, grid[p] - step + 1), min(hi, grid[p] + step - 1) + 1) for p in peaks]
        splits = np.unique(np.concatenate([grid, *windows]))
    left, right = split_medians(ranks, order, splits)
    stat = _median_statistic(m, splits, left, right)
    best = int(np.argmax(stat))
    return int(splits[best]), float(stat[best])


def _median_scan_exact(ranks: np.ndarray, order: np.ndarray, min_size: int) -> tuple[int, float]:
    """Quadratic reference: every split, medians straight from numpy."""
    m = ranks.size
    splits = np.arange(min_size, m - min_size + 1)
    left = np.array([np.median(ranks[:k]) for k in splits])
    right = np.array([np.median(ranks[k:]) for k in splits])
    stat = _median_statistic(m, splits, left, right)
    best = int(np.argmax(stat))
    return int(splits[best]), float(stat[best])


_MedianScan = Callable[[np.ndarray, np.ndarray, int], tuple[int, float]]


def _median_candidates(
    values: np.ndarray, keys: np.ndarray, min_size: int, scale: bool, scan: _MedianScan
) -> list[tuple[ChangeKind, int, float, np.ndarray]]:
    order = segment_order(values, keys)
    ranks = ranks_from_order(order)
    m = ranks.size
    split, stat = scan(ranks, order, min_size)
    out: list[tuple[ChangeKind, int, float, np.ndarray]] = [("location", split, stat, ranks >= m - m // 2)]
    if scale:
        distance = np.abs(2 * ranks - (m - 1)).astype(np.uint64)
        spread_order = np.argsort((distance << np.uint64(40)) | (keys >> np.uint64(13)), kind="stable")
        spread = ranks_from_order(spread_order)
        s_split, s_stat = scan(spread, spread_order, min_size)
        out.append(("scale", s_split, s_stat, spread >= m - m // 2))
    return out


@dataclass
class _ScanResult:
    """What one segment's scans found, independent of any penalty: cacheable across runs."""

    begin: int
    end: int
    statistic_kind: Statistic
    # per scan: (kind, split, raw statistic, dependence factor or None when not needed)
    scans: list[tuple[ChangeKind, int, float, float | None]]
    refined: dict[ChangeKind, int] = field(default_factory=dict)


def _scan_segment(
    values: np.ndarray,
    begin: int,
    end: int,
    *,
    min_size: int,
    base_penalty: float,
    scale: bool,
    dependence: bool,
    median_scan: _MedianScan | None,
) -> _ScanResult:
    """Scan one segment. The dependence factor (never below 1) is computed only for a scan whose
    raw statistic beats ``base_penalty``, the smallest penalty any decision will use."""
    segment = values[begin:end]
    keys = _LazyKeys(begin, end)
    found: list[tuple[ChangeKind, int, float, np.ndarray, tuple[int, ...]]] = []
    if median_scan is None:
        for kind, indicator in _indicators(segment, keys, scale):
            counts = np.cumsum(indicator)
            split, stat, cuts = _cusum_scan(counts, min_size)
            found.append((kind, split, stat, counts, cuts))
    else:
        for kind, split, stat, indicator in _median_candidates(segment, keys.array, min_size, scale, median_scan):
            found.append((kind, split, stat, np.cumsum(indicator), (split,)))
    scans = [
        (kind, split, stat, dependence_factor(counts, cuts) if dependence and stat > base_penalty else None)
        for kind, split, stat, counts, cuts in found
    ]
    return _ScanResult(begin=begin, end=end, statistic_kind="sign" if median_scan is None else "median", scans=scans)


def _decide(
    values: np.ndarray, scan: _ScanResult, *, penalty: float, floor: float, min_size: int
) -> _Split:
    """Accept the best split of a scanned segment if its dependence-adjusted statistic beats ``penalty``.

    ``floor`` is the smallest dependence factor to apply (1, or a series-wide estimate for short
    intervals whose own estimate is too noisy).
    """
    scored: list[tuple[float, int, ChangeKind]] = []
    for kind, split, stat, factor in scan.scans:
        if factor is not None:
            stat /= math.sqrt(max(floor, factor))
        elif floor > 1.0:
            stat /= math.sqrt(floor)
        scored.append((stat, split, kind))
    # A level shift moves the spread indicator too; name it a location change whenever the
    # location scan alone is significant, so the sharper location refinement places it.
    stat, split, kind = max(scored, key=lambda c: (c[2] == "location" and c[0] > penalty, c[0]))
    tail = kuiper_sf if scan.statistic_kind == "sign" else kolmogorov_sf
    p_value = min(1.0, len(scored) * tail(stat))
    accepted = stat > penalty
    if accepted and scan.statistic_kind == "sign":
        if kind not in scan.refined:
            segment = values[scan.begin : scan.end]
            scan.refined[kind] = _refine_split(segment, _LazyKeys(scan.begin, scan.end), split, min_size, kind)
        split = scan.refined[kind]
    return _Split(
        begin=scan.begin,
        end=scan.end,
        index=scan.begin + split if accepted else None,
        statistic=stat,
        p_value=p_value,
        kind=kind,
    )


def _validated(x: np.ndarray) -> np.ndarray:
    values = np.asarray(x, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D series, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("the series holds NaN or infinite values")
    return values


def _assemble(
    values: np.ndarray,
    tests: list[_Split],
    *,
    min_size: int,
    significance: float,
    penalty: float,
    statistic: Statistic,
) -> ChangePoints:
    n = values.size
    accepted = sorted((t for t in tests if t.index is not None), key=lambda t: t.index or 0)
    cps = [int(t.index) for t in accepted if t.index is not None]
    bounds = [0, *cps, n]
    segments = [
        Segment(begin=b, end=e, median=float(np.median(values[b:e])))
        for b, e in zip(bounds[:-1], bounds[1:], strict=True)
        if e > b
    ]
    stable: tuple[int, int] | None = None
    if segments:
        longest = max(segments, key=lambda s: s.size)
        if 2 * longest.size > n:
            stable = (longest.begin, longest.end)
    details = [
        ChangePoint(index=int(t.index), statistic=t.statistic, p_value=t.p_value, kind=t.kind)
        for t in accepted
        if t.index is not None
    ]
    return ChangePoints(
        n=n,
        changepoints=cps,
        stable_segment=stable,
        segments=segments,
        details=details,
        min_size=min_size,
        significance=significance,
        penalty=penalty,
        statistic=statistic,
    )


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


def _series_dependence(values: np.ndarray, segments: list[tuple[int, int]], scale: bool) -> float:
    """Dependence factor of the whole series, indicators taken within each unsplit segment.

    Short seeded intervals estimate their own long-run variance from a handful of batches,
    which under-corrects for autocorrelation; the series-wide estimate (with its larger batch)
    is the floor they use instead.
    """
    n = values.size
    parts: dict[ChangeKind, list[np.ndarray]] = {}
    for b, e in sorted(segments):
        for kind, indicator in _indicators(values[b:e], _LazyKeys(b, e), scale):
            parts.setdefault(kind, []).append(indicator)
    cuts = tuple(sorted({b for b, _ in segments if 0 < b < n}))
    return max(dependence_factor(np.cumsum(np.concatenate(p)), cuts) for p in parts.values())


def _run(
    x: np.ndarray,
    *,
    min_size: int | None,
    penalty: float | None,
    significance: float,
    scale: bool,
    dependence: bool,
    statistic: Statistic,
    median_scan: _MedianScan | None,
    seeded: bool = True,
    cache: dict[tuple[int, int], _ScanResult] | None = None,
) -> ChangePoints:
    values = _validated(x)
    n = values.size
    size = default_min_size(n) if min_size is None else int(min_size)
    if size < 2:
        raise ValueError("min_size must be at least 2")
    scans = 2 if scale else 1
    threshold = critical_value(significance, scans, statistic) if penalty is None else float(penalty)
    if threshold <= 0:
        raise ValueError("penalty must be positive")
    used: dict[tuple[int, int], _ScanResult] = {}

    def test(begin: int, end: int, pen: float, floor: float = 1.0) -> _Split:
        key = (begin, end)
        scan = used.get(key) or (cache.get(key) if cache is not None else None)
        if scan is None:
            scan = _scan_segment(
                values,
                begin,
                end,
                min_size=size,
                base_penalty=threshold,
                scale=scale,
                dependence=dependence,
                median_scan=median_scan,
            )
        used[key] = scan
        return _decide(values, scan, penalty=pen, floor=floor, min_size=size)

    tests: list[_Split] = []

    def bisect(begin: int, end: int) -> list[tuple[int, int]]:
        """Binary segmentation of [begin, end); returns the segments it could not split."""
        finals: list[tuple[int, int]] = []
        pending = [(begin, end)]
        while pending:
            b, e = pending.pop()
            if e - b < 2 * size:
                finals.append((b, e))
                continue
            result = test(b, e, threshold)
            tests.append(result)
            if result.index is None:
                finals.append((b, e))
            else:
                pending.extend([(b, result.index), (result.index, e)])
        return finals

    finals = bisect(0, n)
    intervals = seeded_intervals(n, size) if seeded else np.empty((0, 2), dtype=np.int64)
    if intervals.size:
        # Second stage: inside each segment binary segmentation could not split, look for the
        # most significant seeded interval; Bonferroni over all intervals keeps the whole stage's
        # false-alarm rate at `significance`.
        widen = critical_value(significance / len(intervals), scans, statistic) / critical_value(
            significance, scans, statistic
        )
        seeded_penalty = threshold * widen
        floor = _series_dependence(values, finals, scale) if dependence else 1.0
        queue = [f for f in finals if f[1] - f[0] >= 4 * size]
        while queue:
            b, e = queue.pop()
            inside = intervals[(intervals[:, 0] >= b) & (intervals[:, 1] <= e)]
            found = [
                result
                for lo, hi in inside.tolist()
                if (lo, hi) != (b, e) and (result := test(lo, hi, seeded_penalty, floor)).index is not None
            ]
            # Greedy selection: the most significant split first; an interval holding a split
            # already taken (or closer than min_size to one) has had its change explained.
            chosen: list[int] = []
            for result in sorted(found, key=lambda r: -r.statistic):
                index = int(result.index or 0)
                if any(result.begin < c < result.end or abs(index - c) < size for c in chosen):
                    continue
                if index - b < size or e - index < size:
                    continue
                chosen.append(index)
                tests.append(result.model_copy(update={"p_value": min(1.0, result.p_value * len(intervals))}))
            cuts = sorted(chosen)
            for lo, hi in zip([b, *cuts], [*cuts, e], strict=True):
                if cuts:
                    queue.extend(f for f in bisect(lo, hi) if f[1] - f[0] >= 4 * size)
    if cache is not None:  # keep what this run used: older entries can never recur
        cache.clear()
        cache.update(used)
    return _assemble(
        values, tests, min_size=size, significance=significance, penalty=threshold, statistic=statistic
    )


def detect(
    x: np.ndarray,
    *,
    min_size: int | None = None,
    penalty: float | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
    scale: bool = True,
    dependence: bool = True,
    statistic: Statistic = "sign",
    seeded: bool = True,
) -> ChangePoints:
    """EDM change points of ``x`` with a calibrated acceptance rule.

    ``min_size``: shortest segment (default ``default_min_size(n)``). ``penalty``: critical value
    of the adjusted statistic; by default derived from ``significance``, the false-positive rate
    of one split test on data without a change, for any distribution. ``scale``: also look for
    changes of spread. ``dependence``: widen the test for autocorrelated readings.
    ``statistic``: "sign" (default, O(n) per segment, consistent split location) or "median"
    (the literal median difference, O(n log n) per segment). ``seeded``: after binary
    segmentation, search the unsplit segments with multi-scale seeded intervals (Bonferroni over
    them), which finds bursts and per-round warm-ups a single split cannot isolate.
    """
    return _run(
        x,
        min_size=min_size,
        penalty=penalty,
        significance=significance,
        scale=scale,
        dependence=dependence,
        statistic=statistic,
        median_scan=_median_scan_fast if statistic == "median" else None,
        seeded=seeded,
    )


def detect_exact(
    x: np.ndarray,
    *,
    min_size: int | None = None,
    penalty: float | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
    scale: bool = True,
    dependence: bool = True,
    seeded: bool = True,
) -> ChangePoints:
    """The literal EDM median statistic scanned by brute force at every split: O(n^2), a reference."""
    return _run(
        x,
        min_size=min_size,
        penalty=penalty,
        significance=significance,
        scale=scale,
        dependence=dependence,
        statistic="median",
        median_scan=_median_scan_exact,
        seeded=seeded,
    )


class IncrementalEDM:
    """EDM over a series that grows by appended rounds, reusing every scan that cannot change.

    A segment's scan depends only on the readings inside it (tie-break keys and the seeded
    interval grid use absolute positions) and is cached without any penalty, so every segment
    and seeded interval that ends before the appended data is decided again from its cached
    scan in microseconds; only the segments and intervals that reach the end are scanned anew.
    The result is identical to ``detect`` on the concatenated series with the same parameters
    (the cache is dropped when the default min_size steps, i.e. when n quadruples).
    """

    def __init__(
        self,
        *,
        min_size: int | None = None,
        penalty: float | None = None,
        significance: float = DEFAULT_SIGNIFICANCE,
        scale: bool = True,
        dependence: bool = True,
        statistic: Statistic = "sign",
        seeded: bool = True,
    ) -> None:
        self._min_size = min_size
        self._seeded = seeded
        self._penalty = penalty
        self._significance = significance
        self._scale = scale
        self._dependence = dependence
        self._statistic: Statistic = statistic
        self._buffer = np.empty(1024, dtype=np.float64)
        self._n = 0
        self._cache: dict[tuple[int, int], _ScanResult] = {}
        self._cache_min_size: int | None = None

    @property
    def n(self) -> int:
        return self._n

    @property
    def values(self) -> np.ndarray:
        """The readings seen so far (a read-only copy-free view)."""
        view = self._buffer[: self._n]
        view.flags.writeable = False
        return view

    def update(self, new_values: np.ndarray) -> ChangePoints:
        """Append one round's readings and return the change points of everything seen so far."""
        fresh = _validated(np.atleast_1d(new_values))
        needed = self._n + fresh.size
        if needed > self._buffer.size:  # amortised doubling keeps appends O(1) per reading
            grown = np.empty(max(needed, 2 * self._buffer.size), dtype=np.float64)
            grown[: self._n] = self._buffer[: self._n]
            self._buffer = grown
        self._buffer[self._n : needed] = fresh
        self._n = needed
        size = default_min_size(self._n) if self._min_size is None else self._min_size
        if size != self._cache_min_size:
            self._cache.clear()
            self._cache_min_size = size
        return _run(
            self._buffer[: self._n],
            min_size=size,
            penalty=self._penalty,
            significance=self._significance,
            scale=self._scale,
            dependence=self._dependence,
            statistic=self._statistic,
            median_scan=_median_scan_fast if self._statistic == "median" else None,
            seeded=self._seeded,
            cache=self._cache,
        )
