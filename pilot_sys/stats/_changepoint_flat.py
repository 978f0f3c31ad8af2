"""Short segments as ranges of flat arrays, for testing them together (``_changepoint_rounds``).

One numpy call over the flat arrays does for every segment what a call per segment would:
running counts of an indicator, the bridge's first argmax and argmin (the same floating-point
operations on the same numbers as ``_bridge_extremes``), the readings tied at a cut split by
position keys (``_top_masks``, all segments in one sort), the merged cut of a split's two
sides (``_merged_cut``), and the pieces of split segments with their readings still sorted (a
stable partition). Separate from the rounds' driver, which decides and records what these
arrays compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pilot_sys.stats._changepoint_ranks import keys_at


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

    def _spread(self, per_segment: np.ndarray) -> np.ndarray:
        """One value per segment, repeated over its readings."""
        return np.repeat(per_segment, self.sizes)

    def _running(self, indicator: np.ndarray) -> np.ndarray:
        """Running count of ``indicator`` over the flat arrays (32 bits when it fits: several
        times faster than 64); converted first and summed in place (``_cumsum``)."""
        counts = indicator.astype(self.count_type)
        return np.cumsum(counts, out=counts)

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
        self, splits: list[int | None], min_len: int
    ) -> tuple[_Round | None, _Round | None]:
        """The pieces of the split segments at least ``min_len`` long, and the shorter ones
        (not tested again: ``_changepoint_rounds`` records their medians and indicators), each
        as a round whose sorted order is the parents' partitioned stably at the split (no sort).

        Each parent's readings stay in its range of the flat arrays: those left of the split
        first, in their order, then those right of it. The pieces' readings in position order
        are the parents' as they are.
        """
        accepted = np.array([s is not None for s in splits])
        if not accepted.any():
            return None, None
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

        def pieces(chosen: np.ndarray) -> _Round | None:
            if not chosen.any():
                return None
            flat = (order, ordered, self.inline)
            if not chosen.all():
                held = np.repeat(chosen, kid_sizes)
                flat = (order[held], ordered[held], self.inline[held])
            return _Round(
                self.values,
                kid_begins[chosen],
                kid_ends[chosen],
                flat[0],
                self.min_size,
                ordered=flat[1],
                inline=flat[2],
            )

        return pieces(wanted), pieces(split_kid & ~wanted & (kid_sizes > 0))

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


def _top(rnd: _Round, counts: np.ndarray) -> np.ndarray:
    """``_top_masks``: per segment, its ``count`` largest readings (ties at the cut broken by
    position keys, in the segments that have them), flat in position order.

    Where more readings than ``count`` reach the cut, the run of readings equal to it (its
    positions are a range of ``order``) keeps those whose key is at least the key
    ``_top_masks`` selects, for all such segments in one sort by (segment, key).
    """
    at = rnd.starts + rnd.sizes - counts  # flat index of the cut in ``ordered``
    mask = rnd.inline >= rnd._spread(rnd.ordered[at])
    runs = rnd.runs()
    if runs is None:  # distinct readings: the cut's reading alone is at the cut
        return mask
    ends = runs[0]
    run = np.searchsorted(ends, at)  # the run holding the cut (runs end at segment ends)
    last = ends[run]
    first = np.where(run > 0, ends[np.maximum(run, 1) - 1] + 1, 0)
    above = rnd.starts + rnd.sizes - 1 - last  # readings above the cut
    tied = last - first + 1
    over = np.flatnonzero(above + tied != counts)
    if not over.size:
        return mask
    lengths = tied[over]
    segment = np.repeat(over, lengths)
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    positions = rnd.order[np.repeat(first[over], lengths) + within]
    keys = keys_at(positions)
    by_key = np.lexsort((keys, segment))
    # the key at (tied - need) among each segment's tied keys, ascending, need = count - above
    skip = tied[over] - (counts[over] - above[over])
    key_cut = keys[by_key[np.cumsum(lengths) - lengths + skip]]
    dropped = keys < np.repeat(key_cut, lengths)
    flat = positions[dropped] - rnd.begins[segment[dropped]] + rnd.starts[segment[dropped]]
    mask[flat] = False
    return mask


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
