"""Where the level of a segmented series settles: walk back from the last segment.

Given the change points of a series, the steady state is the run of segments at its end whose
level does not differ from the last segment's by more than a practical tolerance. Walking back
from the last segment, the first earlier segment that differs ends the warm-up; if none does,
the series is steady from its start. This is the rule that labels steady states in Traini et
al., "Towards effective assessment of steady state performance in Java software: Are we there
yet?" (2022), with Kalibera and Jones' test of a practically significant difference ("Rigorous
benchmarking in reasonable time", 2013): two segments differ when the confidence interval of
the ratio of their means lies wholly outside ``[1 - tolerance, 1 + tolerance]``. A difference
smaller than the tolerance is not a warm-up worth removing however many readings prove it, and a
short burst of outliers is not a difference, because its interval is too wide to exclude 1.

The interval is the delta-method (normal) interval of the ratio of two independent means, which
is what a bootstrap of the ratio converges to, without the bootstrap's cost or randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import ndtri

DEFAULT_TOLERANCE = 0.05
DEFAULT_CONFIDENCE = 0.95


def _moments(values: np.ndarray, begin: int, end: int) -> tuple[int, float, float]:
    part = values[begin:end]
    n = part.size
    return n, float(part.mean()), float(part.var(ddof=1)) if n > 1 else math.inf


def ratio_interval(
    a: tuple[int, float, float], b: tuple[int, float, float], confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float]:
    """Delta-method interval of mean_a / mean_b from (n, mean, variance) of two samples."""
    n_a, m_a, v_a = a
    n_b, m_b, v_b = b
    if m_b == 0.0 or m_a == 0.0:
        return -math.inf, math.inf
    ratio = m_a / m_b
    rel_var = v_a / (n_a * m_a * m_a) + v_b / (n_b * m_b * m_b)
    half = float(ndtri(0.5 + confidence / 2.0)) * abs(ratio) * math.sqrt(rel_var)
    return ratio - half, ratio + half


def differs(
    a: tuple[int, float, float],
    b: tuple[int, float, float],
    tolerance: float = DEFAULT_TOLERANCE,
    confidence: float = DEFAULT_CONFIDENCE,
) -> bool:
    """True when mean_a / mean_b is surely outside [1 - tolerance, 1 + tolerance]."""
    low, high = ratio_interval(a, b, confidence)
    return high < 1.0 - tolerance or low > 1.0 + tolerance


def settled_start(
    values: np.ndarray,
    changepoints: Sequence[int],
    tolerance: float = DEFAULT_TOLERANCE,
    confidence: float = DEFAULT_CONFIDENCE,
) -> int:
    """First index of the run of final segments that do not differ from the last one.

    ``changepoints`` are sorted indices where a new segment starts. Returns 0 when no earlier
    segment differs from the last; otherwise the index right after the latest one that does.
    """
    x = np.asarray(values, dtype=np.float64)
    bounds = [0, *[int(c) for c in changepoints if 0 < c < x.size], x.size]
    last = _moments(x, bounds[-2], bounds[-1])
    for k in range(len(bounds) - 3, -1, -1):
        if differs(_moments(x, bounds[k], bounds[k + 1]), last, tolerance, confidence):
            return bounds[k + 1]
    return 0
