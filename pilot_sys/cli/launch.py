"""Running a session from the command line: a progress display, the session, its reports, the
summary; for `pilot-sys run` and `pilot-sys compare --run`.

The session is prepared by ``pilot_sys.session.launch`` / ``compare_launch`` (which validate
the options and compute), run and reported by ``pilot_sys.report.writer.run_and_report``, and
shown by ``pilot_sys.cli.present``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pilot_sys import units
from pilot_sys.cli.present.comparison import print_comparison, print_saved
from pilot_sys.cli.present.progress import make_progress
from pilot_sys.cli.present.summary import print_summary
from pilot_sys.session.compare_launch import CompareRequest, compare_directories, open_compare
from pilot_sys.session.journal import JournalWriteFailed
from pilot_sys.session.launch import RunRequest, open_run
from pilot_sys.session.progress import Progress
from pilot_sys.session.result import SessionResult

if TYPE_CHECKING:
    from pilot_sys.session.session import Session


def _run(
    open_session: Callable[[Progress], Session],
    quiet: bool,
    as_json: bool,
    plots: bool,
    verbose: bool = False,
) -> SessionResult:
    """Open the session with a progress display attached, run it and write its reports, close
    the display (also after an error)."""
    from pilot_sys.report.writer import run_and_report

    progress = make_progress(quiet, verbose=verbose)
    try:
        session = open_session(progress)
        argv = {s.name: s.argv for s in session.manifest.workloads}

        def network(name: str) -> bool:  # the CUT is known once the monitor has started
            return units.network_traffic(argv.get(name, []), session.manifest.cut)

        progress.network = network
        progress.work_unit = session.manifest.config.work_unit
        progress.fixed_work = session.manifest.config.fixed_work
        if not quiet and not as_json:
            progress.note(f"result directory: {session.journal.root}")
        try:
            return run_and_report(session, plots=plots)
        except JournalWriteFailed as exc:  # a full disk, said once through progress already
            if session.result is None:
                raise
            session.result.exit_code = exc.exit_code  # as result.json says, or 4 without one
            return session.result
    finally:
        progress.close()


def _print_end(result: SessionResult, as_json: bool, quiet: bool) -> None:
    """The summary; a reader that went away (``| head``) costs the summary, never the exit
    code the session earned."""
    try:
        print_summary(result, as_json=as_json, quiet=quiet)
        if result.comparison is not None and not as_json and not quiet:
            print_comparison(result.comparison, result)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # no second error when Python flushes at exit
        os.dup2(devnull, sys.stdout.fileno())
        os.dup2(devnull, sys.stderr.fileno())


def execute_run(req: RunRequest) -> int:
    """`pilot-sys run`: run (or resume) a session, print its summary; returns the exit code."""
    result = _run(
        lambda progress: open_run(req, progress), req.quiet, req.as_json, req.plots, req.verbose
    )
    _print_end(result, req.as_json, req.quiet)
    return result.exit_code


def execute_compare(req: CompareRequest) -> int:
    """`pilot-sys compare --run`: interleave the workloads until every adjacent pair is
    separated; print the summary and the ranking."""
    r = req.run
    # an unknown --cut is refused when the session starts, before any round, leaving no directory
    result = _run(
        lambda progress: open_compare(req, progress), r.quiet, r.as_json, r.plots, r.verbose
    )
    print_summary(result, as_json=r.as_json, quiet=r.quiet)
    if not r.as_json:
        print_comparison(result.comparison, result)
    return result.exit_code


def execute_saved_compare(
    dirs: list[Path], pi: str | None, threshold: float, as_json: bool
) -> None:
    """`pilot-sys compare DIR_A DIR_B`: saved results compared on one PI."""
    print_saved(compare_directories(dirs, pi, threshold), as_json)
