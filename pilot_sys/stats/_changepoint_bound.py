"""Upper bounds of the seeded intervals' sign statistics, without scanning each interval.

The seeded stage of ``changepoint.detect`` has about 2 n readings of intervals per scale and a
dozen scales on a long series. Almost every interval is far from significant, yet the exact scan
(three order statistics, two tie-broken indicators, a cumulative sum, the bridge's extremes)
costs tens of nanoseconds per reading. ``SeededBounds.bounds`` gives every interval an upper
bound of both statistics that ``_scan_intervals`` would compute, for a few nanoseconds per
reading; the detector scans exactly only the intervals whose bound could pass, so its decisions
do not change.

* The cuts (the interval's median and quartiles, as ``_indicators`` takes them) are found
  exactly without selecting over the interval. The series is cut into base blocks of
  2 min_size, of which every aligned seeded interval is a union, and each block is sorted once.
  A prefix table counts, before every block, the readings at or above and strictly above each
  of 256 global levels (quantiles of a sample), so the two levels around an interval's k-th
  largest reading come from one row difference; the reading itself is found among the few
  readings of the interval strictly between them, which are contiguous runs of the sorted
  blocks. Intervals not made of whole blocks (the last one of each scale) are sorted directly.
* The indicator walk is exact, 16 readings per step: comparing the interval with its cuts gives
  bits that are packed into 16-bit words, and tables over all 65,536 words give each word's net
  step and the walk's highest and lowest point inside it, so the maximum and minimum of the
  CUSUM over the allowed splits cost one comparison per reading and O(L / 16) after it.
* Readings tied with a cut, which ``_top_masks`` splits by position keys, are counted on the
  upper side; the true count of "ones" below any split differs by at most the surplus of tied
  readings, and the bound widens by exactly that.

The bridge values are half-integers (the indicator holds exactly half the interval's readings),
so the bound and the exact statistic are formed by the same floating-point operations on
integers that are exact, and rounding (monotone) cannot put the exact value above its bound.
"""

from __future__ import annotations

import functools
import math

import numpy as np

_WORD = 16  # readings per packed word of an indicator
_LEVELS = 256  # global levels between which the cuts are bracketed
_SAMPLE_PER_LEVEL = 64  # sample readings per level (the levels are the sample's quantiles)
_CHUNK_READINGS = 1 << 22  # readings per chunk of intervals (bounds the temporaries, ~40 MB)
_GAP_LIMIT = 8  # an interval with more than 8 L / _LEVELS readings inside a gap is sorted instead


@functools.cache
def _word_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every 16-bit word (bit t = reading t) of a walk with steps +1 for a one and -1 for a
    zero: its net step (2 ones - 16), and its highest and lowest point after 1 to 16 readings
    measured from where the word ends (so the extremes inside a word are its end plus these)."""
    words = np.arange(1 << _WORD, dtype=np.int64)
    bits = (words[:, None] >> np.arange(_WORD)) & 1
    walk = np.cumsum(2 * bits - 1, axis=1)
    net = walk[:, -1]
    return (
        net.astype(np.int8),
        (walk.max(axis=1) - net).astype(np.int8),
        (walk.min(axis=1) - net).astype(np.int8),
    )


def packed(ones: np.ndarray) -> np.ndarray:
    """A (rows, L) indicator as (rows, L / 16) words, reading t of a word in its bit t."""
    return np.packbits(ones, axis=1, bitorder="little").view("<u2")


def walk_extremes(words: np.ndarray, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a ``packed`` indicator: max and min of D_k = 2 C_k - k (C_k the ones among the
    first k readings) over min_size <= k <= L - min_size (min_size a multiple of 16)."""
    step, above_end, below_end = _word_tables()
    ends = np.cumsum(step[words], axis=1, dtype=np.int32)  # D after each word
    first, stop = min_size // _WORD, words.shape[1] - min_size // _WORD
    inside, last = words[:, first:stop], ends[:, first:stop]
    at_min = ends[:, first - 1]  # D at k = min_size
    top = np.maximum((last + above_end[inside]).max(axis=1), at_min)
    bottom = np.minimum((last + below_end[inside]).min(axis=1), at_min)
    return top, bottom


def bridge_statistic(top: np.ndarray, bottom: np.ndarray, length: int, ones: int) -> np.ndarray:
    """``_changepoint_batch.cusum_scan``'s statistic from the walk's extremes in D units (the
    bridge C_k - k p is D_k / 2 when p = 1/2), by the same floating-point operations."""
    p = np.full(top.shape, ones / length)
    high = np.maximum(top / 2.0, 0.0)
    low = np.minimum(bottom / 2.0, 0.0)
    return (high - low) / np.sqrt(length * p * (1.0 - p))


class SeededBounds:
    """Upper bounds of the raw sign statistics of intervals of one series (see the module doc).

    Built once per detection: one sort of the series in blocks of 2 min_size, and two
    (blocks + 1) x 256 prefix tables.
    """

    def __init__(self, values: np.ndarray, min_size: int) -> None:
        self._values = values
        self._min_size = min_size
        self._block = block = 2 * min_size
        self._blocks = blocks = values.size // block
        self._sorted = np.sort(values[: blocks * block].reshape(blocks, block), axis=1)
        stride = max(1, values.size // (_LEVELS * _SAMPLE_PER_LEVEL))
        sample = np.sort(values[::stride])
        picks = ((np.arange(_LEVELS) + 0.5) * (sample.size / _LEVELS)).astype(np.int64)
        self._levels = levels = np.unique(sample[picks])
        # readings < level and <= level in each sorted block: its first index >= level, > level
        queries = np.empty(2 * levels.size)
        queries[0::2] = levels
        queries[1::2] = np.nextafter(levels, np.inf)
        first = np.empty((blocks, queries.size), dtype=np.int32)
        for i in range(blocks):
            first[i] = np.searchsorted(self._sorted[i], queries)
        self._first_ge, self._first_gt = first[:, 0::2], first[:, 1::2]
        dtype = np.int32 if values.size < np.iinfo(np.int32).max else np.int64
        self._ge = np.zeros((blocks + 1, levels.size), dtype=dtype)  # readings >= level before
        self._gt = np.zeros((blocks + 1, levels.size), dtype=dtype)  # readings > level before
        np.cumsum(block - self._first_ge, axis=0, out=self._ge[1:])
        np.cumsum(block - self._first_gt, axis=0, out=self._gt[1:])

    @staticmethod
    def applicable(min_size: int) -> bool:
        """Words of 16 readings must tile the allowed splits."""
        return min_size % _WORD == 0

    def bounds(self, starts: np.ndarray, length: int, scale: bool) -> np.ndarray:
        """(kinds, intervals): an upper bound of the location (and scale) statistic of each
        interval [start, start + length), inf where no bound applies."""
        kinds = 2 if scale else 1
        out = np.full((kinds, starts.size), np.inf)
        if length % (4 * _WORD) or self._min_size % _WORD or length < 4 * self._min_size:
            return out
        quarter = length // 4
        wanted = [length // 2, quarter, length - quarter] if scale else [length // 2]
        cuts = np.full((len(wanted), starts.size), np.nan)
        surplus = np.zeros((len(wanted), starts.size), dtype=np.int64)
        block = self._block
        aligned = np.flatnonzero((starts % block == 0) & (starts + length <= self._blocks * block))
        if aligned.size:
            found = np.ones(aligned.size, dtype=bool)
            for i, k in enumerate(wanted):
                cut, extra, ok = self._cuts(starts[aligned] // block, length // block, k)
                cuts[i, aligned], surplus[i, aligned] = cut, extra
                found &= ok
            cuts[:, aligned[~found]] = np.nan
        for row in np.flatnonzero(np.isnan(cuts).any(axis=0) & (starts % block != 0)).tolist():
            for i, k in enumerate(wanted):
                cuts[i, row], surplus[i, row] = self._cut_of(int(starts[row]), length, k)
        direct = np.flatnonzero(np.isnan(cuts).any(axis=0))
        for chunk in self._chunks(direct, length):
            ordered = np.sort(self._rows(starts[chunk], length), axis=1)
            for i, k in enumerate(wanted):
                cut = ordered[:, length - k]
                cuts[i, chunk] = cut
                surplus[i, chunk] = np.count_nonzero(ordered >= cut[:, None], axis=1) - k
        for chunk in self._chunks(np.arange(starts.size), length):
            rows = self._rows(starts[chunk], length)
            top, bottom = walk_extremes(packed(rows >= cuts[0, chunk, None]), self._min_size)
            out[0, chunk] = bridge_statistic(
                top, bottom - 2 * surplus[0, chunk], length, length // 2
            )
            if scale:  # above the top quarter's cut, or below the bottom quarter's
                outside = packed(rows >= cuts[1, chunk, None]) | ~packed(
                    rows >= cuts[2, chunk, None]
                )
                top, bottom = walk_extremes(outside, self._min_size)
                out[1, chunk] = bridge_statistic(
                    top + 2 * surplus[2, chunk],
                    bottom - 2 * surplus[1, chunk],
                    length,
                    2 * quarter,
                )
        return out

    def _rows(self, starts: np.ndarray, length: int) -> np.ndarray:
        """The readings of the intervals [start, start + length) as rows: a strided view when
        the starts are evenly spaced (a seeded scale), else a copy."""
        values = self._values
        if starts.size == 1:
            return values[int(starts[0]) : int(starts[0]) + length][None]
        if np.all(np.diff(starts) == starts[1] - starts[0]) and starts[1] > starts[0]:
            step = values.strides[0]
            return np.lib.stride_tricks.as_strided(
                values[starts[0] :],
                shape=(starts.size, length),
                strides=(int(starts[1] - starts[0]) * step, step),
                writeable=False,
            )
        return np.stack([values[start : start + length] for start in starts.tolist()])

    @staticmethod
    def _chunks(rows: np.ndarray, length: int) -> list[np.ndarray]:
        step = max(1, _CHUNK_READINGS // length)
        return [rows[i : i + step] for i in range(0, rows.size, step)]

    def _cuts(
        self, first: np.ndarray, count: int, k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The k-th largest reading of the intervals of ``count`` base blocks from block
        ``first``; how many of the interval's readings beyond k are at least that value (tied
        with it); and whether it was found (False: too many readings inside its gap)."""
        levels = self._levels
        top = levels.size
        ge = self._ge[first + count] - self._ge[first]  # (intervals, levels)
        gt = self._gt[first + count] - self._gt[first]
        rows = np.arange(first.size)
        # the first level with fewer than k readings above it; the cut is that level, or
        # strictly between it and the level before
        j = np.count_nonzero(gt >= k, axis=1)
        jj = np.minimum(j, top - 1)
        at_or_above = np.where(j < top, ge[rows, jj], 0)
        on_level = at_or_above >= k
        cut = np.where(on_level, levels[jj], np.nan)
        extra = np.where(on_level, at_or_above - k, 0)
        ok = np.ones(first.size, dtype=bool)
        gap = np.flatnonzero(~on_level)
        if gap.size == 0:
            return cut, extra, ok
        length = count * self._block
        j, above = j[gap], at_or_above[gap]
        beyond = np.where(j > 0, gt[gap, np.maximum(j - 1, 0)], length)  # > the level before
        inside = beyond - above
        small = inside <= max(1024, _GAP_LIMIT * length // _LEVELS)
        ok[gap[~small]] = False
        gap, j, above, inside = gap[small], j[small], above[small], inside[small]
        if gap.size == 0:
            return cut, extra, ok
        # each block's run of readings strictly inside the gap, in the sorted blocks
        blocks = first[gap, None] + np.arange(count)
        lo = np.where(j[:, None] > 0, self._first_gt[blocks, np.maximum(j - 1, 0)[:, None]], 0)
        hi = np.where(j[:, None] < top, self._first_ge[blocks, jj[gap, None]], self._block)
        runs = (hi - lo).ravel()
        total = int(runs.sum())
        offsets = np.cumsum(runs) - runs  # where each run starts among the gathered readings
        source = np.repeat((blocks * self._block + lo).ravel() - offsets, runs) + np.arange(total)
        row_of = np.repeat(np.arange(gap.size), inside)
        row_start = np.cumsum(inside) - inside
        width = int(inside.max())
        padded = np.full((gap.size, width), -np.inf)
        padded[row_of, np.arange(total) - row_start[row_of]] = self._sorted.ravel()[source]
        padded.sort(axis=1)
        rank = k - above  # the cut is the rank-th largest reading inside the gap
        value = padded[np.arange(gap.size), width - rank]
        cut[gap] = value
        extra[gap] = np.count_nonzero(padded >= value[:, None], axis=1) - rank
        return cut, extra, ok

    def _cut_of(self, start: int, length: int, k: int) -> tuple[float, int]:
        """``_cuts`` for one interval that does not start on a block boundary (the last interval
        of a scale ends with the series): its whole blocks from the tables, the partial blocks
        at both ends sorted here (under 2 min_size readings each). NaN when not found."""
        block, levels = self._block, self._levels
        first, stop = -(-start // block), min((start + length) // block, self._blocks)
        if stop <= first:
            return math.nan, 0
        ends = np.sort(
            np.concatenate(
                [self._values[start : first * block], self._values[stop * block : start + length]]
            )
        )
        ge = self._ge[stop] - self._ge[first] + (ends.size - np.searchsorted(ends, levels, "left"))
        gt = self._gt[stop] - self._gt[first] + (ends.size - np.searchsorted(ends, levels, "right"))
        j = int(np.count_nonzero(gt >= k))
        above = int(ge[j]) if j < levels.size else 0
        if above >= k:
            return float(levels[j]), above - k
        low = levels[j - 1] if j > 0 else -math.inf
        high = levels[j] if j < levels.size else math.inf
        if (int(gt[j - 1]) if j > 0 else length) - above > max(
            1024, _GAP_LIMIT * length // _LEVELS
        ):
            return math.nan, 0
        runs = [ends[(ends > low) & (ends < high)]]
        for b in range(first, stop):
            lo = int(self._first_gt[b, j - 1]) if j > 0 else 0
            hi = int(self._first_ge[b, j]) if j < levels.size else block
            runs.append(self._sorted[b, lo:hi])
        inside = np.concatenate(runs)
        rank = k - above  # the cut is the rank-th largest reading inside the gap
        value = np.partition(inside, inside.size - rank)[inside.size - rank]
        return float(value), int(np.count_nonzero(inside >= value)) - rank
