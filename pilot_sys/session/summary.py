"""From a journal (and, live, the engine's analyses) to a :class:`SessionResult`.

The same code serves a live session and ``pilot-sys report DIR``: the result is always derived
from what the journal holds, so a report regenerated later says exactly what the live one did.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from pilot_sys import units
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.early_stop import EARLY, excluded_estimate
from pilot_sys.session.journal import Journal, RoundRecord
from pilot_sys.session.monitoring import GRAPH_FILE
from pilot_sys.session.phase_check import check_rounds, compare_workloads
from pilot_sys.session.result import (
    STATUS_EXIT,
    BottleneckSection,
    CommandUsage,
    OverheadSection,
    SessionResult,
    WorkloadResult,
)
from pilot_sys.session.verdict import (
    KILLED,
    decide,
    excluded_round,
    is_excluded,
    judged,
    unjudged_sighting,
)
from pilot_sys.session.work_done import work_done_text

__all__ = ["KILLED", "analyse_journal", "build_result", "offline_stop_reason", "session_seconds"]


def analyse_journal(journal: Journal) -> dict[str, TrackAnalysis]:
    """Re-run the analysis of every workload over its journaled rounds (offline)."""
    assert journal.manifest is not None
    cfg = journal.manifest.config
    out: dict[str, TrackAnalysis] = {}
    for spec in journal.manifest.workloads:
        ta = TrackAnalysis(
            config=cfg,
            pis=list(spec.pis),
            work_unit=cfg.work_unit,
            cut=journal.manifest.cut or cfg.cut,
            work_done=work_done_text(spec),
        )
        ta.update(journal.rounds_of(spec.name), journal.load_units)
        out[spec.name] = ta
    return out


def analysed_indices(analysis: TrackAnalysis, records: list[RoundRecord]) -> set[int]:
    """The rounds the PI analysis used: not failed, short, excluded or below alpha."""
    aw = analysis.alpha_work
    return {
        r.index
        for r in records
        if not r.failed
        and not r.short
        and not is_excluded(r, analysis.cut)
        and not (aw > 0 and r.work_amount < aw)
    }


def session_seconds(journal: Journal, current: float | None = None) -> float:
    """The session's wall time across invocations, without the idle gaps between them: each
    invocation from its start to its clean end, or (killed) to the end of its last round.
    ``current``: the seconds the running invocation has taken so far, when there is one (it is
    the last, and has no end yet). This is what ``-s`` limits."""
    assert journal.manifest is not None
    invs = journal.manifest.invocations
    total = 0.0
    for i, inv in enumerate(invs):
        last = i == len(invs) - 1
        if last and current is not None:
            total += current
            continue
        if inv.ended_at is not None:
            total += max(inv.ended_at - inv.started_at, 0.0)
            continue
        upto = invs[i + 1].first_round if not last else None
        ends = [
            r.started_at + r.duration
            for r in journal.records
            if r.index >= inv.first_round and (upto is None or r.index < upto)
        ]
        total += max(max(ends, default=inv.started_at) - inv.started_at, 0.0)
    return total


def combined_trace(journal: Journal, indices: set[int]) -> Any | None:
    """The analysed rounds' monitor traces end to end on one clock (None without any)."""
    from pilot_sys.monitor.bottleneck_gpu_startup import LAUNCHES, launch_attrs
    from pilot_sys.monitor.culprits import OTHERS, merge_rankings
    from pilot_sys.monitor.trace import MonitorTrace, joined_source

    traces = [
        t
        for r in journal.records
        if r.index in indices and (t := journal.load_monitor(r)) is not None and t.timestamps
    ]
    if not traces:
        return None
    t0 = traces[0].start_time
    keys = list(dict.fromkeys(k for t in traces for k in t.series))
    stamps: list[float] = []
    series: dict[str, list[float | None]] = {k: [] for k in keys}
    limits: dict[str, dict[str, Any]] = {}
    attrs: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    firsts: list[int] = []  # where each round's samples begin: each is a launch of the workload
    for t in traces:
        firsts.append(len(stamps))
        stamps.extend(x + (t.start_time - t0) for x in t.timestamps)
        for k in keys:
            values = t.series.get(k)
            # a rate needs two samples: the first of each round is undefined, never a bridge
            # across the gap between rounds
            part = list(values) if values is not None else [None] * len(t.timestamps)
            if part:
                part[0] = None
            series[k].extend(part)
        limits.update(t.limits)
        attrs.update(t.attrs)
        notes.extend(n for n in t.notes if n not in notes)
    rankings = [t.attrs[OTHERS] for t in traces if isinstance(t.attrs.get(OTHERS), dict)]
    if len(rankings) > 1:  # the other processes over the rounds together, not the last round's
        attrs[OTHERS] = merge_rankings(rankings)
    attrs[LAUNCHES] = launch_attrs(firsts)  # a GPU workload's start-up in each (the verdict)
    # each source's own record, end to end: its interval is what the verdict's "within one
    # interval" rules read (a GPU's edges, a remote host's scrapes)
    sources = {
        name: joined_source(
            [(t.start_time - t0, t.sources[name]) for t in traces if name in t.sources]
        )
        for name in dict.fromkeys(n for t in traces for n in t.sources)
    }
    first = traces[0]
    return MonitorTrace(
        rate_hz=first.rate_hz,
        start_time=t0,
        timestamps=stamps,
        series=series,
        command=first.command,
        component_under_test=first.component_under_test,
        limits=limits,
        attrs=attrs,
        notes=notes,
        sources=sources,
    )


#: a component other than the CUT above the threshold for this share of the included rounds'
#: time (half the allowance) is shown as evidence of a busy host when a target is missed
BUSY_SHARE = 0.05


#: the peak-table row of the single-core figure the verdict judges when it is not the busiest
#: core's own: the busiest core counted only while the workload itself ran on it
OWN_CORE = " (the workload's own share)"


def utilization_peaks(trace: Any, verdict: Any) -> dict[str, float]:
    """The report's peak table: each utilization series' peak as the plot and the graph boxes
    show it (``monitor.plot.signal_peaks``), highest first. The busiest core is one figure
    everywhere; where the verdict judged the single core by the workload's own share of it (its
    processes were recorded), that figure is a row of its own, named so."""
    from pilot_sys.monitor.plot import signal_peaks

    kinds = {s.metric: s for s in verdict.per_component if s.kind == "utilization"}
    raw = signal_peaks(trace.series)
    peaks = {k: v for k, v in raw.items() if k in kinds}
    for key, s in kinds.items():
        if s.peak is None:
            continue
        if key not in peaks:
            peaks[key] = float(s.peak)  # a signal the verdict derived (throttled periods)
        elif s.direction == "single core" and abs(float(s.peak) - peaks[key]) > 5e-3:
            peaks[key + OWN_CORE] = float(s.peak)
    return dict(sorted(peaks.items(), key=lambda kv: -kv[1]))


def bottleneck_section(
    journal: Journal, included: set[int], cut: str | None, monitored: bool, threshold: float = 0.8
) -> BottleneckSection:
    """The verdict over the included rounds taken together (their traces end to end): a
    component above the threshold for long enough across them is a hidden bottleneck that short
    rounds hide. When every judged round was excluded, the excluded rounds are taken together
    instead: the section then names what governed them, with its evidence. The rounds excluded
    on their own verdict, and those that saw one but were too short to judge, are listed (see
    ``pilot_sys.session.verdict``)."""
    sec = BottleneckSection(monitored=monitored, cut=cut)
    errors = {r.monitor.error for r in journal.records if r.monitor is not None and r.monitor.error}
    if errors:
        sec.error = "; ".join(sorted(errors))
    sec.rounds_invalid = [r.index for r in journal.records if is_excluded(r, cut)]
    sec.rounds_unjudged = [r.index for r in journal.records if unjudged_sighting(r)]
    if not monitored:
        return sec
    judged_over = included
    if not included and sec.rounds_invalid:
        # every judged round excluded: their traces together still say what governed the session
        judged_over = set(sec.rounds_invalid)
    trace = combined_trace(journal, judged_over)
    if trace is None:
        if not included:
            sec.detail["not_judged"] = "no round was analysed"
        return sec
    from pilot_sys.monitor.bottleneck import assess, min_intervals

    assert journal.manifest is not None
    verdict = assess(trace, None, cut, threshold=threshold, data_path=journal.manifest.data_path)
    sec.cut_saturated = verdict.cut_saturated
    hidden = [f"{h.component} ({h.direction})" for h in verdict.hidden_bottlenecks]
    sec.max_utilization = utilization_peaks(trace, verdict)
    busy = {
        f"{s.component} ({s.direction})": float(s.time_above_fraction)
        for s in verdict.per_component
        if s.judged and s.component != cut and (s.time_above_fraction or 0.0) >= BUSY_SHARE
    }
    sec.detail = {
        "judged_over": "included rounds" if judged_over is included else "excluded rounds",
        "rounds_judged": sum(1 for r in journal.records if judged(r)),
        "samples": len(trace.timestamps),
        "intervals": verdict.intervals,
        "threshold": threshold,
        "cut_saturated": verdict.cut_saturated,
        "evidence": {
            f"{h.component} ({h.direction})": h.evidence for h in verdict.hidden_bottlenecks
        },
        # the other processes that used each hidden bottleneck most (``monitor.culprits``)
        "culprits": {
            f"{h.component} ({h.direction})": h.culprits
            for h in verdict.hidden_bottlenecks
            if h.culprits
        },
        "busy": busy,
        "notes": verdict.notes[:12],
    }
    if verdict.accelerators:
        sec.detail["accelerators"] = verdict.accelerators
    from pilot_sys.monitor.bottleneck_loopback import LOOPBACK_WORDS, is_loopback

    if is_loopback(cut, trace):
        sec.detail["loopback"] = LOOPBACK_WORDS
    if not verdict.enough_samples:
        sec.detail["not_judged"] = (
            f"the included rounds hold {verdict.intervals} sampled "
            f"interval(s) together, {min_intervals()} are needed"
        )
        sec.detail["seen"] = hidden
        return sec
    sec.valid = verdict.valid
    sec.hidden_bottlenecks = hidden
    sec.governing = verdict.governing
    return sec


def command_usage(records: list[RoundRecord]) -> CommandUsage | None:
    """Mean user and system CPU per round and the largest peak RSS over ``records`` that carry
    a command's rusage; None for workloads that run in-process."""
    used = [r.usage for r in records if r.usage is not None]
    if not used:
        return None
    peaks = [u.max_rss_bytes for u in used if u.max_rss_bytes is not None]
    return CommandUsage(
        rounds=len(used),
        user_seconds=float(np.mean([u.user_seconds for u in used])),
        system_seconds=float(np.mean([u.system_seconds for u in used])),
        max_rss_bytes=max(peaks) if peaks else None,
    )


def build_result(
    journal: Journal,
    analyses: dict[str, TrackAnalysis],
    stop_reason: str,
    elapsed: float,
    notes: list[str] | None = None,
    comparison: Any = None,
) -> SessionResult:
    assert journal.manifest is not None
    m = journal.manifest
    cfg = m.config
    workloads: list[WorkloadResult] = []
    analysed: set[int] = set()
    for spec in m.workloads:
        ta = analyses[spec.name]
        recs = journal.rounds_of(spec.name)
        mine = analysed_indices(ta, recs)
        analysed |= mine
        a = min((r.work_amount for r in recs if r.index in analysed), default=cfg.work_min)
        workloads.append(
            WorkloadResult(
                name=spec.name,
                command=list(spec.argv),
                work_unit=cfg.work_unit,
                work_range=(float(max(a, ta.alpha_work)), float(cfg.work_max)),
                pis=ta.results,
                wps=ta.wps,
                rounds=ta.counts,
                seconds_in_rounds=float(sum(r.duration for r in recs)),
                process_start_seconds=spec.process_start_seconds,
                usage=command_usage([r for r in recs if r.index in mine]),
                phase_check=check_rounds(journal, [r for r in recs if r.index in mine])
                if cfg.monitor
                else None,
            )
        )
    if comparison is not None and cfg.monitor:
        comparison.phase_behaviour = compare_workloads(
            journal, [(p.better, p.worse) for p in comparison.pairs], analysed
        )
    last = m.invocations[-1] if m.invocations else None
    monitored = cfg.monitor and any(
        r.monitor is not None and r.monitor.samples > 0 for r in journal.records
    )
    bsec = bottleneck_section(
        journal, analysed, m.cut or cfg.cut, monitored, cfg.bottleneck_threshold
    )
    if last is not None and last.monitor_error:
        bsec.error = last.monitor_error if not bsec.error else f"{last.monitor_error}; {bsec.error}"
    excluded = [
        excluded_round(r, _round_verdict(journal, r))
        for r in journal.records
        if is_excluded(r, bsec.cut)
    ]
    judged_rounds = sum(1 for r in journal.records if judged(r))
    more = _more_rounds(analyses, workloads)
    needed = None
    if more is not None and journal.records and elapsed > 0:
        needed = elapsed + more * len(workloads) * elapsed / len(journal.records)
    failed = "workload failed: "
    failure = next((n.removeprefix(failed) for n in notes or [] if n.startswith(failed)), None)
    early = next((n.removeprefix(EARLY) for n in notes or [] if n.startswith(EARLY)), None)
    verdict = decide(
        stop_reason=str(stop_reason),
        workloads=workloads,
        bsec=bsec,
        excluded=excluded,
        judged_rounds=judged_rounds,
        cfg=cfg,
        comparison=comparison,
        network=lambda w: units.network_traffic(w.command, bsec.cut),
        needed_seconds=needed,
        more_rounds=more,
        failure=failure,
        result_dir=str(journal.root),
        early_stop=early,
        excluded_estimate=excluded_estimate(journal.records, m.workloads, bsec.cut),
    )
    status = verdict.status
    engine = [r.engine_seconds for r in journal.records if r.engine_seconds is not None]
    overhead = OverheadSection(
        sampling_rate_hz=cfg.sample_rate_hz if cfg.monitor else None,
        rate_chosen_by=cfg.sample_rate_source if cfg.monitor else "off",
        monitor_cost=last.monitor_cost if last is not None else None,
        engine_seconds_per_round=float(np.median(engine)) if engine else None,
    )
    if m.overhead:  # the tuner's measurement, when --overhead-budget ran it
        overhead.measured_overhead = m.overhead.get("measured_overhead")
        ci = m.overhead.get("measured_overhead_ci")
        overhead.measured_overhead_ci = tuple(ci) if ci else None  # type: ignore[assignment]
        overhead.method = m.overhead.get("method")
        overhead.p_value = m.overhead.get("p_value")
        overhead.budget = m.overhead.get("budget")
        overhead.note = m.overhead.get("message")
        overhead.tuning_seconds = m.overhead.get("tuning_seconds")
        if m.overhead.get("sampling_rate_hz") is not None:
            overhead.sampling_rate_hz = m.overhead["sampling_rate_hz"]
            overhead.rate_chosen_by = m.overhead.get("rate_chosen_by", "tuner")
    all_notes = list(notes or []) + [r for r in journal.repairs]
    for w in workloads:
        for p in w.pis.values():
            # the PI table already says whether the CI is missing or too wide
            all_notes.extend(
                f"{w.name}/{p.name}: {msg}"
                for msg in p.warnings
                if "too few" not in msg and "is wider than the target" not in msg
            )
    return SessionResult(
        created_at=time.time(),
        result_dir=str(journal.root),
        status=status,
        exit_code=int(STATUS_EXIT[status]),
        stop_reason=str(stop_reason),
        verdict=verdict,
        elapsed_seconds=float(elapsed),
        measured_seconds=float(sum(r.duration for r in journal.records)),
        config=cfg.model_dump(mode="json"),
        workloads=workloads,
        comparison=comparison,
        bottleneck=bsec,
        graph_file=GRAPH_FILE if (journal.root / GRAPH_FILE).is_file() else None,
        overhead=overhead,
        context=m.context,
        notes=list(dict.fromkeys(all_notes)),
    )


def offline_stop_reason(journal: Journal) -> tuple[str, float]:
    """Why the last invocation stopped, as recorded (a missing clean stop means it was killed),
    and the session's wall time (``session_seconds``)."""
    assert journal.manifest is not None
    invs = journal.manifest.invocations
    if not invs:
        return KILLED, 0.0
    last = invs[-1]
    elapsed = session_seconds(journal)
    if last.ended_at is None or last.stop_reason is None:
        return KILLED, elapsed
    return last.stop_reason, elapsed


def _round_verdict(journal: Journal, rec: RoundRecord) -> dict[str, Any] | None:
    """The monitor verdict saved in a round's trace (None when it cannot be read)."""
    try:
        trace = journal.load_monitor(rec)
    except Exception:  # noqa: BLE001 - a damaged trace costs the round's numbers, not the result
        return None
    return None if trace is None else trace.verdict


def _more_rounds(analyses: dict[str, TrackAnalysis], workloads: list[WorkloadResult]) -> int | None:
    """Rounds each workload still needs for its targets, the most of any (None: unknown)."""
    most: int | None = None
    for w in workloads:
        ta = analyses.get(w.name)
        if ta is None:
            continue
        n = ta.rounds_needed(ta.counts.analysed)
        if n is None:
            n = ta.rounds_to_first_interval(ta.counts.analysed)
        if n is None:
            return None
        most = max(most or 0, n)
    return most
