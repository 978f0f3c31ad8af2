"""E-Divisive with Medians (EDM) change points and the dominant stable segment.

EDM (James, Kejariwal and Matteson, arXiv:1411.7955) splits a series where the weighted
difference between the median before and the median after a split is largest, then recurses
into both halves (binary segmentation). What makes a split *real* is a calibrated test: on pure
noise the two medians of any split differ, so accepting a split whenever they differ (as the
original Pilot tool does) finds a change in every series.

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
``significance`` to the false-alarm rate; accepted splits go back to binary segmentation. The
intervals of one scale share their length and are scanned together as the rows of one array
(``_changepoint_batch``), with results identical to scanning them one by one: one numpy call per
scale instead of one per interval, which would otherwise dominate the cost of a round. On a long
series most intervals are far from significant: each first gets an upper bound of both its
statistics (``_changepoint_bound``, exact cuts from blocks sorted once, the walk 16 readings per
step), and only those whose bound could pass are scanned, so the decisions are unchanged.

Neither stage sees a short stretch at an end of the series (a warm-up of 5-10% of a round): a
stretch of k readings moves a segment's CUSUM by about k/2 against a noise of sqrt(m)/2, so
below ~2 sqrt(m) it goes unnoticed, and when the whole segment's test does fire, its argmax can
wander deep into the stable phase. Edge intervals close that gap (``edge_intervals``): intervals
anchored at both ends of the series, 2 min_size long and up by sqrt(2), where such a stretch
always sits at the edge and, at the right length, fills half the interval. Each holds at most
one change point of the stretch, so it is tested for a single change (sup |B|, EDM's own form,
narrower under the null than the range) with the exact null of a balanced 0/1 path up to 128
readings (Kolmogorov's limit overstates short tails up to 8x), deflated by the segment's
dependence factor centred at the candidate split. A segment holding an end of the series is
tested whole and in its edge intervals; when both find a change at the same place the whole
segment places it (more readings, better for a long ramp), otherwise the edge split is taken and
placed with the segment's readings. The edge tests share the seeded stage's Bonferroni budget,
so the two searches together still add at most ``significance`` (the exact tests spend the share
of the budget that the asymptotic ones leave unused; the realised rates are in
benchmarks/results/changepoint.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.stats import _changepoint_batch as batch
from pilot_sys.stats._changepoint_bound import SeededBounds
from pilot_sys.stats._changepoint_null import (
    edge_sf,
    kolmogorov_isf,
    kolmogorov_sf,
    kuiper_isf,
    kuiper_sf,
)
from pilot_sys.stats._changepoint_ranks import (
    keys_at,
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
        description=(
            "dependence-adjusted statistic: Kuiper (sign form), Kolmogorov (median form,"
            " and the sign form's edge intervals, whose p-value is exact up to 128 readings)"
            " under no change"
        )
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
        description=(
            "[begin, end) of the longest segment, only when it holds more than 50% of samples"
        )
    )
    segments: list[Segment]
    details: list[ChangePoint]
    min_size: int
    significance: float
    penalty: float = Field(
        description="critical value of the adjusted statistic a split had to exceed"
    )
    statistic: Statistic

    @property
    def stable_reason(self) -> str:
        """Why there is or is not a stable segment, in words a reader can check."""
        if self.stable_segment is not None:
            begin, end = self.stable_segment
            share = 100.0 * (end - begin) / self.n
            return f"segment [{begin}, {end}) holds {share:.1f}% of the samples"
        longest = max((s.size for s in self.segments), default=0)
        share = 100.0 * longest / self.n if self.n else 0.0
        return (
            f"no stable phase: the longest segment holds {share:.1f}% of the samples"
            " (more than 50% needed)"
        )


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

    def at(self, offsets: np.ndarray) -> np.ndarray:
        """The keys of the readings at these offsets into the segment (``array[offsets]``)."""
        if self._keys is not None:
            return self._keys[offsets]
        return keys_at(offsets + self._range[0])


def _cumsum(indicator: np.ndarray, axis: int = -1) -> np.ndarray:
    """Running count of a 0/1 indicator, in 32 bits when it fits (half the memory traffic)."""
    fits = indicator.shape[axis] < np.iinfo(np.int32).max
    return np.cumsum(indicator, axis=axis, dtype=np.int32 if fits else np.int64)


def _order_statistics(values: np.ndarray, kth: list[int]) -> np.ndarray:
    """``values`` with the entries at ``kth`` in sorted position: one selection for a single
    k, a full sort for several (numpy's vectorised sort beats a multi-k introselect)."""
    if not kth:
        return values
    return np.partition(values, kth) if len(kth) == 1 else np.sort(values)


def _top_masks(
    values: np.ndarray, keys: _LazyKeys, counts: list[int], ordered: np.ndarray | None = None
) -> list[np.ndarray]:
    """Masks of the ``count`` largest values for each count, ties broken by key.

    The cut values come from one selection or sort (or ``ordered``, the values already sorted);
    keys are computed for tied readings only.
    """
    m = values.size
    kth = sorted({m - c for c in counts if 0 < c <= m})
    if ordered is None:
        ordered = _order_statistics(values, kth)
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
        tied_at = np.flatnonzero(tied)
        tied_keys = keys.at(tied_at)
        key_cut = np.partition(tied_keys, n_tied - need)[n_tied - need]
        above[tied_at[tied_keys >= key_cut]] = True
        masks.append(above)
    return masks


def _indicators(
    values: np.ndarray, keys: _LazyKeys, scale: bool, ordered: np.ndarray | None = None
) -> list[tuple[ChangeKind, np.ndarray]]:
    """Above the pooled median; and outside the pooled interquartile range (spread).
    ``ordered``: the values sorted, when the caller has them."""
    m = values.size
    quarter = m // 4
    if not scale:
        return [("location", _top_masks(values, keys, [m // 2], ordered)[0])]
    upper_half, top_quarter, above_bottom_quarter = _top_masks(
        values, keys, [m // 2, quarter, m - quarter], ordered
    )
    return [("location", upper_half), ("scale", top_quarter | ~above_bottom_quarter)]


_POSITIONS = np.arange(0, dtype=np.float64)


def _positions(stop: int) -> np.ndarray:
    """0, 1, ..., stop - 1 as float64, from a grow-only cache (saves an allocation per scan)."""
    global _POSITIONS
    if _POSITIONS.size < stop:
        _POSITIONS = np.arange(max(stop, 2 * _POSITIONS.size), dtype=np.float64)
    return _POSITIONS[:stop]


_BRIDGE_CHUNK = 1 << 16  # bridge values formed at a time: they stay in cache until reduced


def _bridge_extremes(counts: np.ndarray, min_size: int, p: float) -> tuple[int, float, int, float]:
    """First argmax and argmin (offsets from min_size) of the bridge C_k - k p over
    min_size <= k <= m - min_size, and its values there: chunk by chunk, so a long segment never
    holds a second array of its length, with each value formed as a whole-array pass would."""
    m = counts.size
    stop = m - min_size + 1
    positions = _positions(stop)
    top, peak, bottom, trough = 0, -math.inf, 0, math.inf
    for first in range(min_size, stop, _BRIDGE_CHUNK):
        last = min(stop, first + _BRIDGE_CHUNK)
        bridge = positions[first:last] * -p
        bridge += counts[first - 1 : last - 1]
        hi, lo = int(np.argmax(bridge)), int(np.argmin(bridge))
        if bridge[hi] > peak:
            top, peak = first - min_size + hi, float(bridge[hi])
        if bridge[lo] < trough:
            bottom, trough = first - min_size + lo, float(bridge[lo])
    return top, peak, bottom, trough


def _indicator_split(indicator: np.ndarray, min_size: int) -> int:
    """``_cusum_scan(_cumsum(indicator), min_size)[0]`` without a counts array: the running
    count is formed chunk by chunk with the bridge (the same integers, the same floats)."""
    m = indicator.size
    ones = int(np.count_nonzero(indicator))
    p = float(ones) / m
    if p <= 0.0 or p >= 1.0:
        return m // 2
    stop = m - min_size + 1
    positions = _positions(stop)
    before = int(np.count_nonzero(indicator[: min_size - 1]))  # C at k = min_size - 1
    top, peak, bottom, trough = 0, -math.inf, 0, math.inf
    for first in range(min_size, stop, _BRIDGE_CHUNK):
        last = min(stop, first + _BRIDGE_CHUNK)
        counts = np.cumsum(indicator[first - 1 : last - 1], dtype=np.int64)
        counts += before
        before = int(counts[-1])
        bridge = positions[first:last] * -p
        bridge += counts
        hi, lo = int(np.argmax(bridge)), int(np.argmin(bridge))
        if bridge[hi] > peak:
            top, peak = first - min_size + hi, float(bridge[hi])
        if bridge[lo] < trough:
            bottom, trough = first - min_size + lo, float(bridge[lo])
    high, low = max(0.0, peak), min(0.0, trough)
    return min_size + (top if high >= -low else bottom)


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
    top, peak, bottom, trough = _bridge_extremes(counts, min_size, p)
    high, low = max(0.0, peak), min(0.0, trough)
    scale = math.sqrt(m * p * (1.0 - p))
    split = min_size + (top if high >= -low else bottom)
    cuts = tuple(
        sorted({min_size + top if high > 0 else split, min_size + bottom if low < 0 else split})
    )
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
    gap = np.abs(
        np.searchsorted(a, candidates, side="right") / a.size
        - np.searchsorted(b, candidates, side="right") / b.size
    )
    return float(candidates[int(np.argmax(gap))])


def _refine_split(
    values: np.ndarray,
    keys: _LazyKeys,
    split: int,
    min_size: int,
    kind: ChangeKind,
    rounds: int = 3,
    window: tuple[int, int] | None = None,
) -> int:
    """Re-place an accepted split with the indicator cut that best separates the two sides.

    After an unbalanced change the pooled median (or pooled interquartile range) sits deep inside
    the majority side, where the CUSUM drifts slowly and its argmax wanders; cutting where the
    two sides' distributions differ most (of the values, or of the rank distance from the
    pooled median for a change of spread) makes both drifts large and the estimate sharp. Only
    the location moves: acceptance was decided by the calibrated test. ``window`` (first, last)
    confines the split to the anchored interval an edge test accepted, while the cut and the
    CUSUM use the whole segment ``values``.
    """
    m = values.size
    if kind == "location":
        series = values
    else:
        ranks = ranks_from_order(segment_order(values, keys.array))
        series = np.abs(2 * ranks - (m - 1)).astype(np.float64)
    for _ in range(rounds):
        cut = _separating_cut(series[:split], series[split:])
        if window is None:
            moved = _indicator_split(series > cut, min_size)
        else:
            counts = _cumsum(series > cut)
            first, last = window
            drift = np.abs(counts[first - 1 : last] - counts[-1] / m * _positions(last + 1)[first:])
            moved = first + int(np.argmax(drift))
        if moved == split:
            break
        split = moved
    return split


def _median_statistic(
    m: int, splits: np.ndarray, left: np.ndarray, right: np.ndarray
) -> np.ndarray:
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
        windows = [
            np.arange(max(lo, grid[p] - step + 1), min(hi, grid[p] + step - 1) + 1) for p in peaks
        ]
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
    out: list[tuple[ChangeKind, int, float, np.ndarray]] = [
        ("location", split, stat, ranks >= m - m // 2)
    ]
    if scale:
        distance = np.abs(2 * ranks - (m - 1)).astype(np.uint64)
        spread_order = np.argsort(
            (distance << np.uint64(40)) | (keys >> np.uint64(13)), kind="stable"
        )
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
    # True: only the location scan was made (the scale entry's statistic is NaN), because the
    # location split was accepted at the penalty it was decided with (``_scan_segment``)
    partial: bool = False


# Whether a location scan (raw statistic, dependence factor or None) is accepted on its own.
_Decisive = Callable[[float, float | None], bool]


def _decisive(penalty: float, floor: float) -> _Decisive:
    """The location part of ``_decide``: with the location accepted, the scale scan can change
    neither the chosen split nor the p-value."""

    def accepted(stat: float, factor: float | None) -> bool:
        if factor is not None:
            stat /= math.sqrt(max(floor, factor))
        elif floor > 1.0:
            stat /= math.sqrt(floor)
        return stat > penalty

    return accepted


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
    indicators: list[tuple[ChangeKind, np.ndarray]] | None = None,
    ordered: np.ndarray | None = None,
    decisive: _Decisive | None = None,
) -> _ScanResult:
    """Scan one segment. The dependence factor (never below 1) is computed only for a scan whose
    raw statistic beats ``base_penalty``, the smallest penalty any decision will use. The sign
    form's indicators are appended to ``indicators`` when given; ``ordered`` is the segment's
    values sorted, when the caller has them. With ``decisive``, the scale scan is skipped when
    the location scan alone is accepted (a ``partial`` result)."""
    segment = values[begin:end]
    keys = _LazyKeys(begin, end)
    kind_of: Statistic = "sign" if median_scan is None else "median"

    def factor_of(stat: float, counts: np.ndarray, cuts: tuple[int, ...]) -> float | None:
        return dependence_factor(counts, cuts) if dependence and stat > base_penalty else None

    scans: list[tuple[ChangeKind, int, float, float | None]] = []
    if median_scan is not None:
        for kind, split, stat, indicator in _median_candidates(
            segment, keys.array, min_size, scale, median_scan
        ):
            scans.append((kind, split, stat, factor_of(stat, _cumsum(indicator), (split,))))
        return _ScanResult(begin=begin, end=end, statistic_kind=kind_of, scans=scans)
    m = segment.size
    if scale:
        quarter = m // 4
        half, top, middle = _top_masks(segment, keys, [m // 2, quarter, m - quarter], ordered)
    else:
        half = _top_masks(segment, keys, [m // 2], ordered)[0]
    counts = _cumsum(half)
    split, stat, cuts = _cusum_scan(counts, min_size)
    scans.append(("location", split, stat, factor_of(stat, counts, cuts)))
    if not scale:
        if indicators is not None:
            indicators.append(("location", half))
        return _ScanResult(begin=begin, end=end, statistic_kind=kind_of, scans=scans)
    if decisive is not None and decisive(stat, scans[0][3]):
        scans.append(("scale", m // 2, math.nan, None))
        return _ScanResult(begin=begin, end=end, statistic_kind=kind_of, scans=scans, partial=True)
    outside = top | ~middle  # outside the interquartile range, as ``_indicators`` forms it
    if indicators is not None:
        indicators.extend([("location", half), ("scale", outside)])
    counts = _cumsum(outside)
    split, stat, cuts = _cusum_scan(counts, min_size)
    scans.append(("scale", split, stat, factor_of(stat, counts, cuts)))
    return _ScanResult(begin=begin, end=end, statistic_kind=kind_of, scans=scans)


# Rows per call of the batched scan: at most this many readings in its (rows, length) arrays,
# so memory stays O(length) per call whatever n (about 3 MiB of temporaries).
_BATCH_READINGS = 1 << 16


def _scan_intervals(
    values: np.ndarray,
    starts: list[int],
    length: int,
    *,
    min_size: int,
    base_penalty: float,
    scale: bool,
    dependence: bool,
    keep_above: float | None = None,
) -> tuple[list[_ScanResult], list[int]]:
    """``_scan_segment`` (sign form) of the intervals [start, start + length), many per numpy call.

    The intervals of one seeded scale share their length: stacked as rows, each step (selection,
    indicators, cumulative sum, argmax) is one call over all of them instead of one per interval,
    whose fixed Python overhead would dominate. Identical results, row for row
    (``_changepoint_batch``). With ``keep_above``, rows whose every statistic is at most that are
    not turned into results (most rows of a round, and each result is an object to build);
    their starts are returned instead.
    """
    out: list[_ScanResult] = []
    skipped: list[int] = []
    offsets = np.arange(length)
    positions = _positions(length - min_size + 1)[min_size:]
    quarter = length // 4
    wanted = [length // 2, quarter, length - quarter] if scale else [length // 2]
    kinds: list[ChangeKind] = ["location", "scale"] if scale else ["location"]
    step = max(1, _BATCH_READINGS // length)
    for first in range(0, len(starts), step):
        chunk = starts[first : first + step]
        where = np.asarray(chunk, dtype=np.int64)[:, None] + offsets
        masks = batch.top_masks(
            values[where], wanted, lambda rows, where=where: keys_at(where[rows])
        )
        # Location rows, then scale rows: one cumulative sum and one scan for both kinds.
        indicators = masks[0] if not scale else np.concatenate([masks[0], masks[1] | ~masks[2]])
        counts = _cumsum(indicators, axis=1)
        split, stat, low, high = batch.cusum_scan(counts, min_size, positions)
        rows = len(chunk)
        kept = (
            np.ones(rows, dtype=bool)
            if keep_above is None
            else (stat.reshape(len(kinds), rows) > keep_above).any(axis=0)
        )
        factors: list[float | None] = [None] * counts.shape[0]
        if dependence:  # only where a decision can need it, as in ``_scan_segment``
            for row in np.flatnonzero((stat > base_penalty) & np.tile(kept, len(kinds))).tolist():
                cuts = (
                    (int(low[row]),) if low[row] == high[row] else (int(low[row]), int(high[row]))
                )
                factors[row] = dependence_factor(counts[row], cuts)
        splits, stats = split.tolist(), stat.tolist()
        hopeful = kept.tolist()
        for row, begin in enumerate(chunk):
            if not hopeful[row]:
                skipped.append(begin)
                continue
            scans = [
                (kind, splits[at], stats[at], factors[at])
                for kind, at in zip(kinds, range(row, counts.shape[0], rows), strict=True)
            ]
            out.append(
                _ScanResult(begin=begin, end=begin + length, statistic_kind="sign", scans=scans)
            )
    return out, skipped


def _may_accept(scan: _ScanResult, penalty: float, floor: float = 1.0) -> bool:
    """False when ``_decide`` must reject: it divides each statistic by the square root of a
    dependence factor that is never below ``floor`` (IEEE division and square root are monotone,
    so the same holds for the rounded values)."""
    if scan.partial:  # its scale statistic is not known: let ``_Scans.test`` make it whole
        return True
    root = math.sqrt(floor)
    return any(stat / root > penalty for _, _, stat, _ in scan.scans)


def _decide(
    values: np.ndarray, scan: _ScanResult, *, penalty: float, floor: float, min_size: int
) -> _Split:
    """Accept the best split of a scanned segment if its dependence-adjusted statistic beats
    ``penalty``.

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
            scan.refined[kind] = _refine_split(
                segment, _LazyKeys(scan.begin, scan.end), split, min_size, kind
            )
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
    medians: dict[tuple[int, int], float] | None = None,
) -> ChangePoints:
    """The result from the decided tests; ``medians`` holds segments' medians already known."""
    n = values.size
    accepted = sorted((t for t in tests if t.index is not None), key=lambda t: t.index or 0)
    cps = [int(t.index) for t in accepted if t.index is not None]
    bounds = [0, *cps, n]
    known = medians or {}
    segments = [
        Segment(
            begin=b,
            end=e,
            median=known[(b, e)] if (b, e) in known else float(np.median(values[b:e])),
        )
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
class _AnchoredLayout:
    """The edge intervals laid end to end in one flat array, and what each entry is."""

    source: np.ndarray  # entry -> position in the side-by-side readings
    packed: np.ndarray  # entry -> its interval's index (int32), to sort by (interval, rank)
    lengths: np.ndarray  # per interval
    offsets: np.ndarray  # first entry of each interval
    k: np.ndarray  # entry -> split after this many readings of its interval (1..L)
    # entry -> width - k inside the allowed splits, far below any height outside
    tiebreak: np.ndarray
    thresholds: np.ndarray  # (intervals, 3): flat index of each threshold order statistic
    root: np.ndarray  # sqrt(L) per interval
    width: int  # > every L: packs (height, -k) into one integer


@functools.lru_cache(maxsize=64)
def _anchored_layout(spans: tuple[tuple[int, int], ...], min_size: int) -> _AnchoredLayout:
    """Layout of the edge intervals (cached: it is the same for every round of the same length)."""
    lengths = np.array([hi - lo for lo, hi in spans])
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    interval = np.repeat(np.arange(len(spans)), lengths)
    k = np.arange(interval.size) - offsets[interval] + 1
    source = np.array([lo for lo, _ in spans])[interval] + k - 1
    length = lengths[interval]
    # Ascending order statistics the indicators start at: the median (top L // 2), the top
    # quarter, and the bottom quarter's complement (as ``_indicators`` cuts a segment).
    which = np.stack([lengths - lengths // 2, lengths - lengths // 4, lengths // 4], axis=1)
    width = int(lengths.max()) + 1
    outside = (k < min_size) | (k > length - min_size)
    return _AnchoredLayout(
        source=source,
        packed=interval.astype(np.int32),
        lengths=lengths,
        offsets=offsets,
        k=k.astype(np.int32),
        tiebreak=np.where(outside, -(width**2), width - k).astype(np.int64),
        thresholds=offsets[:, None] + which,
        root=np.sqrt(lengths.astype(np.float64)),
        width=width,
    )


def _scan_anchored(
    values: np.ndarray,
    *,
    start: int = 0,
    start_lengths: tuple[int, ...] = (),
    end: int = 0,
    end_lengths: tuple[int, ...] = (),
    min_size: int,
    scale: bool,
) -> list[_ScanResult]:
    """Single-split scans of edge intervals, all at once: [start, start + L) for each of
    ``start_lengths``, then [end - L, end) for each of ``end_lengths``.

    An anchored interval holds at most one end of an edge stretch, so each is scanned for a
    single change: max |2 C_k - k| over min_size <= k <= L - min_size (sup |B|, EDM's own form;
    the range's null is wider) of the indicators ``_indicators`` would give the interval alone:
    above its median, and outside its interquartile range. The readings of the two ends are
    ranked once by (value, tie-break key); the intervals are then laid end to end in one flat
    array, sorted once by (interval, rank) for their thresholds, and every cumulative sum and
    maximum is one pass with per-interval offsets, where scanning the intervals one by one
    would pay a selection, a cumulative sum and Python overhead per interval.
    """
    head = max(start_lengths, default=0)
    tail = max(end_lengths, default=0)
    intervals = [(start, start + length) for length in start_lengths] + [
        (end - length, end) for length in end_lengths
    ]
    # Side by side: readings [start, start + head) then [end - tail, end); bounds move with them.
    spans = tuple((0, length) for length in start_lengths) + tuple(
        (head + tail - length, head + tail) for length in end_lengths
    )
    layout = _anchored_layout(spans, min_size)
    segment = np.concatenate([values[start : start + head], values[end - tail : end]])
    keys = keys_at(np.concatenate([np.arange(start, start + head), np.arange(end - tail, end)]))
    rank = ranks_from_order(segment_order(segment, keys))  # ties broken by position keys
    flat = rank[layout.source]
    packed = layout.packed * segment.size
    cut = (np.sort(packed + flat) - packed)[layout.thresholds]  # (intervals, 3) ranks
    location = flat >= np.repeat(cut[:, 0], layout.lengths)
    kinds: list[ChangeKind] = ["location", "scale"] if scale else ["location"]
    if scale:
        top, bottom = np.repeat(cut[:, 1], layout.lengths), np.repeat(cut[:, 2], layout.lengths)
        indicators = np.stack([location, (flat >= top) | (flat < bottom)])
    else:
        indicators = location[None]
    counts = np.cumsum(indicators, axis=1, dtype=np.int32)
    before = np.zeros((len(kinds), len(intervals)), dtype=np.int32)
    before[:, 1:] = counts[:, layout.offsets[1:] - 1]
    heights = np.abs(2 * (counts - np.repeat(before, layout.lengths, axis=1)) - layout.k)
    # The highest point of each interval, the earliest among equals: one packed maximum.
    best = np.maximum.reduceat(
        heights * np.int64(layout.width) + layout.tiebreak, layout.offsets, axis=1
    )
    stats = (best // layout.width / layout.root).tolist()
    splits = (layout.width - best % layout.width).tolist()
    return [
        _ScanResult(
            begin=lo,
            end=hi,
            statistic_kind="sign",
            scans=[(kind, splits[i][row], stats[i][row], None) for i, kind in enumerate(kinds)],
        )
        for row, (lo, hi) in enumerate(intervals)
    ]


@dataclass
class _EdgeCandidate:
    """An accepted edge test, placed (``index``) only when the selection needs its position."""

    scan: _ScanResult
    kind: ChangeKind
    split: int  # relative to scan.begin, from the scan
    statistic: float  # dependence-adjusted
    p_value: float  # exact, per interval
    index: int | None = None


def _edge_candidate(
    scan: _ScanResult, *, level: float, factor: float, min_size: int
) -> _EdgeCandidate | None:
    """The best split of an anchored interval if its exact p-value is at most ``level``, else None.

    ``level`` is per interval (both indicators together, Bonferroni inside); the statistic is
    deflated by the dependence ``factor`` (>= 1) first.
    """
    length = scan.end - scan.begin
    scans = len(scan.scans)
    scored: list[tuple[float, float, int, ChangeKind]] = []
    for kind, split, stat, _ in scan.scans:
        stat /= math.sqrt(factor)
        scored.append((min(1.0, scans * edge_sf(stat, length, min_size)), stat, split, kind))
    p_value, stat, split, kind = min(
        scored, key=lambda c: (not (c[3] == "location" and c[0] <= level), c[0], -c[1])
    )
    if p_value > level:
        return None
    return _EdgeCandidate(scan=scan, kind=kind, split=split, statistic=stat, p_value=p_value)


def _edge_reach(segment: tuple[int, int], at_start: bool, reach: int) -> tuple[int, int]:
    """The part of a segment an end's edge tests use: its first (or last) ``reach`` readings.

    Four times the longest edge interval: the whole segment for rounds of a few thousand
    readings, and O(sqrt(n)) rather than O(n) work per end on long series.
    """
    b, e = segment
    return (b, min(e, b + reach)) if at_start else (max(b, e - reach), e)


def _place_edge(
    values: np.ndarray, candidate: _EdgeCandidate, segment: tuple[int, int], min_size: int
) -> int:
    """Absolute position of an accepted edge split, placed with the readings of ``segment``.

    The cut between the stretch and everything after it, and the CUSUM drift against the
    segment's own rate, put the end of a gradual warm-up where its readings join the stable
    level; inside the short interval alone, where half is warm-up, the drift turns earlier.
    Only the location moves, and only inside the anchored interval.
    """
    if candidate.index is None:
        b, e = segment
        scan = candidate.scan
        window = (scan.begin - b + min_size, scan.end - b - min_size)
        start = scan.begin + candidate.split - b
        placed = _refine_split(
            values[b:e], _LazyKeys(b, e), start, min_size, candidate.kind, window=window
        )
        candidate.index = b + placed
    return candidate.index


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


#: Scans by segment [begin, end), kept by ``IncrementalEDM`` from one update to the next.
_ScanCache = dict[tuple[int, int], _ScanResult]


# Segments at least this long keep their sorted values for the pieces they are split into.
_SORT_REUSE_MIN = 1 << 16

# Seeded intervals are first bounded (``_changepoint_bound``) from this many readings on; below,
# building the bound's sorted blocks and tables costs more than the scans it saves.
_BOUND_MIN_READINGS = 1 << 15


class _Scans:
    """Segment scans of one detection: made here, or reused from an earlier run's ``cache``.

    A scan does not depend on any penalty, so one scan serves every test of its segment.
    Seeded intervals whose batched scan showed no statistic above the seeded penalty are only
    remembered as hopeless when there is no cache to fill: they never become scan results.
    On a long series without a cache, an upper bound of every interval's statistics is computed
    first, and only the intervals whose bound could pass are scanned.
    """

    def __init__(self, values: np.ndarray, plan: _Plan, cache: _ScanCache | None) -> None:
        self._values = values
        self._plan = plan
        self._cache = cache
        self._used: _ScanCache = {}
        self._hopeless: set[tuple[int, int]] = set()
        self._bounds: SeededBounds | None = None
        self.unsplit_indicators: dict[tuple[int, int], list[tuple[ChangeKind, np.ndarray]]] = {}
        self._kept_sorted: tuple[int, int, np.ndarray] | None = None
        self.medians: dict[tuple[int, int], float] = {}  # of segments sorted for their scans

    def _sorted(self, begin: int, end: int) -> np.ndarray | None:
        """The values of a long segment sorted (None: let the scan select its cuts itself).

        Binary segmentation tests a long segment and then, most often, the larger piece of it:
        that piece's sorted values are the segment's with the other piece's removed, an O(n)
        deletion instead of an O(n log n) sort (equal values are interchangeable, so the
        result is exactly the sort of the piece).
        """
        p = self._plan
        if not p.scale or p.median_scan is not None or end - begin < _SORT_REUSE_MIN:
            return None
        kept = self._kept_sorted
        if kept is not None and kept[0] <= begin and end <= kept[1]:
            b, e, parent = kept
            if (e - b) - (end - begin) <= (end - begin) // 4:
                removed = np.sort(np.concatenate([self._values[b:begin], self._values[end:e]]))
                # the i-th copy of a value in ``removed`` deletes the i-th copy in ``parent``
                copy = np.arange(removed.size) - np.searchsorted(removed, removed, "left")
                ordered = np.delete(parent, np.searchsorted(parent, removed, "left") + copy)
                self._kept_sorted = (begin, end, ordered)
                return ordered
        ordered = np.sort(self._values[begin:end])
        self._kept_sorted = (begin, end, ordered)
        return ordered

    def forget_sorted(self) -> None:
        self._kept_sorted = None

    def _seeded_bounds(self) -> SeededBounds | None:
        """The bound of the seeded intervals' statistics, built on first use (None: not used)."""
        p = self._plan
        if (
            self._cache is not None
            or p.n < _BOUND_MIN_READINGS
            or not SeededBounds.applicable(p.min_size)
        ):
            return None
        if self._bounds is None:
            self._bounds = SeededBounds(self._values, p.min_size)
        return self._bounds

    def _lookup(self, key: tuple[int, int]) -> _ScanResult | None:
        return self._used.get(key) or (self._cache.get(key) if self._cache is not None else None)

    def test(
        self, begin: int, end: int, penalty: float, floor: float = 1.0, keep: bool = False
    ) -> _Split:
        """Scan [begin, end) (unless already scanned) and decide its best split at ``penalty``.

        ``keep``: if the segment is not split, keep the indicators its scan made
        (``unsplit_indicators``), which the series-wide dependence floor needs again.
        """
        key = (begin, end)
        scan = self._lookup(key)
        made: list[tuple[ChangeKind, np.ndarray]] | None = [] if keep else None
        # A partial scan (cached or not) is made whole when its location split no longer
        # decides alone at this penalty and floor.
        decisive: _Decisive | None = _decisive(penalty, floor)
        if scan is not None and scan.partial:
            _, _, stat, factor = scan.scans[0]
            if not decisive(stat, factor):
                scan, decisive = None, None
        if scan is None:
            p = self._plan
            ordered = self._sorted(begin, end)
            if ordered is not None:  # np.median's two middle order statistics and their mean
                half = ordered.size // 2
                odd = ordered.size % 2
                self.medians[key] = float(np.mean(ordered[half - 1 + odd : half + 1]))
            scan = _scan_segment(
                self._values,
                begin,
                end,
                min_size=p.min_size,
                base_penalty=p.threshold,
                scale=p.scale,
                dependence=p.dependence,
                median_scan=p.median_scan,
                indicators=made,
                ordered=ordered,
                decisive=decisive,
            )
        self._used[key] = scan
        result = _decide(
            self._values, scan, penalty=penalty, floor=floor, min_size=self._plan.min_size
        )
        if made and result.index is None:
            self.unsplit_indicators[key] = made
        return result

    def hopeful(
        self, keys: list[tuple[int, int]], penalty: float, floor: float = 1.0
    ) -> list[tuple[int, int]]:
        """The seeded intervals of ``keys`` whose statistic could pass ``penalty`` once divided
        by the square root of the dependence ``floor`` that ``test`` will apply.

        Intervals not scanned yet are scanned in batches, those of one length together
        (``_scan_intervals``); only the survivors are decided one by one.
        """
        p = self._plan
        # below this no statistic can pass (the margin covers the rounding of the product)
        keep_above = penalty * math.sqrt(floor) * (1.0 - 1e-12)
        missing: dict[int, list[int]] = {}
        for key in keys:
            if key in self._hopeless:
                continue
            scan = self._lookup(key)
            if scan is not None:
                self._used[key] = scan
            else:
                missing.setdefault(key[1] - key[0], []).append(key[0])
        bounds = self._seeded_bounds()
        for length, starts in missing.items():
            if bounds is not None:  # scan only the intervals whose bound could pass
                at = np.asarray(starts, dtype=np.int64)
                maybe = (bounds.bounds(at, length, p.scale) > keep_above).any(axis=0)
                self._hopeless.update((start, start + length) for start in at[~maybe].tolist())
                starts = at[maybe].tolist()
                if not starts:
                    continue
            scans, skipped = _scan_intervals(
                self._values,
                starts,
                length,
                min_size=p.min_size,
                base_penalty=p.threshold,
                scale=p.scale,
                dependence=p.dependence,
                keep_above=keep_above if self._cache is None else None,
            )
            for scan in scans:
                self._used[(scan.begin, scan.end)] = scan
            self._hopeless.update((start, start + length) for start in skipped)
        return [
            key
            for key in keys
            if key not in self._hopeless and _may_accept(self._used[key], penalty, floor)
        ]

    def save(self) -> None:
        """Leave this run's scans in the cache: older entries can never recur."""
        if self._cache is not None:
            self._cache.clear()
            self._cache.update(self._used)


class _EdgeTests:
    """The edge intervals at both ends of the series (``edge_intervals``), and which of them
    an enclosing segment already rejected.

    Both ends are scanned once, in one pass, when the detection starts (cheap enough that
    caching them across runs is never worth it); each segment holding an end of the series is
    then tested on the intervals that fit inside it.
    """

    def __init__(self, values: np.ndarray, plan: _Plan) -> None:
        self._values = values
        self._plan = plan
        lengths = plan.edge_lengths
        self._reach = 4 * max(lengths, default=0)
        self._scans: dict[tuple[int, int], _ScanResult] = {}
        if lengths:
            both = _scan_anchored(
                values,
                start=0,
                start_lengths=lengths,
                end=plan.n,
                end_lengths=lengths,
                min_size=plan.min_size,
                scale=plan.scale,
            )
            self._scans.update(((scan.begin, scan.end), scan) for scan in both)
        self._rejected: set[tuple[int, int]] = set()

    @property
    def enabled(self) -> bool:
        return bool(self._scans)

    def candidates(self, b: int, e: int) -> list[_EdgeCandidate]:
        """Accepted tests of the edge intervals inside [b, e) (none already rejected in a parent).

        The statistics are deflated by the dependence factor of the segment's readings at that
        end (``_edge_reach``), centred at the most significant split there
        (``_SeriesDependence.with_cut``); the intervals' *own* factors are not used: an edge
        interval is short (a handful of batches of 3-5 readings) and its indicator is dominated
        by the edge stretch itself, whose gradual end (a ramp's last readings straddle the
        median) reads as a run, i.e. as dependence. The segment's estimate, with its longer
        batch, estimates the same long-run variance of the noise; on AR(1) noise adding the own
        factors does not lower the false-alarm rate but hides many warm-ups. One factor per end:
        every interval there sees the same stretch, and each centring costs a pass over those
        readings.
        """
        p = self._plan
        found: list[_EdgeCandidate] = []
        for at_start in (True, False):
            if (b if at_start else p.n - e) != 0:
                continue  # only the ends of the series are anchored
            near = _edge_reach((b, e), at_start, self._reach)
            own = _SeriesDependence(self._values, [near], p.scale) if p.dependence else None
            spans = [
                (b, b + L) if at_start else (e - L, e) for L in p.edge_lengths if L <= (e - b) // 2
            ]
            fresh = [iv for iv in spans if iv not in self._rejected]
            raw = [
                _edge_candidate(
                    self._scans[iv], level=p.edge_level, factor=1.0, min_size=p.min_size
                )
                for iv in fresh
            ]
            # deflating only raises a p-value: an interval rejected here stays rejected
            self._rejected.update(iv for iv, c in zip(fresh, raw, strict=True) if c is None)
            passing = [c for c in raw if c is not None]
            if passing and own is not None:
                lead = min(passing, key=lambda c: (c.p_value, -c.statistic))
                factor = own.with_cut(lead.scan.begin + lead.split)
                deflated = [
                    (
                        c,
                        _edge_candidate(
                            c.scan, level=p.edge_level, factor=factor, min_size=p.min_size
                        ),
                    )
                    for c in passing
                ]
                self._rejected.update((c.scan.begin, c.scan.end) for c, d in deflated if d is None)
                passing = [d for _, d in deflated if d is not None]
            found += passing
        return found

    def place(self, c: _EdgeCandidate, b: int, e: int) -> int:
        """Absolute position of an accepted edge split, placed with segment [b, e)'s readings."""
        reach = _edge_reach((b, e), c.scan.begin == 0, self._reach)
        return _place_edge(self._values, c, reach, self._plan.min_size)

    def select(self, found: list[_EdgeCandidate], b: int, e: int) -> list[_Split]:
        """The edge splits to take in [b, e), most significant first, each placed only when an
        earlier choice does not already explain its interval.

        An interval lying inside a longer stretch (a long ramp) is significant too but cannot
        place its end: its split is held at the interval's inner limit, and it is passed over;
        when all are, the whole segment places the stretch. The shortest intervals (2 min_size)
        allow one split only, so they come last: they place a stretch of exactly min_size,
        which no longer interval sees as well.
        """
        p = self._plan
        size = p.min_size
        chosen: list[_Split] = []
        at: list[int] = []  # their indices
        for c in sorted(
            found, key=lambda c: (c.scan.end - c.scan.begin == 2 * size, c.p_value, -c.statistic)
        ):
            if any(c.scan.begin < x < c.scan.end for x in at):
                continue
            at_start = c.scan.begin == 0
            index = self.place(c, b, e)
            inner = c.scan.end - size if at_start else c.scan.begin + size
            if index == inner and c.scan.end - c.scan.begin > 2 * size:
                continue  # held at the interval's inner limit: a stretch longer than the interval
            if any(abs(index - x) < size for x in at) or index - b < size or e - index < size:
                continue
            at.append(index)
            chosen.append(
                _Split(
                    begin=c.scan.begin,
                    end=c.scan.end,
                    index=index,
                    statistic=c.statistic,
                    p_value=min(1.0, c.p_value * p.family),
                    kind=c.kind,
                )
            )
        return chosen


def _select_seeded(found: list[_Split], b: int, e: int, plan: _Plan) -> list[_Split]:
    """Greedy selection among accepted seeded tests in [b, e): the most significant split
    first; an interval holding a split already taken (or closer than min_size to one) has had
    its change explained. p-values are Bonferroni-corrected over the plan's family."""
    size = plan.min_size
    chosen: list[_Split] = []
    at: list[int] = []  # their indices
    for result in sorted(found, key=lambda r: (r.p_value, -r.statistic)):
        index = int(result.index or 0)
        if any(result.begin < c < result.end or abs(index - c) < size for c in at):
            continue
        if index - b < size or e - index < size:
            continue
        at.append(index)
        chosen.append(result.model_copy(update={"p_value": min(1.0, result.p_value * plan.family)}))
    return chosen


def _cuts(splits: list[_Split]) -> list[int]:
    return sorted(int(s.index) for s in splits if s.index is not None)


class _Detection:
    """One run of the detector over a series: binary segmentation with edge tests, then the
    seeded search inside the segments it could not split. ``tests`` collects every decided
    split (accepted or not) in the order made; ``_assemble`` turns them into the result."""

    def __init__(self, values: np.ndarray, plan: _Plan, cache: _ScanCache | None) -> None:
        self.values = values
        self.plan = plan
        self.scans = _Scans(values, plan, cache)
        self.edges = _EdgeTests(values, plan)
        self.tests: list[_Split] = []

    def bisect(self, begin: int, end: int, keep: bool = False) -> list[tuple[int, int]]:
        """Binary segmentation of [begin, end); returns the segments it could not split (with
        ``keep``, their scans' indicators stay in ``scans.unsplit_indicators``).

        A segment holding an end of the series is tested whole and in its edge intervals. A
        stretch shorter than ~2 sqrt(m) at an end of m readings moves the whole segment's CUSUM
        too little to be found or placed (its argmax wanders into the stable part, and a split
        there cuts the stable phase), so an edge split is taken unless the whole segment puts
        its split where an edge test placed one (then the whole segment, with more readings,
        places it: better for a long ramp). Other segment ends get no edge tests: there they
        would meet the splits of other changes, not a warm-up (anchoring the segment left by an
        edge cut splits multi-round series next to round boundaries).
        """
        size = self.plan.min_size
        finals: list[tuple[int, int]] = []
        pending = [(begin, end)]
        while pending:
            b, e = pending.pop()
            if e - b < 2 * size:
                finals.append((b, e))
                continue
            found = self.edges.candidates(b, e) if self.edges.enabled else []
            result = self.scans.test(b, e, self.plan.threshold, keep=keep)
            # the edge tests found a change that the whole segment's test missed or put elsewhere
            if found and (
                result.index is None
                or not any(abs(self.edges.place(c, b, e) - result.index) < size for c in found)
            ):
                taken = self.edges.select(found, b, e)
                if taken:
                    self.tests += taken
                    bounds = [b, *_cuts(taken), e]
                    pending.extend(zip(bounds[:-1], bounds[1:], strict=True))
                    continue
            self.tests.append(result)
            if result.index is None:
                finals.append((b, e))
            else:
                pending.extend([(b, result.index), (result.index, e)])
        return finals

    def search_seeded(self, finals: list[tuple[int, int]]) -> None:
        """Inside each segment binary segmentation could not split, take the most significant
        seeded intervals; Bonferroni over all intervals (and the series' edge intervals) keeps
        the two searches' false-alarm rate together at ``significance``."""
        p = self.plan
        size = p.min_size
        widen = critical_value(p.significance / p.family, p.scans, p.statistic) / critical_value(
            p.significance, p.scans, p.statistic
        )
        penalty = p.threshold * widen
        known = self.scans.unsplit_indicators
        floor = _SeriesDependence(self.values, finals, p.scale, known).base if p.dependence else 1.0
        known.clear()  # only the floor needs them
        queue = [f for f in finals if f[1] - f[0] >= 4 * size]
        while queue:
            b, e = queue.pop()
            inside = p.intervals[(p.intervals[:, 0] >= b) & (p.intervals[:, 1] <= e)]
            keys = [(lo, hi) for lo, hi in inside.tolist() if (lo, hi) != (b, e)]
            if p.median_scan is None:  # decide only the intervals whose statistic could pass
                keys = self.scans.hopeful(keys, penalty, floor)
            tested = [self.scans.test(lo, hi, penalty, floor) for lo, hi in keys]
            found = [result for result in tested if result.index is not None]
            taken = _select_seeded(found, b, e, p)
            self.tests += taken
            cuts = _cuts(taken)
            if cuts:  # the pieces go back to binary segmentation
                for lo, hi in zip([b, *cuts], [*cuts, e], strict=True):
                    queue.extend(f for f in self.bisect(lo, hi) if f[1] - f[0] >= 4 * size)


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
    edges: bool = True,
    cache: _ScanCache | None = None,
) -> ChangePoints:
    """The detector behind ``detect``, ``detect_exact`` and ``IncrementalEDM``."""
    values = _validated(x)
    plan = _plan(
        values.size,
        min_size=min_size,
        penalty=penalty,
        significance=significance,
        scale=scale,
        dependence=dependence,
        statistic=statistic,
        median_scan=median_scan,
        seeded=seeded,
        edges=edges,
    )
    detection = _Detection(values, plan, cache)
    finals = detection.bisect(0, plan.n, keep=bool(plan.intervals.size) and plan.dependence)
    detection.scans.forget_sorted()
    if plan.intervals.size:
        detection.search_seeded(finals)
    detection.scans.save()
    return _assemble(
        values,
        detection.tests,
        min_size=plan.min_size,
        significance=significance,
        penalty=plan.threshold,
        statistic=statistic,
        medians=detection.scans.medians,
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
    edges: bool = True,
) -> ChangePoints:
    """EDM change points of ``x`` with a calibrated acceptance rule.

    ``min_size``: shortest segment (default ``default_min_size(n)``). ``penalty``: critical value
    of the adjusted statistic; by default derived from ``significance``, the false-positive rate
    of one split test on data without a change, for any distribution. ``scale``: also look for
    changes of spread. ``dependence``: widen the test for autocorrelated readings.
    ``statistic``: "sign" (default, O(n) per segment, consistent split location) or "median"
    (the literal median difference, O(n log n) per segment). ``seeded``: after binary
    segmentation, search the unsplit segments with multi-scale seeded intervals (Bonferroni over
    them), which finds bursts and per-round warm-ups a single split cannot isolate. ``edges``
    (with ``seeded``, sign form): add short intervals anchored at both ends of the series to that
    family, each tested for one change with an exact null, which finds a warm-up or cool-down of
    a few min_sizes.
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
        edges=edges,
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
    """The literal EDM median statistic scanned by brute force at every split: O(n^2), a
    reference."""
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
    (the cache is dropped when the default min_size steps, i.e. when n quadruples). The edge
    intervals are rescanned at every update: both ends take one pass of a few hundred readings.
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
        edges: bool = True,
    ) -> None:
        self._min_size = min_size
        self._seeded = seeded
        self._edges = edges
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
            edges=self._edges,
            cache=self._cache,
        )
