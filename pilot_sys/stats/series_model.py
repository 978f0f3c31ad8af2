"""One model of a series of readings: warm-up, the steady part, and what changed after it.

``analyze``, ``steady`` and ``changepoints`` (and a session round's warm-up removal) all report
this one model, each in its own words, so that one series never gets three answers:

1. **Segments.** EDM's change points (``pilot_sys.stats.changepoint.detect``), without those
   that one straight line through both neighbouring segments explains
   (``pilot_sys.stats.change_kind.explain_changes``): a ramp is one segment, not a staircase of
   "level shifts". Each change point kept has a kind: level, trend or spread.
2. **The steady part.** The longest segment grown over its neighbours that match it in mean and
   spread (``pilot_sys.stats.settle.dominant_run`` at tolerance 0: a neighbour joins only with
   no sign of another mean), when it holds more than half of the readings. More than half
   makes it unique: no other run of the series can be as long.
3. **Warm-up** is everything before the steady part; every change point at or after its end is
   a change *of* the steady state (a level shift, a new trend, a new spread), reported as such
   and never averaged into it. Without a steady part, no reading is called warm-up.

The arithmetic runs on the readings times a power of two that brings the largest magnitude
near 1 (exact in floating point), so readings near 1e200 or 1e-200 get the answer their scaled
copy gets instead of overflowing squares and sums; change points and segment bounds do not
depend on the scale, and every figure in data units is scaled back.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

# the detector's models and its minimum segment size, without the detector itself: a series too
# short for two segments is answered without loading it (``detect`` is imported when it runs)
from pilot_sys.stats._changepoint_plan import default_min_size
from pilot_sys.stats._changepoint_result import ChangePoints, Segment, Statistic
from pilot_sys.stats.change_kind import (
    DEFAULT_SIGNIFICANCE as KIND_SIGNIFICANCE,
)
from pilot_sys.stats.change_kind import (
    ChangeKind,
    classify_changes,
    explain_changes,
)

STEADY_SHARE = 0.5  # the steady part holds more than this share of the readings
# A run whose fitted line moves by more than this many residual standard deviations from its
# first reading to its last, significantly, trends: it is not a steady state.
TREND_RISE = 2.0
MAX_LAG1 = 0.7  # as in change_kind: autocorrelation inflates the slope's variance at most 5.7x


class SeriesModel(BaseModel):
    """Segments of a series, the kind of each change, and which readings are the steady part."""

    model_config = ConfigDict(frozen=True)

    n: int
    min_size: int = Field(description="shortest segment the detector allowed")
    too_short: bool = Field(description="fewer than two segments' worth of readings")
    changepoints: list[int] = Field(description="0-based indices where a new segment starts")
    kinds: list[ChangeKind] = Field(description="the kind of each change point, in order")
    segments: list[Segment]
    steady: tuple[int, int] | None = Field(
        description="[begin, end) of the steady part; None when no run holds more than half"
    )
    reason: str = Field(description="why this is (or there is no) steady part")
    detection: ChangePoints | None = Field(
        default=None, description="EDM's result with the trend-explained change points merged"
    )

    @property
    def warmup(self) -> tuple[int, int] | None:
        """[0, begin) of the readings before the steady part, None when there are none."""
        if self.steady is None or self.steady[0] == 0:
            return None
        return 0, self.steady[0]

    @property
    def later_changes(self) -> list[ChangeKind]:
        """The changes at or after the end of the steady part: the steady state changed."""
        if self.steady is None:
            return []
        return [k for k in self.kinds if k.index >= self.steady[1]]

    def segment_at(self, index: int) -> Segment:
        """The segment that holds reading ``index``."""
        for seg in self.segments:
            if seg.begin <= index < seg.end:
                return seg
        raise IndexError(index)


def data_scale(values: np.ndarray) -> int:
    """Exponent e such that values * 2**-e has its largest magnitude in [0.5, 1) (0 for zeros)."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if top == 0.0 or not math.isfinite(top):
        return 0
    return math.frexp(top)[1]


def _scaled_back(kind: ChangeKind, exponent: int) -> ChangeKind:
    if exponent == 0:
        return kind

    def back(v: float) -> float:
        return float(np.ldexp(v, exponent))

    return kind.model_copy(
        update={
            "jump": back(kind.jump),
            "slope_before": back(kind.slope_before),
            "slope_after": back(kind.slope_after),
        }
    )


def trend_of(y: np.ndarray, significance: float = KIND_SIGNIFICANCE) -> tuple[float, float] | None:
    """(rise over the run, residual standard deviation) when ``y`` trends, else None.

    The slope is tested with an F test against the residual noise inflated by its lag-1
    autocorrelation's long-run factor (Bartlett, as ``change_kind`` does); a significant slope
    trends only when the line rises or falls by more than TREND_RISE residual deviations, so
    a drift too small to see beside the noise is not a trend however many readings prove it.
    """
    from scipy.special import fdtrc  # lazy: the import costs ~0.3 s

    m = y.size
    if m < 4:
        return None
    t = np.arange(m, dtype=np.float64)
    t -= t.mean()
    centred = y - y.mean()
    # einsum's own loop, not BLAS: a threaded dot of a long run costs several times the sum
    sxx = float(np.einsum("i,i->", t, t))
    slope = float(np.einsum("i,i->", t, centred)) / sxx
    res = centred - slope * t
    rss = float(np.einsum("i,i->", res, res))
    if rss <= 0.0:
        return (slope * (m - 1), 0.0) if slope != 0.0 else None
    den = rss
    rho = min(max(float(np.einsum("i,i->", res[1:], res[:-1])) / den, 0.0), MAX_LAG1)
    inflation = (1.0 + rho) / (1.0 - rho)
    f = slope * slope * sxx / (inflation * rss / (m - 2))
    p = float(fdtrc(1, m - 2, f))
    rise = slope * (m - 1)
    sd = math.sqrt(rss / (m - 2))
    if p < significance and abs(rise) > TREND_RISE * sd:
        return rise, sd
    return None


def _segments(x: np.ndarray, cuts: list[int]) -> list[Segment]:
    bounds = [0, *cuts, x.size]
    return [
        Segment(begin=b, end=e, median=float(np.median(x[b:e])))
        for b, e in itertools.pairwise(bounds)
    ]


def series_model(
    values: np.ndarray,
    *,
    min_size: int | None = None,
    significance: float | None = None,
    statistic: Statistic = "sign",
    trend: bool = True,
    kind_significance: float = KIND_SIGNIFICANCE,
) -> SeriesModel:
    """The model of the module doc for finite, time-ordered ``values``.

    ``min_size``, ``significance`` and ``statistic`` are EDM's (``changepoint.detect``; None:
    its defaults);
    ``trend=False`` keeps every change point EDM found (the ones a trend explains are kind
    "none" and do not separate the steady part from its neighbours any more than any cut does).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-D series, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("the series holds NaN or infinite values")
    n = int(x.size)
    size = default_min_size(n) if min_size is None else int(min_size)
    if n < 2 * size:
        whole = _segments(x, []) if n else []
        reason = (
            f"too short to show a change: {n} reading{'' if n == 1 else 's'}, "
            f"two segments of {size} needed; "
            "no reading is called warm-up"
        )
        return SeriesModel(
            n=n,
            min_size=size,
            too_short=True,
            changepoints=[],
            kinds=[],
            segments=whole,
            steady=None,
            reason=reason,
        )
    exponent = data_scale(x)
    y = np.ldexp(x, -exponent) if exponent else x
    from pilot_sys.stats.changepoint import DEFAULT_SIGNIFICANCE, detect

    if significance is None:
        significance = DEFAULT_SIGNIFICANCE
    found = detect(y, min_size=size, significance=significance, statistic=statistic)
    if trend:
        found, kinds = explain_changes(y, found, kind_significance)
    else:
        kinds = classify_changes(y, found.changepoints, kind_significance, drop=False)
    kinds = [_scaled_back(k, exponent) for k in kinds]
    cuts = list(found.changepoints)
    segments = _segments(x, cuts)
    # every cut that still separates segments: with --no-trend the "none" ones too
    steady, reason = steady_part(y, cuts, exponent)
    detection = found.model_copy(
        update={
            "segments": segments,
            "stable_segment": steady,
        }
    )
    return SeriesModel(
        n=n,
        min_size=size,
        too_short=False,
        changepoints=cuts,
        kinds=kinds,
        segments=segments,
        steady=steady,
        reason=reason,
        detection=detection,
    )


def steady_part(
    y: np.ndarray, cuts: list[int], exponent: int = 0
) -> tuple[tuple[int, int] | None, str]:
    """[begin, end) of the steady part of ``y`` cut at ``cuts`` (rule 2 of the module doc), or
    None, and why; ``exponent`` scales ``y``'s figures back to data units in the reason."""
    # lazy, as in _settled_tail: a series too short for any cut (a few readings) never gets here,
    # and settle's PELT and CROPS modules build their output models at import
    from pilot_sys.stats.settle import dominant_run

    n = int(y.size)
    begin, end = dominant_run(y, cuts, tolerance=0.0)
    share = (end - begin) / n
    trend_found = trend_of(y[begin:end]) if share > STEADY_SHARE else None
    if trend_found is not None:
        steady: tuple[int, int] | None = None
        rise = float(np.ldexp(trend_found[0], exponent))
        reason = (
            f"no steady part: readings [{begin}, {end}) ({100 * share:.1f}% of the series) "
            f"follow a trend, {rise:+.4g} from first to last, more than {TREND_RISE:g} times "
            "the noise around it"
        )
    elif share > STEADY_SHARE:
        steady = (begin, end)
        joined = sum(1 for c in cuts if begin < c < end)
        inside = f", {joined + 1} segments of equal mean and spread" if joined else ""
        reason = f"readings [{begin}, {end}) hold {100 * share:.1f}% of the series{inside}"
    else:
        steady, reason = _settled_tail(y, begin, end, share, exponent)
    return steady, reason


def _settled_tail(
    y: np.ndarray, begin: int, end: int, share: float, exponent: int = 0
) -> tuple[tuple[int, int] | None, str]:
    """No run of equal segments holds more than half (a long noisy or multimodal series cut
    into many pieces): where the level settles for good, by the procedure that labels steady
    states in Traini et al. 2022 (``settle``), is the steady part, running to the end."""
    longest = (
        f"the longest run of equal segments, [{begin}, {end}), holds {100 * share:.1f}% of the "
        f"series (more than {100 * STEADY_SHARE:g}% needed)"
    )
    from pilot_sys.stats.settle import MIN_READINGS as SETTLE_MIN_READINGS
    from pilot_sys.stats.settle import settle

    if y.size >= SETTLE_MIN_READINGS:
        # the readings as given (not scaled) set the length of settle's outlier guard
        found = settle(y, seconds_per_unit=math.ldexp(1.0, exponent))
        if found.start is not None:
            return (found.start, int(y.size)), (
                f"readings [{found.start}, {y.size}): where the level settles for good "
                f"(segments walked back from the end); {longest}"
            )
    return None, f"no steady part: {longest}"


def describe_change(model: SeriesModel, kind: ChangeKind, unit: str | None = None) -> str:
    """One change in words: "level shift from 100 to 125 at reading 100" (medians either side)."""
    suffix = f" {unit}" if unit else ""
    after = model.segment_at(kind.index)
    before = model.segment_at(kind.index - 1)
    levels = f"from {before.median:.6g} to {after.median:.6g}{suffix}"
    if kind.kind == "level":
        return f"level shift {levels} at reading {kind.index}"
    if kind.kind == "trend":
        return (
            f"trend change at reading {kind.index} (slope {kind.slope_before:.3g} to "
            f"{kind.slope_after:.3g}{suffix} per reading; median {levels})"
        )
    if kind.kind == "spread":
        return (
            f"spread change at reading {kind.index} (residual spread x{kind.spread_ratio:.3g}; "
            f"median {levels})"
        )
    return f"change at reading {kind.index} that a straight line explains (median {levels})"
