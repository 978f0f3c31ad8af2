"""The sampler: runs the dynamic plug-ins' probes at a fixed rate on its own thread, and their
sources (``source``) beside it, each on its own schedule, into one trace.

Why it looks like this:

* Fixed rate without drift: tick k is due at ``t0 + k / rate`` (absolute deadlines), so a late
  tick does not push every later one; deadlines already missed are skipped and counted.
* The tick only reads the files (see ``procread``: the text of the wanted lines, unsplit) and
  stores the texts, joined, into one record of a preallocated numpy buffer; splitting, parsing,
  rates and utilizations happen after the run, vectorised (``procread.parse_segments``,
  ``Probe.derive``). A record is ``mask SEP text_0 SEP text_1 ...`` (``procread.SEGMENT``), one
  text per reader; a reader that is not a ``TextReader`` (the process tree) stores its tokens.
  ``TickPlan.record`` is the one implementation of a tick: the sampling thread and
  ``per_sample_cost`` both call it.
* Memory stays bounded on long runs: a full buffer is written to ``spill_dir`` as ``.npy``
  chunks (with ``columns.json`` naming the columns) and reused; without ``spill_dir`` full
  buffers are kept in memory.
* It accounts for its own CPU time (the thread's CPU clock), wake-ups and buffer memory:
  the monitor's direct cost, the first model of overhead for the rate tuner.
* Multi-rate on one time grid: a probe that declares ``max_rate_hz`` below the sampling rate
  (counters the kernel only refreshes every so often, see ``Probe``) is read only on every
  ``every``-th tick (``every = ceil(rate / max_rate_hz)``), and on the opening and closing
  samples. On the other ticks its columns repeat its last reading (``raw()`` shows that carried
  value) and a bit mask at the start of each record says which rows were real reads. Its
  metrics are derived from its real reads only, with their own times, so a rate is always
  (counter at read k - counter at read k-1) / (time of read k - time of read k-1), never a jump
  divided by one tick; the result is then spread over the grid: a rate or share of an interval
  to every tick inside that interval (the tick that ends it included), a level from its read
  until the next.
* Sources never touch the tick: each runs on its own thread (``source_runner``) from
  ``start()`` until ``stop()``, which asks them all to stop and waits at most
  ``SOURCE_STOP_WAIT_S`` in all. Their samples are derived at their own times and placed on the
  grid by the same rule as a slow probe's, never carried past their staleness bound; the trace
  keeps each source's own times, latencies, gaps and cost (``MonitorTrace.sources``). Their
  samples are kept in memory (a source samples seconds apart, not ticks apart).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from pilot_sys.errors import BadInput
from pilot_sys.monitor.probe import Probe, ProbeContext, Reader, TextReader
from pilot_sys.monitor.processes import open_process_probe
from pilot_sys.monitor.procread import (
    MISSING,
    SEGMENT,
    TOKEN_DTYPE,
    parse_segments,
    parse_tokens,
    tokens_layout,
)
from pilot_sys.monitor.rates import spread_reads
from pilot_sys.monitor.source import Source
from pilot_sys.monitor.source_runner import (
    SourceResult,
    SourceRunner,
    derive_on_grid,
    source_notes,
    source_trace,
)
from pilot_sys.monitor.trace import MonitorTrace, SourceTrace
from pilot_sys.plugin_loader import load_plugins
from pilot_sys.safefile import replace_file, replace_file_with

MIN_CHUNK_ROWS = 64
MAX_CHUNK_ROWS = 1 << 16
CHUNK_SECONDS = 60.0  # a chunk (and a spill file) holds about this much sampling
MAX_CHUNK_BYTES = 16 << 20  # ... or less, so that one buffer stays within this many bytes
EVENT_WAIT_PERIOD = 0.05  # slower ticks wait on an event so that stop() returns promptly
READS_DTYPE = np.uint64
# Each record starts with the bit mask of the slow probes read on that tick (bit g for slow group
# g). Kept in the record rather than in an array of its own so that a spilled chunk is
# self-contained; at most 52 groups, so that the mask survives parsing to float64.
MAX_SLOW_GROUPS = 52
NO_SLOW_READ = b"0"
MASK_BYTES = 21
_PARSE_ROWS = 8192  # records parsed at a time: bounds the temporary Python objects
SOURCE_STOP_WAIT_S = 2.0  # stop() waits this long in all for sources still in a call
RECENT_SOURCE_SAMPLES = 8  # a source's latest samples the live view derives from


class ProbeSchedule(BaseModel):
    """How often one probe is read: what the benchmark and the trace notes report."""

    probe: str
    every: int  # read on every ``every``-th tick of the grid
    rate_hz: float  # = sampling rate / every
    columns: int
    files: list[str]
    reason: str = ""


class SamplerCost(BaseModel):
    """What sampling cost, measured on the sampler's own thread."""

    rate_hz: float
    samples: int
    seconds: float  # wall time sampled
    cpu_seconds: float  # the sampler thread's CPU time
    cpu_seconds_per_second: float  # = the fraction of one core used by sampling
    cpu_seconds_per_sample: float
    wakeups_per_second: float
    memory_bytes: float  # sample buffers held in memory
    late_ticks: int  # ticks that found their deadline already passed
    skipped_ticks: int  # deadlines skipped because a tick overran a whole period
    max_lateness_s: float
    # the sources' threads on this host (not in ``cpu_seconds``: they do not scale with the rate)
    source_cpu_seconds: float = 0.0


@dataclass(slots=True)
class SlowGroup:
    """A probe read on every ``every``-th tick of the grid (``Probe.max_rate_hz``)."""

    every: int
    bit: int  # its bit in a record's read mask
    reads: list[Callable[[], bytes]]  # the tick reads of its readers
    guarded: list[Callable[[], bytes]]  # the same, each failing on its own (a retried tick)
    last: list[bytes]  # the texts of its last read, stored again on the ticks between reads
    due: int = 0  # the next tick it is read on


def _guarded(read: Callable[[], bytes], k: int, errors: dict[int, str]) -> Callable[[], bytes]:
    """Reader ``k``'s tick read that cannot fail: an empty text (parsed as MISSING counters)
    and its first error kept for the notes."""

    def guarded() -> bytes:
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - a plug-in's failure must not end sampling
            errors.setdefault(k, f"{type(exc).__name__}: {exc}")
            return b""

    return guarded


class TickPlan:
    """What a tick reads, and the one implementation of a tick (``record``).

    ``fast`` are the tick reads of the probes read on every tick, ``slow`` the groups of those
    read less often. A tick whose reads all succeed costs one pass over the reads (no per-read
    ``try``); after a read raised, the tick is read again with every read guarded, so that a
    failing reader leaves MISSING counters for that tick only."""

    __slots__ = ("fast", "guarded_fast", "slow", "errors", "_spec")

    def __init__(
        self,
        fast: list[tuple[int, Callable[[], bytes]]],
        slow: list[tuple[int, int, list[tuple[int, Callable[[], bytes]]]]],
    ) -> None:
        """``fast``: (reader index, tick read) pairs; ``slow``: (every, bit, [(reader index,
        tick read)]) per slow group."""
        self.errors: dict[int, str] = {}  # reader index -> its first error, for the notes
        self.fast = [read for _, read in fast]
        self.guarded_fast = [_guarded(read, k, self.errors) for k, read in fast]
        self.slow = [
            SlowGroup(
                every,
                bit,
                [read for _, read in reads],
                [_guarded(read, k, self.errors) for k, read in reads],
                [b""] * len(reads),
            )
            for every, bit, reads in slow
        ]
        self._spec = (fast, slow)

    def scratch(self, *, every_probe: bool = False) -> TickPlan:
        """A fresh plan over the same reads (from tick 0; ``every_probe``: all read on every
        tick), for measuring the tick without touching the recording's schedule."""
        fast, slow = self._spec
        every_tick = [(1, bit, reads) for _every, bit, reads in slow]
        return TickPlan(fast, every_tick if every_probe else slow)

    def record(self, tick: int, closing: bool, guarded: bool = False) -> bytes:
        """The record of tick ``tick`` (``closing``: the last sample, every probe is read).
        ``guarded``: every read on its own (the retry after a read raised)."""
        try:
            row = [NO_SLOW_READ]
            append = row.append
            for read in self.guarded_fast if guarded else self.fast:
                append(read())
            bits = 0
            for g in self.slow:
                if closing or tick >= g.due:
                    g.last = [read() for read in (g.guarded if guarded else g.reads)]
                    bits |= g.bit
                row += g.last  # the last reading, carried forward on the ticks between reads
        except Exception:  # noqa: BLE001 - read the tick again, each reader on its own
            if guarded:
                raise
            return self.record(tick, closing, True)
        if bits:
            row[0] = b"%d" % bits
            for g in self.slow:  # due again only once the whole record is read: a retry reads it
                if bits & g.bit:
                    g.due = (tick // g.every + 1) * g.every
        return SEGMENT.join(row)


def open_plugins(
    context: ProbeContext, plugins: Sequence[Any] | None = None
) -> tuple[list[Probe], list[Source]]:
    """Open every dynamic plug-in that has something to measure here: its probe or its source.
    A plug-in that fails to open, or returns neither, is skipped with a note (one unreadable
    file must not stop the monitor)."""
    probes: list[Probe] = []
    sources: list[Source] = []
    for plugin in plugins if plugins is not None else load_plugins("dynamic"):
        name = getattr(plugin, "NAME", getattr(plugin, "__name__", "?"))
        try:
            opened = plugin.open_probe(context)
        except Exception as exc:  # a third-party plug-in's bug must not stop the monitor either
            context.notes.append(f"dynamic plug-in {name} not used: {type(exc).__name__}: {exc}")
            continue
        if isinstance(opened, Probe):
            probes.append(opened)
        elif isinstance(opened, Source):
            sources.append(opened)
        elif opened is not None:
            context.notes.append(
                f"dynamic plug-in {name} not used: open_probe returned a "
                f"{type(opened).__name__}, neither a Probe nor a Source"
            )
    return probes, sources


class Sampler:
    """Sample every dynamic plug-in at ``rate_hz`` until ``stop()``, which returns the trace.

    ``graph`` (a ``ComponentGraph``) gives the limits utilizations are fractions of (without
    one, only self-evident limits are used: CPU count, NIC speed from sysfs); ``components``
    restricts what is sampled; ``pid`` adds the process tree rooted there; ``root`` is where
    /proc and /sys are read (a captured tree in tests).
    """

    def __init__(
        self,
        graph: Any = None,
        *,
        rate_hz: float = 10.0,
        components: list[str] | None = None,
        spill_dir: Path | None = None,
        pid: int | None = None,
        root: Path = Path("/"),
        chunk_rows: int | None = None,
        plugins: Sequence[Any] | None = None,
    ) -> None:
        if not (rate_hz > 0 and np.isfinite(rate_hz)):
            raise BadInput(
                "--rate", f"sampling rate must be a positive number of Hz, got {rate_hz}"
            )
        self.rate_hz = float(rate_hz)
        self.period = 1.0 / self.rate_hz
        self.graph = graph
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self.context = ProbeContext(
            root=Path(root),
            graph=graph,
            components=set(components) if components is not None else None,
            pid=pid,
        )
        self.probes, self.sources = open_plugins(self.context, plugins)
        if pid is not None:
            process_probe = open_process_probe(self.context)
            if process_probe is not None:
                self.probes.insert(0, process_probe)
        self.columns: list[str] = []
        self._readers: list[Reader | TextReader] = []
        self._widths: list[int] = []
        self._every: list[int] = []  # per probe
        self._bits: list[int] = []  # per probe: its bit in the read mask (0: read on every tick)
        self._layouts: list[dict[str, Any]] = []  # per reader: how to parse its tick texts
        self._bounds: list[int] = []  # per reader: bytes reserved in a record
        self._plan = TickPlan([], [])
        self._assemble()
        by_bytes = MAX_CHUNK_BYTES // self._record_dtype().itemsize
        self.chunk_rows = int(
            chunk_rows
            or max(
                MIN_CHUNK_ROWS, min(MAX_CHUNK_ROWS, round(self.rate_hz * CHUNK_SECONDS), by_bytes)
            )
        )
        self._buf = np.zeros(self.chunk_rows, dtype=self._record_dtype())
        self._times = np.zeros(self.chunk_rows, dtype=np.float64)
        self._row = 0
        self._chunks: list[tuple[np.ndarray, np.ndarray]] = []  # full buffers kept in memory
        self._spilled: list[tuple[Path, Path]] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()  # set by the thread once its clock has started
        self._error: BaseException | None = None
        self._samples = 0
        self._wakeups = 0
        self._late = 0
        self._skipped = 0
        self._max_late = 0.0
        self._t0_mono = 0.0
        self._t0_wall = 0.0
        self._t_end = 0.0
        self._cpu_clock: int | None = None
        self._cpu_start = 0.0
        self._cpu_end: float | None = None
        self._runners: list[SourceRunner] = []  # one per source, from start()
        self._stopped: list[bool] = []  # per runner: whether its thread ended within the wait
        self._collisions: set[tuple[str, str]] = set()  # (source, metric) also derived by a probe
        self.trace: MonitorTrace | None = None

    # -- public API ------------------------------------------------------------------------
    def follow(self, pid: int) -> None:
        """Add the process tree rooted at ``pid`` before ``start()``: a command can be started
        after the (slower) opening of every other plug-in, so that its first moments are sampled."""
        if self._thread is not None:
            raise RuntimeError("follow() must be called before start()")
        self.context.pid = pid
        probe = open_process_probe(self.context)
        if probe is None:
            return
        self.probes = [p for p in self.probes if p.name != probe.name]
        self.probes.insert(0, probe)
        self._assemble()
        self._buf = np.zeros(self.chunk_rows, dtype=self._record_dtype())

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("a Sampler is started once; make a new one for another recording")
        if self.spill_dir is not None:  # the spilled chunks are readable on their own
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            replace_file(self.spill_dir / "columns.json", json.dumps(self._describe(), indent=1))
        self._thread = threading.Thread(target=self._run, name="pilot-sys-sampler", daemon=True)
        self._thread.start()
        self._ready.wait(5.0)
        for source in self.sources:
            try:
                runner = SourceRunner(source)
            except ValueError as exc:
                self.context.notes.append(f"source {source.name} not used: {exc}")
                source.close()
                continue
            runner.start()
            self._runners.append(runner)
        return self

    def stop(self, *, command: list[str] | None = None, cut: str | None = None) -> MonitorTrace:
        """Stop sampling and derive every metric; safe to call twice (returns the same trace)."""
        if self.trace is not None:
            return self.trace
        self._stop.set()
        for runner in self._runners:  # all at once: they stop in parallel
            runner.request_stop()
        if self._thread is not None:
            self._thread.join()
        deadline = time.monotonic() + SOURCE_STOP_WAIT_S
        self._stopped = [runner.join(deadline - time.monotonic()) for runner in self._runners]
        for probe in self.probes:
            probe.close()
        if self._thread is None:  # never started: the sources never ran, nothing will close them
            for source in self.sources:
                source.close()
        self.trace = self._build_trace(command or [], cut)
        return self.trace

    def close(self) -> None:
        """Release the plug-ins' files without recording (a sampler that is never started)."""
        if self._thread is None and self.trace is None:
            for probe in self.probes:
                probe.close()
            for source in self.sources:
                source.close()
            self.probes = []
            self.sources = []

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def cost(self) -> SamplerCost:
        """The sampler's own cost so far (or over the whole recording once stopped)."""
        cpu = self._cpu_seconds()
        end = self._t_end if self._cpu_end is not None else time.monotonic()
        seconds = max(end - self._t0_mono, 0.0) if self._samples else 0.0
        memory = (
            self._buf.nbytes
            + self._times.nbytes
            + sum(b.nbytes + t.nbytes for b, t in self._chunks)
        )
        return SamplerCost(
            rate_hz=self.rate_hz,
            samples=self._samples,
            seconds=seconds,
            cpu_seconds=cpu,
            cpu_seconds_per_second=cpu / seconds if seconds > 0 else 0.0,
            cpu_seconds_per_sample=cpu / self._samples if self._samples else 0.0,
            wakeups_per_second=self._wakeups / seconds if seconds > 0 else 0.0,
            memory_bytes=float(memory),
            late_ticks=self._late,
            skipped_ticks=self._skipped,
            max_lateness_s=self._max_late,
            source_cpu_seconds=sum(runner.cpu_seconds() for runner in self._runners),
        )

    def per_sample_cost(self, samples: int = 200, *, every_probe: bool = False) -> float:
        """CPU seconds one sample costs (reads + storing the row), measured inline on the
        calling thread over ``samples`` consecutive ticks into a scratch buffer; the recording
        is not touched. Usable before ``start()``.

        By default the ticks follow the sampler's schedule (slow probes on their own ticks), so
        this is the mean cost per tick of a real recording; ``every_probe=True`` reads every
        probe on every sample (the cost of one complete snapshot)."""
        if self.trace is not None:
            raise RuntimeError("the sampler is stopped and its files are closed")
        scratch = np.zeros(2, dtype=self._record_dtype())
        record = self._plan.scratch(every_probe=every_probe).record
        monotonic = time.monotonic
        begin = time.thread_time()
        for tick in range(samples):
            monotonic()  # the tick's timestamp
            scratch[tick & 1] = record(tick, False)
        return (time.thread_time() - begin) / samples

    def schedule(self) -> list[ProbeSchedule]:
        """Which probe is read how often, from which files, and why."""
        out: list[ProbeSchedule] = []
        for probe, every in zip(self.probes, self._every, strict=True):
            files: list[str] = []
            for reader in probe.readers:
                if isinstance(reader, TextReader) and str(reader.path) not in files:
                    files.append(str(reader.path))
            out.append(
                ProbeSchedule(
                    probe=probe.name,
                    every=every,
                    rate_hz=self.rate_hz / every,
                    columns=len(probe.columns),
                    files=files,
                    reason=probe.rate_reason if every > 1 else "",
                )
            )
        return out

    def recent(self, rows: int = 20) -> dict[str, float]:
        """The latest value of every metric, derived from the last ``rows`` samples: for a live
        view while sampling runs (the sampler thread is not disturbed)."""
        rows = max(rows, 2 * max(self._every, default=1) + 2)  # two reads of the slowest probe
        n = self._row
        if n >= rows or (n >= 2 and not self._chunks):
            lo = max(0, n - rows)
            records, t = self._buf[lo:n].copy(), self._times[lo:n].copy()
        elif self._chunks:
            last_records, last_t = self._chunks[-1]
            keep = rows - n
            records = np.concatenate([last_records[-keep:], self._buf[:n]])
            t = np.concatenate([last_t[-keep:], self._times[:n]])
        else:
            return {}
        raw, reads = _parse_records(records, self._layouts)
        metrics = self._derive(raw, t, reads, self._source_results(t, last=RECENT_SOURCE_SAMPLES))
        latest: dict[str, float] = {}
        for key, values in metrics.items():
            finite = values[np.isfinite(values)]
            if finite.size:
                latest[key] = float(finite[-1])
        return latest

    @property
    def samples(self) -> int:
        return self._samples

    # -- the sampling thread ---------------------------------------------------------------
    def _assemble(self) -> None:
        """Columns and readers of every probe, and how many tokens each reader gives (learnt by
        one read now), so that a reader that fails on a later tick can be filled with MISSING
        instead of shifting the others. A probe whose readers fail already now is dropped."""
        kept: list[Probe] = []
        widths: list[int] = []
        for probe in self.probes:
            found: list[int | None] = []
            for reader in probe.readers:
                try:
                    found.append(len(reader()))
                except Exception:  # noqa: BLE001 - any plug-in failure is reported, not raised
                    found.append(None)
            missing = [i for i, w in enumerate(found) if w is None]
            if len(missing) == 1:
                found[missing[0]] = len(probe.columns) - sum(w for w in found if w is not None)
            if len(missing) > 1 or sum(w or 0 for w in found) != len(probe.columns):
                self.context.notes.append(
                    f"dynamic plug-in {probe.name} not used: its counters could not be read"
                )
                probe.close()
                continue
            kept.append(probe)
            widths += [int(w or 0) for w in found]
        width_of = {}
        k = 0
        for probe in kept:
            width_of[id(probe)] = widths[k : k + len(probe.readers)]
            k += len(probe.readers)
        every = {id(p): self._every_for(p) for p in kept}
        # the row: probes read on every tick first, then the slow ones (``_derive`` takes the
        # probes that derive from other probes' metrics, PCIe, last)
        kept.sort(key=lambda p: (every[id(p)] > 1, p.derives_from_metrics))
        self.probes = kept
        self.columns = [c for p in kept for c in p.columns]
        self._readers = [r for p in kept for r in p.readers]
        self._widths = [w for p in kept for w in width_of[id(p)]]
        self._every = [every[id(p)] for p in kept]
        ticks: list[Callable[[], bytes]] = []
        self._layouts, self._bounds = [], []
        for reader, width in zip(self._readers, self._widths, strict=True):
            tick, layout, bound = tick_read(reader, width)
            ticks.append(tick)
            self._layouts.append(layout)
            self._bounds.append(bound)
        fast: list[tuple[int, Callable[[], bytes]]] = []
        slow: list[tuple[int, int, list[tuple[int, Callable[[], bytes]]]]] = []
        self._bits = []
        first = 0
        for p in kept:
            reads = [(k, ticks[k]) for k in range(first, first + len(p.readers))]
            bit = 0
            if every[id(p)] == 1:
                fast += reads
            elif reads:
                if len(slow) == MAX_SLOW_GROUPS:
                    raise RuntimeError(
                        f"more than {MAX_SLOW_GROUPS} probes read slower than the sampler"
                    )
                bit = 1 << len(slow)
                slow.append((every[id(p)], bit, reads))
            self._bits.append(bit)
            first += len(p.readers)
        self._plan = TickPlan(fast, slow)

    def _record_dtype(self) -> np.dtype:
        """Room for the mask and every reader's text (with room to grow, ``procread``)."""
        return np.dtype(f"S{MASK_BYTES + sum(self._bounds) + len(self._bounds)}")

    def _every_for(self, probe: Probe) -> int:
        """Read ``probe`` on every n-th tick: the fewest ticks that keep it at or under its
        useful rate (1 when it has none, or the sampler is slower anyway)."""
        limit = probe.max_rate_hz
        if not limit or limit <= 0 or limit >= self.rate_hz:
            return 1
        return max(1, math.ceil(self.rate_hz / limit - 1e-9))

    def _reader_columns(self, k: int) -> list[str]:
        start = sum(self._widths[:k])
        return self.columns[start : start + self._widths[k]]

    def _run(self) -> None:
        try:
            self._cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):
            self._cpu_clock = None
        self._cpu_start = time.thread_time()
        record = self._plan.record
        monotonic = time.monotonic
        sleep = time.sleep
        wait = self._stop.wait
        stopping = self._stop.is_set
        period = self.period
        use_event = period >= EVENT_WAIT_PERIOD
        buf, times = self._buf, self._times
        last_row = self.chunk_rows - 1
        self._t0_mono = monotonic()
        self._t0_wall = time.time() - (monotonic() - self._t0_mono)
        t0 = self._t0_mono
        deadline = t0
        tick = 0
        self._ready.set()
        try:
            while True:
                now = monotonic()
                closing = stopping()
                i = self._row
                buf[i] = record(tick, closing)
                times[i] = now
                self._samples += 1
                if i == last_row:
                    self._rotate()
                    buf, times = self._buf, self._times
                else:
                    self._row = i + 1
                if closing and self._samples >= 2:
                    break  # that was the closing sample, taken when stop() was called
                tick += 1
                deadline = t0 + tick * period
                after = monotonic()
                if after >= deadline:
                    self._late += 1
                    self._max_late = max(self._max_late, after - deadline)
                    missed = int((after - deadline) / period) + 1
                    self._skipped += missed
                    tick += missed
                    deadline = t0 + tick * period
                remaining = deadline - monotonic()
                self._wakeups += 1
                if remaining > 0:
                    if use_event:
                        wait(remaining)  # returns at once when stop() is called
                    else:
                        sleep(remaining)
        except BaseException as exc:  # recorded and reported by stop(), never lost silently
            self._error = exc
        finally:
            self._t_end = monotonic()
            self._cpu_end = time.thread_time() - self._cpu_start

    def _rotate(self) -> None:
        """The buffer is full: spill it (bounded memory) or keep it, and start a fresh one."""
        if self.spill_dir is not None:
            seq = len(self._spilled)
            raw_path = self.spill_dir / f"samples-{seq:05d}.npy"
            t_path = self.spill_dir / f"times-{seq:05d}.npy"
            # the spill directory may be the user's: never write through a planted link
            replace_file_with(raw_path, lambda fh: np.save(fh, self._buf), sync=False)
            replace_file_with(t_path, lambda fh: np.save(fh, self._times), sync=False)
            self._spilled.append((raw_path, t_path))
        else:
            self._chunks.append((self._buf, self._times))
            self._buf = np.zeros_like(self._buf)
            self._times = np.zeros_like(self._times)
        self._row = 0

    def _cpu_seconds(self) -> float:
        if self._cpu_end is not None:
            return self._cpu_end
        if self._cpu_clock is not None and self._thread is not None and self._thread.is_alive():
            try:
                return time.clock_gettime(self._cpu_clock) - self._cpu_start
            except OSError:
                return 0.0
        return 0.0

    # -- turning raw counters into the trace -----------------------------------------------
    def raw(self) -> tuple[np.ndarray, np.ndarray]:
        """All raw samples (float64, NaN where a counter was missing) and their monotonic times.
        A probe read slower than the sampler shows its last reading on the ticks between its
        reads (``read_rows`` says which rows were real reads)."""
        raw, t, _ = self._all_rows()
        return raw, t

    def read_rows(self) -> dict[str, np.ndarray]:
        """For each probe read slower than the sampler, the indices of the rows of ``raw()``
        that are real reads of its counters (the others carry its previous reading)."""
        _, _, reads = self._all_rows()
        return {
            self.probes[i].name: np.flatnonzero(_read_mask(reads, bit))
            for i, bit in self._probe_bits()
            if bit
        }

    def _all_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every sample: raw counters, times, slow-read masks."""
        raws: list[np.ndarray] = []
        times: list[np.ndarray] = []
        for raw_path, t_path in self._spilled:
            raws.append(np.load(raw_path, mmap_mode="r"))
            times.append(np.load(t_path, mmap_mode="r"))
        for b, t in self._chunks:
            raws.append(b)
            times.append(t)
        raws.append(self._buf[: self._row])
        times.append(self._times[: self._row])
        raw, reads = _parse_records(np.concatenate(raws), self._layouts)
        return raw, np.concatenate(times), reads

    def _probe_bits(self) -> list[tuple[int, int]]:
        """(probe index, its slow-group bit, 0 for a probe read on every tick)."""
        return list(enumerate(self._bits))

    def _derive(
        self,
        raw: np.ndarray,
        t: np.ndarray,
        reads: np.ndarray | None = None,
        sources: Sequence[SourceResult] = (),
    ) -> dict[str, np.ndarray]:
        """Every probe's metrics on the grid ``t``, then the sources' (already placed on it),
        then those of the probes that derive from all of these."""
        metrics: dict[str, np.ndarray] = {}
        starts = np.cumsum([0] + [len(p.columns) for p in self.probes])
        order = sorted(self._probe_bits(), key=lambda ib: self.probes[ib[0]].derives_from_metrics)
        placed = False
        for i, bit in order:
            probe = self.probes[i]
            if probe.derives_from_metrics and not placed:
                self._add_sources(metrics, sources)
                placed = True
            block = raw[:, starts[i] : starts[i + 1]]
            if not bit or reads is None:
                metrics.update(probe.derive(block, t, metrics))
                continue
            rows = np.flatnonzero(_read_mask(reads, bit))
            derived = probe.derive(block[rows], t[rows], {k: v[rows] for k, v in metrics.items()})
            for key, values in derived.items():
                metrics[key] = spread_reads(
                    values, rows, len(t), interval=probe.interval_metric(key)
                )
        if not placed:
            self._add_sources(metrics, sources)
        return metrics

    def _source_results(self, t: np.ndarray, last: int | None = None) -> list[SourceResult]:
        """Each source's samples so far (``last``: the latest few), derived at their own times
        and placed on the grid ``t``."""
        return [derive_on_grid(r.source, r.recording(last), t) for r in self._runners]

    def _add_sources(self, metrics: dict[str, np.ndarray], sources: Sequence[SourceResult]) -> None:
        for result in sources:
            for key, values in result.grid.items():
                if key in metrics:  # a probe's series wins; the source's stays in its own record
                    self._collisions.add((result.source.name, key))
                    continue
                metrics[key] = values

    def _describe(self) -> dict[str, Any]:
        measured = (*self.probes, *self.sources)
        return {
            "columns": self.columns,
            "rate_hz": self.rate_hz,
            # a record is "mask SEP text SEP text ...": how to parse each reader's text, and which
            # bit of the mask marks the real reads of which columns
            "record_format": "segments-v1",
            "layouts": self._layouts,
            "slow_reads": [
                {
                    "probe": self.probes[i].name,
                    "bit": bit,
                    "every": self._every[i],
                    "columns": list(self.probes[i].columns),
                }
                for i, bit in self._probe_bits()
                if bit
            ],
            "sources": [
                {"source": s.name, "interval_s": s.interval_s, "columns": list(s.columns)}
                for s in self.sources
            ],
            "limits": {k: v.model_dump(mode="json") for p in measured for k, v in p.limits.items()},
            "attrs": {k: v for p in measured for k, v in p.attrs().items()},
        }

    def _build_trace(self, command: list[str], cut: str | None) -> MonitorTrace:
        if self._error is not None:
            self.context.notes.append(
                f"sampling stopped early: {type(self._error).__name__}: {self._error}"
            )
        for k, message in sorted(self._plan.errors.items()):
            names = self._reader_columns(k)
            self.context.notes.append(
                f"reading {names[0].split('/')[0] if names else 'a plug-in'} failed at times "
                f"({message}); those samples are missing, not zero"
            )
        for plan in self.schedule():
            if plan.every > 1:
                self.context.notes.append(
                    f"{plan.probe} read at {plan.rate_hz:g} Hz (every {plan.every} ticks; its last "
                    "reading is carried between reads, its rates are taken between real reads): "
                    f"{plan.reason}"
                )
        raw, t, reads = self._all_rows()
        results = self._source_results(t)
        metrics = self._derive(raw, t, reads, results) if len(t) else {}
        rel = t - t[0] if len(t) else t
        series = {key: _to_list(values) for key, values in sorted(metrics.items())}
        sources = self._source_traces(results, t)
        description = self._describe()
        cost = self.cost()
        return MonitorTrace(
            rate_hz=self.rate_hz,
            start_time=self._t0_wall,
            timestamps=[float(x) for x in rel],
            series=series,
            command=command,
            component_under_test=cut,
            monitor_cost=cost.model_dump(),
            limits=description["limits"],
            attrs=description["attrs"],
            notes=list(self.context.notes),
            sources=sources,
        )

    def _source_traces(self, results: list[SourceResult], t: np.ndarray) -> dict[str, SourceTrace]:
        """Each source's own record, on the clock of the trace's timestamps, and its notes."""
        origin, end = (float(t[0]), float(t[-1])) if len(t) else (self._t0_mono, self._t_end)
        out: dict[str, SourceTrace] = {}
        for runner, stopped, result in zip(self._runners, self._stopped, results, strict=True):
            name = runner.source.name or type(runner.source).__name__
            while name in out:
                name += "'"
            wall_minus_monotonic = self._t0_wall - self._t0_mono
            out[name] = record = source_trace(result, origin, origin, end, wall_minus_monotonic)
            self.context.notes += source_notes(
                name,
                record,
                result,
                stopped=stopped,
                runner_error=runner.error,
                close_error=runner.close_error,
                stop_wait=SOURCE_STOP_WAIT_S,
            )
        for name, key in sorted(self._collisions):
            self.context.notes.append(
                f"source {name}: {key} is also a probe's series; the grid keeps the probe's"
            )
        return out


def tick_read(
    reader: Reader | TextReader, width: int
) -> tuple[Callable[[], bytes], dict[str, Any], int]:
    """A reader's tick read, the layout to parse what it stores, and the bytes to reserve: a
    ``TextReader`` stores its text unsplit; any other reader its ``width`` tokens, joined."""
    if isinstance(reader, TextReader):
        return reader.tick_reader(), reader.layout(), reader.text_bound()

    def tokens() -> bytes:
        part = reader()
        if len(part) != width:
            raise ValueError(f"{len(part)} counters instead of {width}")
        return b" ".join(part)

    return tokens, tokens_layout(width), 21 * width


def _parse_records(
    records: np.ndarray, layouts: list[dict[str, Any]]
) -> tuple[np.ndarray, np.ndarray]:
    """Tick records to (raw counters, float64 with NaN where missing, slow-read masks)."""
    widths = [
        int(layout["count"])
        if layout["kind"] == "tokens"
        else len(layout["wanted"] if layout["kind"] == "lines" else layout["pick"])
        for layout in layouts
    ]
    n = len(records)
    raw = np.full((n, sum(widths)), np.nan)
    reads = np.zeros(n, dtype=READS_DTYPE)
    parts = len(layouts) + 1
    for lo in range(0, n, _PARSE_ROWS):
        block = records[lo : lo + _PARSE_ROWS].tolist()
        split = [record.split(SEGMENT) for record in block]
        for r, segs in enumerate(split):
            if len(segs) != parts:  # cut short (a text outgrew its room): what is there is parsed
                split[r] = (segs + [b""] * parts)[:parts]
        masks = parse_tokens(np.array([segs[0][:20] for segs in split], dtype=TOKEN_DTYPE))
        reads[lo : lo + len(block)] = np.where(np.isfinite(masks), masks, 0).astype(READS_DTYPE)
        tokens = np.full((len(block), sum(widths)), MISSING, dtype=TOKEN_DTYPE)
        start = 0
        for k, (layout, width) in enumerate(zip(layouts, widths, strict=True)):
            tokens[:, start : start + width] = parse_segments(
                [segs[k + 1] for segs in split], layout
            )
            start += width
        raw[lo : lo + len(block)] = parse_tokens(tokens)  # procread.MISSING becomes NaN
    return raw, reads


def _read_mask(reads: np.ndarray, bit: int) -> np.ndarray:
    return (np.asarray(reads, dtype=READS_DTYPE) & READS_DTYPE(bit)) != 0


def _to_list(values: np.ndarray) -> list[float | None]:
    """JSON-ready: NaN and infinities become None ("could not be read / not defined here")."""
    values = np.asarray(values, dtype=np.float64)
    return [
        v if v == v and v not in (float("inf"), float("-inf")) else None for v in values.tolist()
    ]


def read_spill(spill_dir: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The raw counters a sampler spilled to ``spill_dir`` (columns, float64 samples x columns
    with NaN where missing, monotonic times): what survives even if the process that sampled
    them did not get to ``stop()``."""
    spill_dir = Path(spill_dir)
    try:
        description = json.loads((spill_dir / "columns.json").read_text())
        columns = description["columns"]
        layouts = description["layouts"]
    except (OSError, ValueError, KeyError) as exc:
        raise BadInput(
            str(spill_dir / "columns.json"), f"not a sampler spill directory ({exc})"
        ) from None
    raw_files = sorted(spill_dir.glob("samples-*.npy"))
    records = [np.load(f) for f in raw_files]
    times = [np.load(spill_dir / f.name.replace("samples-", "times-")) for f in raw_files]
    if not records:
        return columns, np.zeros((0, len(columns))), np.zeros(0)
    raw, _ = _parse_records(np.concatenate(records), layouts)
    return columns, raw, np.concatenate(times)
