"""The scan statistics of one segment: the sign form's indicators and CUSUM, the median form.

Separate from the detector because they see only one segment's readings (ranks, indicators
above the pooled median or outside the interquartile range, the bridge-scaled CUSUM range, the
literal EDM median difference) and nothing of segmentation, intervals or acceptance; the
re-placement of an accepted split (``_refine_split``) works on the same indicators.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pilot_sys.stats._changepoint_blocks import bridge_ranges, counts_ranges
from pilot_sys.stats._changepoint_ranks import (
    keys_at,
    position_keys,
    ranks_from_order,
    segment_order,
    split_medians,
)
from pilot_sys.stats._changepoint_result import ChangeKind

# The median form scans every split of segments with at most this many candidates (then it is
# exactly the quadratic reference); longer ones use a grid of about _GRID_POINTS splits.
_EXHAUSTIVE_LIMIT = 2048
_GRID_POINTS = 1024
_REFINED_PEAKS = 4


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


def _median_of_sorted(ordered: np.ndarray) -> float:
    """``np.median`` of sorted values: its two middle order statistics and their mean."""
    half = ordered.size // 2
    odd = ordered.size % 2
    return float(np.mean(ordered[half - 1 + odd : half + 1]))


def _cumsum(indicator: np.ndarray, axis: int = -1) -> np.ndarray:
    """Running count of a 0/1 indicator, in 32 bits when it fits (half the memory traffic).

    The indicator is converted first and summed in place: ``np.cumsum(bools, dtype=...)``
    casts inside the accumulation, which on long arrays costs several times the two passes
    (the same integers either way).
    """
    fits = indicator.shape[axis] < np.iinfo(np.int32).max
    counts = indicator.astype(np.int32 if fits else np.int64)
    return np.cumsum(counts, axis=axis, out=counts)


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
    keys are computed for tied readings only. From sorted values, two binary searches count the
    readings above and at a cut, so a mask is one pass over the values, or three with ties.
    """
    m = values.size
    kth = sorted({m - c for c in counts if 0 < c <= m})
    whole = ordered is not None or len(kth) > 1  # a full sort, not a selection
    if ordered is None:
        ordered = _order_statistics(values, kth)
    masks = []
    for count in counts:
        if count <= 0:
            masks.append(np.zeros(m, dtype=bool))
            continue
        cut = ordered[m - count]
        if whole:
            below = int(np.searchsorted(ordered, cut, "left"))
            if m - below == count:  # no reading tied at the cut is left out
                masks.append(values >= cut)
                continue
            not_above = int(np.searchsorted(ordered, cut, "right"))
            above = values > cut
            need = count - (m - not_above)
            n_tied = not_above - below
            tied_at = np.flatnonzero(values == cut)
        else:
            at_least = values >= cut
            if np.count_nonzero(at_least) == count:
                masks.append(at_least)
                continue
            tied = values == cut
            above = at_least ^ tied
            need = count - int(np.count_nonzero(above))
            n_tied = int(np.count_nonzero(tied))
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
    holds a second array of its length, with each value formed as a whole-array pass would, and
    only over the stretches that can hold the extremes (``counts_ranges``)."""
    m = counts.size
    stop = m - min_size + 1
    positions = _positions(stop)
    top, peak, bottom, trough = 0, -math.inf, 0, math.inf
    chunks = [
        (first, min(last, first + _BRIDGE_CHUNK))
        for start, last in counts_ranges(counts, min_size, p, stop)
        for first in range(start, last, _BRIDGE_CHUNK)
    ]
    for first, last in chunks:
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
    count is formed chunk by chunk with the bridge (the same integers, the same floats), only
    over the stretches that can hold the bridge's extremes (``bridge_ranges``)."""
    m = indicator.size
    ones = int(np.count_nonzero(indicator))
    p = float(ones) / m
    if p <= 0.0 or p >= 1.0:
        return m // 2
    stop = m - min_size + 1
    positions = _positions(stop)
    # 32-bit running counts when they fit: the same integers, several times faster
    count_type = np.int32 if m < np.iinfo(np.int32).max else np.int64
    top, peak, bottom, trough = 0, -math.inf, 0, math.inf
    chunks = [
        (first, min(last, first + _BRIDGE_CHUNK))
        for start, last in bridge_ranges(indicator, min_size, p, stop)
        for first in range(start, last, _BRIDGE_CHUNK)
    ]
    counted_to, counted = 0, 0  # the ones among indicator[:counted_to]
    for first, last in chunks:
        counted += int(np.count_nonzero(indicator[counted_to : first - 1]))  # C at first - 1
        counts = indicator[first - 1 : last - 1].astype(count_type)
        counts[0] += counted  # the count so far carried in: the same integers, one pass fewer
        np.cumsum(counts, out=counts)
        counted_to, counted = last - 1, int(counts[-1])
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
    which places the cut to within a fraction of a percentile. Of the candidates (the sorted
    left sample, then the sorted right one) the first with the largest difference is taken.
    """
    return _merged_cut(_thinned_sorted(left), _thinned_sorted(right))


def _thinned_sorted(side: np.ndarray) -> np.ndarray:
    """One side's sample for ``_separating_cut``, sorted: all of it up to 40,000 readings."""
    return np.sort(side[:: max(1, side.size // _CUT_SAMPLE)])


def _merged_cut(a: np.ndarray, b: np.ndarray) -> float:
    """``_separating_cut`` of the sorted samples ``a`` and ``b``, from one merge of the two.

    The direct form searches every candidate in both samples (two binary searches per
    candidate). Both empirical CDFs only step where a value ends, so one stable merge (a galloping
    merge of two sorted runs, O(n)) gives them for every distinct value: the running count of
    ``a`` at the last copy of each value is ``searchsorted(a, value, "right")``. The difference is
    formed by the same float operations on the same integers, and ties resolve as the direct
    form's first argmax over ``a`` then ``b`` does: the smallest best value held by ``a``, else by
    ``b``, returned as that sample's first copy (the stable merge puts it first in its run).
    """
    both = np.concatenate([a, b])
    order = np.argsort(both, kind="stable")
    merged = both[order]
    in_a = _cumsum(order < a.size)  # copies of a among merged[: i + 1]
    n = merged.size
    if np.count_nonzero(merged[1:] == merged[:-1]):
        ends = np.append(np.flatnonzero(merged[1:] != merged[:-1]), n - 1)  # last copies
        from_a = in_a[ends]
        from_b = ends + 1
    else:
        ends = None
        from_a = in_a
        from_b = np.arange(1, n + 1)
    from_b -= from_a
    gap = from_a / a.size
    gap -= from_b / b.size
    np.abs(gap, out=gap)
    best = np.flatnonzero(gap == gap.max())
    before = from_a[best - 1]
    before[best == 0] = 0
    held_by_a = np.flatnonzero(from_a[best] > before)
    run = int(best[held_by_a[0]] if held_by_a.size else best[0])
    start = run if ends is None else (0 if run == 0 else int(ends[run - 1]) + 1)
    return float(merged[start])


def _refine_split(
    values: np.ndarray,
    keys: _LazyKeys,
    split: int,
    min_size: int,
    kind: ChangeKind,
    rounds: int = 3,
    window: tuple[int, int] | None = None,
    sides: list[np.ndarray] | None = None,
) -> int:
    """Re-place an accepted split with the indicator cut that best separates the two sides.

    After an unbalanced change the pooled median (or pooled interquartile range) sits deep inside
    the majority side, where the CUSUM drifts slowly and its argmax wanders; cutting where the
    two sides' distributions differ most (of the values, or of the rank distance from the
    pooled median for a change of spread) makes both drifts large and the estimate sharp. Only
    the location moves: acceptance was decided by the calibrated test. ``window`` (first, last)
    confines the split to the anchored interval an edge test accepted, while the cut and the
    CUSUM use the whole segment ``values``. ``sides``: filled with the values of the two pieces
    the returned split makes, sorted, when the last round sorted them whole (the pieces' own
    scans need them sorted again).
    """
    m = values.size
    if kind == "location":
        series = values
    else:
        ranks = ranks_from_order(segment_order(values, keys.array))
        series = np.abs(2 * ranks - (m - 1)).astype(np.float64)
    previous: float | None = None
    a, b, sorted_at = series[:0], series[:0], -1
    for _ in range(rounds):
        a, b = _thinned_sorted(series[:split]), _thinned_sorted(series[split:])
        sorted_at = split
        cut = _merged_cut(a, b)
        if cut == previous:  # the same indicator again: it would move the split where it is
            break
        previous = cut
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
    whole = a.size == sorted_at and b.size == m - sorted_at
    if sides is not None and kind == "location" and sorted_at == split and whole:
        sides[:] = [a, b]
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
