"""Interleaved comparison of several workloads (seeds/002 §III-F, Fig. 6).

The engine runs one round of each workload in turn (W1 R1, W2 R1, ..., Wn R1, W1 R2, ...), so
slow drifts of the machine hit every workload alike instead of whichever ran last. After each
round of analysis, the workloads are ranked by the mean of the compared PI; the session stops
when every adjacent pair of the ranking is *separated*: their CIs do not overlap, or Welch's test
on the subsession statistics gives p below the threshold (default 0.01), and every CI meets its
target (the engine's usual rule).

Welch's test takes each side as (mean, variance of one subsession mean, number of subsessions),
exactly what ``result.json`` keeps, so saved results compare the same way as live ones.
"""

from __future__ import annotations

from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.result import Comparison, PairComparison, PIResult, SessionResult
from pilot_sys.stats.pi import PIType


def sample_stats(p: PIResult) -> object | None:
    """Welch's inputs from a PI result, on the PI's own scale (None without an interval).

    A harmonic PI's subsession variance is of reciprocals; the delta method maps it to the rate
    scale (Var(1/X) ~ Var(X) / m^4), as ``SampleStats.from_summary`` does for a live summary."""
    from pilot_sys.stats.compare import SampleStats

    if p.mean is None or p.subsession_variance is None or not p.subsession_count or p.subsession_count < 2:
        return None
    variance = p.subsession_variance
    if p.pi_type == PIType.HARMONIC:
        variance = variance * p.mean**4
    return SampleStats(mean=p.mean, variance=variance, count=p.subsession_count)


def _overlap(a: PIResult, b: PIResult) -> bool:
    assert a.ci_low is not None and a.ci_high is not None and b.ci_low is not None and b.ci_high is not None
    return a.ci_low <= b.ci_high and b.ci_low <= a.ci_high


def compare_results(
    results: dict[str, PIResult], confidence: float, threshold: float, pi_name: str,
) -> Comparison | None:
    """Rank workloads by one PI (best first) and test every adjacent pair."""
    from pilot_sys.stats.compare import welch

    ready = {name: p for name, p in results.items() if p.mean is not None and p.ci_low is not None and p.ci_high is not None}
    if len(ready) < 2:
        return None
    higher = next(iter(ready.values())).higher_is_better
    ranking = sorted(ready, key=lambda n: ready[n].mean or 0.0, reverse=higher)
    pairs: list[PairComparison] = []
    for better, worse in zip(ranking, ranking[1:]):
        a, b = ready[better], ready[worse]
        assert a.mean is not None and b.mean is not None
        overlap = _overlap(a, b)
        sa, sb = sample_stats(a), sample_stats(b)
        p_value = low = high = None
        if sa is not None and sb is not None:
            w = welch(sa, sb, confidence=confidence, threshold=threshold)  # type: ignore[arg-type]
            p_value, low, high = float(w.p_value), float(w.ci.low), float(w.ci.high)
        diff = a.mean - b.mean
        pairs.append(PairComparison(
            better=better, worse=worse, pi=pi_name, difference=diff,
            difference_rel=diff / b.mean if b.mean else None, ci_low=low, ci_high=high, p_value=p_value,
            cis_overlap=overlap, separated=(not overlap) or (p_value is not None and p_value < threshold),
        ))
    complete = len(ready) == len(results)
    return Comparison(pi=pi_name, ranking=ranking, pairs=pairs, p_threshold=threshold,
                      all_separated=complete and all(p.separated for p in pairs))


def _first_with_ci(names: list[str], per: list[dict[str, PIResult]]) -> str | None:
    """The first of ``names`` with a CI on every side, else the first one (still without a CI)."""
    for name in names:
        if all(p[name].ci_low is not None and p[name].ci_high is not None for p in per):
            return name
    return names[0] if names else None


def common_pi(analyses: dict[str, TrackAnalysis], wanted: str | None = None) -> str | None:
    """The PI to rank by: ``wanted``, else the first PI every workload reports that has a CI on
    every side (a per-round reading may still lack one while the WPS fit or unit readings have it)."""
    names = [set(ta.results) for ta in analyses.values()]
    if not names:
        return None
    shared = set.intersection(*names)
    if wanted is not None:
        return wanted if wanted in shared else None
    first = next(iter(analyses.values()))
    return _first_with_ci([n for n in first.results if n in shared], [ta.results for ta in analyses.values()])


def compare_analyses(analyses: dict[str, TrackAnalysis], config: SessionConfig, pi: str | None = None) -> Comparison | None:
    name = common_pi(analyses, pi or config.compare_pi)
    if name is None:
        return None
    return compare_results({w: ta.results[name] for w, ta in analyses.items()}, config.confidence,
                           config.compare_p_threshold, name)


def compare_saved(results: list[SessionResult], labels: list[str], pi: str | None, threshold: float) -> Comparison | None:
    """Compare the first workload of several saved results (``pilot-sys compare DIR_A DIR_B``)."""
    per: list[dict[str, PIResult]] = [r.primary().pis for r in results]
    shared = set.intersection(*(set(p) for p in per))
    name = pi if pi is not None else _first_with_ci([n for n in per[0] if n in shared], per)
    if name is None or name not in shared:
        return None
    confidence = float(results[0].config.get("confidence", 0.95))
    return compare_results({label: p[name] for label, p in zip(labels, per)}, confidence, threshold, name)
