"""Null distributions of the change-point statistics (Brownian-bridge functionals).

Without a change, the bridge-scaled CUSUM of a 0/1 indicator whose order is a uniform random
permutation converges to a Brownian bridge B(t). EDM's single-split statistic is sup |B|
(Kolmogorov's distribution, from scipy.special); the range sup B - inf B, which also sees a
change that starts and ends inside the segment, is Kuiper's distribution (not in scipy, so its
series is written out here).
"""

from __future__ import annotations

import numpy as np
from scipy.special import kolmogi, kolmogorov

# Below this the Kuiper tail is 1 to double precision and its series converges slowly.
_KUIPER_FLAT = 0.4
_TERMS = np.arange(1, 21, dtype=np.float64) ** 2  # x > 0.4: exp(-2 j^2 x^2) < 1e-55 beyond j = 20


def kolmogorov_sf(x: float) -> float:
    """P(sup |B| > x)."""
    return float(kolmogorov(x))


def kolmogorov_isf(alpha: float) -> float:
    """The x with P(sup |B| > x) = alpha."""
    return float(kolmogi(alpha))


def kuiper_sf(x: float) -> float:
    """P(sup B - inf B > x) = 2 sum_j (4 j^2 x^2 - 1) exp(-2 j^2 x^2)."""
    if x <= _KUIPER_FLAT:
        return 1.0
    terms = (4.0 * _TERMS * x * x - 1.0) * np.exp(-2.0 * _TERMS * x * x)
    return float(min(1.0, max(0.0, 2.0 * terms.sum())))


def kuiper_isf(alpha: float) -> float:
    """The x with P(sup B - inf B > x) = alpha.

    Plain bisection (the tail is monotone): scipy.optimize would add most of a second of import
    time to every command for one root.
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
