"""Optimal partitioning by brute force (every last change point, no pruning): the reference
that PELT, one penalty at a time or many at once, must equal."""

from __future__ import annotations

import math

import numpy as np

from pilot_sys.stats.pelt import segment_cost, variance_floor


def optimal_partition(x: np.ndarray, penalty: float, min_size: int) -> list[int]:
    n, floor = x.size, variance_floor(x)
    best, prev = [-penalty] + [math.inf] * n, [0] * (n + 1)
    for t in range(min_size, n + 1):
        for tau in [0, *range(min_size, t - min_size + 1)]:
            cost = best[tau] + segment_cost(x, tau, t, floor) + penalty
            if cost < best[t]:
                best[t], prev[t] = cost, tau
    cuts, t = [], n
    while t > 0:
        t = prev[t]
        if t > 0:
            cuts.append(t)
    return cuts[::-1]
