"""Everything derived from a result directory: report.md and plots/*.png.

A plot that fails (a missing font, a broken trace) costs a picture, never the report: the
failure is listed in the report's notes. ``run_and_report`` is a whole session as the CLI and
the Python API run it: the session computes and saves result.json, then the reports are
written from what it returned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pilot_sys import units
from pilot_sys.errors import BadInput
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.journal import Journal, JournalWriteFailed, RoundRecord
from pilot_sys.session.result import SessionResult
from pilot_sys.session.summary import analysed_indices
from pilot_sys.session.verdict import is_excluded

if TYPE_CHECKING:  # running a session loads the engine: only run_and_report needs it
    from pilot_sys.session.session import Session

REPORT_FILE = "report.md"
PLOTS_DIR = "plots"
MAX_HISTORY_POINTS = 80
MAX_ROUNDS_TABLE = 200


def ci_history(journal: Journal, name: str, analysis: TrackAnalysis) -> dict[str, list[tuple[int, float, float, float]]]:
    """(round index, mean, ci_low, ci_high) of every PI after successive rounds, by replaying
    the analysis over growing prefixes of the journal (EDM results are reused per round)."""
    recs = journal.rounds_of(name)
    replay = TrackAnalysis(config=analysis.config, pis=analysis.pis, work_unit=analysis.work_unit,
                           cut=analysis.cut)
    replay.stable, replay.kept_units = analysis.stable, analysis.kept_units  # same rounds, same EDM
    ends = np.unique(np.linspace(1, len(recs), min(len(recs), MAX_HISTORY_POINTS)).round().astype(int)) if recs else []
    out: dict[str, list[tuple[int, float, float, float]]] = {}
    for end in ends:
        res = replay.update(recs[:end], journal.load_units)
        for pi, p in res.items():
            if p.mean is not None and p.ci_low is not None and p.ci_high is not None:
                out.setdefault(pi, []).append((recs[end - 1].index, p.mean, p.ci_low, p.ci_high))
    return out


def _state(rec: RoundRecord, analysed: set[int]) -> str:
    if rec.failed:
        return "failed"
    if rec.short:
        return "short"
    return "analysed" if rec.index in analysed else "excluded"


def utilization_series(journal: Journal) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every ``util*`` series of every round's trace, on one session clock."""
    t0 = journal.records[0].started_at if journal.records else 0.0
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for rec in journal.records:
        trace = journal.load_monitor(rec)
        if trace is None or not trace.timestamps:
            continue
        ts = np.asarray(trace.timestamps, dtype=float) + (trace.start_time - t0)
        for key, vals in trace.series.items():
            if not key.rsplit("/", 1)[-1].startswith("util"):
                continue
            arr = np.array([np.nan if v is None else v for v in vals], dtype=float)
            n = min(arr.size, ts.size)
            # NaN between rounds keeps the lines from bridging idle gaps
            parts.setdefault(key, []).append((np.append(ts[:n], np.nan), np.append(arr[:n], np.nan)))
    return {k: (np.concatenate([p[0] for p in v]), np.concatenate([p[1] for p in v])) for k, v in parts.items()}


def make_plots(journal: Journal, result: SessionResult, analyses: dict[str, TrackAnalysis], notes: list[str]) -> dict[str, Path]:
    from pilot_sys.report import plots

    pdir = journal.root / PLOTS_DIR
    pdir.mkdir(exist_ok=True)
    made: dict[str, Path] = {}
    several = len(analyses) > 1
    for wres in result.workloads:
        ta = analyses[wres.name]
        recs = journal.rounds_of(wres.name)
        analysed = analysed_indices(ta, recs)
        prefix = f"{wres.name}-" if several else ""
        tag = f" ({wres.name})" if several else ""
        network = units.network_traffic(wres.command, result.bottleneck.cut)
        try:
            history = ci_history(journal, wres.name, ta)
        except Exception as exc:  # noqa: BLE001 - a plot must never cost the report
            notes.append(f"CI history not computed: {exc}")
            history = {}
        for pi, p in wres.pis.items():
            try:
                rounds = [{"index": r.index, "value": r.readings.get(pi), "state": _state(r, analysed)} for r in recs]
                if pi == "wps":
                    rounds = []
                path = pdir / f"{prefix}{pi}-rounds.png"
                plots.plot_readings(pi, p.unit, rounds, history.get(pi, []), p.target, path,
                                    network)
                made[f"{pi}{tag}: readings per round and the CI converging"] = path.relative_to(journal.root)
                if p.source == "unit_readings":
                    segs = []
                    for r in recs:
                        if r.index not in analysed or (r.index, pi) not in ta.stable:
                            continue
                        values = journal.load_units(r)[0].get(pi)
                        st = ta.stable[(r.index, pi)]
                        if values is not None:
                            segs.append({"values": values, "start": st.start, "end": st.end, "changepoints": st.changepoints})
                    if segs:
                        path = pdir / f"{prefix}{pi}-units.png"
                        plots.plot_units(pi, p.unit, segs, path, network)
                        made[f"{pi}{tag}: unit readings, change points, removed phases"] = path.relative_to(journal.root)
            except Exception as exc:  # noqa: BLE001
                notes.append(f"plot of {pi} failed: {type(exc).__name__}: {exc}")
        if wres.wps is not None and wres.wps.v is not None:
            try:
                ok = [r for r in recs if not r.failed]
                use_done = all(r.work_done is not None for r in ok)
                work = np.array([(r.work_done if use_done else r.work_amount) for r in ok], dtype=float)
                secs = np.array([r.duration for r in ok], dtype=float)
                mask = np.array([r.index in analysed for r in ok], dtype=bool)
                path = pdir / f"{prefix}wps-fit.png"
                plots.plot_wps(work, secs, mask, wres.wps.alpha, wres.wps.v, (wres.wps.v_unit or "work/s").removesuffix("/s"), path)
                made[f"WPS fit{tag}"] = path.relative_to(journal.root)
            except Exception as exc:  # noqa: BLE001
                notes.append(f"WPS plot failed: {type(exc).__name__}: {exc}")
    if result.comparison is not None:
        try:
            cmp_ = result.comparison
            by_name = {w.name: w.pis.get(cmp_.pi) for w in result.workloads}
            rows = [(n, p.mean, p.ci_low, p.ci_high) for n in cmp_.ranking
                    if (p := by_name.get(n)) is not None and p.mean is not None and p.ci_low is not None
                    and p.ci_high is not None]
            if rows:
                unit = next(p.unit for p in by_name.values() if p is not None)
                cut = result.bottleneck.cut
                network = any(units.network_traffic(w.command, cut) for w in result.workloads)
                path = plots.plot_comparison(rows, cmp_.pi, unit, pdir / "comparison.png", network)
                made[f"Comparison of {cmp_.pi}"] = path.relative_to(journal.root)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"comparison plot failed: {type(exc).__name__}: {exc}")
    try:
        path = draw_worst_round(journal, result, pdir)
        if path is not None:
            made[f"Component graph coloured by utilization ({path.stem.replace('-', ' ')})"] = path.relative_to(journal.root)
    except Exception as exc:  # noqa: BLE001
        notes.append(f"component graph plot failed: {type(exc).__name__}: {exc}")
    try:
        series = utilization_series(journal)
        if series:
            path = pdir / "utilization.png"
            thr = float(result.config.get("bottleneck_threshold", 0.8))
            plots.plot_utilization(series, thr, result.bottleneck.cut, path)
            made["Utilization over time"] = path.relative_to(journal.root)
    except Exception as exc:  # noqa: BLE001
        notes.append(f"utilization plot failed: {type(exc).__name__}: {exc}")
    return made


def draw_worst_round(journal: Journal, result: SessionResult, pdir: Path) -> Path | None:
    """The monitor's own picture (utilization over time beside the data path coloured by peak
    utilization) of the round that matters most: the first analysable round with a hidden
    bottleneck, else the longest monitored one."""
    from pilot_sys.monitor.bottleneck import Verdict
    from pilot_sys.monitor.plot import draw

    judged = [r for r in journal.records
              if r.monitor is not None and r.monitor.valid is not None and not r.short and not r.failed]
    if not judged:
        return None
    bad = [r for r in judged if r.monitor is not None and r.monitor.valid is False]
    rec = bad[0] if bad else max(judged, key=lambda r: r.duration)
    trace = journal.load_monitor(rec)
    if trace is None or trace.verdict is None:
        return None
    graph = None
    gpath = journal.root / (result.graph_file or "")
    if result.graph_file and gpath.is_file():
        from pilot_sys.topology.graph import ComponentGraph

        graph = ComponentGraph.from_node_link(json.loads(gpath.read_text()))
    path = pdir / f"round-{rec.index}-graph.png"
    draw(trace, Verdict.model_validate(trace.verdict), path, graph=graph)
    return path


def rounds_table(journal: Journal, analyses: dict[str, TrackAnalysis]) -> list[list[str]]:
    """One row per round (the first and last ``MAX_ROUNDS_TABLE / 2`` of a long session), every
    reading in its PI's unit."""
    assert journal.manifest is not None
    m = journal.manifest
    pi_units = {(s.name, p.name): p.unit for s in m.workloads for p in s.pis}
    network = {s.name: units.network_traffic(s.argv, m.cut) for s in m.workloads}
    work_unit = "" if m.config.work_unit == "work" else m.config.work_unit
    rows: list[list[str]] = []
    analysed: set[int] = set()
    for name, ta in analyses.items():
        analysed |= analysed_indices(ta, journal.rounds_of(name))
    recs = journal.records
    if len(recs) > MAX_ROUNDS_TABLE:
        recs = recs[: MAX_ROUNDS_TABLE // 2] + recs[-MAX_ROUNDS_TABLE // 2 :]
    for r in recs:
        net = network.get(r.workload, False)
        readings = ", ".join(f"{k}={units.quantity(v, pi_units.get((r.workload, k), ''), net)}"
                             for k, v in r.readings.items())
        state = _state(r, analysed) + (f": {r.failure}" if r.failure else "")
        if is_excluded(r, m.cut or m.config.cut):
            where = ", ".join(r.monitor.hidden_bottlenecks) if r.monitor else "?"
            state = f"excluded: hidden bottleneck at {where}"
        elif state == "excluded":
            state = "below alpha"
        rows.append([str(r.index), r.workload, units.work(r.work_amount, work_unit),
                     units.duration(r.duration), r.phase, state, readings])
    return rows


def write_reports(journal: Journal, result: SessionResult, analyses: dict[str, TrackAnalysis], plots: bool = True) -> Path:
    """report.md (and plots/ unless ``plots`` is False) in the result directory."""
    from pilot_sys.report.markdown import render
    from pilot_sys.session.journal import atomic_write_text

    notes: list[str] = []
    made = make_plots(journal, result, analyses, notes) if plots else {}
    if notes:
        result = result.model_copy(update={"notes": result.notes + notes})
    path = journal.root / REPORT_FILE
    atomic_write_text(path, render(result, made, rounds_table(journal, analyses)))
    return path


def run_and_report(session: Session, plots: bool = True) -> SessionResult:
    """Run the session, then write report.md (and plots/ unless ``plots`` is False).

    When the journal fills the disk mid-session, the session still returns what it measured
    (on ``session.result``) before raising: the reports are attempted from it, and a failure to
    write them then adds nothing to the disk-full error that is raised.
    """
    try:
        result = session.run()
    except JournalWriteFailed:
        if session.result is not None:
            try:
                write_reports(session.journal, session.result, session.analyses, plots=plots)
            except OSError:
                pass
        raise
    try:
        write_reports(session.journal, result, session.analyses, plots=plots)
    except OSError as exc:
        raise BadInput(str(session.journal.root),
                       f"cannot write the reports: {exc.strerror}") from None
    return result
