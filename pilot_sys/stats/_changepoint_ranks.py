"""Rank machinery behind the fast EDM detector: tie-broken ranks and batched order statistics.

The EDM statistic only needs medians of prefixes and suffixes of a segment. Medians are
order-equivariant, so the detector works on ranks: the median of the ranks is the rank of the
median. That makes the statistic independent of the units of the data (any monotone transform
gives the same change points) and makes its null distribution distribution-free once ties are
broken at random, which is what lets one threshold serve every distribution and every n.
"""

from __future__ import annotations

import numpy as np

# Fibonacci hashing constant (2^64 / golden ratio): spreads consecutive integers uniformly.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def position_keys(start: int, stop: int) -> np.ndarray:
    """Pseudo-random but fixed tie-break keys for absolute positions ``start..stop-1``.

    Keys depend only on the absolute position, never on the length of the series, so a segment
    gets the same ranks whether it is analysed alone, inside a longer series or after an
    incremental update. Random tie-breaking keeps the ranks of exchangeable data a uniform
    permutation even for heavily tied (integer, quantised) readings.
    """
    return keys_at(np.arange(start, stop))


def keys_at(positions: np.ndarray) -> np.ndarray:
    """``position_keys`` of arbitrary absolute positions (any shape), e.g. gathered intervals."""
    with np.errstate(over="ignore"):
        return ((positions.astype(np.uint64) + np.uint64(1)) * _GOLDEN) >> np.uint64(11)


def segment_order(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions of ``values`` sorted by (value, key): the inverse of the tie-broken ranks."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    if np.any(ordered[1:] == ordered[:-1]):
        order = np.lexsort((keys, values))
    return order


def ranks_from_order(order: np.ndarray) -> np.ndarray:
    """Ranks 0..m-1 from the sorting permutation (one scatter, no second sort)."""
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(order.size, dtype=np.int64)
    return ranks


def prefix_order_statistics(
    ranks: np.ndarray, order: np.ndarray, lengths: np.ndarray, which: np.ndarray
) -> np.ndarray:
    """Exact ``which[j, q]``-th smallest (0-based) rank among ``ranks[:lengths[j]]``.

    ``ranks`` is a permutation of 0..m-1 and ``order`` its inverse; ``lengths`` is ascending.
    Hand-written because no library offers batched prefix order statistics: rank space is cut
    into bins of width w ~ sqrt(m); a cumulative histogram (lengths x bins) finds the bin that
    holds the wanted order statistic, and one gather of that bin's members (lengths x w) finds
    the exact rank. Cost O(m + G * sqrt(m)) time and memory for G lengths, all vectorised.
    """
    m = ranks.size
    g = lengths.size
    width = max(1, int(np.sqrt(m)))
    n_bins = -(-m // width)
    last = int(lengths[-1])
    # Element i first belongs to prefix j when lengths[j-1] <= i < lengths[j].
    first_prefix = np.repeat(np.arange(g, dtype=np.int64), np.diff(lengths, prepend=0))
    flat = first_prefix * n_bins + ranks[:last] // width
    counts = np.bincount(flat, minlength=g * n_bins).reshape(g, n_bins)
    np.cumsum(counts, axis=0, out=counts)
    below = np.cumsum(counts, axis=1)  # below[j, b]: members of prefix j with bin <= b
    target = which.astype(np.int64)
    bins = np.empty_like(target)
    for q in range(target.shape[1]):  # q is 1 or 2 (lower and upper median): not a hot loop
        bins[:, q] = (below <= target[:, q : q + 1]).sum(axis=1)
    rows = np.arange(g)[:, None]
    before = np.where(bins > 0, below[rows, np.maximum(bins - 1, 0)], 0)
    need = target - before
    padded = np.full(n_bins * width, m, dtype=np.int64)
    padded[:m] = order
    members = padded.reshape(n_bins, width)[bins]  # (g, q, width): positions in rank order
    inside = members < lengths[:, None, None]
    seen = np.cumsum(inside, axis=-1)
    offset = (seen <= need[..., None]).sum(axis=-1)
    return bins * width + offset


def split_medians(
    ranks: np.ndarray, order: np.ndarray, splits: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Medians of ``ranks[:k]`` and ``ranks[k:]`` for every k in ascending ``splits``."""
    m = ranks.size
    left_len = splits.astype(np.int64)
    left_which = np.stack([(left_len - 1) // 2, left_len // 2], axis=1)
    left = prefix_order_statistics(ranks, order, left_len, left_which).mean(axis=1)
    right_len = (m - left_len)[::-1]  # ascending lengths of the reversed series
    right_which = np.stack([(right_len - 1) // 2, right_len // 2], axis=1)
    right = prefix_order_statistics(ranks[::-1], (m - 1) - order, right_len, right_which).mean(
        axis=1
    )[::-1]
    return left, right
