"""E-Divisive with Medians (EDM) change points and the dominant stable segment.

EDM (James, Kejariwal and Matteson, arXiv:1411.7955) splits a series where the weighted
difference between the median before and the median after a split is largest, then recurses
into both halves (binary segmentation). What makes a split *real* is a calibrated test: on pure
noise the two medians of any split differ, so accepting a split whenever they differ (as the
original Pilot tool does) finds a change in every series.

Two forms of the median statistic share one calibrated acceptance rule:

* ``statistic="sign"`` (default): the median difference measured in probability, i.e. the
  difference between the two sides' empirical CDFs at the pooled median,
  ``k (m-k) / m * |F_left(M) - F_right(M)|`` (a CUSUM of "above the pooled median"). It is the
  first-order (Bahadur) expansion of EDM's ``k (m-k) / m * |med_left - med_right|``, but its
  argmax is consistent: the literal median difference keeps growing past an unbalanced change
  (a median stays inside the majority component until the minority is half the side), so its
  split can land up to twice as far from the start as the real change. The test uses the range
  of the CUSUM, so a change that starts and ends inside a segment (a burst) is not half-cancelled.
  No sort is needed to test: one selection of the pooled median and one cumulative sum, O(m).
  An accepted split is then re-placed with the indicator cut midway between the two sides.
* ``statistic="median"``: the literal EDM median difference on ranks, computed exactly at every
  split (short segments) or on a grid refined near its peaks (long ones) with batched prefix
  order statistics; ``detect_exact`` is its quadratic brute-force reference.

Acceptance: on exchangeable data (no change) the tie-broken ranks of a segment are a uniform
random permutation whatever the distribution, and both statistics, scaled by
``1 / sqrt(m p (1-p))``, tend to functionals of a Brownian bridge: Kuiper's distribution for the
CUSUM range, Kolmogorov's for the literal median form. So the false-positive rate of a split test
on pure noise is ``significance`` for every distribution and every n, and no decision depends on
units or on any monotone transform of the data.
Real readings are autocorrelated, so the statistic is divided by the square root of an
overlapping-batch-means long-run variance factor of the indicator sequence (never below 1).
A second scan on the indicator "outside the pooled interquartile range" catches changes of
spread with an unchanged median; the two scans share a Bonferroni budget.

Binary segmentation tests the whole segment first, so a pattern that no single split explains
(one warm-up per round of a multi-round session, a burst) can hide. A second stage scans the
segments it could not split with seeded multi-scale intervals (Kovacs et al., "Seeded binary
segmentation", 2020), Bonferroni-corrected over all intervals so that stage adds at most
``significance`` to the false-alarm rate; accepted splits go back to binary segmentation. The
intervals of one scale share their length and are scanned together as the rows of one array
(``_changepoint_batch``), with results identical to scanning them one by one: one numpy call per
scale instead of one per interval, which would otherwise dominate the cost of a round. On a long
series most intervals are far from significant: each first gets an upper bound of both its
statistics (``_changepoint_bound``, exact cuts from blocks sorted once, the walk 16 readings per
step), and only those whose bound could pass are scanned, so the decisions are unchanged. For
the same reason binary segmentation tests the short segments away from the series' ends
together, one bisection depth at a time (``_changepoint_rounds``), with identical results: a
series with thousands of change points makes thousands of such tests, and together they share
one sort of each reading and one numpy call per step instead of one per segment.

Neither stage sees a short stretch at an end of the series (a warm-up of 5-10% of a round): a
stretch of k readings moves a segment's CUSUM by about k/2 against a noise of sqrt(m)/2, so
below ~2 sqrt(m) it goes unnoticed, and when the whole segment's test does fire, its argmax can
wander deep into the stable phase. Edge intervals close that gap (``edge_intervals``): intervals
anchored at both ends of the series, 2 min_size long and up by sqrt(2), where such a stretch
always sits at the edge and, at the right length, fills half the interval. Each holds at most
one change point of the stretch, so it is tested for a single change (sup |B|, EDM's own form,
narrower under the null than the range) with the exact null of a balanced 0/1 path up to 128
readings (Kolmogorov's limit overstates short tails up to 8x), deflated by the segment's
dependence factor centred at the candidate split. A segment holding an end of the series is
tested whole and in its edge intervals; when both find a change at the same place the whole
segment places it (more readings, better for a long ramp), otherwise the edge split is taken and
placed with the segment's readings. The edge tests share the seeded stage's Bonferroni budget,
so the two searches together still add at most ``significance`` (the exact tests spend the share
of the budget that the asymptotic ones leave unused; the realised rates are in
benchmarks/results/changepoint.md).

The detector's parts live in sibling modules, this one being the entry point that validates the
input and assembles the result: ``_changepoint_result`` (the models), ``_changepoint_statistic``
(the sign and median scan statistics of one segment), ``_changepoint_dependence`` (the
dependence factor), ``_changepoint_segment`` (scanning and deciding a segment),
``_changepoint_plan`` (min size, critical value, interval layouts, Bonferroni family),
``_changepoint_edges`` (the edge tests), ``_changepoint_search`` (binary segmentation and the
seeded search; ``_changepoint_rounds`` its short segments in rounds, on the flat arrays of
``_changepoint_flat``), and below them
``_changepoint_ranks``, ``_changepoint_null``, ``_changepoint_batch`` and ``_changepoint_bound``.
"""

from __future__ import annotations

import numpy as np

from pilot_sys.stats._changepoint_dependence import dependence_factor
from pilot_sys.stats._changepoint_plan import (
    _plan,
    critical_value,
    default_min_size,
    edge_intervals,
    seeded_intervals,
)
from pilot_sys.stats._changepoint_result import (
    ChangeKind,
    ChangePoint,
    ChangePoints,
    Segment,
    Statistic,
    _assemble,
)
from pilot_sys.stats._changepoint_search import _Detection, _ScanCache
from pilot_sys.stats._changepoint_segment import _ScanResult
from pilot_sys.stats._changepoint_statistic import (
    _median_scan_exact,
    _median_scan_fast,
    _MedianScan,
)

__all__ = [
    "DEFAULT_SIGNIFICANCE",
    "ChangeKind",
    "ChangePoint",
    "ChangePoints",
    "IncrementalEDM",
    "Segment",
    "Statistic",
    "critical_value",
    "default_min_size",
    "dependence_factor",
    "detect",
    "detect_exact",
    "edge_intervals",
    "seeded_intervals",
]

DEFAULT_SIGNIFICANCE = 0.01


def _validated(x: np.ndarray) -> np.ndarray:
    values = np.asarray(x, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D series, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("the series holds NaN or infinite values")
    return values


def _run(
    x: np.ndarray,
    *,
    min_size: int | None,
    penalty: float | None,
    significance: float,
    scale: bool,
    dependence: bool,
    statistic: Statistic,
    median_scan: _MedianScan | None,
    seeded: bool = True,
    edges: bool = True,
    cache: _ScanCache | None = None,
) -> ChangePoints:
    """The detector behind ``detect``, ``detect_exact`` and ``IncrementalEDM``."""
    values = _validated(x)
    plan = _plan(
        values.size,
        min_size=min_size,
        penalty=penalty,
        significance=significance,
        scale=scale,
        dependence=dependence,
        statistic=statistic,
        median_scan=median_scan,
        seeded=seeded,
        edges=edges,
    )
    detection = _Detection(values, plan, cache)
    finals = detection.bisect(0, plan.n, keep=bool(plan.intervals.size) and plan.dependence)
    detection.scans.forget_sorted()
    if plan.intervals.size:
        detection.search_seeded(finals)
    detection.scans.save()
    return _assemble(
        values,
        detection.tests,
        min_size=plan.min_size,
        significance=significance,
        penalty=plan.threshold,
        statistic=statistic,
        medians=detection.scans.medians,
    )


def detect(
    x: np.ndarray,
    *,
    min_size: int | None = None,
    penalty: float | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
    scale: bool = True,
    dependence: bool = True,
    statistic: Statistic = "sign",
    seeded: bool = True,
    edges: bool = True,
) -> ChangePoints:
    """EDM change points of ``x`` with a calibrated acceptance rule.

    ``min_size``: shortest segment (default ``default_min_size(n)``). ``penalty``: critical value
    of the adjusted statistic; by default derived from ``significance``, the false-positive rate
    of one split test on data without a change, for any distribution. ``scale``: also look for
    changes of spread. ``dependence``: widen the test for autocorrelated readings.
    ``statistic``: "sign" (default, O(n) per segment, consistent split location) or "median"
    (the literal median difference, O(n log n) per segment). ``seeded``: after binary
    segmentation, search the unsplit segments with multi-scale seeded intervals (Bonferroni over
    them), which finds bursts and per-round warm-ups a single split cannot isolate. ``edges``
    (with ``seeded``, sign form): add short intervals anchored at both ends of the series to that
    family, each tested for one change with an exact null, which finds a warm-up or cool-down of
    a few min_sizes.
    """
    return _run(
        x,
        min_size=min_size,
        penalty=penalty,
        significance=significance,
        scale=scale,
        dependence=dependence,
        statistic=statistic,
        median_scan=_median_scan_fast if statistic == "median" else None,
        seeded=seeded,
        edges=edges,
    )


def detect_exact(
    x: np.ndarray,
    *,
    min_size: int | None = None,
    penalty: float | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
    scale: bool = True,
    dependence: bool = True,
    seeded: bool = True,
) -> ChangePoints:
    """The literal EDM median statistic scanned by brute force at every split: O(n^2), a
    reference."""
    return _run(
        x,
        min_size=min_size,
        penalty=penalty,
        significance=significance,
        scale=scale,
        dependence=dependence,
        statistic="median",
        median_scan=_median_scan_exact,
        seeded=seeded,
    )


class IncrementalEDM:
    """EDM over a series that grows by appended rounds, reusing every scan that cannot change.

    A segment's scan depends only on the readings inside it (tie-break keys and the seeded
    interval grid use absolute positions) and is cached without any penalty, so every segment
    and seeded interval that ends before the appended data is decided again from its cached
    scan in microseconds; only the segments and intervals that reach the end are scanned anew.
    The result is identical to ``detect`` on the concatenated series with the same parameters
    (the cache is dropped when the default min_size steps, i.e. when n quadruples). The edge
    intervals are rescanned at every update: both ends take one pass of a few hundred readings.
    """

    def __init__(
        self,
        *,
        min_size: int | None = None,
        penalty: float | None = None,
        significance: float = DEFAULT_SIGNIFICANCE,
        scale: bool = True,
        dependence: bool = True,
        statistic: Statistic = "sign",
        seeded: bool = True,
        edges: bool = True,
    ) -> None:
        self._min_size = min_size
        self._seeded = seeded
        self._edges = edges
        self._penalty = penalty
        self._significance = significance
        self._scale = scale
        self._dependence = dependence
        self._statistic: Statistic = statistic
        self._buffer = np.empty(1024, dtype=np.float64)
        self._n = 0
        self._cache: dict[tuple[int, int], _ScanResult] = {}
        self._cache_min_size: int | None = None

    @property
    def n(self) -> int:
        return self._n

    @property
    def values(self) -> np.ndarray:
        """The readings seen so far (a read-only copy-free view)."""
        view = self._buffer[: self._n]
        view.flags.writeable = False
        return view

    def update(self, new_values: np.ndarray) -> ChangePoints:
        """Append one round's readings and return the change points of everything seen so far."""
        fresh = _validated(np.atleast_1d(new_values))
        needed = self._n + fresh.size
        if needed > self._buffer.size:  # amortised doubling keeps appends O(1) per reading
            grown = np.empty(max(needed, 2 * self._buffer.size), dtype=np.float64)
            grown[: self._n] = self._buffer[: self._n]
            self._buffer = grown
        self._buffer[self._n : needed] = fresh
        self._n = needed
        size = default_min_size(self._n) if self._min_size is None else self._min_size
        if size != self._cache_min_size:
            self._cache.clear()
            self._cache_min_size = size
        return _run(
            self._buffer[: self._n],
            min_size=size,
            penalty=self._penalty,
            significance=self._significance,
            scale=self._scale,
            dependence=self._dependence,
            statistic=self._statistic,
            median_scan=_median_scan_fast if self._statistic == "median" else None,
            seeded=self._seeded,
            edges=self._edges,
            cache=self._cache,
        )
