"""Reports from a result directory alone (``pilot-sys report DIR``): read-only on the journal."""

from __future__ import annotations

from pathlib import Path

from pilot_sys.report.writer import write_reports
from pilot_sys.session.journal import Journal
from pilot_sys.session.result import SessionResult, save_result
from pilot_sys.session.summary import KILLED, analyse_journal, build_result, offline_stop_reason


def rebuild(directory: Path, plots: bool = True, html: bool = True) -> SessionResult:
    """result.json, report.md, report.html (unless ``html`` is False) and plots/ (unless
    ``plots`` is False) from the journal of ``directory``."""
    journal = Journal.open(directory, repair=False)
    assert journal.manifest is not None
    analyses = analyse_journal(journal)
    stop_reason, elapsed = offline_stop_reason(journal)
    notes: list[str] = []
    if stop_reason == KILLED:
        notes.append(f"{KILLED}; `pilot-sys run --resume {directory}` continues the session")
    last = journal.manifest.invocations[-1] if journal.manifest.invocations else None
    if last is not None and last.failure:
        notes.append(f"workload failed: {last.failure}")
    comparison = None
    if journal.manifest.mode == "compare":
        from pilot_sys.session.interleave import compare_analyses

        comparison = compare_analyses(analyses, journal.manifest.config)
    result = build_result(journal, analyses, stop_reason, elapsed, notes=notes, comparison=comparison)
    if last is not None and last.monitor_cost:
        result.overhead.monitor_cost = last.monitor_cost
    save_result(result, journal.root)
    write_reports(journal, result, analyses, plots=plots, html=html)
    return result
