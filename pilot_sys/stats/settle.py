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

The interval is the percentile bootstrap of the ratio, as in the study: iteration times are
skewed (rare slow iterations), and a short segment's mean is skewed with them, which a normal
(delta-method) interval ignores. The resampling is seeded, so a series always gets the same
answer; a segment longer than EXACT_RESAMPLE readings has a mean close enough to normal to draw
it from its normal approximation instead of resampling it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.errors import InsufficientData
from pilot_sys.stats.crops import crops, crops_elbow
from pilot_sys.stats.outliers import guarded_outliers
from pilot_sys.stats.pelt import pelt_meanvar, variance_floor

DEFAULT_TOLERANCE = 0.05
DEFAULT_CONFIDENCE = 0.95
BOOTSTRAP_DRAWS = 4000
EXACT_RESAMPLE = 1000
SEED = 0


def bootstrap_means(
    values: np.ndarray, rng: np.random.Generator, draws: int = BOOTSTRAP_DRAWS
) -> np.ndarray:
    """``draws`` bootstrap replicates of the mean of ``values``."""
    x = np.asarray(values, dtype=np.float64)
    if x.size > EXACT_RESAMPLE:
        return x.mean() + x.std() / math.sqrt(x.size) * rng.standard_normal(draws)
    rows = max(1, 2**20 // max(x.size, 1))  # bounded working memory
    return np.concatenate(
        [
            x[rng.integers(0, x.size, size=(min(rows, draws - i), x.size))].mean(axis=1)
            for i in range(0, draws, rows)
        ]
    )


def ratio_interval(
    a: np.ndarray,
    b: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
    rng: np.random.Generator | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(a) / mean(b) (seeded unless ``rng`` is given)."""
    rng = np.random.default_rng(SEED) if rng is None else rng
    return _interval(bootstrap_means(a, rng), bootstrap_means(b, rng), confidence)


def _interval(a_means: np.ndarray, b_means: np.ndarray, confidence: float) -> tuple[float, float]:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = a_means / b_means
    if not np.isfinite(ratio).all():
        return -math.inf, math.inf
    low, high = np.quantile(ratio, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return float(low), float(high)


def differs(
    a: np.ndarray,
    b: np.ndarray,
    tolerance: float = DEFAULT_TOLERANCE,
    confidence: float = DEFAULT_CONFIDENCE,
    rng: np.random.Generator | None = None,
) -> bool:
    """True when mean(a) / mean(b) is surely outside (1 - tolerance, 1 + tolerance)."""
    low, high = ratio_interval(a, b, confidence, rng)
    return high <= 1.0 - tolerance or low >= 1.0 + tolerance


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
    rng = np.random.default_rng(SEED)
    last = bootstrap_means(x[bounds[-2] :], rng)
    for k in range(len(bounds) - 3, -1, -1):
        segment = bootstrap_means(x[bounds[k] : bounds[k + 1]], rng)
        low, high = _interval(last, segment, confidence)
        if high <= 1.0 - tolerance or low >= 1.0 + tolerance:
            return bounds[k + 1]
    return 0


# ---------------------------------------------------------------------------------------------
# the dominant run: where a round of a session is stable

# A neighbour whose interquartile range is more than this factor wider or narrower is another
# state of the system even at the same mean level.
RUN_SPREAD = 2.0


def normal_differs(
    a: np.ndarray,
    b: np.ndarray,
    tolerance: float = DEFAULT_TOLERANCE,
    confidence: float = DEFAULT_CONFIDENCE,
) -> bool:
    """``differs`` with the delta-method (normal) interval of the ratio: no resampling, so cheap
    enough for every round of a session."""
    from scipy.special import ndtri  # lazy: the import costs ~0.3 s

    n_a, n_b = a.size, b.size
    m_a, m_b = float(a.mean()), float(b.mean())
    if m_a == 0.0 or m_b == 0.0 or n_a < 2 or n_b < 2:
        return False
    ratio = m_a / m_b
    rel = float(a.var(ddof=1)) / (n_a * m_a * m_a) + float(b.var(ddof=1)) / (n_b * m_b * m_b)
    half = float(ndtri(0.5 + confidence / 2.0)) * abs(ratio) * math.sqrt(rel)
    return ratio + half <= 1.0 - tolerance or ratio - half >= 1.0 + tolerance


def _iqr(values: np.ndarray) -> float:
    q1, q3 = np.percentile(values, [25.0, 75.0])
    return float(q3 - q1)


def dominant_run(
    values: np.ndarray,
    changepoints: Sequence[int],
    tolerance: float = DEFAULT_TOLERANCE,
    spread: float = RUN_SPREAD,
) -> tuple[int, int]:
    """[begin, end) of the longest segment grown over the neighbours that match it.

    A neighbour on either side joins while its mean does not differ from the longest segment's
    by more than ``tolerance`` (Kalibera's test, normal interval) and its interquartile range is
    within a factor ``spread`` of it. A change detector cuts a long stable phase wherever its
    noise allows; the pieces that do not differ in level or spread are one phase, and a warm-up
    or cool-down at either end is what stays outside.
    """
    x = np.asarray(values, dtype=np.float64)
    bounds = [0, *[int(c) for c in changepoints if 0 < c < x.size], x.size]
    longest = int(np.argmax(np.diff(bounds)))
    anchor = x[bounds[longest] : bounds[longest + 1]]
    anchor_iqr = _iqr(anchor)

    def joins(k: int) -> bool:
        other = x[bounds[k] : bounds[k + 1]]
        if normal_differs(anchor, other, tolerance):
            return False
        other_iqr = _iqr(other)
        if anchor_iqr > 0.0 and other_iqr > 0.0:
            return max(anchor_iqr / other_iqr, other_iqr / anchor_iqr) <= spread
        return True

    lo, hi = longest, longest + 1
    while lo > 0 and joins(lo - 1):
        lo -= 1
    while hi < len(bounds) - 1 and joins(hi):
        hi += 1
    return bounds[lo], bounds[hi]


# ---------------------------------------------------------------------------------------------
# the whole method: outliers out, PELT segments at the CROPS elbow, walk back

MIN_READINGS = 20
MAX_POINTS = 3000
# A run is steady only when the settled part holds at least a sixth of it: the study's rule
# (s <= 2499 of 3,000 iterations, at least 500 steady ones).
DEFAULT_MIN_STEADY = 1 / 6
# the CROPS range of the study's penalty search, and its penalty when the curve has no elbow,
# in units of log n
CROPS_LOW = 4.0
CROPS_HIGH = 1e5
NO_ELBOW = 15.0


def elbow_segmentation(values: np.ndarray) -> list[int]:
    """Change points of the PELT segmentation at the elbow of the series' CROPS path.

    The study's choice of penalty: every optimal segmentation for penalties in
    [4 log n, 1e5 log n], and the penalty at the elbow of "change points against penalty"
    (``pilot_sys.stats.crops``), or 15 log n when the curve has none. The elbow is the penalty
    at which two segmentations of the path cost the same; of the two, the one with fewer change
    points is taken (the study ran PELT at that penalty, where the tie falls either way by
    rounding; the fewer agreed more often with its labels, benchmarks/results/steady_real.md).
    """
    log_n = math.log(values.size)
    path = crops(values, CROPS_LOW * log_n, CROPS_HIGH * log_n)
    elbow = crops_elbow(path)
    if elbow is None:
        optimal = [step for step in path if step.penalty <= NO_ELBOW * log_n]
        return (optimal[-1] if optimal else path[0]).changepoints
    return path[elbow].changepoints


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
    min_steady: float = DEFAULT_MIN_STEADY,
    filter_outliers: bool = True,
    seconds_per_unit: float = 1.0,
) -> Settled:
    """Steady state of ``values``: PELT segments, then the walk back.

    The procedure that labels steady states in Traini et al. 2022: outliers out
    (``pilot_sys.stats.outliers.guarded_outliers``; ``seconds_per_unit`` converts the readings
    to seconds for its guard), PELT with a normal mean-and-variance cost at the elbow of the
    CROPS path (``elbow_segmentation``), or at ``penalty`` x log n when given, then the walk
    back. Outliers are left out of the segmentation but kept in the segment means that the
    walk back compares.

    A series longer than MAX_POINTS is segmented in block means (blocks of
    ceil(n / MAX_POINTS), no outlier filter: a block mean has averaged its outliers away) and
    the start refined within a block on the raw readings. The series is steady when the
    settled run holds at least ``min_steady`` of it.
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
    if filter_outliers and block == 1:
        keep = ~guarded_outliers(y, float(np.mean(y)) * seconds_per_unit)
        y, index = y[keep], index[keep]
    if penalty is None:
        cuts = elbow_segmentation(y)
    else:
        cuts = pelt_meanvar(y, penalty * math.log(y.size)).changepoints
    # a cut goes right after the last kept reading of a segment: outliers left out between two
    # segments belong to the later one, as in the study
    cuts = sorted({min((int(index[c - 1]) + 1) * block, n - 1) for c in cuts})
    start = settled_start(x, cuts, tolerance, confidence)
    if block > 1 and start > 0:
        start = _refine(x, start, block)
        cuts = sorted({*[c for c in cuts if abs(c - start) >= block], start})
    last_mean = float(x[cuts[-1] if cuts else 0 :].mean())
    before = [c for c in cuts if c < start]
    ratio = None
    if start > 0 and last_mean != 0.0:
        ratio = float(x[before[-1] if before else 0 : start].mean()) / last_mean
    common = {
        "settled_at": start,
        "changepoints": cuts,
        "block": block,
        "last_mean": last_mean,
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
