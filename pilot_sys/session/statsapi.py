"""The engine's narrow view of ``pilot_sys.stats``: three calls, flattened into plain fields.

Kept in one place so the engine does not depend on the statistics modules' model layout;
nothing here computes statistics itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pilot_sys.session.result import WPSResult
from pilot_sys.stats.pi import PIType

if TYPE_CHECKING:
    from pilot_sys.stats.ci import Summary

MIN_SAMPLES = 2  # below this not even a mean is reported (the stats module needs 8 for a CI)
MIN_EDM_SAMPLES = 20  # EDM needs two segments of at least 10 readings


@dataclass
class SummaryView:
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    subsession_size: int | None
    subsession_count: int | None
    subsession_variance: float | None
    autocorrelation: float | None
    required_sample_size: int | None
    usable: bool
    warnings: list[str] = field(default_factory=list)
    basis: str = (
        "samples"  # "rounds": the interval is over round means (``pilot_sys.stats.rounds``)
    )
    heterogeneity_p: float | None = None
    # no interval because the round means drift: the interval over them all the same, and why
    drifting: tuple[float, float, int, str] | None = None


def preload() -> None:
    """Import the statistics modules (scipy.stats among them) ahead of the first round."""
    import pilot_sys.stats.changepoint  # noqa: F401
    import pilot_sys.stats.ci  # noqa: F401
    import pilot_sys.stats.rounds  # noqa: F401
    import pilot_sys.stats.series_model  # noqa: F401
    import pilot_sys.stats.settle  # noqa: F401
    import pilot_sys.stats.wps  # noqa: F401


def stable_segment(values: np.ndarray) -> tuple[int, int, list[int], bool]:
    """One round's unit readings: (begin, end) of its stable part, the change points between its
    segments, and whether a stable part holding more than half of the round exists; without one
    the round is kept whole.

    The stable part is the steady part of ``pilot_sys.stats.series_model`` (the one model that
    ``analyze``, ``steady`` and ``changepoints`` report): EDM's segments without the change points
    a trend explains, and the longest of them grown over the neighbours that match it in level
    and spread. Non-finite readings are left out of the analysis, and every index returned is a
    position in ``values`` as given, which is what the caller slices."""
    from pilot_sys.stats.series_model import series_model

    n = int(values.size)
    finite = np.isfinite(values)
    positions = np.flatnonzero(finite)
    if positions.size == 0:
        return 0, n, [], False
    kept = values[finite] if positions.size < n else values
    model = series_model(kept)
    changepoints = [int(positions[c]) for c in model.changepoints]
    if model.steady is None:
        return 0, n, changepoints, False
    begin, end = model.steady
    return int(positions[begin]), int(positions[end - 1]) + 1, changepoints, True


def summarize(
    samples: np.ndarray,
    pi_type: PIType | str,
    confidence: float,
    target: float,
    autocorr_limit: float,
) -> SummaryView:
    """Mean, CI (subsession analysis) and required sample size of one PI's samples.

    ``target`` is the full CI width as a fraction of the mean (the stats module takes percent)."""
    from pilot_sys.errors import InsufficientData
    from pilot_sys.stats.ci import CITarget
    from pilot_sys.stats.ci import summarize as stats_summarize

    try:
        s = stats_summarize(
            np.asarray(samples, dtype=np.float64),
            pi_type=PIType(pi_type),
            confidence=confidence,
            target=CITarget(percent=100.0 * target),
            autocorr_limit=autocorr_limit,
        )
    except InsufficientData as exc:
        return _refused(exc.problem)
    return _view(s)


def _refused(problem: str) -> SummaryView:
    """No summary at all: too few samples for the statistics to say anything."""
    return SummaryView(None, None, None, None, None, None, None, None, False, [problem])


def _view(s: Summary) -> SummaryView:
    """The flat fields of a ``pilot_sys.stats.ci.Summary``."""
    return SummaryView(
        mean=_f(s.mean),
        ci_low=_f(s.ci_low),
        ci_high=_f(s.ci_high),
        subsession_size=_i(s.subsession_size),
        subsession_count=_i(s.n_subsessions),
        subsession_variance=_f(s.subsession_variance),
        autocorrelation=_f(s.autocorrelation),
        required_sample_size=_i(s.required_sample_size),
        usable=s.ci_low is not None,
        warnings=[str(w) for w in s.warnings],
    )


def summarize_rounds(
    groups: list[np.ndarray],
    pi_type: PIType | str,
    confidence: float,
    target: float,
    autocorr_limit: float,
) -> SummaryView:
    """``summarize`` for unit readings kept from several rounds: the pooled interval, or one over
    round means when the rounds disagree (see ``pilot_sys.stats.rounds``)."""
    from pilot_sys.errors import InsufficientData
    from pilot_sys.stats.ci import CITarget
    from pilot_sys.stats.rounds import summarize_rounds as stats_summarize_rounds

    try:
        r = stats_summarize_rounds(
            [np.asarray(g, dtype=np.float64) for g in groups],
            pi_type=PIType(pi_type),
            confidence=confidence,
            target=CITarget(percent=100.0 * target),
            autocorr_limit=autocorr_limit,
        )
    except InsufficientData as exc:
        return _refused(exc.problem)
    from pilot_sys.stats.rounds import refusal

    view = _view(r.summary)
    view.basis, view.heterogeneity_p = r.basis, r.heterogeneity_p
    d = r.drifting
    if d is not None and d.ci_low is not None and d.ci_high is not None and d.n_subsessions:
        view.drifting = (
            float(d.ci_low),
            float(d.ci_high),
            int(d.n_subsessions),
            refusal(view.warnings) or "the round means drift",
        )
    return view


def wps_fit(
    work: np.ndarray, seconds: np.ndarray, confidence: float, autocorr_limit: float
) -> WPSResult | None:
    """The WPS regression t = alpha + w / v over analysed rounds; None while it cannot be fitted."""
    from pilot_sys.errors import InsufficientData
    from pilot_sys.stats.wps import fit

    try:
        f = fit(work, seconds, confidence=confidence, autocorr_limit=autocorr_limit)
    except InsufficientData:
        return None
    return WPSResult(
        alpha=_f(f.alpha),
        alpha_ci_low=_f(f.alpha_ci_low),
        alpha_ci_high=_f(f.alpha_ci_high),
        v=_f(f.v),
        v_ci_low=_f(f.v_ci_low),
        v_ci_high=_f(f.v_ci_high),
        alpha_work=_f(f.min_useful_work),
        rounds_used=int(work.size),
        subsession_size=int(f.subsession_size),
        warnings=[str(w) for w in f.warnings],
    )


def point_estimate(values: np.ndarray, pi_type: PIType | str) -> float:
    """The PI type's mean (harmonic for rates) of a few per-round figures."""
    from pilot_sys.stats.pi import point_estimate as estimate

    return float(estimate(np.asarray(values, dtype=np.float64), PIType(pi_type)))


def _f(x: object) -> float | None:
    if x is None:
        return None
    v = float(x)  # type: ignore[arg-type]
    return v if np.isfinite(v) else None


def _i(x: object) -> int | None:
    return None if x is None else int(x)  # type: ignore[call-overload]
