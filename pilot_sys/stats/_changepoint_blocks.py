"""Which stretches of a CUSUM bridge can hold its extremes, from counts per block.

The bridge of a 0/1 indicator, B_k = fl(fl(k * -p) + C_k) with C_k the ones among the first k
readings, is scanned for its first argmax and argmin (``_indicator_split`` from the indicator,
``_bridge_extremes`` from the running count). Over a block of
splits [s, e) the running count only grows and k * -p only falls, and rounding to nearest is
monotone, so every value in the block lies between fl(fl((e - 1) * -p) + C_s) and
fl(fl(s * -p) + C_e). Any bridge value is a bound the other way (the values at the blocks'
starts are taken): a block whose upper end is below the largest of them cannot hold the
maximum, nor the first copy of it, and one whose lower end is above the smallest cannot hold
the minimum. Counting the ones of every block is one cheap pass over the indicator (or a
gather from the running count); after a
clear change the bridge is a steep tent, and only the blocks near its peak and trough are
formed value by value, by the same float operations as a full scan.
"""

from __future__ import annotations

import numpy as np

BLOCK = 512  # splits per block: small enough that a block's bound is near its values
_MAX_RANGES = 64  # more stretches than this: one plain scan costs less than the Python loop


def bridge_ranges(
    indicator: np.ndarray, min_size: int, p: float, stop: int
) -> list[tuple[int, int]]:
    """Ranges [first, last) of splits k (min_size <= k < stop) that hold every copy of the
    bridge's maximum and of its minimum, ascending and disjoint; the whole range when pruning
    would not pay. The running count is not formed: each block's ones are counted."""
    span = stop - min_size
    if span <= 2 * BLOCK:
        return [(min_size, stop)]
    offsets = np.arange(0, span, BLOCK, dtype=np.int64)
    # ones among indicator[s : e] for each block's splits [s, e): C_e - C_s
    ones = np.add.reduceat(indicator[min_size:stop].view(np.uint8), offsets, dtype=np.int64)
    at_start = np.cumsum(ones) - ones + int(np.count_nonzero(indicator[:min_size]))  # C_s
    return _kept(offsets + min_size, stop, at_start, at_start + ones, p)


def counts_ranges(counts: np.ndarray, min_size: int, p: float, stop: int) -> list[tuple[int, int]]:
    """``bridge_ranges`` from the running count itself (``counts[k - 1]`` is C_k)."""
    span = stop - min_size
    if span <= 2 * BLOCK:
        return [(min_size, stop)]
    starts = np.arange(min_size, stop, BLOCK, dtype=np.int64)
    ends = np.append(starts[1:], stop)
    return _kept(starts, stop, counts[starts - 1], counts[ends - 1], p)


def _kept(
    starts: np.ndarray, stop: int, at_start: np.ndarray, at_end: np.ndarray, p: float
) -> list[tuple[int, int]]:
    """The runs of blocks [starts[j], next start) whose bounds reach the extremes (C_s and C_e
    at each block's ends)."""
    ends = np.append(starts[1:], stop)
    falling = starts.astype(np.float64) * -p
    first_values = falling + at_start  # B_s: values the bridge takes
    upper = falling + at_end
    lower = (ends - 1).astype(np.float64) * -p + at_start
    kept = (upper >= first_values.max()) | (lower <= first_values.min())
    change = np.flatnonzero(np.diff(kept.astype(np.int8)))
    bounds = np.concatenate([[0], change + 1, [kept.size]])
    ranges = [
        (int(starts[a]), int(ends[b - 1]))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
        if kept[a]
    ]
    if len(ranges) > _MAX_RANGES:
        return [(int(starts[0]), stop)]
    return ranges
