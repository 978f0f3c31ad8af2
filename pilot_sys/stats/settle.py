"""Where the level of a segmented series settles: walk back from the last segment.

Given the change points of a series, the steady state is the run of segments at its end whose
level does not differ from the last segment's by more than a practical tolerance. Walking back
from the last segment, the first earlier segment that differs ends the warm-up; if none does,
the series is steady from its start. This is the rule that labels steady states in Traini et
al., "Towards effective assessment of steady state performance in Java software: Are we there
yet?" (2022), with Kalibera and Jones' test of a practically significant difference ("Rigorous
benchmarking in reasonable time", 2013): a segment differs from the last when the confidence
interval of the ratio (last mean / its mean) lies wholly outside ``[1 - tolerance,
1 + tolerance]``. A difference smaller than the tolerance is not a warm-up worth removing
however many readings prove it, and a short burst of outliers is not a difference, because its
interval is too wide to exclude 1.

The interval is the delta-method (normal) interval of the ratio of two independent means, which
is what a bootstrap of the ratio converges to, without the bootstrap's cost or randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.special import ndtri

from pilot_sys.errors import InsufficientData
from pilot_sys.stats.outliers import window_outliers
from pilot_sys.stats.pelt import pelt_meanvar, variance_floor

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
        if differs(last, _moments(x, bounds[k], bounds[k + 1]), tolerance, confidence):
            return bounds[k + 1]
    return 0


# ---------------------------------------------------------------------------------------------
# the whole method: outliers out, PELT segments, walk back

MIN_READINGS = 20
MAX_POINTS = 4000
# A level held by less than a quarter of the run may still be moving: the study asked for a
# sixth (500 of 3,000 iterations); a quarter matches its labels better under cross-validation
# (benchmarks/results/steady_real.md).
DEFAULT_MIN_STEADY = 0.25
# the CROPS range of the study's penalty search, in units of log n
CROPS_LOW = 4.0
CROPS_HIGH = 1e5
# When few change points exist even at the lowest penalty the curve has no elbow (the study
# then fell back to 15 log n) and the proportional rule would overshoot: it is capped here.
CROPS_CAP = 100.0
DEFAULT_ELBOW = 0.03


def elbow_penalty(values: np.ndarray, elbow: float = DEFAULT_ELBOW) -> float:
    """PELT penalty at the elbow of "change points against penalty", in two PELT runs.

    The study picked each series' penalty at the elbow of its CROPS curve (the number of change
    points against the penalty over [4 log n, 1e5 log n], both axes scaled to [0, 1]). On that
    scaled curve one more change point is worth it while it saves more than (1e5 log n) / M of
    cost, M being the count at the lowest penalty, so a penalty proportional to that threshold
    stands in for the whole CROPS path (dozens of PELT runs). ``elbow`` scales it; its default
    is the value cross-validation on real JMH forks picked (benchmarks/results/steady_real.md).
    """
    log_n = math.log(values.size)
    most = max(len(pelt_meanvar(values, CROPS_LOW * log_n).changepoints), 1)
    return log_n * min(max(CROPS_LOW, elbow * CROPS_HIGH / most), CROPS_CAP)


class Settled(BaseModel):
    """Where the level of a series settles, from its segments."""

    model_config = ConfigDict(frozen=True)

    start: int | None = Field(
        description="first index of the steady state; None when there is none"
    )
    settled_at: int = Field(
        description="first index of the final run of equal segments (steady or not)"
    )
    changepoints: list[int] = Field(
        description="segment starts found by PELT, in the series' indices"
    )
    block: int = Field(
        description="readings per block when a long series was segmented in block means"
    )
    last_mean: float
    previous_ratio: float | None = Field(
        description="mean of the segment that differs / the last one's"
    )
    reason: str


def _block_means(x: np.ndarray, block: int) -> np.ndarray:
    whole = (x.size // block) * block
    means = x[:whole].reshape(-1, block).mean(axis=1)
    return means if whole == x.size else np.append(means, x[whole:].mean())


def _refine(x: np.ndarray, start: int, block: int) -> int:
    """Best single mean+variance split of the raw readings within a block of ``start``."""
    lo, hi = max(start - block, 0), min(start + block, x.size)
    part = x[lo:hi]
    if part.size < 8:
        return start
    floor = variance_floor(part)
    k = np.arange(2, part.size - 1)
    c1 = np.cumsum(part)
    c2 = np.cumsum(part * part)
    n_left, n_right = k, part.size - k
    var_l = c2[k - 1] / n_left - (c1[k - 1] / n_left) ** 2
    var_r = (c2[-1] - c2[k - 1]) / n_right - ((c1[-1] - c1[k - 1]) / n_right) ** 2
    cost = n_left * np.log(np.maximum(var_l, floor)) + n_right * np.log(np.maximum(var_r, floor))
    return lo + int(k[int(np.argmin(cost))])


def settle(
    values: np.ndarray,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    confidence: float = DEFAULT_CONFIDENCE,
    penalty: float | None = None,
    elbow: float = DEFAULT_ELBOW,
    min_steady: float = DEFAULT_MIN_STEADY,
    filter_outliers: bool = True,
) -> Settled:
    """Steady state of ``values``: PELT segments, then the walk back.

    The PELT penalty per change point is ``penalty`` x log n when given, else
    ``elbow_penalty`` (the study's CROPS elbow, scaled by ``elbow``).

    Outliers (``pilot_sys.stats.outliers``) are left out of the segmentation but kept in the
    segment means that the walk back compares. A series longer than MAX_POINTS is segmented in
    block means (blocks of ceil(n / MAX_POINTS), no outlier filter: the outlier rule would take
    the first blocks after a sharp step for outliers of their window) and the start refined within
    a block on the raw readings. The series is steady when the settled run holds at least
    ``min_steady`` of it.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < MIN_READINGS:
        raise InsufficientData(
            "latencies", f"{n} readings: at least {MIN_READINGS} are needed to judge a steady state"
        )
    block = max(1, math.ceil(n / MAX_POINTS))
    y = _block_means(x, block) if block > 1 else x
    index = np.arange(y.size)
    if filter_outliers and block == 1:  # a block mean has averaged its outliers away
        keep = ~window_outliers(y)
        y, index = y[keep], index[keep]
    beta = elbow_penalty(y, elbow) if penalty is None else penalty * math.log(y.size)
    cuts = pelt_meanvar(y, beta).changepoints
    # a cut goes right after the last kept reading of a segment: outliers left out between two
    # segments belong to the later one, as in the study
    cuts = sorted({min((int(index[c - 1]) + 1) * block, n - 1) for c in cuts})
    start = settled_start(x, cuts, tolerance, confidence)
    if block > 1 and start > 0:
        start = _refine(x, start, block)
        cuts = sorted({*[c for c in cuts if abs(c - start) >= block], start})
    last = _moments(x, cuts[-1] if cuts else 0, n)
    before = [c for c in cuts if c < start]
    ratio = None
    if start > 0:
        prev = _moments(x, before[-1] if before else 0, start)
        ratio = prev[1] / last[1] if last[1] != 0 else None
    common = {
        "settled_at": start,
        "changepoints": cuts,
        "block": block,
        "last_mean": last[1],
        "previous_ratio": ratio,
    }
    steady_len = n - start
    if steady_len < min_steady * n:
        reason = (
            f"no steady state: the level still moves at iteration {start} "
            f"(the segment before differs by {_pct(ratio)} from the last, "
            f"more than {100 * tolerance:g}%), leaving {steady_len} settled readings, "
            f"under {100 * min_steady:.3g}% of the series; run longer"
        )
        return Settled(start=None, reason=reason, **common)
    if start == 0:
        reason = (
            f"no segment differs from the last by more than {100 * tolerance:g}%: "
            "steady from the start"
        )
    else:
        reason = (
            f"the level settles at iteration {start}: the segment before differs by {_pct(ratio)} "
            f"from the last, and none after it by more than {100 * tolerance:g}%"
        )
    return Settled(start=start, reason=reason, **common)


def _pct(ratio: float | None) -> str:
    return "an unknown amount" if ratio is None else f"{100 * (ratio - 1):+.1f}%"
