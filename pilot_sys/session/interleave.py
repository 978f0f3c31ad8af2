"""Interleaved comparison of several workloads (the Pilot paper, §III-F and Fig. 6).

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

from collections.abc import Mapping

from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.compare_pis import Side, build_table, sample_stats
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.pi_table import PITable
from pilot_sys.session.result import Comparison, PairComparison, PIResult
from pilot_sys.workload.primary import primary_pi


def _overlap(a: PIResult, b: PIResult) -> bool:
    assert (
        a.ci_low is not None
        and a.ci_high is not None
        and b.ci_low is not None
        and b.ci_high is not None
    )
    return a.ci_low <= b.ci_high and b.ci_low <= a.ci_high


def compare_results(
    results: dict[str, PIResult],
    confidence: float,
    threshold: float,
    pi_name: str,
) -> Comparison | None:
    """Rank workloads by one PI (best first) and test every adjacent pair."""
    from pilot_sys.stats.compare import welch

    ready = {
        name: p
        for name, p in results.items()
        if p.mean is not None and p.ci_low is not None and p.ci_high is not None
    }
    if len(ready) < 2:
        return None
    higher = next(iter(ready.values())).higher_is_better
    ranking = sorted(ready, key=lambda n: ready[n].mean or 0.0, reverse=higher)
    pairs: list[PairComparison] = []
    for better, worse in zip(ranking, ranking[1:], strict=False):
        a, b = ready[better], ready[worse]
        assert a.mean is not None and b.mean is not None
        overlap = _overlap(a, b)
        sa, sb = sample_stats(a), sample_stats(b)
        p_value = low = high = None
        if sa is not None and sb is not None:
            w = welch(sa, sb, confidence=confidence, threshold=threshold)  # type: ignore[arg-type]
            p_value, low, high = float(w.p_value), float(w.ci.low), float(w.ci.high)
        diff = a.mean - b.mean
        pairs.append(
            PairComparison(
                better=better,
                worse=worse,
                pi=pi_name,
                difference=diff,
                difference_rel=diff / b.mean if b.mean else None,
                ci_low=low,
                ci_high=high,
                p_value=p_value,
                cis_overlap=overlap,
                separated=(not overlap) or (p_value is not None and p_value < threshold),
            )
        )
    complete = len(ready) == len(results)
    return Comparison(
        pi=pi_name,
        ranking=ranking,
        pairs=pairs,
        p_threshold=threshold,
        all_separated=complete and all(p.separated for p in pairs),
    )


def ranking_pi(per: list[Mapping[str, PIResult]], wanted: str | None = None) -> str | None:
    """The PI to rank by: ``wanted`` when every side reports it, else the primary PI of the
    first side among those every side reports (``pilot_sys.workload.primary``); None when the
    sides share none, or not ``wanted``."""
    if not per:
        return None
    shared = [n for n in per[0] if all(n in p for p in per[1:])]
    if wanted is not None:
        return wanted if wanted in shared else None
    return primary_pi(per[0][n] for n in shared)


def tables_against_first(
    sides: list[Side], confidence: float, threshold: float, first: str | None
) -> list[PITable]:
    """Every shared PI of each side against the first (the reference, as pyperf's compare_to)."""
    return [build_table(sides[0], other, confidence, threshold, first) for other in sides[1:]]


def compare_analyses(
    analyses: dict[str, TrackAnalysis], config: SessionConfig, pi: str | None = None
) -> Comparison | None:
    """The interleaved comparison as it stands: the ranking by the ranked PI (empty while a side
    has no interval on it) and the table of every shared PI of each workload against the first."""
    name = ranking_pi([ta.results for ta in analyses.values()], pi or config.compare_pi)
    if name is None or len(analyses) < 2:
        return None
    ranked = compare_results(
        {w: ta.results[name] for w, ta in analyses.items()},
        config.confidence,
        config.compare_p_threshold,
        name,
    )
    cmp_ = ranked or Comparison(pi=name, ranking=[], p_threshold=config.compare_p_threshold)
    sides = [Side(w, ta.results, ta.counts.analysed) for w, ta in analyses.items()]
    cmp_.tables = tables_against_first(sides, config.confidence, config.compare_p_threshold, name)
    return cmp_
