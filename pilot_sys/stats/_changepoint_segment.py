"""Scan a segment (or a batch of equal-length intervals) and decide its best split.

A scan holds a segment's statistics without any penalty (so it can be cached and decided again
at another one); the decision divides by the dependence factor, compares with the penalty and
re-places an accepted split. Separate from the statistics (which know nothing of acceptance)
and from the driver (which chooses which segments to scan).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pilot_sys.stats import _changepoint_batch as batch
from pilot_sys.stats._changepoint_dependence import dependence_factor
from pilot_sys.stats._changepoint_null import kolmogorov_sf, kuiper_sf
from pilot_sys.stats._changepoint_ranks import keys_at
from pilot_sys.stats._changepoint_result import ChangeKind, Statistic, _Split
from pilot_sys.stats._changepoint_statistic import (
    _cumsum,
    _cusum_scan,
    _LazyKeys,
    _median_candidates,
    _MedianScan,
    _positions,
    _refine_split,
    _top_masks,
)


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
    values sorted, when the caller has them. With ``decisive``, the scale scan (and, from
    sorted values, its masks) is skipped when the location scan alone is accepted (a
    ``partial`` result)."""
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
    quarter = m // 4
    spread_cuts = [quarter, m - quarter] if scale else []
    # From sorted values each mask is made alone, so the spread masks wait until the scale scan
    # is known to be needed; a selection makes all cut values at once.
    later = ordered is not None and decisive is not None
    masks = _top_masks(segment, keys, [m // 2] + ([] if later else spread_cuts), ordered)
    half = masks[0]
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
    top, middle = _top_masks(segment, keys, spread_cuts, ordered) if later else masks[1:]
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


def _best_split(scan: _ScanResult, penalty: float, floor: float) -> tuple[float, int, ChangeKind]:
    """The scan ``_decide`` judges: (dependence-adjusted statistic, split, kind)."""
    scored: list[tuple[float, int, ChangeKind]] = []
    for kind, split, stat, factor in scan.scans:
        if factor is not None:
            stat /= math.sqrt(max(floor, factor))
        elif floor > 1.0:
            stat /= math.sqrt(floor)
        scored.append((stat, split, kind))
    # A level shift moves the spread indicator too; name it a location change whenever the
    # location scan alone is significant, so the sharper location refinement places it.
    return max(scored, key=lambda c: (c[2] == "location" and c[0] > penalty, c[0]))


def _decide(
    values: np.ndarray,
    scan: _ScanResult,
    *,
    penalty: float,
    floor: float,
    min_size: int,
    sides: list[np.ndarray] | None = None,
) -> _Split:
    """Accept the best split of a scanned segment if its dependence-adjusted statistic beats
    ``penalty``.

    ``floor`` is the smallest dependence factor to apply (1, or a series-wide estimate for short
    intervals whose own estimate is too noisy). ``sides``: filled with the two pieces' values
    sorted when the split is re-placed here and its last round sorted them whole.
    """
    stat, split, kind = _best_split(scan, penalty, floor)
    tail = kuiper_sf if scan.statistic_kind == "sign" else kolmogorov_sf
    p_value = min(1.0, len(scan.scans) * tail(stat))
    accepted = stat > penalty
    if accepted and scan.statistic_kind == "sign":
        if kind not in scan.refined:
            segment = values[scan.begin : scan.end]
            scan.refined[kind] = _refine_split(
                segment, _LazyKeys(scan.begin, scan.end), split, min_size, kind, sides=sides
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
