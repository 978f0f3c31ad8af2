"""A whole session: create or resume the result directory, run the engine, save result.json.

This is what ``pilot-sys run`` and ``pilot-sys compare --run`` call. It computes and returns;
it never prints (progress goes out as events, ``session.progress``) and writes no report:
``pilot_sys.report.writer.run_and_report`` (``pilot_sys.run_session``) runs a session and then
writes report.md and the plots from what it returned.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pilot_sys.errors import BadInput
from pilot_sys.redaction import redact_all
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.context import collect_context
from pilot_sys.session.early_stop import EARLY
from pilot_sys.session.engine import Engine, StopReason, make_track
from pilot_sys.session.finishing import Finishing
from pilot_sys.session.journal import (
    Invocation,
    Journal,
    JournalWriteFailed,
    SessionManifest,
    WorkloadSpec,
    unwritable,
)
from pilot_sys.session.progress import NoProgress, Note, Progress
from pilot_sys.session.result import RESULT_FILE, SessionResult, save_result
from pilot_sys.session.summary import build_result, session_seconds
from pilot_sys.workload.base import Workload

DEFAULT_RESULTS = Path("pilot-results")


def default_result_dir(name: str, base: Path = DEFAULT_RESULTS) -> Path:
    """``pilot-results/20261121-064500-fio``: sortable, unique within the second."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "session"
    path = base / f"{stamp}-{safe}"
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stamp}-{safe}-{n}"
    return path


def build_workload(spec: WorkloadSpec) -> Workload:
    """Re-create a workload from its journaled description (also used on --resume)."""
    if spec.kind == "command":
        from pilot_sys.workload.cgroup_launch import cgroup_target
        from pilot_sys.workload.runner import CommandWorkload

        return CommandWorkload(
            spec.argv,
            parser=spec.parser,
            env=spec.env,
            accepted_returncodes=spec.accepted_returncodes,
            timeout=spec.timeout,
            name=spec.name,
            cwd=spec.options.get("cwd"),
            integer_work_amount=bool(spec.options.get("integer_work_amount", True)),
            work_amount_unit=str(spec.options.get("work_amount_unit", "work")),
            cgroup=cgroup_target(str(spec.options["cgroup"]))
            if spec.options.get("cgroup")
            else None,
        )
    if spec.kind == "builtin":
        from pilot_sys.workload.builtin import SequentialIOWorkload

        return SequentialIOWorkload(
            spec.directory or ".",
            block_size=int(spec.options.get("block_size", 1 << 20)),
            read_back=bool(spec.options.get("read_back", True)),
            method=spec.options.get("method", "auto"),
        )
    raise BadInput(
        "session.json",
        f"workload {spec.name!r} of kind {spec.kind!r} cannot be re-created here "
        "(in-process workloads resume only from Python)",
    )


class Session:
    """Owns the journal and the engine of one invocation; after ``run()``, ``result`` and the
    final ``analyses`` (what the reports are drawn from) stay on it."""

    def __init__(
        self,
        journal: Journal,
        workloads: list[Workload],
        progress: Progress | None = None,
        command_line: list[str] | None = None,
        resumed: bool = False,
        extra_stop: Callable[..., bool] | None = None,
        comparison: Callable[..., Any] | None = None,
    ) -> None:
        assert journal.manifest is not None
        self.journal = journal
        self.manifest = journal.manifest
        self.workloads = workloads
        self.progress: Progress = progress or NoProgress()
        self.command_line = redact_all(command_line or [])
        self.resumed = resumed
        self.extra_stop = extra_stop
        self.comparison = comparison
        self.result: SessionResult | None = None
        self.analyses: dict[str, TrackAnalysis] = {}
        # targets and limits a --resume changed (field -> [old, new]); recorded in the invocation
        self.config_changes: dict[str, list[Any]] = {}
        # after the last round: the first Ctrl-C lets the result and the reports be finished
        self.finishing = Finishing(
            lambda: self.progress.emit(
                Note(
                    "finishing the result and the reports (Ctrl-C again to stop now; "
                    f"`pilot-sys report {self.journal.root}` finishes them later)",
                    loud=True,
                )
            )
        )
        if self.manifest.mode == "compare" and comparison is None:  # e.g. a resumed comparison
            from pilot_sys.session.interleave import compare_analyses

            cfg = self.manifest.config

            def current(tracks: list[Any]) -> Any:
                return compare_analyses({t.name: t.analysis for t in tracks}, cfg)

            self.comparison = current
            self.extra_stop = lambda tracks: bool((c := current(tracks)) and c.all_separated)

    @classmethod
    def create(
        cls,
        root: Path,
        config: SessionConfig,
        specs: list[WorkloadSpec],
        workloads: list[Workload],
        command_line: list[str],
        mode: str = "run",
        **kw: Any,
    ) -> Session:
        manifest = SessionManifest(
            mode=mode, config=config, workloads=specs, context=collect_context(command_line)
        )
        journal = Journal.create(root, manifest)
        return cls(journal, workloads, command_line=command_line, **kw)

    @classmethod
    def resume(
        cls, root: Path, command_line: list[str], set_aside: bool = False, **kw: Any
    ) -> Session:
        """Continue the session in ``root``; ``set_aside`` (``--repair``) sets aside round folders
        the journal does not know, which are otherwise refused as damage."""
        journal = Journal.open(root, repair=True, set_aside=set_aside)
        assert journal.manifest is not None
        workloads = [build_workload(s) for s in journal.manifest.workloads]
        return cls(journal, workloads, command_line=command_line, resumed=True, **kw)

    def _measure_process_start(self) -> None:
        """The cost of starting a process here, once per session (kept on ``--resume``), for
        each command workload: every round of it includes that cost (``session.json``)."""
        from pilot_sys.workload.process import process_start_seconds

        assert self.journal.manifest is not None
        for spec in self.journal.manifest.workloads:
            if spec.kind == "command" and spec.process_start_seconds is None:
                spec.process_start_seconds = process_start_seconds()

    def _bound_rounds_by_limit(self, limit: float | None, spent_before: float = 0.0) -> None:
        """Give command workloads the session's deadline, so that a round still running at the
        session limit is cut there (``CommandWorkload.session_deadline``) instead of holding the
        session past it; ``spent_before``: the session time of earlier invocations, which counts
        toward the limit. The engine counts the limit from its start, just after
        ``statsapi.preload()``: that runs first here, so the two clocks agree."""
        if limit is None:
            return
        from pilot_sys.session import statsapi

        statsapi.preload()
        deadline = time.monotonic() + limit - spent_before
        for workload in self.workloads:
            if hasattr(workload, "session_deadline"):
                workload.session_deadline = deadline
                workload.session_limit = limit

    def _save_or_raise(
        self, result: SessionResult, disk_full: JournalWriteFailed | None = None
    ) -> None:
        """session.json and result.json. A full disk is said once, through progress, and raised
        as :class:`JournalWriteFailed` (exit 4); a result.json that could not be written leaves
        none behind (an older one would contradict the journal)."""
        root = self.journal.root
        try:
            self.journal.save_manifest()
            save_result(result, root)
        except OSError as exc:
            err = unwritable(root, exc)
            try:
                (root / RESULT_FILE).unlink(missing_ok=True)
            except OSError:
                pass
            if disk_full is not None:  # the engine said it already
                raise disk_full from None
            if isinstance(err, JournalWriteFailed):
                self.progress.emit(Note(str(err), loud=True))
            raise err from None

    def run(self) -> SessionResult:
        """Run until a stop rule fires; the directory stays locked against other writers meanwhile.
        A new session that fails before its first round leaves no directory behind (it would
        block reusing ``-o``)."""
        try:
            return self._run()
        except BaseException:
            if not self.resumed and not self.journal.records:
                self.journal.discard_empty()
            raise
        finally:
            self.finishing.stop()
            self.journal.unlock()

    def _run(self) -> SessionResult:
        m = self.manifest
        cfg = m.config
        for note in self.journal.repairs:
            self.progress.emit(Note(note))
        before = session_seconds(self.journal)  # earlier invocations' time counts toward -s
        inv = Invocation(
            started_at=time.time(),
            command_line=self.command_line,
            first_round=len(self.journal.records) + 1,
            config_changes=self.config_changes,
        )
        if self.config_changes:
            changed = ", ".join(
                f"{k} {_shown(a)} -> {_shown(b)}" for k, (a, b) in self.config_changes.items()
            )
            self.progress.emit(Note(f"resumed with new targets and limits: {changed}"))
        m.invocations.append(inv)
        try:
            self.journal.save_manifest()
        except OSError as exc:  # read-only or full since it was opened: one line, nothing run
            raise unwritable(self.journal.root, exc) from None

        monitor = None
        if cfg.monitor:
            from pilot_sys.session.monitoring import RoundMonitoring
            from pilot_sys.topology.remote_hosts import parse_host_specs

            args = [a for s in m.workloads for a in s.data_path_args]
            try:
                cgroup = next(
                    (s.options["cgroup"] for s in m.workloads if s.options.get("cgroup")), None
                )
                monitor = RoundMonitoring(
                    cfg.sample_rate_hz,
                    cfg.bottleneck_threshold,
                    cfg.cut,
                    args,
                    self.journal.root,
                    hosts=parse_host_specs(cfg.hosts),
                    cgroup=cgroup,
                )
            except BadInput:
                if not self.resumed and not self.journal.records:  # nothing measured: leave no husk
                    self.journal.discard_empty()
                raise
            if monitor.cut and not m.cut:
                m.cut = monitor.cut
            if monitor.data_path and not m.data_path:
                m.data_path = monitor.data_path
            if monitor.error:
                inv.monitor_error = monitor.error
                self.progress.emit(Note(monitor.error, loud=True))
            for note in monitor.loud:  # e.g. a server on the data path that nobody monitors
                self.progress.emit(Note(note, loud=True))
            self.journal.save_manifest()

        tracks = [
            make_track(spec, wl, cfg, list(spec.pis) or wl.pi_specs(), cut=m.cut or cfg.cut)
            for spec, wl in zip(m.workloads, self.workloads, strict=True)
        ]
        engine = Engine(
            self.journal,
            cfg,
            tracks,
            progress=self.progress,
            monitor=monitor,
            extra_stop=self.extra_stop,
            elapsed_before=before,
        )
        if self.resumed:
            engine.replay()
        self._bound_rounds_by_limit(cfg.session_limit, before)
        self._measure_process_start()
        disk_full: JournalWriteFailed | None = None
        outcome = engine.run()
        # the rounds are over: a first Ctrl-C no longer stops the saving (until run() ends)
        self.finishing.start()
        stop_reason = outcome.stop_reason
        cut = [w for w in self.workloads if getattr(w, "cut_by_limit", None)]
        if stop_reason is StopReason.WORKLOAD_FAILED and cut:  # the limit cut a round short
            stop_reason = StopReason.SESSION_LIMIT
        # how the rounds ended is on disk before the slower final analysis: a second Ctrl-C
        # from here on leaves a directory `pilot-sys report DIR` rebuilds this result from
        inv.ended_at = time.time()
        inv.stop_reason = str(stop_reason)
        inv.failure = None if cut else outcome.failure
        try:
            self.journal.save_manifest()
        except OSError:
            pass  # a full disk: said, and raised, when the result is saved below
        engine.finalize()
        if (
            stop_reason in (StopReason.SESSION_LIMIT, StopReason.MAX_ROUNDS)
            and engine.targets_met()
        ):
            stop_reason = StopReason.TARGETS_MET_AT_END
        if outcome.stop_reason is StopReason.DISK_FULL:
            disk_full = JournalWriteFailed(outcome.failure or "journal write failed")
        analyses = self.analyses = {t.name: t.analysis for t in tracks}
        comparison = self.comparison(tracks) if self.comparison is not None else None
        notes = []
        if outcome.failure and stop_reason is StopReason.WORKLOAD_FAILED:
            notes.append(f"workload failed: {outcome.failure}")
        notes += [f"round cut at the session limit: {w.cut_by_limit}" for w in cut]
        if engine.early_stop is not None:
            notes.append(EARLY + engine.early_stop)
        # the invocation's time ends here: the live result and `report DIR` count the same span
        stopped = time.time()
        elapsed = before + stopped - inv.started_at
        result = build_result(
            self.journal, analyses, str(stop_reason), elapsed, notes=notes, comparison=comparison
        )
        if monitor is not None:
            result.overhead.monitor_cost = monitor.mean_cost()
            inv.monitor_cost = result.overhead.monitor_cost
            if monitor.error and not inv.monitor_error:
                inv.monitor_error = monitor.error
        inv.ended_at = stopped
        inv.stop_reason = str(stop_reason)
        inv.status = str(result.status)
        inv.exit_code = result.exit_code
        inv.engine_seconds_per_round = result.overhead.engine_seconds_per_round
        self.result = result
        self._save_or_raise(result, disk_full)
        if disk_full is not None:  # result.json says how the session ended: the same exit code
            disk_full.exit_code = result.exit_code
            raise disk_full
        return result


def _shown(value: object) -> str:
    """A setting as a person reads it: a float parsed from "0.236%" is 0.0023599999999999997 in
    binary, and prints as 0.00236."""
    return f"{value:g}" if isinstance(value, float) else str(value)
