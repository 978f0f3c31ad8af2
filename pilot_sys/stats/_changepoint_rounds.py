"""Binary segmentation of many short segments at once: one round of tests per numpy pass.

A series with many change points (a random walk, a slow sine) ends in thousands of tests of
short segments, each of which costs a hundred small numpy calls (selection, indicators, CUSUM,
dependence, three rounds of re-placement): the fixed cost of those calls, not the arithmetic,
is most of the detection. Here the segments that binary segmentation would test one by one are
tested together, one bisection depth at a time, as the ranges of flat arrays: every step is one
call over all of them, with the same floating-point operations on the same numbers, so every
scan, split, statistic and p-value is identical to the one-by-one path (``_Scans.test``).

Each round keeps its segments' readings sorted (with their positions); a split segment's
pieces get theirs by a stable partition of that order, so a reading is sorted once, when its
segment first enters, instead of at every depth. Readings tied at a cut are split by their
position keys segment by segment, as ``_top_masks`` does; the re-placement of a change of
spread is left to ``_refine_split``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pilot_sys.stats._changepoint_result import ChangeKind, _Split
from pilot_sys.stats._changepoint_segment import (
    _best_split,
    _decide,
    _decisive,
    _ScanResult,
)
from pilot_sys.stats._changepoint_statistic import _LazyKeys, _top_masks

# Segments shorter than this are tested in rounds; both pieces of any split of one are shorter
# than the 40,000 readings above which ``_refine_split`` thins a side, so a piece's sorted
# readings are exactly the merge ``_merged_cut`` makes.
ROUND_MAX = 1 << 15

# Segments are tested in groups of at most this many readings: every flat array of a group,
# and every temporary, stays in cache and is allocated again from memory already mapped (a
# fresh array of the whole series' length costs more in page faults than in arithmetic).
ROUND_READINGS = 1 << 16

_Scan = tuple[ChangeKind, int, float, float | None]


@dataclass
class _Extremes:
    """Per segment: count of ones, first argmax/argmin split of the bridge and its values."""

    ones: np.ndarray
    top: np.ndarray
    peak: np.ndarray
    bottom: np.ndarray
    trough: np.ndarray
    counts: np.ndarray  # each segment's running count, flat (local: from 0 at its start)


class _Round:
    """The segments of one bisection depth as ranges of flat arrays.

    ``order``: each segment's absolute positions sorted by value (segments one after another);
    ``ordered``: the values in that order; ``inline``: the values in position order.
    """

    def __init__(
        self,
        values: np.ndarray,
        begins: np.ndarray,
        ends: np.ndarray,
        order: np.ndarray,
        min_size: int,
        *,
        ordered: np.ndarray | None = None,
        inline: np.ndarray | None = None,
    ) -> None:
        self.values = values
        self.begins, self.ends = begins, ends
        self.sizes = ends - begins
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.order = order
        self.ordered = values[order] if ordered is None else ordered
        self.min_size = min_size
        total = int(self.sizes.sum())
        self.count_type = np.int32 if total < np.iinfo(np.int32).max else np.int64
        if inline is None:
            inline = np.concatenate(
                [values[b:e] for b, e in zip(begins.tolist(), ends.tolist(), strict=True)]
            )
        self.inline = inline
        self._runs: tuple[np.ndarray, ...] | None = None
        self.local = np.arange(1, total + 1, dtype=np.int64) - np.repeat(self.starts, self.sizes)
        self.positions = self.local.astype(np.float64)  # k = local + 1: readings up to here
        # the bridge is scanned over min_size <= k <= m - min_size
        self.first_valid = self.starts + (min_size - 1)
        self.bounds = np.stack([self.first_valid, self.starts + self.sizes - min_size], 1).ravel()

    @classmethod
    def enter(cls, values: np.ndarray, segments: list[tuple[int, int]], min_size: int) -> _Round:
        """Segments entering from the one-by-one path: each sorted once here."""
        begins = np.array([b for b, _ in segments], dtype=np.int64)
        ends = np.array([e for _, e in segments], dtype=np.int64)
        order = np.concatenate([np.argsort(values[b:e]) + b for b, e in segments])
        return cls(values, begins, ends, order, min_size)

    def runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Runs of equal readings in each segment's sorted order: the flat index of each run's
        last reading, where each segment's runs start among them, and how many it has; None
        when every reading is distinct."""
        if self._runs is None:
            last = np.ones(self.ordered.size, dtype=bool)
            np.not_equal(self.ordered[1:], self.ordered[:-1], out=last[:-1])
            last[self.starts[1:] - 1] = True
            if last.all():
                self._runs = ()
            else:
                ends = np.flatnonzero(last)
                first = np.searchsorted(ends, self.starts)
                count = np.diff(np.append(first, ends.size))
                self._runs = (ends, first, count)
        return self._runs or None

    def tied(self) -> np.ndarray:
        """Per segment: whether two of its readings are equal."""
        equal = np.empty(self.ordered.size, dtype=bool)
        equal[0] = False
        np.equal(self.ordered[1:], self.ordered[:-1], out=equal[1:])
        equal[self.starts] = False
        return np.logical_or.reduceat(equal, self.starts)

    def _spread(self, per_segment: np.ndarray) -> np.ndarray:
        """One value per segment, repeated over its readings."""
        return np.repeat(per_segment, self.sizes)

    def _running(self, indicator: np.ndarray) -> np.ndarray:
        """Running count of ``indicator`` over the flat arrays (32 bits when it fits: several
        times faster than 64), and the count before each segment's start."""
        return np.cumsum(indicator, dtype=self.count_type)

    def extremes(self, indicator: np.ndarray) -> _Extremes:
        """``_bridge_extremes`` of every segment's running count of ``indicator``: the bridge
        C_k - k p formed by the same float operations, its first argmax and argmin."""
        running = self._running(indicator)
        last = self.starts + self.sizes - 1
        before = np.zeros(self.sizes.size, dtype=running.dtype)
        before[1:] = running[self.starts[1:] - 1]
        ones = running[last] - before
        running -= self._spread(before)
        p = ones / self.sizes
        padded = np.empty(running.size + 1)  # reduceat needs every bound inside the array
        padded[-1] = 0.0
        bridge = padded[:-1]
        np.multiply(self.positions, self._spread(-p), out=bridge)
        bridge += running
        peak = np.maximum.reduceat(padded, self.bounds)[::2]
        trough = np.minimum.reduceat(padded, self.bounds)[::2]
        top = self._first(bridge == self._spread(peak))
        bottom = self._first(bridge == self._spread(trough))
        return _Extremes(ones, top, peak, bottom, trough, running)

    def _first(self, hits: np.ndarray) -> np.ndarray:
        """Per segment: the split k of the first hit in its scanned range."""
        at = np.flatnonzero(hits)
        first = at[np.searchsorted(at, self.first_valid)]
        return first - self.starts + 1

    def children(
        self, splits: list[int | None], min_len: int, distinct: np.ndarray
    ) -> tuple[_Round | None, list[tuple[int, int, np.ndarray, np.ndarray]]]:
        """The pieces of the split segments at least ``min_len`` long, their sorted order the
        parents' partitioned stably at the split (no sort); and the shorter pieces of parents
        with ``distinct`` readings: (begin, end, readings sorted, readings in position order).

        Each parent's readings stay in its range of the flat arrays: those left of the split
        first, in their order, then those right of it. The pieces' readings in position order
        are the parents' as they are.
        """
        accepted = np.array([s is not None for s in splits])
        if not accepted.any():
            return None, []
        ends = self.ends
        at = np.array([e if s is None else s for s, e in zip(splits, ends.tolist(), strict=True)])
        kid_begins = np.stack([self.begins, at], 1).ravel()
        kid_ends = np.stack([at, ends], 1).ravel()
        kid_sizes = kid_ends - kid_begins
        split_kid = np.repeat(accepted, 2)
        wanted = (kid_sizes >= min_len) & split_kid
        right = self.order >= self._spread(at)
        rights = self._running(right)
        rights -= right  # right of the split among the readings before this one in the flat order
        rights -= self._spread(rights[self.starts])  # ... and in its parent
        destination = np.where(
            right, self._spread(at - self.begins) + rights, self.local - 1 - rights
        )
        destination += self._spread(self.starts)
        order = np.empty_like(self.order)
        order[destination] = self.order
        ordered = np.empty_like(self.ordered)
        ordered[destination] = self.ordered
        inline = self.inline
        short: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        kid_starts = (np.cumsum(kid_sizes) - kid_sizes).tolist()
        pieces = np.flatnonzero(split_kid & ~wanted & np.repeat(distinct, 2) & (kid_sizes > 0))
        for j in pieces.tolist():
            a, m = kid_starts[j], int(kid_sizes[j])
            b = int(kid_begins[j])
            short.append((b, b + m, ordered[a : a + m], inline[a : a + m]))
        if not wanted.any():
            return None, short
        if not wanted.all():
            held = np.repeat(wanted, kid_sizes)
            order, ordered, inline = order[held], ordered[held], inline[held]
        kids = _Round(
            self.values,
            kid_begins[wanted],
            kid_ends[wanted],
            order,
            self.min_size,
            ordered=ordered,
            inline=inline,
        )
        return kids, short

    def subset(self, chosen: np.ndarray) -> _Round:
        """The segments ``chosen`` (ascending indices) as a round of their own."""
        flag = np.zeros(self.sizes.size, dtype=bool)
        flag[chosen] = True
        order = self.order[self._spread(flag)]
        return _Round(self.values, self.begins[chosen], self.ends[chosen], order, self.min_size)

    def medians(self) -> np.ndarray:
        """``_median_of_sorted`` of every segment (signed zeros aside: callers skip zeros)."""
        half = self.starts + self.sizes // 2
        upper = self.ordered[half]
        lower = self.ordered[half - 1]
        return np.where(self.sizes % 2 == 1, upper, (lower + upper) / 2.0)


def _split_of(ext: _Extremes, i: int, m: int) -> tuple[int, float, float, float] | None:
    """(split, high, low, p) of segment i as ``_cusum_scan`` chooses it; None when p is 0 or 1."""
    p = int(ext.ones[i]) / m
    if p <= 0.0 or p >= 1.0:
        return None
    high, low = max(0.0, float(ext.peak[i])), min(0.0, float(ext.trough[i]))
    top, bottom = int(ext.top[i]), int(ext.bottom[i])
    return (top if high >= -low else bottom), high, low, p


def _cusum_scans(
    rnd: _Round, indicator: np.ndarray, base_penalty: float, dependence: bool, rows: list[int]
) -> dict[int, tuple[int, float, float | None, np.ndarray]]:
    """``_cusum_scan`` plus the dependence factor (``factor_of``) for segments ``rows``: split,
    statistic, factor, and the running count (a view)."""
    ext = rnd.extremes(indicator)
    out: dict[int, tuple[int, float, float | None, np.ndarray]] = {}
    wanted: dict[int, tuple[int, ...]] = {}
    for i in rows:
        m = int(rnd.sizes[i])
        start = int(rnd.starts[i])
        counts = ext.counts[start : start + m]
        chosen = _split_of(ext, i, m)
        if chosen is None:
            out[i] = (m // 2, 0.0, None, counts)  # factor_of(0.0) is None: 0 never passes
            continue
        split, high, low, p = chosen
        top, bottom = int(ext.top[i]), int(ext.bottom[i])
        cuts = tuple(sorted({top if high > 0 else split, bottom if low < 0 else split}))
        stat = (high - low) / math.sqrt(m * p * (1.0 - p))
        if dependence and stat > base_penalty:
            wanted[i] = cuts
        out[i] = (split, stat, None, counts)
    for i, factor in _dependence_factors(rnd, ext.counts, wanted).items():
        split, stat, _, counts = out[i]
        out[i] = (split, stat, factor, counts)
    return out


def _dependence_factors(
    rnd: _Round, counts: np.ndarray, wanted: dict[int, tuple[int, ...]]
) -> dict[int, float]:
    """``dependence_factor`` of segments ``wanted`` (with their cuts) from their running
    ``counts`` (flat, local): the centred window sums of all of them formed in a few passes
    (the same integers, the same subtractions), each segment's sum of squares by the same
    ``einsum`` over its own windows."""
    out: dict[int, float] = {}
    plans: list[tuple[int, int, int, float, int]] = []  # segment, batch, windows, variance, m
    heads: list[int] = []  # where each segment's first window ends in ``counts``
    expected: list[float] = []
    spans: list[int] = []
    for i, cuts in wanted.items():
        m = int(rnd.sizes[i])
        start = int(rnd.starts[i])
        batch = int(4.0 * (m / 100.0) ** (2.0 / 9.0))
        if batch < 2 or m < 4 * batch:
            out[i] = 1.0
            continue
        bounds = [0, *sorted(c for c in cuts if 0 < c < m), m]
        windows = m - batch + 1
        variance = 0.0
        previous = 0
        pieces: list[tuple[int, float]] = []
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            if b <= a:
                continue
            ones = int(counts[start + b - 1]) - previous
            previous = int(counts[start + b - 1])
            q = ones / (b - a)
            variance += (b - a) * q * (1.0 - q)
            pieces.append((max(a, min(b, windows)) - a, batch * q))
        if variance <= 0.0:
            out[i] = 1.0
            continue
        plans.append((i, batch, windows, variance, m))
        heads.append(start + batch - 1)
        for span, value in pieces:
            spans.append(span)
            expected.append(value)
    if not plans:
        return out
    windows_of = np.array([w for _, _, w, _, _ in plans], dtype=np.int64)
    first = np.cumsum(windows_of) - windows_of
    batches = np.array([b for _, b, _, _, _ in plans], dtype=np.int64)
    # window j of a segment sums its indicator over [j, j + batch): C[j + batch - 1] - C[j - 1]
    upper = np.repeat(np.asarray(heads, dtype=np.int64) - first, windows_of)
    upper += np.arange(int(windows_of.sum()))
    sums = counts[upper].astype(np.float64)
    sums[1:] -= counts[upper[1:] - np.repeat(batches, windows_of)[1:]]
    sums[first] = counts[upper[first]]  # the first window has nothing before it
    sums -= np.repeat(np.asarray(expected), np.asarray(spans, dtype=np.int64))
    for (i, batch, windows, variance, m), at in zip(plans, first.tolist(), strict=True):
        block = sums[at : at + windows]
        # einsum's own loop, as ``dependence_factor`` sums it
        total = float(np.einsum("i,i->", block, block))
        obm = total / (batch * windows)
        out[i] = max(1.0, obm / (variance / m))
    return out


def _refine_locations(rnd: _Round, rows: list[int], splits: list[int], rounds: int = 3) -> None:
    """``_refine_split`` (location, whole sides) of segments ``rows`` from ``splits``, in place.

    The cut is ``_merged_cuts``'s, the indicator split the scan's bridge. Once the segments
    still moving hold less than half the readings, the round is narrowed to them.
    """
    previous: dict[int, float] = {}
    active = list(range(len(rows)))  # indices into rows and splits
    cur, at_row = rnd, list(rows)  # the round being read, each active row's segment in it
    for _ in range(rounds):
        if not active:
            return
        held_sizes = sum(int(rnd.sizes[rows[j]]) for j in active)
        if 2 * held_sizes < int(cur.sizes.sum()):
            chosen = np.array(sorted(rows[j] for j in active), dtype=np.int64)
            cur = rnd.subset(chosen)
            place = {int(i): n for n, i in enumerate(chosen.tolist())}
            at_row = [place.get(i, -1) for i in rows]
        at = cur.sizes // 2  # any split inside: segments no longer refined are not read
        for j in active:
            at[at_row[j]] = splits[j]
        starts_of_cut = _merged_cuts(cur, at)
        cut_at = np.zeros(cur.sizes.size, dtype=np.float64)
        moving: list[int] = []
        for j in active:
            i = at_row[j]
            cut = float(cur.ordered[starts_of_cut[i]])
            if previous.get(j) == cut:
                continue
            previous[j] = cut
            cut_at[i] = cut
            moving.append(j)
        if not moving:
            return
        ext = cur.extremes(cur.inline > cur._spread(cut_at))
        active = []
        for j in moving:
            i = at_row[j]
            m = int(cur.sizes[i])
            chosen_split = _split_of(ext, i, m)
            moved = m // 2 if chosen_split is None else chosen_split[0]
            if moved != splits[j]:
                splits[j] = moved
                active.append(j)


def _merged_cuts(rnd: _Round, at: np.ndarray) -> list[int]:
    """Per segment split at ``at``: the flat index (in ``ordered``) of ``_merged_cut``'s value.

    The two sides sorted and merged stably are the segment's sorted readings, each labelled by
    its side; the empirical CDFs step at the last reading of each run of equal values, where
    the running count of the left side's labels gives them. Of the runs with the largest
    difference the first one holding a left reading is taken, else the first; its first
    reading is the cut (equal readings: only a zero's sign could differ, which no indicator
    sees).
    """
    left = rnd.order < rnd._spread(rnd.begins + at)
    from_a = rnd._running(left)
    before = np.zeros(rnd.sizes.size, dtype=from_a.dtype)
    before[1:] = from_a[rnd.starts[1:] - 1]
    from_a -= rnd._spread(before)
    runs = rnd.runs()
    if runs is None:  # every reading its own run
        ends, first, count = None, rnd.starts, rnd.sizes
        seen, from_b = from_a, rnd.local - from_a
    else:
        ends, first, count = runs
        seen = from_a[ends]
        from_b = rnd.local[ends] - seen
    gap = seen / np.repeat(at, count)
    gap -= from_b / np.repeat(rnd.sizes - at, count)
    np.abs(gap, out=gap)
    hits = gap == np.repeat(np.maximum.reduceat(gap, first), count)
    # a run holds a left reading when the left count grew over it
    grew = np.empty(seen.size, dtype=bool)
    np.greater(seen[1:], seen[:-1], out=grew[1:])
    grew[first] = seen[first] > 0
    held = np.flatnonzero(hits & grew)
    anywhere = np.flatnonzero(hits)
    first_held = np.searchsorted(held, first).tolist()
    first_any = anywhere[np.searchsorted(anywhere, first)].tolist()
    out: list[int] = []
    for i, (f, c) in enumerate(zip(first.tolist(), count.tolist(), strict=True)):
        k = first_held[i]
        run = held[k] if k < held.size and held[k] < f + c else first_any[i]
        run = int(run)
        if ends is None:
            out.append(run)
        else:
            out.append(int(rnd.starts[i]) if run == f else int(ends[run - 1]) + 1)
    return out


@dataclass
class RoundOutcome:
    """What one round decided: the tests, the scans, and the pieces left unsplit."""

    tests: list[_Split]
    scans: dict[tuple[int, int], _ScanResult]
    medians: dict[tuple[int, int], float]
    unsplit: list[tuple[int, int]]
    indicators: dict[tuple[int, int], list[tuple[ChangeKind, np.ndarray]]]


def bisect_rounds(
    values: np.ndarray,
    segments: list[tuple[int, int]],
    *,
    min_size: int,
    penalty: float,
    scale: bool,
    dependence: bool,
    keep: bool,
) -> RoundOutcome:
    """Binary segmentation of ``segments`` (each shorter than ``ROUND_MAX``, none holding an
    end of the series) at ``penalty``, as ``_Detection.bisect`` makes it. ``keep``: return the
    unsplit segments' indicators."""
    out = RoundOutcome([], {}, {}, [], {})
    for group in _groups(segments):
        _bisect_group(values, group, out, min_size, penalty, scale, dependence, keep)
    return out


def _groups(segments: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Consecutive segments holding at most ``ROUND_READINGS`` readings together (or one)."""
    groups: list[list[tuple[int, int]]] = []
    held = ROUND_READINGS
    for b, e in segments:
        if held + (e - b) > ROUND_READINGS:
            groups.append([])
            held = 0
        groups[-1].append((b, e))
        held += e - b
    return groups


def _bisect_group(
    values: np.ndarray,
    segments: list[tuple[int, int]],
    out: RoundOutcome,
    min_size: int,
    penalty: float,
    scale: bool,
    dependence: bool,
    keep: bool,
) -> None:
    """``bisect_rounds`` of one group: its pieces never hold more readings than it does."""
    rnd: _Round | None = _Round.enter(values, segments, min_size)
    while rnd is not None:
        k = rnd.sizes.size
        tied = rnd.tied()
        splits: list[int | None] = [None] * k
        _decide_round(rnd, list(range(k)), out, splits, min_size, penalty, scale, dependence, keep)
        for i, split in enumerate(splits):
            if split is None:
                out.unsplit.append((int(rnd.begins[i]), int(rnd.ends[i])))
            else:
                for piece in ((int(rnd.begins[i]), split), (split, int(rnd.ends[i]))):
                    if piece[1] - piece[0] < 2 * min_size:
                        out.unsplit.append(piece)
        rnd, short = rnd.children(splits, 2 * min_size, ~tied)
        for b, e, ordered, inline in short:
            _record_short(out, (b, e), ordered, inline, scale, keep)


def _record_short(
    out: RoundOutcome,
    key: tuple[int, int],
    ordered: np.ndarray,
    inline: np.ndarray,
    scale: bool,
    keep: bool,
) -> None:
    """What the result and the series-wide dependence floor read of a piece too short to test
    (distinct readings): its median (``_median_of_sorted``; zeros left to ``np.median``) and,
    with ``keep``, its indicators as ``_indicators`` forms them."""
    m = ordered.size
    half = m // 2
    median = float(ordered[half]) if m % 2 else float((ordered[half - 1] + ordered[half]) / 2.0)
    if median != 0.0:
        out.medians[key] = median
    if not keep or m < 4:
        return
    quarter = m // 4
    made: list[tuple[ChangeKind, np.ndarray]] = [("location", inline >= ordered[m - half])]
    if scale:
        top = inline >= ordered[m - quarter] if quarter > 0 else np.zeros(m, dtype=bool)
        middle = inline >= ordered[quarter]  # the m - quarter largest
        made.append(("scale", top | ~middle))
    out.indicators[key] = made


def _top(rnd: _Round, counts: np.ndarray) -> np.ndarray:
    """``_top_masks``: per segment, its ``count`` largest readings (ties at the cut broken by
    position keys, in the segments that have them), flat in position order."""
    cut = rnd.ordered[rnd.starts + rnd.sizes - counts]
    mask = rnd.inline >= rnd._spread(cut)
    if rnd.runs() is None:  # distinct readings: the cut's reading alone is at the cut
        return mask
    held = rnd._running(mask)
    last = held[rnd.starts + rnd.sizes - 1]
    before = np.zeros_like(last)
    before[1:] = last[:-1]
    for i in np.flatnonzero(last - before != counts).tolist():
        b, e = int(rnd.begins[i]), int(rnd.ends[i])
        start, stop = int(rnd.starts[i]), int(rnd.starts[i] + rnd.sizes[i])
        mask[start:stop] = _top_masks(
            rnd.inline[start:stop], _LazyKeys(b, e), [int(counts[i])], rnd.ordered[start:stop]
        )[0]
    return mask


def _decide_round(
    rnd: _Round,
    rows: list[int],
    out: RoundOutcome,
    splits: list[int | None],
    min_size: int,
    penalty: float,
    scale: bool,
    dependence: bool,
    keep: bool,
) -> None:
    """Scan, decide and re-place the segments ``rows`` of one round."""
    sizes, starts = rnd.sizes, rnd.starts
    decisive = _decisive(penalty, 1.0)
    half = _top(rnd, sizes // 2)
    location = _cusum_scans(rnd, half, penalty, dependence, rows)
    scans: dict[int, list[_Scan]] = {}
    partial: dict[int, bool] = {}
    whole: list[int] = []
    for i in rows:
        split, stat, factor, _ = location[i]
        scans[i] = [("location", split, stat, factor)]
        partial[i] = False
        if not scale:
            continue
        if decisive(stat, factor):
            scans[i].append(("scale", int(sizes[i]) // 2, math.nan, None))
            partial[i] = True
        else:
            whole.append(i)
    outside: np.ndarray | None = None
    if whole:
        # outside the interquartile range: among the top quarter, or not among the top 3/4
        outside = _top(rnd, sizes // 4)
        outside |= ~_top(rnd, sizes - sizes // 4)
        spread = _cusum_scans(rnd, outside, penalty, dependence, whole)
        for i in whole:
            split, stat, factor, _ = spread[i]
            scans[i].append(("scale", split, stat, factor))
    results = {
        i: _ScanResult(
            begin=int(rnd.begins[i]),
            end=int(rnd.ends[i]),
            statistic_kind="sign",
            scans=scans[i],
            partial=partial[i],
        )
        for i in rows
    }
    refine: list[int] = []
    start_splits: list[int] = []
    for i in rows:
        stat, split, kind = _best_split(results[i], penalty, 1.0)
        if stat > penalty and kind == "location":
            refine.append(i)
            start_splits.append(split)
    if refine:
        _refine_locations(rnd, refine, start_splits)
        for i, split in zip(refine, start_splits, strict=True):
            results[i].refined["location"] = split
    medians = rnd.medians()
    for i in rows:
        scan = results[i]
        key = (scan.begin, scan.end)
        result = _decide(rnd.values, scan, penalty=penalty, floor=1.0, min_size=min_size)
        out.tests.append(result)
        out.scans[key] = scan
        median = float(medians[i])
        if median != 0.0:
            out.medians[key] = median
        splits[i] = result.index
        if keep and result.index is None:
            start, stop = int(starts[i]), int(starts[i] + sizes[i])
            made: list[tuple[ChangeKind, np.ndarray]] = [("location", half[start:stop])]
            if scale and outside is not None:
                made.append(("scale", outside[start:stop]))
            out.indicators[key] = made
