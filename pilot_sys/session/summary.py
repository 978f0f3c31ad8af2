"""From a journal (and, live, the engine's analyses) to a :class:`SessionResult`.

The same code serves a live session and ``pilot-sys report DIR``: the result is always derived
from what the journal holds, so a report regenerated later says exactly what the live one did.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.engine import StopReason
from pilot_sys.session.journal import Journal, RoundRecord
from pilot_sys.session.monitoring import GRAPH_FILE
from pilot_sys.session.phase_check import check_rounds, compare_workloads
from pilot_sys.session.result import (
    STATUS_EXIT,
    BottleneckSection,
    OverheadSection,
    SessionResult,
    Status,
    WorkloadResult,
)

KILLED = "pilot-sys stopped without a clean stop (killed or crashed)"


def analyse_journal(journal: Journal) -> dict[str, TrackAnalysis]:
    """Re-run the analysis of every workload over its journaled rounds (offline)."""
    assert journal.manifest is not None
    cfg = journal.manifest.config
    out: dict[str, TrackAnalysis] = {}
    for spec in journal.manifest.workloads:
        ta = TrackAnalysis(config=cfg, pis=list(spec.pis), work_unit=cfg.work_unit)
        ta.update(journal.rounds_of(spec.name), journal.load_units)
        out[spec.name] = ta
    return out


def analysed_indices(analysis: TrackAnalysis, records: list[RoundRecord]) -> set[int]:
    aw = analysis.alpha_work
    return {r.index for r in records if not r.failed and not r.short and not (aw > 0 and r.work_amount < aw)}


def combined_trace(journal: Journal, indices: set[int]) -> Any | None:
    """The analysed rounds' monitor traces end to end on one clock (None without any)."""
    from pilot_sys.monitor.trace import MonitorTrace

    traces = [t for r in journal.records if r.index in indices and (t := journal.load_monitor(r)) is not None and t.timestamps]
    if not traces:
        return None
    t0 = traces[0].start_time
    keys = list(dict.fromkeys(k for t in traces for k in t.series))
    stamps: list[float] = []
    series: dict[str, list[float | None]] = {k: [] for k in keys}
    limits: dict[str, dict[str, Any]] = {}
    attrs: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for t in traces:
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
    first = traces[0]
    return MonitorTrace(rate_hz=first.rate_hz, start_time=t0, timestamps=stamps, series=series,
                        command=first.command, component_under_test=first.component_under_test,
                        limits=limits, attrs=attrs, notes=notes)


def bottleneck_section(journal: Journal, analysed: set[int], cut: str | None, monitored: bool,
                       threshold: float = 0.8) -> BottleneckSection:
    """The verdict over all analysed rounds together (their traces end to end): a component
    above the threshold for long enough across the session is a hidden bottleneck. Per-round
    verdicts are kept as detail; a round of a few samples cannot be judged on its own."""
    sec = BottleneckSection(monitored=monitored, cut=cut)
    errors = {r.monitor.error for r in journal.records if r.monitor is not None and r.monitor.error}
    if errors:
        sec.error = "; ".join(sorted(errors))
    judged = [r for r in journal.records if r.index in analysed and r.monitor is not None and r.monitor.valid is not None]
    sec.rounds_invalid = [r.index for r in judged if r.monitor is not None and r.monitor.valid is False]
    if not monitored:
        return sec
    trace = combined_trace(journal, analysed)
    if trace is None:
        return sec
    from pilot_sys.monitor.bottleneck import assess

    assert journal.manifest is not None
    verdict = assess(trace, None, cut, threshold=threshold, data_path=journal.manifest.data_path)
    sec.valid = verdict.valid
    sec.hidden_bottlenecks = [f"{h.component} ({h.direction})" for h in verdict.hidden_bottlenecks]
    peaks = {s.metric: float(s.peak) for s in verdict.per_component if s.peak is not None and s.kind == "utilization"}
    sec.max_utilization = dict(sorted(peaks.items(), key=lambda kv: -kv[1]))
    sec.detail = {
        "rounds_judged": len(judged), "samples": len(trace.timestamps), "cut_saturated": verdict.cut_saturated,
        "evidence": {f"{h.component} ({h.direction})": h.evidence for h in verdict.hidden_bottlenecks},
        "notes": verdict.notes[:12],
    }
    return sec


def status_for(stop_reason: str, bottleneck_valid: bool | None, any_result: bool) -> Status:
    if stop_reason in (StopReason.INTERRUPTED, KILLED):
        return Status.INTERRUPTED
    if stop_reason == StopReason.WORKLOAD_FAILED:
        return Status.WORKLOAD_FAILED
    if bottleneck_valid is False:
        return Status.INVALID
    if stop_reason in (StopReason.TARGETS_MET, StopReason.TARGETS_MET_AT_END):
        return Status.VALID
    if stop_reason == StopReason.DISK_FULL:
        return Status.INCOMPLETE
    return Status.LIMIT_REACHED if any_result else Status.INCOMPLETE


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
                name=spec.name, command=list(spec.argv), work_unit=cfg.work_unit,
                work_range=(float(max(a, ta.alpha_work)), float(cfg.work_max)),
                pis=ta.results, wps=ta.wps, rounds=ta.counts,
                seconds_in_rounds=float(sum(r.duration for r in recs)),
                phase_check=check_rounds(journal, [r for r in recs if r.index in mine]) if cfg.monitor else None,
            )
        )
    if comparison is not None and cfg.monitor:
        comparison.phase_behaviour = compare_workloads(journal, [(p.better, p.worse) for p in comparison.pairs], analysed)
    last = m.invocations[-1] if m.invocations else None
    monitored = cfg.monitor and any(r.monitor is not None and r.monitor.samples > 0 for r in journal.records)
    bsec = bottleneck_section(journal, analysed, m.cut or cfg.cut, monitored, cfg.bottleneck_threshold)
    if last is not None and last.monitor_error:
        bsec.error = last.monitor_error if not bsec.error else f"{last.monitor_error}; {bsec.error}"
    any_result = any(p.mean is not None for w in workloads for p in w.pis.values())
    status = status_for(stop_reason, bsec.valid, any_result)
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
            all_notes.extend(f"{w.name}/{p.name}: {msg}" for msg in p.warnings
                             if "too few" not in msg and "is wider than the target" not in msg)
    if bsec.valid is False:
        all_notes.insert(0, f"INVALID: hidden bottleneck at {', '.join(bsec.hidden_bottlenecks) or '?'}")
    return SessionResult(
        created_at=time.time(), result_dir=str(journal.root), status=status, exit_code=int(STATUS_EXIT[status]),
        stop_reason=str(stop_reason), elapsed_seconds=float(elapsed), config=cfg.model_dump(mode="json"),
        workloads=workloads, comparison=comparison, bottleneck=bsec,
        graph_file=GRAPH_FILE if (journal.root / GRAPH_FILE).is_file() else None,
        overhead=overhead, context=m.context, notes=list(dict.fromkeys(all_notes)),
    )


def offline_stop_reason(journal: Journal) -> tuple[str, float]:
    """Why the last invocation stopped, as recorded; a missing clean stop means it was killed."""
    assert journal.manifest is not None
    invs = journal.manifest.invocations
    if not invs:
        return KILLED, 0.0
    last = invs[-1]
    elapsed = sum(((i.ended_at or i.started_at) - i.started_at) for i in invs)
    if last.ended_at is None or last.stop_reason is None:
        if journal.records:
            elapsed = max(elapsed, journal.records[-1].started_at + journal.records[-1].duration - invs[0].started_at)
        return KILLED, elapsed
    return last.stop_reason, elapsed
