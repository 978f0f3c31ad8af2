"""Running sources (``source.Source``) beside the sampler and turning what they recorded into
the trace: the thread per source, the call times, the clock offset, gaps, placement on the
sampler's grid and the notes. The rules are stated in ``source``'s docstring."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from pilot_sys.monitor.rates import place_on_grid
from pilot_sys.monitor.source import Source, SourceReading
from pilot_sys.monitor.trace import SourceCost, SourceTrace

MAX_ERRORS = 5  # distinct error messages kept per source
_GROW_ROWS = 256
# columns of a runner's call record
REQUESTED, ANSWERED, TAKEN_AT, REMOTE_CPU = range(4)


@dataclass
class SourceRecording:
    """What a runner recorded: answered samples with their call times (the sampler's monotonic
    clock), the failures, and the cost on this host."""

    values: np.ndarray  # answered samples x columns
    # answered samples x (requested, answered, taken_at, remote CPU seconds); NaN: not reported
    calls: np.ndarray
    failures: list[tuple[float, str]]  # the latest failed calls: (monotonic time, message)
    failed: int
    missed: int
    cpu_seconds: float
    pending_since: float | None = None  # a call that had not returned when this was taken
    # the distinct messages of failed calls (the first few) and how often each came
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def latency(self) -> np.ndarray:
        return self.calls[:, ANSWERED] - self.calls[:, REQUESTED]

    def sample_times(self) -> SampleTimes:
        return sample_times(
            self.calls[:, REQUESTED], self.calls[:, ANSWERED], self.calls[:, TAKEN_AT]
        )

    def remote_cpu_seconds(self) -> float | None:
        """The backend's CPU time over the recording, from its own cumulative counter."""
        cpu = self.calls[:, REMOTE_CPU]
        cpu = cpu[np.isfinite(cpu)]
        return float(cpu[-1] - cpu[0]) if len(cpu) >= 2 and cpu[-1] >= cpu[0] else None


@dataclass
class SampleTimes:
    """When a source's samples were taken, on the sampler's monotonic clock."""

    times: np.ndarray  # one per kept sample, strictly increasing
    kept: np.ndarray  # indices of the kept samples among the answered ones
    clock: str  # "call midpoint" or "backend time"
    offset: float | None = None  # backend clock minus the sampler's monotonic clock
    uncertainty: float | None = None


def sample_times(requested: np.ndarray, answered: np.ndarray, taken_at: np.ndarray) -> SampleTimes:
    """The time of each answered call's sample (the rule is in ``source``'s docstring: the
    call's midpoint, or the backend's own time less the offset estimated from the fastest call);
    answers whose time is not after the previous kept one's are not new samples: left out."""
    requested = np.asarray(requested, dtype=np.float64)
    answered = np.asarray(answered, dtype=np.float64)
    taken_at = np.asarray(taken_at, dtype=np.float64)
    midpoint = (requested + answered) / 2.0
    reported = np.isfinite(taken_at)
    clock, offset, uncertainty = "call midpoint", None, None
    times = midpoint
    if reported.any():
        latency = np.where(reported, answered - requested, np.inf)
        best = int(np.argmin(latency))
        offset = float(taken_at[best] - midpoint[best])
        uncertainty = float(latency[best] / 2.0)
        times = np.where(reported, taken_at - offset, midpoint)
        clock = (
            "backend time" if reported.all() else "backend time where reported, else call midpoint"
        )
    kept = _increasing(times)
    return SampleTimes(times[kept], kept, clock, offset, uncertainty)


def _increasing(times: np.ndarray) -> np.ndarray:
    """Indices of the times after every earlier kept one (a repeated or older time is dropped)."""
    if not len(times):
        return np.zeros(0, dtype=np.int64)
    previous = np.maximum.accumulate(np.concatenate([[-np.inf], times[:-1]]))
    return np.flatnonzero(times > previous)


def find_gaps(
    times: np.ndarray, start: float, end: float, bound: float
) -> list[tuple[float, float]]:
    """Stretches of [start, end] longer than ``bound`` without a sample: between two samples,
    before the first and after the last."""
    edges = np.concatenate([[start], np.asarray(times, dtype=np.float64), [end]])
    edges = np.clip(edges, start, end)
    lengths = np.diff(edges)
    return [(float(edges[i]), float(edges[i + 1])) for i in np.flatnonzero(lengths > bound)]


class SourceRunner:
    """Runs one source on its own thread: a call every ``interval_s`` on absolute deadlines (a
    call that overran skips the deadlines it missed, counted), each call timed on the monotonic
    clock, answers and failures recorded, the thread's CPU time measured."""

    def __init__(self, source: Source) -> None:
        interval = float(source.interval_s)
        if not (interval > 0 and math.isfinite(interval)):
            raise ValueError(
                f"source {source.name}: interval_s must be a positive number of seconds"
            )
        self.source = source
        self.interval = interval
        self.width = len(source.columns)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._values = np.full((_GROW_ROWS, self.width), np.nan)
        self._calls = np.full((_GROW_ROWS, 4), np.nan)
        self._n = 0
        self._failures: list[tuple[float, str]] = []
        self._errors: dict[str, int] = {}
        self._failed = 0
        self._missed = 0
        self._pending_since: float | None = None
        self._thread: threading.Thread | None = None
        self._cpu_clock: int | None = None
        self._cpu_start = 0.0
        self._cpu_end: float | None = None
        self.error: BaseException | None = None  # the runner's own failure (not a failed call)
        self.close_error: str | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"pilot-sys-source-{self.source.name}", daemon=True
        )
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the thread to end; whether it did."""
        if self._thread is None:
            return True
        self._thread.join(max(timeout, 0.0))
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def cpu_seconds(self) -> float:
        """The thread's CPU time so far (or in all, once it has ended)."""
        if self._cpu_end is not None:
            return self._cpu_end
        if self._cpu_clock is not None and self.running:
            try:
                return time.clock_gettime(self._cpu_clock) - self._cpu_start
            except OSError:
                return 0.0
        return 0.0

    def recording(self, last: int | None = None) -> SourceRecording:
        """A copy of what was recorded so far (``last``: only the latest answers)."""
        with self._lock:
            n = self._n
            lo = 0 if last is None else max(0, n - last)
            return SourceRecording(
                values=self._values[lo:n].copy(),
                calls=self._calls[lo:n].copy(),
                failures=list(self._failures),
                failed=self._failed,
                missed=self._missed,
                cpu_seconds=self.cpu_seconds(),
                pending_since=self._pending_since,
                errors=dict(self._errors),
            )

    def _run(self) -> None:
        try:
            self._cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):
            self._cpu_clock = None
        self._cpu_start = time.thread_time()
        monotonic = time.monotonic
        t0 = monotonic()
        k = 0
        try:
            while not self._stop.is_set():
                requested = self._pending_since = monotonic()
                try:
                    reading = self.source.sample()
                    values = np.asarray(reading.values, dtype=np.float64)
                    if values.shape != (self.width,):
                        raise ValueError(f"{values.size} values instead of {self.width}")
                except Exception as exc:  # noqa: BLE001 - a failed call is a gap, not the end
                    self._failed_call(requested, f"{type(exc).__name__}: {exc}")
                else:
                    self._answer(values, requested, monotonic(), reading)
                self._pending_since = None
                k += 1
                now = monotonic()
                if now >= t0 + k * self.interval:  # overran: skip the deadlines already missed
                    missed = int((now - t0) / self.interval) + 1 - k
                    self._missed += missed
                    k += missed
                self._stop.wait(max(t0 + k * self.interval - monotonic(), 0.0))
        except BaseException as exc:  # recorded and reported with the trace, never lost silently
            self.error = exc
        finally:
            try:
                self.source.close()
            except Exception as exc:  # noqa: BLE001
                self.close_error = f"{type(exc).__name__}: {exc}"
            self._cpu_end = time.thread_time() - self._cpu_start

    def _answer(
        self, values: np.ndarray, requested: float, answered: float, reading: SourceReading
    ) -> None:
        taken_at = np.nan if reading.taken_at is None else float(reading.taken_at)
        remote = np.nan if reading.remote_cpu_seconds is None else float(reading.remote_cpu_seconds)
        with self._lock:
            if self._n == len(self._values):
                self._values = np.concatenate([self._values, np.full_like(self._values, np.nan)])
                self._calls = np.concatenate([self._calls, np.full_like(self._calls, np.nan)])
            self._values[self._n] = values
            self._calls[self._n] = (requested, answered, taken_at, remote)
            self._n += 1

    def _failed_call(self, requested: float, message: str) -> None:
        with self._lock:
            self._failed += 1
            self._failures.append((requested, message))
            del self._failures[:-MAX_ERRORS]  # the latest few, to name the last error of a gap
            if message in self._errors or len(self._errors) < MAX_ERRORS:
                self._errors[message] = self._errors.get(message, 0) + 1


@dataclass
class SourceResult:
    """A source's samples derived at their own times and placed on the sampler's grid."""

    source: Source
    recording: SourceRecording
    times: SampleTimes
    own: dict[str, np.ndarray]  # metrics at ``times.times``
    grid: dict[str, np.ndarray]  # the same metrics on the grid
    derive_error: str | None = None


def derive_on_grid(source: Source, recording: SourceRecording, grid: np.ndarray) -> SourceResult:
    """Derive a source's metrics from its kept samples at their own times, then place each on
    the tick times ``grid`` (``place_on_grid``, within the source's staleness bound)."""
    times = recording.sample_times()
    own: dict[str, np.ndarray] = {}
    error = None
    try:
        own = source.derive(recording.values[times.kept], times.times, {})
    except Exception as exc:  # noqa: BLE001 - one source's bug must not cost the other series
        error = f"{type(exc).__name__}: {exc}"
    bound = source.staleness_bound()
    placed = {
        key: place_on_grid(
            values, times.times, grid, interval=source.interval_metric(key), stale_after=bound
        )
        for key, values in own.items()
    }
    return SourceResult(source, recording, times, own, placed, error)


def source_trace(
    result: SourceResult, origin: float, start: float, end: float, wall_minus_monotonic: float
) -> SourceTrace:
    """The source's own record for the trace, its times in seconds since ``origin`` (the first
    tick); gaps are looked for in [start, end] (the first and last tick)."""
    rec, times, source = result.recording, result.times, result.source
    latency = rec.latency[times.kept]
    all_latency = rec.latency
    bound = source.staleness_bound()
    return SourceTrace(
        interval_s=float(source.interval_s),
        stale_after_s=bound,
        times=[float(x) for x in times.times - origin],
        latency_s=[float(x) for x in latency],
        series={key: _json_floats(values) for key, values in sorted(result.own.items())},
        clock=times.clock,
        clock_offset_s=None if times.offset is None else times.offset - wall_minus_monotonic,
        clock_offset_uncertainty_s=times.uncertainty,
        gaps=[(a - origin, b - origin) for a, b in find_gaps(times.times, start, end, bound)],
        errors=[f"{message} ({count}x)" for message, count in rec.errors.items()],
        cost=SourceCost(
            cpu_seconds=rec.cpu_seconds,
            calls=len(all_latency) + rec.failed,
            failed_calls=rec.failed,
            missed_calls=rec.missed,
            latency_s_median=float(np.median(all_latency)) if len(all_latency) else None,
            latency_s_max=float(np.max(all_latency)) if len(all_latency) else None,
            remote_cpu_seconds=rec.remote_cpu_seconds(),
        ),
    )


def source_notes(
    name: str,
    trace: SourceTrace,
    result: SourceResult,
    *,
    stopped: bool,
    runner_error: BaseException | None,
    close_error: str | None,
    stop_wait: float,
) -> list[str]:
    """What a reader of the trace must know about this source, in words."""
    notes: list[str] = []
    rec = result.recording
    if trace.gaps:
        spans = ", ".join(f"{a:.1f}-{b:.1f} s" for a, b in trace.gaps[:5]) + (
            ", ..." if len(trace.gaps) > 5 else ""
        )
        total = sum(b - a for a, b in trace.gaps)
        last = f"; the last failed call said {rec.failures[-1][1]}" if rec.failures else ""
        notes.append(
            f"source {name}: no sample for {total:.1f} s in {len(trace.gaps)} stretch(es) longer "
            f"than its staleness bound of {trace.stale_after_s:g} s ({spans}): its series are "
            f"missing there, not carried{last}"
        )
    if rec.failed:
        errors = "; ".join(trace.errors)
        notes.append(f"source {name}: {rec.failed} of {trace.cost.calls} calls failed ({errors})")
    dropped = len(rec.values) - len(result.times.kept)
    if dropped and not result.source.repeats_expected:
        notes.append(
            f"source {name}: {dropped} answers repeated an earlier sample time (nothing newer): "
            "not counted as samples"
        )
    if not stopped:
        since = (
            f" (running for {time.monotonic() - rec.pending_since:.1f} s)"
            if rec.pending_since
            else ""
        )
        notes.append(
            f"source {name}: a call had not returned {stop_wait:g} s after the sampler "
            f"stopped{since}; it was left running and its answer is not in this trace"
        )
    if runner_error is not None:
        notes.append(f"source {name} stopped early: {type(runner_error).__name__}: {runner_error}")
    if close_error is not None:
        notes.append(f"source {name}: closing it failed: {close_error}")
    if result.derive_error is not None:
        notes.append(f"source {name}: its metrics could not be derived: {result.derive_error}")
    return notes


def _json_floats(values: np.ndarray) -> list[float | None]:
    values = np.asarray(values, dtype=np.float64)
    return [v if math.isfinite(v) else None for v in values.tolist()]
