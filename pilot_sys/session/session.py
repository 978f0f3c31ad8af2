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
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.context import collect_context
from pilot_sys.session.engine import Engine, StopReason, make_track
from pilot_sys.session.journal import Invocation, Journal, JournalWriteFailed, SessionManifest, WorkloadSpec
from pilot_sys.session.progress import NoProgress, Note, Progress
from pilot_sys.session.result import SessionResult, save_result
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
        from pilot_sys.workload.runner import CommandWorkload

        return CommandWorkload(
            spec.argv, parser=spec.parser, env=spec.env, accepted_returncodes=spec.accepted_returncodes,
            timeout=spec.timeout, name=spec.name, cwd=spec.options.get("cwd"),
            integer_work_amount=bool(spec.options.get("integer_work_amount", True)),
            work_amount_unit=str(spec.options.get("work_amount_unit", "work")),
        )
    if spec.kind == "builtin":
        from pilot_sys.workload.builtin import SequentialIOWorkload

        return SequentialIOWorkload(
            spec.directory or ".", block_size=int(spec.options.get("block_size", 1 << 20)),
            read_back=bool(spec.options.get("read_back", True)), method=spec.options.get("method", "auto"),
        )
    raise BadInput("session.json", f"workload {spec.name!r} of kind {spec.kind!r} cannot be re-created here "
                                   "(in-process workloads resume only from Python)")


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
        self.command_line = command_line or []
        self.resumed = resumed
        self.extra_stop = extra_stop
        self.comparison = comparison
        self.result: SessionResult | None = None
        self.analyses: dict[str, TrackAnalysis] = {}
        if self.manifest.mode == "compare" and comparison is None:  # e.g. a resumed comparison
            from pilot_sys.session.interleave import compare_analyses

            cfg = self.manifest.config

            def current(tracks: list[Any]) -> Any:
                return compare_analyses({t.name: t.analysis for t in tracks}, cfg)

            self.comparison = current
            self.extra_stop = lambda tracks: bool((c := current(tracks)) and c.all_separated)

    @classmethod
    def create(
        cls, root: Path, config: SessionConfig, specs: list[WorkloadSpec], workloads: list[Workload],
        command_line: list[str], mode: str = "run", **kw: Any,
    ) -> Session:
        manifest = SessionManifest(mode=mode, config=config, workloads=specs, context=collect_context(command_line))
        journal = Journal.create(root, manifest)
        return cls(journal, workloads, command_line=command_line, **kw)

    @classmethod
    def resume(cls, root: Path, command_line: list[str], **kw: Any) -> Session:
        journal = Journal.open(root, repair=True)
        assert journal.manifest is not None
        workloads = [build_workload(s) for s in journal.manifest.workloads]
        return cls(journal, workloads, command_line=command_line, resumed=True, **kw)

    def run(self) -> SessionResult:
        """Run until a stop rule fires; the directory stays locked against other writers meanwhile."""
        try:
            return self._run()
        finally:
            self.journal.unlock()

    def _run(self) -> SessionResult:
        m = self.manifest
        cfg = m.config
        for note in self.journal.repairs:
            self.progress.emit(Note(note))
        before = session_seconds(self.journal)  # earlier invocations' time counts toward -s
        inv = Invocation(started_at=time.time(), command_line=self.command_line,
                         first_round=len(self.journal.records) + 1)
        m.invocations.append(inv)
        self.journal.save_manifest()

        monitor = None
        if cfg.monitor:
            from pilot_sys.session.monitoring import RoundMonitoring

            args = [a for s in m.workloads for a in s.data_path_args]
            try:
                monitor = RoundMonitoring(cfg.sample_rate_hz, cfg.bottleneck_threshold, cfg.cut, args, self.journal.root)
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
            self.journal.save_manifest()

        tracks = [
            make_track(spec, wl, cfg, list(spec.pis) or wl.pi_specs(), cut=m.cut or cfg.cut)
            for spec, wl in zip(m.workloads, self.workloads)
        ]
        engine = Engine(self.journal, cfg, tracks, progress=self.progress, monitor=monitor,
                        extra_stop=self.extra_stop, elapsed_before=before)
        if self.resumed:
            engine.replay()
        disk_full: JournalWriteFailed | None = None
        outcome = engine.run()
        engine.finalize()
        stop_reason = outcome.stop_reason
        if stop_reason in (StopReason.SESSION_LIMIT, StopReason.MAX_ROUNDS) and engine.targets_met():
            stop_reason = StopReason.TARGETS_MET_AT_END
        if outcome.stop_reason is StopReason.DISK_FULL:
            disk_full = JournalWriteFailed(outcome.failure or "journal write failed")
        analyses = self.analyses = {t.name: t.analysis for t in tracks}
        comparison = self.comparison(tracks) if self.comparison is not None else None
        notes = []
        if outcome.failure and outcome.stop_reason is StopReason.WORKLOAD_FAILED:
            notes.append(f"workload failed: {outcome.failure}")
        # the invocation's time ends here: the live result and `report DIR` count the same span
        stopped = time.time()
        elapsed = before + stopped - inv.started_at
        result = build_result(self.journal, analyses, str(stop_reason), elapsed,
                              notes=notes, comparison=comparison)
        if monitor is not None:
            result.overhead.monitor_cost = monitor.mean_cost()
            inv.monitor_cost = result.overhead.monitor_cost
            if monitor.error and not inv.monitor_error:
                inv.monitor_error = monitor.error
        inv.ended_at = stopped
        inv.stop_reason = str(stop_reason)
        inv.status = str(result.status)
        inv.exit_code = result.exit_code
        inv.failure = outcome.failure
        inv.engine_seconds_per_round = result.overhead.engine_seconds_per_round
        self.result = result
        try:
            self.journal.save_manifest()
            save_result(result, self.journal.root)
        except OSError as exc:
            if disk_full is None:
                raise BadInput(str(self.journal.root), f"cannot write the reports: {exc.strerror}") from None
        if disk_full is not None:
            raise disk_full
        return result
