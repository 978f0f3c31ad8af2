"""The edge tests: intervals anchored at both ends of the series, scanned for one change.

A short stretch at an end of the series (a warm-up, a cool-down) is too small for binary
segmentation and the seeded grid; these intervals find it with an exact null and place it with
the enclosing segment's readings. Separate because they have their own scan (all anchored
intervals in one flat pass), their own test (sup |B| with an exact p-value) and their own
selection rule.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from pilot_sys.stats._changepoint_dependence import _SeriesDependence
from pilot_sys.stats._changepoint_null import edge_sf
from pilot_sys.stats._changepoint_plan import _Plan
from pilot_sys.stats._changepoint_ranks import keys_at, ranks_from_order, segment_order
from pilot_sys.stats._changepoint_result import ChangeKind, _Split
from pilot_sys.stats._changepoint_segment import _ScanResult
from pilot_sys.stats._changepoint_statistic import _LazyKeys, _refine_split


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
        self._placed: dict[tuple[int, int, int, ChangeKind, tuple[int, int]], int] = {}
        self._near: dict[tuple[int, int], _SeriesDependence] = {}

    @property
    def enabled(self) -> bool:
        return bool(self._scans)

    def _dependence(self, near: tuple[int, int]) -> _SeriesDependence | None:
        """The dependence of the readings ``near`` an end, kept by their range: binary
        segmentation peeling a long series from one end tests every remaining segment on the
        same readings at the other end (its indicators and each centring are made once)."""
        if not self._plan.dependence:
            return None
        if near not in self._near:
            self._near[near] = _SeriesDependence(self._values, [near], self._plan.scale)
        return self._near[near]

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
            own = self._dependence(_edge_reach((b, e), at_start, self._reach))
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
        """Absolute position of an accepted edge split, placed with segment [b, e)'s readings.

        Remembered by what it depends on (the interval, its split and kind, the readings it
        reads): binary segmentation peeling a long series from one end tests every remaining
        segment on the same edge intervals, whose readings at the other end stay the same.
        """
        reach = _edge_reach((b, e), c.scan.begin == 0, self._reach)
        key = (c.scan.begin, c.scan.end, c.split, c.kind, reach)
        if c.index is None and key in self._placed:
            c.index = self._placed[key]
        placed = _place_edge(self._values, c, reach, self._plan.min_size)
        self._placed[key] = placed
        return placed

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
