"""What kind of change happens at a change point: level, spread or trend, or none once trends count.

Change-point detectors that compare medians (EDM) see a smooth trend as a staircase: every
stretch of a ramp has a different median, so a growing series is cut into dozens of "level
shifts" that no reader would call changes. Each change point is judged here against the two
segments around it (their nearest EVIDENCE_REACH readings), each fitted with its own straight
line (ordinary least squares):

* **level**: the two lines disagree at the change point, i.e. the series jumps;
* **trend**: the lines meet but their slopes differ, i.e. the series turns (a kink), more
  sharply than one smooth parabola through both segments would bend;
* **spread**: neither, but the residual spread differs;
* **none**: one straight line through both segments explains them as well as two do (the change
  point is an artefact of a trend) - the caller drops it and merges the segments.

Each effect is tested against the residual noise of the segments with an F test (the two-line
model against its restriction), at ``significance``. The detector put each change point where
the two sides differ most, so these p-values are optimistic (the test sees the data that chose
the point): the default level is 0.001, ten times stricter than the detector's own, and it is
shared (Bonferroni) by the change points tested together. The noise of slowly varying real
series is strongly autocorrelated, so the residual variance is inflated by the lag-1
autocorrelation's long-run factor ``(1 + r) / (1 - r)`` before testing (Bartlett), and the spread
test's degrees of freedom shrink by the same factor.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.stats._changepoint_result import ChangePoints, Segment
from pilot_sys.stats.kind_moments import Fits, moment_fits, moment_fits_many
from pilot_sys.stats.outlier_screen import certified, outliers_among
from pilot_sys.stats.outliers import DEFAULT_WINDOW, ROLLING_MIN, window_outliers

Kind = Literal["level", "trend", "spread", "none"]
DEFAULT_SIGNIFICANCE = 0.001
# Residuals that hold an unmodelled step look autocorrelated too; capping the lag-1 correlation
# keeps one such step from hiding a jump next to it (inflation at most (1 + 0.7) / (1 - 0.7)).
MAX_LAG1 = 0.7
# Each change point is judged on at most this many readings either side, the nearest ones:
# ample to tell a jump from a turn from noise, and the cost of judging every change point stays
# linear in the series (a long segment would otherwise be refitted each time a change point
# beside it goes).
EVIDENCE_REACH = 1 << 13
# the times from a change point of the readings any window may hold (read only: shared)
_TIMES = np.arange(-EVIDENCE_REACH, EVIDENCE_REACH + 1, dtype=np.float64)
_TIMES.flags.writeable = False
_EPS = np.finfo(np.float64).eps  # a numpy float, as the rounding bound has always been formed


class ChangeKind(BaseModel):
    """The kind of one change point and the evidence for it."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(description="0-based index where the new segment starts")
    kind: Kind
    jump: float = Field(description="right line minus left line at the change point (data units)")
    slope_before: float
    slope_after: float
    spread_ratio: float = Field(description="residual standard deviation after / before")
    p_value: float = Field(description="p-value of the effect that decided the kind (1 for none)")


def _line(y: np.ndarray, x: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Intercept, slope and residuals of y on x (a constant when there is one point).

    Least squares in closed form about the means (what ``np.polyfit(x, y, 1)`` computes through
    an SVD, at a fraction of its cost on long segments)."""
    if y.size < 2:
        return float(y.mean()), 0.0, y - y.mean()
    x_mean, y_mean = float(x.mean()), float(y.mean())
    dx = x - x_mean
    sxx = float(dx @ dx)
    slope = float(dx @ (y - y_mean)) / sxx if sxx > 0.0 else 0.0
    intercept = y_mean - slope * x_mean
    return intercept, slope, y - (intercept + slope * x)


def _fit(columns: list[np.ndarray], y: np.ndarray) -> np.ndarray:
    """Residuals of the least-squares fit of y on ``columns`` (a few, each scaled to [-1, 1]).

    The normal equations of a handful of scaled columns are well conditioned and cost one pass
    over the data, where an SVD of the design matrix costs several."""
    design = np.column_stack(columns)
    gram = design.T @ design
    try:
        coef = np.linalg.solve(gram, design.T @ y)
    except np.linalg.LinAlgError:  # collinear columns (a side of one reading): the SVD decides
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return y - design @ coef


def _lag1_inflation(fits: Fits) -> float:
    """Long-run variance factor (1 + r) / (1 - r) of the pooled lag-1 correlation r, in [1, 5.7]."""
    num = sum(lag for lag, size in zip(fits.lag1, fits.sizes, strict=True) if size > 2)
    den = sum(rss for rss, size in zip(fits.rss, fits.sizes, strict=True) if size > 2)
    if den <= 0.0:
        return 1.0
    rho = min(max(num / den, 0.0), MAX_LAG1)
    return (1.0 + rho) / (1.0 - rho)


def _f_statistic(
    rss_restricted: float,
    rss_full: float,
    extra: int,
    dof: int,
    inflation: float,
    rounding: float = 0.0,
) -> tuple[float | None, float]:
    """``(p, 0)`` where the F test is decided without the F distribution, else ``(None, f)``
    (the statistic whose survival function at ``extra`` and ``dof`` degrees is the p-value)."""
    if rss_full <= rounding:
        rss_full = 0.0
        if rss_restricted <= rounding:
            return 1.0, 0.0
    if dof <= 0 or rss_full <= 0.0:
        return (0.0 if rss_restricted > rss_full else 1.0), 0.0
    return None, max(rss_restricted - rss_full, 0.0) / extra / (inflation * rss_full / dof)


def _f_test(
    rss_restricted: float,
    rss_full: float,
    extra: int,
    dof: int,
    inflation: float,
    rounding: float = 0.0,
) -> float:
    """p-value of the F test; a residual sum within ``rounding`` (floating-point noise of a
    series the model fits exactly, e.g. a noiseless ramp) counts as zero."""
    from scipy.special import fdtrc  # the F sf (scipy.stats.f's own); lazy: ~0.3 s to import

    p, f = _f_statistic(rss_restricted, rss_full, extra, dof, inflation, rounding)
    return p if p is not None else float(fdtrc(extra, dof, f))


def _around(
    values: np.ndarray, begin: int, index: int, end: int, outliers: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Readings of [begin, end) without outliers, their time from ``index``, and where it falls."""
    y = np.asarray(values[begin:end], dtype=np.float64)
    if -EVIDENCE_REACH <= begin - index and end - index <= EVIDENCE_REACH:
        t = _TIMES[EVIDENCE_REACH + begin - index : EVIDENCE_REACH + end - index]
    else:
        t = np.arange(begin - index, end - index, dtype=np.float64)  # whole numbers: exact
    if outliers is not None and outliers[begin:end].any():  # else every reading is kept
        keep = ~outliers[begin:end]
        if keep[: index - begin].sum() >= 3 and keep[index - begin :].sum() >= 3:
            y, t = y[keep], t[keep]
            return y, t, int(np.searchsorted(t, 0.0))
    return y, t, index - begin


@dataclass(frozen=True, slots=True)
class _Evidence:
    """The tests at one change point between two given segments, before any level is chosen:
    computed once per (begin, index, end) and decided again at each level, so dropping one
    change point costs the fits around it only. (A plain record, not a model: thousands are
    made for a long series, and nothing outside this module sees one.)"""

    common: dict[str, float | int]
    p_jump: float
    p_any: float
    turn: bool  # a kink fits better than one parabola through both segments
    p_spread: float | None  # None: a segment too short or without spread
    ratio: float

    @property
    def least_p(self) -> float:
        """The smallest p-value ``_kind_of`` may decide by: the kind is "none" exactly at the
        levels at or below it (NaN, which no level exceeds, counts as infinite)."""
        eligible = [self.p_jump]
        if self.turn:
            eligible.append(self.p_any)
        if self.p_spread is not None and max(self.ratio, 1.0 / self.ratio) > 1.5:
            eligible.append(self.p_spread)
        return min((p for p in eligible if p == p), default=float("inf"))


def _direct_fits(y: np.ndarray, t: np.ndarray, k: int) -> Fits:
    """The fits from the residual vectors themselves: exact where the moments are not."""
    a0, a1, res_a = _line(y[:k], t[:k])
    b0, b1, res_b = _line(y[k:], t[k:])
    u = t / max(float(np.max(np.abs(t))), 1.0)
    _, _, res_one = _line(y, t)
    res_kink = _fit([np.ones(y.size), u, np.maximum(u, 0.0)], y)
    res_bend = _fit([np.ones(t.size), u, u * u], y)
    return Fits(
        left=(a0, a1),
        right=(b0, b1),
        sizes=(res_a.size, res_b.size),
        rss=(float(res_a @ res_a), float(res_b @ res_b)),
        spreads=tuple(float(np.std(r)) if r.size > 2 else float("nan") for r in (res_a, res_b)),
        lag1=tuple(float(np.dot(r[1:], r[:-1])) for r in (res_a, res_b)),
        rss_one=float(res_one @ res_one),
        rss_kink=float(res_kink @ res_kink),
        rss_bend=float(res_bend @ res_bend),
    )


_Window = tuple[np.ndarray, np.ndarray, int, float]


def _window(
    values: np.ndarray, begin: int, index: int, end: int, outliers: np.ndarray | None
) -> _Window:
    """``_around``'s readings, times and split, and the bound under which a squared residual
    is rounding error, not noise."""
    y, t, k = _around(values, begin, index, end, outliers)
    # max |y| without an array of |y| (NaN, the first argument, wins as np.max's does)
    largest = max(float(y.max()), -float(y.min()), 0.0) if y.size else 0.0
    rounding = y.size * (64 * _EPS * largest) ** 2
    return y, t, k, rounding


def _evidence(
    values: np.ndarray, begin: int, index: int, end: int, outliers: np.ndarray | None
) -> _Evidence:
    y, t, k, rounding = _window(values, begin, index, end, outliers)
    fits = moment_fits(y, t, k, rounding) or _direct_fits(y, t, k)
    return _judge(fits, y.size, rounding, index)


def _evidence_many(
    values: np.ndarray, keys: Sequence[tuple[int, int, int]], outliers: np.ndarray | None
) -> list[_Evidence]:
    """``_evidence`` at each (begin, index, end), the same floats: the fits of all of them
    together (``moment_fits_many``), which spares most of the fixed cost of each."""
    windows = [_window(values, *key, outliers) for key in keys]
    return _judge_many(
        [
            (fits or _direct_fits(y, t, k), y.size, rounding, key[1])
            for key, (y, t, k, rounding), fits in zip(
                keys, windows, moment_fits_many(windows), strict=True
            )
        ]
    )


def _judge(fits: Fits, n: int, rounding: float, index: int) -> _Evidence:
    """The tests at one change point from the fits around it (``n`` readings)."""
    return _judge_many([(fits, n, rounding, index)])[0]


def _judge_many(items: Sequence[tuple[Fits, int, float, int]]) -> list[_Evidence]:
    """``_judge`` of each (fits, n, rounding, index): the F distribution's tails of all of them
    in three calls (elementwise: the same floats as one call each)."""
    from scipy.special import fdtr, fdtrc  # the F cdf and sf; lazy: ~0.3 s to import

    rows = []
    tails: list[tuple[float, float, float]] = []  # (extra, dof, f) of the F tests still open
    spread_tails: list[tuple[float, float, float]] = []
    for fits, n, rounding, index in items:
        (a0, a1), (b0, b1) = fits.left, fits.right
        size_a, size_b = fits.sizes
        rss_two = fits.rss[0] + fits.rss[1]
        dof = n - 4
        inflation = _lag1_inflation(fits)
        tiny = (rounding / max(n, 1)) ** 0.5  # a residual spread below this is rounding error
        spread_a, spread_b = (0.0 if s <= tiny else s for s in fits.spreads)
        ratio = spread_b / spread_a if spread_a > 0 else float("inf")
        tests = (
            # one line through both segments (no change at all)
            (fits.rss_one, 2),
            # a kinked line (slopes differ, no jump): t+ = max(t, 0) carries the slope change
            (fits.rss_kink, 1),
        )
        decided: list[tuple[float | None, int]] = []  # the p-value, or where its tail goes
        for rss_restricted, extra in tests:
            p, f = _f_statistic(rss_restricted, rss_two, extra, dof, inflation, rounding)
            decided.append((p, len(tails)))
            if p is None:
                tails.append((extra, dof, f))
        spread: int | None = None
        if size_a > 2 and size_b > 2 and spread_a > 0 and spread_b > 0:
            # autocorrelated residuals carry fewer independent readings: shrink both dofs alike
            f = (spread_b / spread_a) ** 2
            spread = len(spread_tails)
            spread_tails.append(((size_b - 2) / inflation, (size_a - 2) / inflation, f))
        common = {
            "index": index,
            "jump": b0 - a0,
            "slope_before": a1,
            "slope_after": b1,
            "spread_ratio": ratio,
        }
        # a kink fits better than a smooth parabola through it all: a slowly curving series
        # (growth that slows down) differs from one straight line at every split; only a
        # turn sharper than the curve is a change of trend
        turn = bool(fits.rss_kink + rounding < fits.rss_bend)
        rows.append((common, decided, spread, turn, ratio))
    upper = fdtrc(*np.array(tails).T).tolist() if tails else []
    if spread_tails:
        args = np.array(spread_tails).T
        spread_upper, spread_lower = fdtrc(*args).tolist(), fdtr(*args).tolist()
    out = []
    for common, decided, spread, turn, ratio in rows:
        p_any, p_jump = (upper[at] if p is None else p for p, at in decided)
        p_spread = None
        if spread is not None:
            p_spread = 2.0 * min(spread_upper[spread], spread_lower[spread])
        out.append(
            _Evidence(
                common=common,
                p_jump=p_jump,
                p_any=p_any,
                turn=turn,
                p_spread=p_spread,
                ratio=ratio,
            )
        )
    return out


def _kind_of(e: _Evidence, significance: float) -> tuple[Kind, float]:
    """The kind at ``significance`` and the p-value that decided it (1 for none): plain values,
    since the drop loop decides every change point again each round."""
    if e.p_jump < significance:
        return "level", e.p_jump
    if e.p_any < significance and e.turn:
        return "trend", e.p_any
    if e.p_spread is not None and e.p_spread < significance and max(e.ratio, 1.0 / e.ratio) > 1.5:
        return "spread", e.p_spread
    return "none", 1.0


def _decide(e: _Evidence, significance: float) -> ChangeKind:
    kind, p_value = _kind_of(e, significance)
    return ChangeKind(kind=kind, p_value=p_value, **e.common)


def classify_change(
    values: np.ndarray,
    begin: int,
    index: int,
    end: int,
    significance: float = DEFAULT_SIGNIFICANCE,
    outliers: np.ndarray | None = None,
) -> ChangeKind:
    """Kind of the change at ``index`` between segments [begin, index) and [index, end).

    ``outliers`` (a mask over ``values``) are left out of the line fits: one slow iteration in
    a hundred would otherwise swamp the residual noise that every test compares against.
    """
    return _decide(_evidence(values, begin, index, end, outliers), significance)


def _outliers_near(x: np.ndarray, cuts: Sequence[int], window: int) -> np.ndarray:
    """``window_outliers(x, window)`` on the readings within EVIDENCE_REACH of a change point,
    the only ones any test here reads (False elsewhere).

    Whether a reading is an outlier depends on the windows that hold it only, so each stretch
    is computed with ``window - 1`` readings of context either side and matches the mask of the
    whole series exactly; a long series with few change points is spared the rest.
    """
    mask = np.zeros(x.size, dtype=bool)
    spans: list[list[int]] = []
    for c in sorted(cuts):
        lo, hi = max(c - EVIDENCE_REACH, 0), min(c + EVIDENCE_REACH, x.size)
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    if x.size < window:
        return mask
    # a short stretch of a long series by running order statistics too (the same mask)
    rolling = x.size >= ROLLING_MIN
    for lo, hi in spans:
        a, b = max(lo - (window - 1), 0), min(hi + window - 1, x.size)
        if b - a < window:  # a stretch shorter than a window: the whole series decides
            return window_outliers(x, window)
        if rolling:  # ... there only the readings that blocks' order statistics do not clear,
            # in the arithmetic window_outliers gives the stretch (the same mask)
            part = x[a:b]
            sure = certified(part, window)
            numpy_arithmetic = b - a < ROLLING_MIN
            mask[lo:hi] = outliers_among(part, lo - a, hi - a, window, sure, numpy_arithmetic)
        else:
            mask[lo:hi] = window_outliers(x[a:b], window, rolling=rolling)[lo - a : hi - a]
    return mask


def classify_changes(
    values: np.ndarray,
    changepoints: Sequence[int],
    significance: float = DEFAULT_SIGNIFICANCE,
    drop: bool = True,
) -> list[ChangeKind]:
    """Kinds of ``changepoints``; with ``drop``, those a trend explains go (until none does).

    The weakest unexplained change point goes first, because removing it merges two segments
    and changes the evidence at its neighbours; each round tests at ``significance`` divided by
    the number of change points left. Without ``drop`` every change point is kept with the same
    kinds: the ones a trend explains are "none", and the others are judged between the
    segments left once those are merged away. (Judged between its immediate neighbours instead,
    a real step next to a spurious change point would be tested on a short segment and could
    come out "none" itself.) The evidence at a change point depends on its two segments only,
    so it is kept across rounds: a drop refits its two neighbours, not every change point.
    """
    x = np.asarray(values, dtype=np.float64)
    cuts = sorted(int(c) for c in changepoints if 0 < c < x.size)
    outliers = _outliers_near(x, cuts, min(DEFAULT_WINDOW, max(x.size // 5, 2)))
    dropped: dict[int, ChangeKind] = {}
    known: dict[tuple[int, int, int], _Evidence] = {}
    guessed: set[tuple[int, int, int]] = set()  # computed ahead, not asked for yet
    tally = {"guessed": 0, "used": 0}

    def key(i: int) -> tuple[int, int, int]:
        # the nearest EVIDENCE_REACH readings either side: a segment further away no longer
        # changes the evidence, so dropping a distant change point refits nothing here
        begin = cuts[i - 1] if i else 0
        end = cuts[i + 1] if i + 1 < len(cuts) else x.size
        return max(begin, cuts[i] - EVIDENCE_REACH), cuts[i], min(end, cuts[i] + EVIDENCE_REACH)

    def around(
        indices: Sequence[int], ahead: Callable[[], list[_Key]] | None = None
    ) -> list[_Evidence]:
        keys = [key(i) for i in indices]
        missing = list(dict.fromkeys(k for k in keys if k not in known))
        used = guessed.intersection(keys)
        tally["used"] += len(used)
        guessed.difference_update(used)
        # guesses pay while most of them are used (each computed with windows needed now)
        if missing and ahead is not None and 2 * tally["used"] + LOOKAHEAD > tally["guessed"]:
            extra = [k for k in dict.fromkeys(ahead()) if k not in known and k not in missing]
            tally["guessed"] += len(extra)
            guessed.update(extra)
            missing += extra
        if missing:
            known.update(zip(missing, _evidence_many(x, missing, outliers), strict=True))
        return [known[k] for k in keys]

    found = around(range(len(cuts)))
    # each round decides every change point again at a new level: by its least p-value, one
    # comparison each (``_kind_of`` gives "none" exactly where the level is at most that)
    least = np.array([e.least_p for e in found], dtype=np.float64)
    p_any = np.array([e.p_any for e in found], dtype=np.float64)
    nan_free = not np.isnan(p_any).any()
    while True:
        # one test per change point: Bonferroni keeps the chance of keeping any artefact at
        # ``significance`` however many pieces the detector cut a trend into
        level = significance / max(len(cuts), 1)
        none = level <= least
        if not none.any():
            kinds = [_decide(e, level) for e in found]
            if drop:
                return kinds
            return sorted([*kinds, *dropped.values()], key=lambda k: k.index)
        # drop the one whose segments one line explains best (largest p of "any change"; the
        # first of equals)
        if nan_free:  # the first largest in one pass (no NaN to order)
            worst = int(np.argmax(np.where(none, p_any, -np.inf)))
        else:
            worst = _first_largest(p_any, none)
        dropped[cuts[worst]] = _decide(found[worst], level)
        del cuts[worst], found[worst]
        least = np.concatenate((least[:worst], least[worst + 1 :]))
        p_any = np.concatenate((p_any[:worst], p_any[worst + 1 :]))
        # only its two neighbours' segments changed; the drops likely next are computed with
        # them (the same evidence whenever it is asked for: the rounds decide as before)
        neighbours = range(max(worst - 1, 0), min(worst + 1, len(cuts)))
        ahead = functools.partial(
            _likely_refits,
            cuts,
            least,
            p_any,
            significance / max(len(cuts), 1),
            neighbours,
            x.size,
            LOOKAHEAD,
        )
        for i, e in zip(neighbours, around(neighbours, ahead), strict=True):
            found[i], least[i], p_any[i] = e, e.least_p, e.p_any
            nan_free = nan_free and e.p_any == e.p_any


_Key = tuple[int, int, int]
# drops guessed ahead each time a round must fit windows anyway
LOOKAHEAD = 16


def _likely_refits(
    cuts: list[int],
    least: np.ndarray,
    p_any: np.ndarray,
    level: float,
    unknown: Sequence[int],
    size: int,
    count: int,
) -> list[_Key]:
    """The windows that the next ``count`` drops would refit, were they the change points
    with the largest p-values of "any change" now at ``level`` (the drop loop's own order), each
    at least three change points from the others and from the ``unknown`` ones, so that the
    windows around it are as they will be when it goes. A guess: a drop can make its
    neighbour the next one instead; what it gets wrong is computed and not used."""
    candidates = np.flatnonzero(level <= least)
    order = candidates[np.argsort(-p_any[candidates], kind="stable")].tolist()
    taken = list(unknown)
    keys: list[_Key] = []
    m = len(cuts)
    for j in order:
        if len(taken) >= len(unknown) + count:
            break
        if any(abs(j - t) < 3 for t in taken):
            continue
        taken.append(j)
        # with cut j gone, its neighbours' windows reach to the cuts beyond it
        before = cuts[j - 2] if j >= 2 else 0
        after = cuts[j + 2] if j + 2 < m else size
        left = cuts[j - 1] if j >= 1 else 0
        right = cuts[j + 1] if j + 1 < m else size
        if j >= 1:
            keys.append(
                (max(before, left - EVIDENCE_REACH), left, min(right, left + EVIDENCE_REACH))
            )
        if j + 1 < m:
            keys.append(
                (max(left, right - EVIDENCE_REACH), right, min(after, right + EVIDENCE_REACH))
            )
    return keys


def _first_largest(values: np.ndarray, among: np.ndarray) -> int:
    """Index of the first largest of ``values`` where ``among`` holds: ``max(candidates,
    key=...)``'s choice, NaN included (a NaN is never larger, nor anything larger than it)."""
    candidates = np.flatnonzero(among)
    chosen = values[candidates]
    if np.isnan(chosen).any():
        return max(candidates.tolist(), key=lambda i: float(values[i]))
    return int(candidates[np.argmax(chosen)])


def explain_changes(
    values: np.ndarray,
    result: ChangePoints,
    significance: float = DEFAULT_SIGNIFICANCE,
) -> tuple[ChangePoints, list[ChangeKind]]:
    """``result`` without the change points a trend explains, and the kind of each one kept.

    Segments are merged where a change point goes; the stable segment is chosen again by the
    same rule (the longest segment, if it holds more than half of the readings).
    """
    x = np.asarray(values, dtype=np.float64)
    kinds = classify_changes(x, result.changepoints, significance)
    kept = [k.index for k in kinds]
    if kept == list(result.changepoints):
        return result, kinds
    kept_set = set(kept)
    bounds = [0, *kept, x.size]
    segments = [
        Segment(begin=b, end=e, median=float(np.median(x[b:e])))
        for b, e in itertools.pairwise(bounds)
    ]
    longest = max(segments, key=lambda s: s.size)
    stable = (longest.begin, longest.end) if 2 * longest.size > x.size else None
    merged = result.model_copy(
        update={
            "changepoints": kept,
            "segments": segments,
            "stable_segment": stable,
            "details": [d for d in result.details if d.index in kept_set],
        }
    )
    return merged, kinds
