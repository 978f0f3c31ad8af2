"""The round loop: plan, run (monitored), journal, analyse, decide; until a stop rule fires.

Stop rules, checked before every round (the Pilot paper, §III-E, §III-F):

- every PI of every workload meets its CI target, at least ``min_rounds`` rounds were analysed,
  and (interleaved comparisons) every adjacent pair of the ranking is separated -> done;
- the session limit or ``max_rounds`` -> limit reached; the limit counts the session's time:
  this invocation's, plus that of earlier ones (``--resume``; ``elapsed_before``), never the
  idle gaps between them;
- Ctrl-C, SIGTERM or SIGHUP -> interrupted (the round in flight is set aside, all earlier
  ones kept);
- a round whose workload failed -> workload failure (the failed round is journaled too);
- more rounds cannot change the answer (``early_stop``): every judged round so far, enough of
  them to be sure, excluded for the same hidden bottleneck -> all excluded; the samples needed
  growing with the samples, still after rounds were lengthened (or where they cannot be) ->
  runaway.

Each round is written to the journal as soon as it ends (a full disk fails at once); its
fsyncs (journal line, unit readings, monitor trace) are queued and run, in threads, between
rounds at most ``SYNC_INTERVAL`` apart and always before the session stops: nothing is acted
on before it is on disk, a crash of the host loses at most the rounds of the last second, and
no round pays an fsync of its own (one fsync of the journal covers the lines of many short
rounds; waiting for it each round cost 3-8 ms between rounds on a virtio disk). The
full re-analysis is paced (``analysis_step``, ``cost_floor``) so a long session's cost per
round stays flat.
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Protocol

import numpy as np

from pilot_sys import units
from pilot_sys.errors import PilotError, WorkloadFailed
from pilot_sys.session import statsapi
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.early_stop import (
    MAX_LENGTHENINGS,
    ExcludedWatch,
    NeedTrend,
    excluded_rounds_to_be_sure,
)
from pilot_sys.session.finishing import SIGNALS as STOP_SIGNALS
from pilot_sys.session.journal import (
    Journal,
    JournalWriteFailed,
    MonitorSummary,
    RoundRecord,
    SyncBatch,
    WorkloadSpec,
)
from pilot_sys.session.planner import Planner
from pilot_sys.session.progress import (
    Budget,
    Countdown,
    NoProgress,
    Note,
    Progress,
    RoundDone,
    RoundExcluded,
)
from pilot_sys.session.result import StopReason
from pilot_sys.session.verdict import excluded_round, is_excluded, judged, unjudged_sighting
from pilot_sys.session.work_done import work_done_text
from pilot_sys.workload.base import PISpec, RoundOutput, Workload


@dataclass
class Track:
    """One workload of the session and everything the engine learns about it."""

    spec: WorkloadSpec
    workload: Workload
    planner: Planner
    analysis: TrackAnalysis
    rounds: int = 0  # journaled rounds of this workload
    seconds: float = 0.0
    last_duration: float | None = None
    analysed_at: int = -1  # usable rounds at the last analysis
    analysed_index: int = 0  # the last round (session index) the analysis has seen
    next_analysis_at: int = 0  # analyse again once this many usable rounds exist
    pending_units: dict[int, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = field(
        default_factory=dict
    )
    warned_short: bool = False
    need_trend: NeedTrend = field(default_factory=NeedTrend)  # required vs samples (runaway)
    lengthened: int = 0  # times a runaway lengthened this workload's rounds

    @property
    def name(self) -> str:
        return self.spec.name

    def records(self, journal: Journal) -> list[RoundRecord]:
        return journal.rounds_of(self.name)

    def targets_met(self) -> bool:
        res = self.analysis.results
        return (
            bool(res)
            and all(p.ci_reached for p in res.values() if p.gates_stop)
            and self.analysis.counts.analysed >= self.analysis.config.min_rounds
        )


SYNC_INTERVAL = 1.0  # seconds between the points where every journaled round is on disk
MAX_PENDING_SYNCS = 64  # ... or sooner, so queued fsyncs never hold many descriptors open

ANALYSIS_GROWTH = 0.02  # re-analyse at the latest after this much growth in rounds
FORECAST_MARGIN = 0.5  # ... or once this share of the forecast rounds have run


def analysis_step(
    usable_rounds: int, rounds_needed: int | None, to_first_interval: int | None = None
) -> int:
    """Rounds until the next analysis.

    The CI of all samples so far costs O(samples) to recompute (the autocorrelation time is an
    FFT over the whole series), so recomputing it after every round makes a session's cost grow
    with its length. It cannot reach its target before about the required sample size, so the
    engine re-analyses once ``FORECAST_MARGIN`` of the forecast rounds have run, and at the latest
    after ``ANALYSIS_GROWTH`` more rounds: O(log n) full analyses per session, each decision on
    fresh numbers, and ``cost_floor`` bounds what they cost per round. Analysing less often, to
    temper optional stopping (stopping on a lucky, briefly narrow CI), cost more rounds and
    bought no coverage (``benchmarks/session_oracle.py``, benchmarks/results/session.md). Before
    any interval exists, the stats' estimate of the samples one needs at all is used the same way
    (it is rough from few samples, so it only ever brings the next analysis closer)."""
    growth = max(1, math.ceil(ANALYSIS_GROWTH * usable_rounds))
    forecast = rounds_needed if rounds_needed is not None else to_first_interval
    if forecast is None:
        return growth
    return max(1, min(growth, math.floor(FORECAST_MARGIN * forecast)))


ANALYSIS_BUDGET = 0.001  # seconds of full re-analysis per round, amortised, at the least ...
ANALYSIS_SHARE = 0.02  # ... or this share of a round's duration, whichever is larger


def cost_floor(analysis_seconds: float, mean_round_seconds: float) -> int:
    """Rounds that must pass before another full analysis, so that re-analysing costs on
    average at most ``max(ANALYSIS_BUDGET, ANALYSIS_SHARE x round duration)`` per round: a
    session of a million unit readings must not spend its time recomputing its CI."""
    budget = max(ANALYSIS_BUDGET, ANALYSIS_SHARE * mean_round_seconds)
    return max(1, math.ceil(analysis_seconds / budget))


def make_track(
    spec: WorkloadSpec,
    workload: Workload,
    config: SessionConfig,
    pis: list[PISpec],
    cut: str | None = None,
) -> Track:
    return Track(
        spec=spec,
        workload=workload,
        planner=Planner(config),
        analysis=TrackAnalysis(
            config=config,
            pis=pis,
            work_unit=config.work_unit,
            cut=cut or config.cut,
            work_done=work_done_text(spec),
        ),
    )


class RoundMonitor(Protocol):
    """What the engine needs of monitoring (``pilot_sys.session.monitoring.RoundMonitoring``)."""

    def start(self) -> None: ...

    def stop(self, round_dir: Path, batch: SyncBatch | None = None) -> MonitorSummary | None: ...

    def abort(self) -> None: ...


@dataclass
class EngineOutcome:
    stop_reason: StopReason
    elapsed: float
    failure: str | None = None
    engine_seconds: list[float] = field(default_factory=list)


class Engine:
    """Runs the rounds of one or several (interleaved) workloads into a journal."""

    def __init__(
        self,
        journal: Journal,
        config: SessionConfig,
        tracks: list[Track],
        progress: Progress | None = None,
        monitor: RoundMonitor | None = None,
        extra_stop: Callable[[list[Track]], bool] | None = None,
        on_round: Callable[[Track, RoundRecord], None] | None = None,
        elapsed_before: float = 0.0,
    ) -> None:
        self.journal = journal
        self.cfg = config
        self.tracks = tracks
        self.progress: Progress = progress or NoProgress()
        manifest = journal.manifest
        self.cut = (manifest.cut if manifest is not None else None) or config.cut
        self._countdown = Countdown(self.cut)  # the forecast between analyses
        self.monitor = monitor
        self.extra_stop = extra_stop  # interleaved comparison: are all pairs separated?
        self.on_round = on_round
        self._interrupted = False
        self._in_workload = False
        self._turn = 0
        self.engine_seconds: list[float] = []  # per round: workload end -> next workload start
        self.sync_wait_seconds: list[float] = []  # of which: waiting for the round's fsyncs
        self.elapsed_before = elapsed_before  # session time of earlier invocations (--resume)
        self._told_unjudged = False  # the note on rounds too short to judge, once
        self._told_no_cut = False  # the note on a hot component without a CUT, once
        self.early_stop: str | None = None  # why the session stopped early, when it did
        self._excluded_needed = excluded_rounds_to_be_sure(config.confidence, config.min_rounds)
        self._excluded_watch = ExcludedWatch(self.cut)

    # -- resume ------------------------------------------------------------------------------
    def replay(self) -> None:
        """Feed journaled rounds back into planners and analyses (``--resume``)."""
        by_name = {t.name: t for t in self.tracks}
        for rec in self.journal.records:
            track = by_name.get(rec.workload)
            if track is None:
                continue
            track.rounds = max(track.rounds, rec.workload_round)
            track.seconds += rec.duration
            self._excluded_watch.observe(rec)
            if not rec.failed:
                track.planner.observe(rec.work_amount, rec.duration, rec.short)
                track.last_duration = rec.duration
        for track in self.tracks:
            self._analyse(track, force=True)
        self._turn = len(self.journal.records)

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> EngineOutcome:
        # scipy.stats imports take seconds: pay them before round 1, not after it
        statsapi.preload()
        start = time.monotonic()
        saved = {sig: signal.signal(sig, self._on_signal) for sig in STOP_SIGNALS}
        pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="pilot-fsync")
        self._batch = SyncBatch(pool, defer=True)
        self._durable = len(self.journal.records)  # records known to be on disk
        self._synced_at = time.monotonic()
        self._workload_end: float | None = None  # perf_counter at the end of the last workload run
        self._excluded = 0.0  # monitor start/stop time inside the engine window (not engine cost)

        def outcome(reason: StopReason, failure: str | None = None) -> EngineOutcome:
            return EngineOutcome(reason, time.monotonic() - start, failure, self.engine_seconds)

        try:
            while True:
                due = (
                    time.monotonic() - self._synced_at >= SYNC_INTERVAL
                    or self._batch.pending >= MAX_PENDING_SYNCS
                )
                failed = self._sync() if due else None
                if failed is not None:
                    return outcome(StopReason.DISK_FULL, failed)
                reason = (
                    StopReason.WORKLOAD_FAILED
                    if self._last_failure is not None
                    else self._should_stop(self.elapsed_before + time.monotonic() - start)
                )
                if reason is not None:
                    failed = self._sync()  # every round is on disk before the stop is acted on
                    if failed is not None:
                        return outcome(StopReason.DISK_FULL, failed)
                    return outcome(reason, self._last_failure)
                track = self._next_track()
                try:
                    self._one_round(track, start)
                except KeyboardInterrupt:
                    self._interrupted = True
                except JournalWriteFailed as exc:
                    self.progress.emit(Note(str(exc), loud=True))
                    return outcome(StopReason.DISK_FULL, str(exc))
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
            try:  # an exception on its way out: the queued fsyncs still run, their fds close
                self._batch.wait()
            except JournalWriteFailed:
                pass
            pool.shutdown(wait=True)

    _last_failure: str | None = None
    _batch: SyncBatch

    def _sync(self) -> str | None:
        """Make every journaled round durable; on failure, the rounds since the last durable
        point may not be on disk, so they do not count: returns why."""
        w0 = time.perf_counter()
        try:
            self._batch.wait()
        except JournalWriteFailed as exc:
            del self.journal.records[self._durable :]
            self.progress.emit(Note(str(exc), loud=True))
            return str(exc)
        self.sync_wait_seconds.append(time.perf_counter() - w0)
        self._durable = len(self.journal.records)
        self._synced_at = time.monotonic()
        return None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._interrupted = True
        if self._in_workload:
            raise KeyboardInterrupt

    def targets_met(self) -> bool:
        """Every workload's targets (and the comparison's, if any) met by the current analyses."""
        return all(t.targets_met() for t in self.tracks) and (
            self.extra_stop is None or self.extra_stop(self.tracks)
        )

    def _confirmed(self) -> bool:
        """Targets met by every track's *latest* rounds: a paced analysis can be some rounds old,
        and the rounds since can undo an interval (an interleaved comparison stopped as valid,
        then reported a PI without a CI). Re-analyses only tracks with unanalysed rounds, and only
        when a stop is in sight."""
        last = {r.workload: r.index for r in self.journal.records}  # each workload's newest round
        stale = [t for t in self.tracks if t.analysed_index < last.get(t.name, 0)]
        for track in stale:
            self._analyse(track, force=True)
        return not stale or self.targets_met()

    def _should_stop(self, elapsed: float) -> StopReason | None:
        """``elapsed``: the session's time so far, earlier invocations included."""
        if self._interrupted:
            return StopReason.INTERRUPTED
        if self.targets_met() and self._confirmed():
            return StopReason.TARGETS_MET
        early = self._stop_early()
        if early is not None:
            return early
        if self.cfg.max_rounds is not None and all(
            t.rounds >= self.cfg.max_rounds for t in self.tracks
        ):
            return StopReason.MAX_ROUNDS
        limit = self.cfg.session_limit
        if limit is not None:
            left = limit - elapsed
            # a round must fit: never start one that is predicted to overrun the limit badly
            shortest = min((t.last_duration or 0.0) for t in self.tracks)
            if left <= 0 or (shortest > 0 and left < min(shortest, self.cfg.min_round_seconds)):
                return StopReason.SESSION_LIMIT
        return None

    def _stop_early(self) -> StopReason | None:
        """More rounds cannot change the answer (``early_stop``); a runaway first lengthens the
        rounds where the planner can."""
        streak = self._excluded_watch.streak(self._excluded_needed)
        if streak is not None:
            self.early_stop = streak.text()
            self.progress.emit(Note(self.early_stop, loud=True))
            return StopReason.ALL_EXCLUDED
        for track in self.tracks:
            if track.rounds < self.cfg.min_rounds:  # the user's floor: never stop below it
                continue
            runaway = track.need_trend.runaway()
            if runaway is None:
                continue
            track.need_trend.reset()
            if track.lengthened < MAX_LENGTHENINGS and track.planner.lengthen():
                track.lengthened += 1
                unit = f" {self.cfg.work_unit}" if self.cfg.work_unit else ""
                self.progress.emit(
                    Note(
                        f"[{track.name}] {runaway.text()}; rounds lengthened: work amount at "
                        f"least {track.planner.a:.6g}{unit}"
                    )
                )
                continue
            if track.lengthened:
                how = f"even after lengthening rounds {track.lengthened} time(s)"
            elif track.planner.phase.value == "fixed":
                how = "and rounds cannot be lengthened (the work amount is fixed)"
            else:
                how = "and rounds cannot be lengthened (already at the largest work amount)"
            self.early_stop = f"[{track.name}] {runaway.text()}, {how}"
            self.progress.emit(Note(self.early_stop, loud=True))
            return StopReason.RUNAWAY
        return None

    def _next_track(self) -> Track:
        """Round-robin over workloads (the Pilot paper, Fig. 6: interleaving lowers temporal
        correlation); a workload whose targets are met still takes its turn in a comparison,
        because the pair decisions need fresh, interleaved rounds of both."""
        track = self.tracks[self._turn % len(self.tracks)]
        self._turn += 1
        return track

    def _one_round(self, track: Track, session_start: float) -> RoundRecord:
        limit = self.cfg.session_limit
        left = None if limit is None else limit - self._used(session_start)
        plan = track.planner.next_round(left)
        wr = track.rounds + 1
        round_dir, rel = self.journal.round_dir(track.name, wr, several=len(self.tracks) > 1)
        started_at = time.time()
        if self.monitor is not None:
            m0 = time.perf_counter()
            self.monitor.start()
            self._excluded += time.perf_counter() - m0
        out: RoundOutput | None = None
        failure: str | None = None
        t0 = time.perf_counter()
        if self._workload_end is not None:  # bookkeeping since the previous workload ended
            self.engine_seconds.append(t0 - self._workload_end - self._excluded)
        self._excluded = 0.0
        self._in_workload = True
        try:
            out = track.workload.run_round(plan.work_amount, round_dir)
        except (WorkloadFailed, PilotError) as exc:
            failure = str(exc)
        except OSError as exc:  # the round's files vanished, a device error...: the round failed
            failure = (
                f"{track.name}: {exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"
            )
        except Exception as exc:  # noqa: BLE001 - an in-process workload that crashes is a failed round
            failure = f"{track.name}: {type(exc).__name__}: {exc}"
        except KeyboardInterrupt:
            self._in_workload = False
            if self.monitor is not None:
                self.monitor.abort()
            # kept, not analysed: the round never finished
            if round_dir.exists():
                round_dir.rename(round_dir.with_name(round_dir.name + ".incomplete"))
            raise
        finally:
            self._in_workload = False
        wall = time.perf_counter() - t0
        self._workload_end = time.perf_counter()
        monitor_summary = None
        if self.monitor is not None:
            m0 = time.perf_counter()
            monitor_summary = self.monitor.stop(round_dir, self._batch)
            self._excluded += time.perf_counter() - m0
        duration = out.duration if out is not None and out.duration > 0 else wall
        short = (
            out is not None
            and failure is None
            and track.planner.is_short(duration, out.work_amount if out is not None else None)
        )
        units = dict(out.unit_readings) if out is not None else {}
        unit_times = dict(out.unit_timestamps) if out is not None else {}
        if out is not None and failure is None:
            self.journal.write_units(round_dir, units, unit_times, self._batch)
        rec = RoundRecord(
            index=len(self.journal.records) + 1,
            workload=track.name,
            workload_round=wr,
            dir=rel,
            started_at=started_at,
            work_amount=out.work_amount if out is not None else plan.work_amount,
            duration=duration,
            phase=str(plan.phase),
            short=short,
            returncode=out.returncode if out is not None else -1,
            failed=failure is not None,
            failure=failure,
            readings={
                k: float(v)
                for k, v in (out.readings.items() if out is not None else ())
                if v is not None
            },
            unit_counts={k: int(np.asarray(v).size) for k, v in units.items()},
            work_done=out.work_done if out is not None else None,
            warnings=list(out.warnings) if out is not None else [],
            monitor=monitor_summary,
            engine_seconds=self.engine_seconds[-1] if self.engine_seconds else None,
            usage=out.usage if out is not None else None,
        )
        # the line is written now (a full disk fails here, at once); its fsync and the round
        # files' fsyncs run while the analysis below runs, and are joined before the next round
        self.journal.append(rec, self._batch)
        self._excluded_watch.observe(rec)
        track.rounds = wr
        track.seconds += duration
        if rec.failed:
            self._last_failure = rec.failure
        else:
            self._refresh_pis(track)
            track.last_duration = duration
            track.planner.observe(rec.work_amount, duration, short)
            if (
                self.cfg.min_round_seconds
                and track.planner.all_short_warning
                and not track.warned_short
            ):
                track.warned_short = True
                self.progress.emit(
                    Note(
                        f"even the largest work amount ({track.planner.b:g}) runs shorter than "
                        f"{self.cfg.min_round_seconds:g} s: rounds are analysed anyway; "
                        "raise -w MAX"
                    )
                )
            self._analyse(track, units={rec.index: (units, unit_times)})
        if self.on_round is not None:
            self.on_round(track, rec)
        self._report_progress(track, rec, session_start)
        return rec

    def _refresh_pis(self, track: Track) -> None:
        """Parsers know a command's PIs only after its first round: record them once known."""
        specs = track.workload.pi_specs()
        if specs and [s.name for s in specs] != [s.name for s in track.analysis.pis]:
            track.analysis.pis = list(specs)
            track.spec.pis = list(specs)
            if self.journal.manifest is not None:
                self.journal.save_manifest()

    def _analyse(
        self,
        track: Track,
        units: dict[int, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] | None = None,
        force: bool = False,
    ) -> None:
        """Update the track's analysis when it can change a decision (see ``analysis_due``)."""
        if units:
            track.pending_units.update(units)
        records = track.records(self.journal)
        usable = sum(1 for r in records if not r.failed and not r.short)
        if not force and usable < track.next_analysis_at:
            return

        def load(rec: RoundRecord) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
            if rec.index in track.pending_units:
                return track.pending_units[rec.index]
            return self.journal.load_units(rec)

        analysis = track.analysis
        a0 = time.perf_counter()
        analysis.update(records, load)
        track.need_trend.observe(analysis.results)
        # only the recomputation over all samples is paced; EDM of the new rounds is per-round work
        cost = max(0.0, time.perf_counter() - a0 - analysis.new_round_seconds)
        track.pending_units.clear()  # examined: the kept segments now live in the analysis
        track.analysed_at = usable
        track.analysed_index = records[-1].index if records else 0
        analysed = analysis.counts.analysed
        step = analysis_step(
            usable, analysis.rounds_needed(analysed), analysis.rounds_to_first_interval(analysed)
        )
        mean_round = track.seconds / track.rounds if track.rounds else 0.0
        track.next_analysis_at = usable + max(step, cost_floor(cost, mean_round))
        if analysis.wps is not None:
            # v is in work *done* per second (bytes for fio, dd); the planner caps work amounts
            alpha = analysis.wps.alpha
            significant = analysis.wps.alpha_ci_low is not None and analysis.wps.alpha_ci_low > 0
            # the fixed cost only where the fit shows it: a round's start-up, kept out of v
            track.planner.set_rate(analysis.amount_rate)
            track.planner.set_fixed_cost(alpha if significant else None)
        if analysis.alpha_work > 0 and track.planner.raise_lower_bound(analysis.alpha_work):
            unit = f" {analysis.work_unit}" if analysis.work_unit else ""
            self.progress.emit(
                Note(
                    f"[{track.name}] WPS alpha raises the smallest work amount to "
                    f"{track.planner.a:.6g}{unit}"
                )
            )

    def finalize(self) -> None:
        """Bring every analysis up to the last journaled round (for the result)."""
        for track in self.tracks:
            self._analyse(track, force=True)

    def _used(self, session_start: float) -> float:
        """The session time so far: earlier invocations' and this one's."""
        return self.elapsed_before + time.monotonic() - session_start

    def _report_progress(self, track: Track, rec: RoundRecord, session_start: float) -> None:
        analysed = track.analysis.counts.analysed
        needed = track.analysis.rounds_needed(analysed)
        if needed is None:
            needed = track.analysis.rounds_to_first_interval(analysed)
        # the forecast as of the last analysis, counted down between analyses (progress.Countdown)
        eta = None
        if needed is not None and track.last_duration:
            eta = needed * len(self.tracks) * track.last_duration
        pis = list(track.analysis.results.values())
        as_of = track.analysed_index if track.analysed_index < rec.index else None
        forecast = self._countdown.update(rec, needed, eta, as_of)
        if forecast.rounds_needed is None and not forecast.used_up:
            pace = track.need_trend.keeping_pace()
            if pace is not None:
                forecast = replace(forecast, unknown_why=pace)
        used = self._used(session_start)
        budget = Budget(self.cfg.session_limit, used, str(self.cfg.preset))
        self.progress.emit(RoundDone(rec, pis, forecast, used, as_of, budget))
        if is_excluded(rec, self.cut):
            trace = self.journal.load_monitor(rec)
            saved = trace.verdict if trace is not None else None
            self.progress.emit(RoundExcluded(excluded_round(rec, saved)))
        elif (
            judged(rec)
            and rec.monitor is not None
            and rec.monitor.valid is False
            and self.cut is None
            and not self._told_no_cut
        ):
            self._told_no_cut = True
            seen = ", ".join(rec.monitor.hidden_bottlenecks) or "a component"
            self.progress.emit(
                Note(
                    f"round {rec.index} saw {seen} "
                    f"above {units.percent(self.cfg.bottleneck_threshold, 0)}, "
                    "but no component under test is known, so no round is excluded for it: "
                    "name one with --cut"
                )
            )
        elif unjudged_sighting(rec) and not self._told_unjudged:
            self._told_unjudged = True
            seen = ", ".join(rec.monitor.hidden_bottlenecks) if rec.monitor is not None else ""
            self.progress.emit(
                Note(
                    f"round {rec.index} saw {seen or 'a component other than the CUT'} above "
                    f"{units.percent(self.cfg.bottleneck_threshold, 0)}, "
                    "but is too short to judge on its own: "
                    "the rounds are judged together at the end"
                )
            )
