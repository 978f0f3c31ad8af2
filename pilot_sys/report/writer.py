"""Everything derived from a result directory: report.md, report.html and plots/*.png.

A plot that fails (a missing font, a broken trace) costs a picture, never the report: the
failure is listed in the report's notes. ``run_and_report`` is a whole session as the CLI and
the Python API run it: the session computes and saves result.json, then the reports are
written from what it returned.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pilot_sys import palette, units
from pilot_sys.limits import JSON_BYTES, read_bounded
from pilot_sys.monitor.plot import Usage
from pilot_sys.report.headline import VerdictView, verdict_view
from pilot_sys.report.html import DATA_PATH_PICTURE
from pilot_sys.report.plots import ANALYSED, EXCLUDED, EXCLUDED_WORDS
from pilot_sys.session.analysis import WPS_PI, TrackAnalysis
from pilot_sys.session.journal import Journal, JournalWriteFailed, RoundRecord
from pilot_sys.session.progress import Note
from pilot_sys.session.result import SessionResult, WorkloadResult
from pilot_sys.session.summary import analysed_indices
from pilot_sys.session.verdict import NO_ESTIMATE, estimate_text, is_excluded
from pilot_sys.topology.graph import ComponentGraph

if TYPE_CHECKING:  # running a session loads the engine: only run_and_report needs it
    from pilot_sys.session.session import Session

REPORT_FILE = "report.md"
PLOTS_DIR = "plots"
MAX_HISTORY_POINTS = 80
MAX_ROUNDS_TABLE = 200


def ci_history(
    journal: Journal, name: str, analysis: TrackAnalysis
) -> dict[str, list[tuple[int, float, float, float]]]:
    """(round index, mean, ci_low, ci_high) of every PI after successive rounds, by replaying
    the analysis over growing prefixes of the journal (EDM results are reused per round); the
    bounds are NaN after a round that left the PI with a mean but no interval."""
    recs = journal.rounds_of(name)
    replay = TrackAnalysis(
        config=analysis.config, pis=analysis.pis, work_unit=analysis.work_unit, cut=analysis.cut
    )
    replay.stable, replay.kept_units = analysis.stable, analysis.kept_units  # same rounds, same EDM
    ends = (
        np.unique(np.linspace(1, len(recs), min(len(recs), MAX_HISTORY_POINTS)).round().astype(int))
        if recs
        else []
    )
    out: dict[str, list[tuple[int, float, float, float]]] = {}
    for end in ends:
        res = replay.update(recs[:end], journal.load_units)
        for pi, p in res.items():
            if p.mean is not None:
                low = np.nan if p.ci_low is None else p.ci_low
                high = np.nan if p.ci_high is None else p.ci_high
                out.setdefault(pi, []).append((recs[end - 1].index, p.mean, low, high))
    return out


def _state(rec: RoundRecord, analysed: set[int]) -> str:
    if rec.failed:
        return "failed"
    if rec.short:
        return "short"
    return "analysed" if rec.index in analysed else "excluded"


@dataclass
class SessionTrace:
    """The saturation signals of every monitored round on one session clock, NaN between
    rounds (so that no line bridges the idle gap), and when each round ran on that clock."""

    t: np.ndarray
    series: dict[str, np.ndarray]
    rounds: dict[int, tuple[float, float]]  # round index -> (first, last sample time)

    def during(self, indices: set[int]) -> dict[str, np.ndarray]:
        """The series restricted to the samples of rounds ``indices``."""
        mask = np.zeros(self.t.size, dtype=bool)
        for index, (a, b) in self.rounds.items():
            if index in indices:
                mask |= (self.t >= a) & (self.t <= b)
        return {k: v[mask] for k, v in self.series.items()}


def _is_signal(key: str) -> bool:
    metric = key.rsplit("/", 1)[-1]
    return metric.startswith("util") or metric in ("busy", "busiest_core")


def session_trace(journal: Journal) -> SessionTrace | None:
    """Every round's saturation signals (``util_*``, busy time, the busiest core) end to end."""
    t0 = journal.records[0].started_at if journal.records else 0.0
    parts: list[tuple[int, np.ndarray, dict[str, list[float | None]]]] = []
    for rec in journal.records:
        trace = journal.load_monitor(rec)
        if trace is None or not trace.timestamps:
            continue
        ts = np.asarray(trace.timestamps, dtype=float) + (trace.start_time - t0)
        parts.append((rec.index, ts, {k: v for k, v in trace.series.items() if _is_signal(k)}))
    if not parts:
        return None
    keys = sorted({k for _, _, series in parts for k in series})
    t = np.concatenate([np.append(ts, np.nan) for _, ts, _ in parts])
    series: dict[str, np.ndarray] = {}
    for key in keys:
        chunks = []
        for _, ts, own in parts:
            values = own.get(key)
            arr = np.full(ts.size + 1, np.nan)
            if values is not None:
                n = min(len(values), ts.size)
                arr[:n] = [np.nan if v is None else v for v in values[:n]]
            chunks.append(arr)
        series[key] = np.concatenate(chunks)
    rounds = {index: (float(ts[0]), float(ts[-1])) for index, ts, _ in parts}
    return SessionTrace(t, series, rounds)


@dataclass
class Figures:
    """What the plots found, for report.md and report.html."""

    made: dict[str, Path] = field(default_factory=dict)  # title -> path in the result directory
    usage: dict[str, Usage] = field(default_factory=dict)  # peaks over ``usage_over``
    # the rounds the peaks are over: the analysed ones, or, when the verdict excluded every
    # round, the excluded ones (what the hidden bottleneck did is then all there is to show)
    usage_over: str = "the analysed rounds"
    path: list[str] = field(default_factory=list)  # the data path's components, CPU outward
    limits: dict[str, str] = field(default_factory=dict)  # component -> its limit, short


def _plot_state(rec: RoundRecord, analysed: set[int], excluded: frozenset[int]) -> str:
    """How a round took part in the analysis (a key of ``plots.STATES``); ``excluded``: the
    rounds the verdict excluded."""
    if rec.failed:
        return "failed"
    if rec.short:
        return "short"
    if rec.index in excluded:
        return EXCLUDED
    return ANALYSED if rec.index in analysed else "below alpha"


def _data_path(journal: Journal, graph: ComponentGraph | None, cut: str | None) -> list[str]:
    """The data path's components from the CPU outward (the session's, or the graph's path to
    the CUT when the session did not record one)."""
    assert journal.manifest is not None
    wanted = list(journal.manifest.data_path or [])
    if not wanted and graph is not None and cut:
        found = graph.paths_to(cut)
        wanted = found[0] if found else []
    if graph is None:
        return wanted
    from pilot_sys.topology.graphio import picture_order

    return picture_order(graph, wanted)


def _load_graph(journal: Journal, result: SessionResult) -> ComponentGraph | None:
    gpath = journal.root / (result.graph_file or "")
    if not result.graph_file or not gpath.is_file():
        return None
    return ComponentGraph.from_node_link(json.loads(read_bounded(gpath, JSON_BYTES)))


def _pi_plots(
    journal: Journal,
    result: SessionResult,
    wres: WorkloadResult,
    ta: TrackAnalysis,
    view: VerdictView,
    pdir: Path,
    several: bool,
    figs: Figures,
    notes: list[str],
) -> None:
    """``<pi>-rounds.png`` and ``<pi>-units.png`` of every PI of one workload, and its WPS fit."""
    from pilot_sys.report import plots

    recs = journal.rounds_of(wres.name)
    analysed = analysed_indices(ta, recs)
    states = {r.index: _plot_state(r, analysed, view.excluded_rounds) for r in recs}
    prefix = f"{wres.name}-" if several else ""
    tag = f" ({wres.name})" if several else ""
    network = units.network_traffic(wres.command, result.bottleneck.cut)
    try:
        history = ci_history(journal, wres.name, ta)
    except Exception as exc:  # noqa: BLE001 - a plot must never cost the report
        notes.append(f"CI history not computed: {exc}")
        history = {}
    loaded: dict[int, dict[str, np.ndarray]] = {}
    badge = (f"session: {view.status_word}", palette.status_colour(view.status))

    def unit_values(rec: RoundRecord) -> dict[str, np.ndarray]:
        if rec.index not in loaded:
            loaded[rec.index] = journal.load_units(rec)[0] if not rec.failed else {}
        return loaded[rec.index]

    for pi, p in wres.pis.items():
        est = plots.Estimate.of(p, network)
        label = f"{wres.name}: {pi}" if several else pi  # the title names the workload too
        try:
            rounds: list[plots.RoundUnits] = []
            if p.source == "unit_readings":
                for r in recs:
                    values = unit_values(r).get(pi)
                    if values is None or not np.asarray(values).size:
                        continue
                    values = np.asarray(values, dtype=float)
                    st = ta.stable.get((r.index, pi))
                    start, end = (st.start, st.end) if st is not None else (0, values.size)
                    rounds.append(plots.RoundUnits(r.index, values, start, end, states[r.index]))
                per_round = [
                    plots.RoundValue(
                        u.index,
                        plots.round_mean(
                            u.values[u.start : u.end] if u.state == ANALYSED else u.values,
                            p.pi_type,
                        ),
                        u.state,
                    )
                    for u in rounds
                ]
                words = (
                    f"the round's {plots.MEAN_WORDS.get(p.pi_type, 'mean')} of its kept readings"
                )
            elif pi == WPS_PI:
                per_round, words = [], ""
            else:
                per_round = [
                    plots.RoundValue(r.index, r.readings.get(pi), states[r.index]) for r in recs
                ]
                words = "the round's reading"
            path = pdir / f"{prefix}{pi}-rounds.png"
            plots.plot_readings(
                label,
                p.unit,
                per_round,
                history.get(pi, []),
                est,
                path,
                network,
                words,
                view.flagged_rounds,
                badge,
            )
            figs.made[f"{pi}{tag}: each round and the interval converging"] = path.relative_to(
                journal.root
            )
            if rounds:
                removed = next((rm for rm in p.removed if rm.method == "edm"), None)
                sub = ""
                if removed is not None:
                    total = removed.samples_removed + removed.samples_kept
                    sub = (
                        f"non-stable removal (EDM) kept {removed.samples_kept} of {total} "
                        f"unit readings of {removed.rounds} analysed rounds"
                    )
                path = pdir / f"{prefix}{pi}-units.png"
                plots.plot_units(label, p.unit, rounds, est, path, network, sub, badge)
                figs.made[f"{pi}{tag}: unit readings per round, warm-up and cool-down removed"] = (
                    path.relative_to(journal.root)
                )
        except Exception as exc:  # noqa: BLE001
            notes.append(f"plot of {pi} failed: {type(exc).__name__}: {exc}")
    if wres.wps is not None and wres.wps.v is not None:
        try:
            ok = [r for r in recs if not r.failed]
            use_done = all(r.work_done is not None for r in ok)
            work = np.array([(r.work_done if use_done else r.work_amount) for r in ok], dtype=float)
            secs = np.array([r.duration for r in ok], dtype=float)
            wps_pi = wres.pis.get(WPS_PI)
            title = f"{WPS_PI}{tag}: " + (
                estimate_text(wps_pi, network) if wps_pi is not None else NO_ESTIMATE
            )
            path = pdir / f"{prefix}wps-fit.png"
            plots.plot_wps(
                work,
                secs,
                [states[r.index] for r in ok],
                wres.wps,
                (wres.wps.v_unit or "work/s").removesuffix("/s"),
                path,
                title,
                badge,
            )
            figs.made[f"WPS fit{tag}"] = path.relative_to(journal.root)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"WPS plot failed: {type(exc).__name__}: {exc}")


def _analysed(journal: Journal, analyses: dict[str, TrackAnalysis], view: VerdictView) -> set[int]:
    """The rounds the result stands on: analysed, and not excluded by the verdict."""
    analysed: set[int] = set()
    for name, ta in analyses.items():
        analysed |= analysed_indices(ta, journal.rounds_of(name))
    return analysed - view.excluded_rounds


def path_figures(
    journal: Journal, result: SessionResult, analyses: dict[str, TrackAnalysis], notes: list[str]
) -> tuple[Figures, ComponentGraph | None, SessionTrace | None]:
    """The data path, its peaks over the analysed rounds, the graph and the session's signals,
    without drawing anything (report.html uses the first two also when plots are skipped)."""
    from pilot_sys.monitor.plot import usage_of

    view = verdict_view(result)
    figs = Figures()
    graph = trace = None
    try:
        graph = _load_graph(journal, result)
        figs.path = _data_path(journal, graph, view.cut)
        if graph is not None:
            from pilot_sys.topology.graphio import limit_caption

            figs.limits = {n: limit_caption(graph, n) for n in figs.path if n in graph}
        trace = session_trace(journal)
        if trace is not None:
            rounds = _analysed(journal, analyses, view)
            if not rounds and view.excluded_rounds:
                rounds = set(view.excluded_rounds)
                figs.usage_over = "the excluded rounds (no round was analysed)"
            figs.usage = usage_of(trace.during(rounds))
    except Exception as exc:  # noqa: BLE001 - the data path must never cost the report
        notes.append(f"data path not read: {type(exc).__name__}: {exc}")
    return figs, graph, trace


def make_plots(
    journal: Journal, result: SessionResult, analyses: dict[str, TrackAnalysis], notes: list[str]
) -> Figures:
    """Every plot of the session in plots/; a plot that fails is a note, never an error."""
    from pilot_sys.report import plots

    pdir = journal.root / PLOTS_DIR
    pdir.mkdir(exist_ok=True)
    view = verdict_view(result)
    thr = float(result.config.get("bottleneck_threshold", 0.8))
    analysed = _analysed(journal, analyses, view)
    figs, graph, trace = path_figures(journal, result, analyses, notes)
    if graph is not None and figs.path:
        try:
            path = pdir / DATA_PATH_PICTURE
            draw_data_path(graph, figs, view, thr, path)
            figs.made[f"Data path coloured by peak utilization over {figs.usage_over}"] = (
                path.relative_to(journal.root)
            )
        except Exception as exc:  # noqa: BLE001
            notes.append(f"data path picture failed: {type(exc).__name__}: {exc}")
    if trace is not None:
        try:
            spans = [trace.rounds[i] for i in sorted(trace.rounds) if i not in analysed]
            path = plots.plot_utilization(
                trace.t,
                trace.series,
                figs.path or None,
                view.cut,
                view.hidden,
                thr,
                pdir / "utilization.png",
                spans,
            )
            if path is not None:
                figs.made["Utilization of the data path over time"] = path.relative_to(journal.root)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"utilization plot failed: {type(exc).__name__}: {exc}")
    several = len(analyses) > 1
    for wres in result.workloads:
        _pi_plots(journal, result, wres, analyses[wres.name], view, pdir, several, figs, notes)
    if result.comparison is not None:
        try:
            cmp_ = result.comparison
            by_name = {w.name: w.pis.get(cmp_.pi) for w in result.workloads}
            rows = [
                (n, p.mean, p.ci_low, p.ci_high)
                for n in cmp_.ranking
                if (p := by_name.get(n)) is not None
                and p.mean is not None
                and p.ci_low is not None
                and p.ci_high is not None
            ]
            if rows:
                unit = next(p.unit for p in by_name.values() if p is not None)
                cut = result.bottleneck.cut
                network = any(units.network_traffic(w.command, cut) for w in result.workloads)
                path = plots.plot_comparison(rows, cmp_.pi, unit, pdir / "comparison.png", network)
                figs.made[f"Comparison of {cmp_.pi}"] = path.relative_to(journal.root)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"comparison plot failed: {type(exc).__name__}: {exc}")
    return figs


def draw_data_path(
    graph: ComponentGraph, figs: Figures, view: VerdictView, threshold: float, path: Path
) -> Path:
    """The data path's components of ``graph`` filled by their peak utilization over the
    analysed rounds (``figs.usage_over``), the CUT and hidden bottlenecks framed."""
    from pilot_sys.monitor.plot import measured_looks
    from pilot_sys.topology.graphio import draw

    shown = graph.subgraph([n for n in figs.path if n in graph])
    looks = measured_looks(shown, figs.usage, view.cut, view.hidden, threshold)
    title = f"data path coloured by peak utilization over {figs.usage_over}"
    draw(
        shown, path, title=title, cut=view.cut, hidden=view.hidden, looks=looks, threshold=threshold
    )
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
        readings = ", ".join(
            f"{k}={units.quantity(v, pi_units.get((r.workload, k), ''), net)}"
            for k, v in r.readings.items()
        )
        state = _state(r, analysed) + (f": {r.failure}" if r.failure else "")
        if is_excluded(r, m.cut or m.config.cut):
            where = ", ".join(r.monitor.hidden_bottlenecks) if r.monitor else "?"
            state = f"{EXCLUDED_WORDS} at {where}"
        elif state == "excluded":
            state = "below alpha"
        rows.append(
            [
                str(r.index),
                r.workload,
                units.work(r.work_amount, work_unit),
                units.duration(r.duration),
                r.phase,
                state,
                readings,
            ]
        )
    return rows


@contextmanager
def library_warnings(notes: list[str], what: str) -> Iterator[None]:
    """Warnings of the libraries called inside (matplotlib, numpy) never reach stderr, whose
    lines are pilot-sys's own; a numeric one (RuntimeWarning: an empty or all-NaN series) is
    kept as a report note, the cosmetic ones (a legend with nothing to list) are dropped."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        note = f"{what}: {w.message}"
        if issubclass(w.category, RuntimeWarning) and note not in notes:
            notes.append(note)


def write_reports(
    journal: Journal,
    result: SessionResult,
    analyses: dict[str, TrackAnalysis],
    plots: bool = True,
    html: bool = True,
) -> Path:
    """report.md and report.html (and plots/ unless ``plots`` is False) in the result
    directory; returns report.md's path."""
    from pilot_sys.report.html import HTML_FILE
    from pilot_sys.report.html import render as render_html
    from pilot_sys.report.markdown import render
    from pilot_sys.session.journal import atomic_write_text

    notes: list[str] = []
    with library_warnings(notes, "plots"):
        if plots:
            figs = make_plots(journal, result, analyses, notes)
        else:
            figs = path_figures(journal, result, analyses, notes)[0]
    if notes:
        result = result.model_copy(update={"notes": result.notes + notes})
    table = rounds_table(journal, analyses)
    path = journal.root / REPORT_FILE
    atomic_write_text(path, render(result, figs.made, table))
    if html:
        page = render_html(
            result,
            figs.made,
            table,
            journal.root,
            figs.usage,
            figs.path,
            figs.limits,
            figs.usage_over,
        )
        atomic_write_text(journal.root / HTML_FILE, page)
    return path


def run_and_report(session: Session, plots: bool = True) -> SessionResult:
    """Run the session, then write report.md and report.html (and plots/ unless ``plots`` is
    False).

    When the journal fills the disk mid-session, the session still returns what it measured
    (on ``session.result``) before raising: the reports are attempted from it, and a failure to
    write them then adds nothing to the disk-full error that is raised. Reports that cannot be
    written (a full disk) or are cut short by a second Ctrl-C cost the reports, not the result:
    one loud note says so and how to finish them (``pilot-sys report DIR``), and the result,
    saved in result.json already, is returned (its exit code is the session's)."""
    try:
        result = session.run()
    except JournalWriteFailed:
        if session.result is not None:
            try:
                with session.finishing:
                    write_reports(session.journal, session.result, session.analyses, plots=plots)
            except (OSError, KeyboardInterrupt):
                pass
        raise
    finish = f"`pilot-sys report {session.journal.root}` writes them"
    try:
        with session.finishing:  # the first Ctrl-C waits for the reports; the second stops them
            write_reports(session.journal, result, session.analyses, plots=plots)
    except OSError as exc:
        session.progress.emit(
            Note(
                f"the reports were not written ({exc.strerror or exc}); "
                f"result.json is: free some space, then {finish}",
                loud=True,
            )
        )
    except KeyboardInterrupt:
        session.progress.emit(
            Note(
                f"the reports were not finished (interrupted); result.json is complete: {finish}",
                loud=True,
            )
        )
    return result
