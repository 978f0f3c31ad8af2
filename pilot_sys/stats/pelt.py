"""PELT change points under a normal cost in mean and variance (Killick, Fearnhead, Eckley 2012).

Optimal partitioning of a series into segments, each with its own mean and variance, minimising
the segments' Gaussian negative log-likelihood plus ``penalty`` per change point; PELT prunes
the candidate last change points that can never again be optimal, so the search is exact and
near-linear when changes are frequent (quadratic at worst, on one long stationary stretch).

Why a hand-written loop: ruptures' ``Pelt(model="normal")`` computes the same optimum with one
Python cost call per candidate pair, which makes a 3,000-point series take minutes; here each
step is one vectorised numpy expression over the surviving candidates (prefix sums make the
cost of any segment O(1)). ``pilot_sys.stats.pelt_many`` gives the same optimum for many
penalties at once, which is what makes a whole CROPS path affordable.

A segment of identical readings has zero variance and an unbounded likelihood; its variance is
floored at the quantisation noise of the data (``resolution**2 / 12``, the variance of a reading
rounded to the smallest step between distinct values), so ties from a coarse clock do not
attract change points, and the floor scales with the data.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

DEFAULT_MIN_SIZE = 2


class PeltResult(BaseModel):
    """Optimal change points of one series for one penalty."""

    model_config = ConfigDict(frozen=True)

    changepoints: list[int] = Field(description="sorted 0-based indices where a new segment starts")
    cost: float = Field(
        description="unpenalised cost (twice the negative log-likelihood, less constants)"
    )
    penalty: float


def variance_floor(values: np.ndarray) -> float:
    """Smallest variance a segment may have: the quantisation noise of the readings."""
    distinct = np.unique(values)
    if distinct.size < 2:
        return 1.0
    step = float(np.min(np.diff(distinct)))
    spread = float(np.var(values))
    return max(step * step / 12.0, 1e-12 * spread, np.finfo(np.float64).tiny)


def prefix_sums(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centred = values - np.median(values)  # less cancellation in sum(x^2) - sum(x)^2 / m
    s1 = np.concatenate(([0.0], np.cumsum(centred)))
    s2 = np.concatenate(([0.0], np.cumsum(centred * centred)))
    return s1, s2


def segment_cost(values: np.ndarray, begin: int, end: int, floor: float | None = None) -> float:
    """Normal mean-and-variance cost ``m log(var)`` of ``values[begin:end]`` (reference form)."""
    segment = np.asarray(values[begin:end], dtype=np.float64)
    if floor is None:
        floor = variance_floor(np.asarray(values, dtype=np.float64))
    return float(segment.size * np.log(max(float(np.var(segment)), floor)))


def pelt_meanvar(
    values: np.ndarray, penalty: float, min_size: int = DEFAULT_MIN_SIZE
) -> PeltResult:
    """Exact optimal segmentation of ``values`` for ``penalty`` per change point.

    Cost of a segment of m readings with maximum-likelihood variance v: ``m log v`` (the
    Gaussian -2 log-likelihood without the terms that every segmentation shares).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-D series, got shape {x.shape}")
    if min_size < 2:
        raise ValueError("min_size must be at least 2 (a variance needs two readings)")
    n = x.size
    if n < 2 * min_size:
        return PeltResult(
            changepoints=[], cost=segment_cost(x, 0, n) if n >= 2 else 0.0, penalty=penalty
        )
    floor = variance_floor(x)
    s1, s2 = prefix_sums(x)
    best = np.empty(n + 1)
    best[0] = -penalty
    previous = np.zeros(n + 1, dtype=np.intp)
    # surviving candidates (the last change point before t) live in a preallocated buffer
    slots = np.zeros(n + 1, dtype=np.intp)
    beaten = np.zeros(n + 1, dtype=bool)
    size = 1
    # Pruning is checked every `every` steps: keeping a candidate longer never changes the
    # optimum, and a candidate beaten at one check (F(tau) + C(tau, t) > F(t)) is dropped only
    # at the next, at least min_size - 1 steps later, when t itself may end a segment (exact
    # PELT with a minimum segment length).
    every = max(min_size - 1, 8)
    for t in range(min_size, n + 1):
        c = slots[:size]
        m = t - c
        d1 = (s1[t] - s1[c]) / m
        fitted = (s2[t] - s2[c]) / m - d1 * d1
        np.maximum(fitted, floor, out=fitted)
        np.log(fitted, out=fitted)
        fitted *= m
        fitted += best[c]
        i = int(fitted.argmin())
        best[t] = fitted[i] + penalty
        previous[t] = c[i]
        if t % every == 0:
            keep = ~beaten[:size]
            now_beaten = fitted > best[t]
            size = int(keep.sum())
            slots[:size] = c[keep]
            beaten[:size] = now_beaten[keep]
        new = t + 1 - min_size
        if new >= min_size:
            slots[size] = new
            beaten[size] = False
            size += 1
    cuts: list[int] = []
    t = n
    while t > 0:
        t = int(previous[t])
        if t > 0:
            cuts.append(t)
    cuts.reverse()
    cost = float(best[n]) - penalty * len(cuts)
    return PeltResult(changepoints=cuts, cost=cost, penalty=penalty)
