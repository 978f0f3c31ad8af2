"""Null distributions of the change-point statistics (Brownian-bridge functionals).

Without a change, the bridge-scaled CUSUM of a 0/1 indicator whose order is a uniform random
permutation converges to a Brownian bridge B(t). EDM's single-split statistic is sup |B|
(Kolmogorov's distribution, from scipy.special); the range sup B - inf B, which also sees a
change that starts and ends inside the segment, is Kuiper's distribution (not in scipy, so its
series is written out here).

A short interval anchored at an end of the series is tested for one change with sup |B| over
the splits it allows; there the Brownian limit overstates the tail (by up to 8x for 20 readings
with splits only in the middle half), so ``edge_sf`` uses the exact distribution of the
balanced 0/1 path up to ``EXACT_EDGE_LENGTH`` readings and Kolmogorov's limit beyond, where the
two agree to within a few percent on the conservative side.
"""

from __future__ import annotations

import functools
import math

import numpy as np

# Below this the Kuiper tail is 1 to double precision and its series converges slowly.
_KUIPER_FLAT = 0.4
_TERMS = np.arange(1, 21, dtype=np.float64) ** 2  # x > 0.4: exp(-2 j^2 x^2) < 1e-55 beyond j = 20


def kolmogorov_sf(x: float) -> float:
    """P(sup |B| > x)."""
    from scipy.special import kolmogorov  # lazy: the import costs ~0.3 s

    return float(kolmogorov(x))


def kolmogorov_isf(alpha: float) -> float:
    """The x with P(sup |B| > x) = alpha."""
    from scipy.special import kolmogi  # lazy: the import costs ~0.3 s

    return float(kolmogi(alpha))


def kuiper_sf(x: float) -> float:
    """P(sup B - inf B > x) = 2 sum_j (4 j^2 x^2 - 1) exp(-2 j^2 x^2)."""
    if x <= _KUIPER_FLAT:
        return 1.0
    terms = (4.0 * _TERMS * x * x - 1.0) * np.exp(-2.0 * _TERMS * x * x)
    return float(min(1.0, max(0.0, 2.0 * terms.sum())))


def kuiper_isf(alpha: float) -> float:
    """The x with P(sup B - inf B > x) = alpha.

    Plain bisection (the tail is monotone): importing scipy.optimize for one root would slow
    the start of every command that detects change points.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be between 0 and 1")
    lo, hi = _KUIPER_FLAT, 1.0
    while kuiper_sf(hi) > alpha:
        lo, hi = hi, 2.0 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if kuiper_sf(mid) > alpha:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# Exact edge tails up to this length: one (length/2)^2 table step per reading, computed once.
EXACT_EDGE_LENGTH = 128


@functools.lru_cache(maxsize=64)
def _edge_tail_table(length: int, min_size: int) -> np.ndarray:
    """T[h] = P(max |2 C_k - k| >= h over min_size <= k <= length - min_size), exactly.

    C_k counts the ones among the first k entries of a uniformly random arrangement of
    length / 2 ones and length / 2 zeros (the tie-broken indicator of exchangeable readings).
    Dynamic programming over k on the probability of each C_k, one row per height h; the mass of
    the paths reaching |2 C_k - k| >= h inside the window is moved out and summed (first
    crossings), which is the tail itself without a 1 - (1 - tail) cancellation. O(length^3 / 4).
    """
    half = length // 2
    heights = np.arange(1, half + 2)
    ones = np.arange(half + 1)
    staying = np.zeros((heights.size, half + 1))
    staying[:, 0] = 1.0
    crossed = np.zeros(heights.size)  # summed directly, so tails far below 1e-16 stay exact
    for k in range(length):
        up = np.clip((half - ones) / (length - k), 0.0, 1.0)  # the next entry is a one
        moved = staying * (1.0 - up)
        moved[:, 1:] += staying[:, :-1] * up[:-1]
        staying = moved
        if min_size <= k + 1 <= length - min_size:
            out = np.abs(2 * ones - (k + 1))[None, :] >= heights[:, None]
            crossed += np.where(out, staying, 0.0).sum(axis=1)
            staying[out] = 0.0
    tail = np.ones(heights.size + 1)
    tail[1:] = np.clip(crossed, 0.0, 1.0)
    return tail


def edge_sf(statistic: float, length: int, min_size: int) -> float:
    """P(max_k |B_k| / sqrt(length p (1-p)) >= statistic) for a balanced indicator, no change.

    ``statistic`` is the (possibly dependence-deflated) height max |2 C_k - k| / sqrt(length);
    heights live on the integers, so the exact tail is read at the next integer.
    """
    if length % 2 or length > EXACT_EDGE_LENGTH:
        return kolmogorov_sf(statistic)
    table = _edge_tail_table(length, min_size)
    height = math.ceil(statistic * math.sqrt(length) - 1e-9)
    return float(table[min(max(height, 0), table.size - 1)])
