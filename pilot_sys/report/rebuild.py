"""Reports from a result directory alone (``pilot-sys report DIR``): read-only on the journal.

``rebuild`` rewrites result.json, report.md and the plots; ``render`` writes nothing and
returns the report (``report --stdout``: a read-only file system, or a session still running).
A directory a session is still writing is never rewritten, and never called interrupted; a
damaged one (round folders the journal does not know, a missing journal) is refused before
anything is rewritten, so a good result.json is not replaced by one of fewer rounds.
"""

from __future__ import annotations

from pathlib import Path

from pilot_sys.errors import BadInput
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.engine import StopReason
from pilot_sys.session.journal import Journal, unwritable
from pilot_sys.session.result import STATUS_EXIT, SessionResult, Status, save_result
from pilot_sys.session.summary import KILLED, analyse_journal, build_result, offline_stop_reason


def running_text(pid: int) -> str:
    return f"still running (pilot-sys pid {pid}): the rounds journaled so far"


def _derive(directory: Path) -> tuple[Journal, SessionResult, dict[str, TrackAnalysis]]:
    """The result the journal holds, computed without writing anything."""
    writer = Journal.writer_pid(directory)
    journal = Journal.open(directory, repair=False)
    assert journal.manifest is not None
    if journal.damage:
        damage = "; ".join(journal.damage)
        how = (
            f"`pilot-sys run --resume {directory} --repair` sets those folders aside, drops "
            "repeated journal lines and restores their order, and continues the session"
            if journal.repairable
            else "--repair cannot mend this: restore the files named from a copy"
        )
        raise BadInput(str(directory), f"damaged: {damage}; nothing was rewritten ({how})")
    analyses = analyse_journal(journal)
    stop_reason, elapsed = offline_stop_reason(journal)
    notes: list[str] = []
    if writer is not None:
        stop_reason = running_text(writer)
    elif stop_reason == KILLED:
        notes.append(f"{KILLED}; `pilot-sys run --resume {directory}` continues the session")
    last = journal.manifest.invocations[-1] if journal.manifest.invocations else None
    if last is not None and last.failure and last.stop_reason == StopReason.WORKLOAD_FAILED:
        notes.append(f"workload failed: {last.failure}")
    comparison = None
    if journal.manifest.mode == "compare":
        from pilot_sys.session.interleave import compare_analyses

        comparison = compare_analyses(analyses, journal.manifest.config)
    result = build_result(
        journal, analyses, stop_reason, elapsed, notes=notes, comparison=comparison
    )
    if last is not None and last.monitor_cost:
        result.overhead.monitor_cost = last.monitor_cost
    if writer is not None and result.status is not Status.INVALID:
        result.status = Status.INCOMPLETE
        result.exit_code = int(STATUS_EXIT[Status.INCOMPLETE])
    return journal, result, analyses


def rebuild(directory: Path, plots: bool = True, html: bool = True) -> SessionResult:
    """Rewrite result.json, report.md, report.html (unless ``html`` is False) and plots/ (unless
    ``plots`` is False) from the journal; refused (one line, exit 2) while a session still
    writes the directory, and on a file system that refuses writes."""
    return rebuild_noting(directory, plots, html)[0]


def rebuild_noting(
    directory: Path, plots: bool = True, html: bool = True
) -> tuple[SessionResult, list[str]]:
    """:func:`rebuild`, and what a person must be told about the directory: the gaps between
    the journal and the round folders (a missing units.npz ...), as result.json's notes say."""
    directory = Path(directory)
    writer = Journal.writer_pid(directory)
    if writer is not None:
        raise BadInput(
            str(directory),
            f"a session is still running in it (pilot-sys pid "
            f"{writer}); its result and reports are written when it "
            f"ends: `pilot-sys report --stdout {directory}` shows the "
            "rounds so far",
        )
    from pilot_sys.report.writer import write_reports

    journal, result, analyses = _derive(directory)
    try:
        save_result(result, journal.root)
        write_reports(journal, result, analyses, plots=plots, html=html)
    except OSError as exc:
        raise unwritable(journal.root, exc) from None
    return result, list(journal.repairs)


def render(directory: Path) -> tuple[SessionResult, str]:
    """The result and report.md's text, without writing anything (no plots)."""
    from pilot_sys.report.markdown import render as render_markdown
    from pilot_sys.report.writer import rounds_table

    journal, result, analyses = _derive(Path(directory))
    return result, render_markdown(result, {}, rounds_table(journal, analyses))
