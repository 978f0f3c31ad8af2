"""The sampler: runs the dynamic plug-ins at a fixed rate on its own thread.

Why it looks like this:

* Fixed rate without drift: tick k is due at ``t0 + k / rate`` (absolute deadlines), so a late
  tick does not push every later one; deadlines already missed are skipped and counted.
* The tick only reads raw counters (see ``procread``) and stores them, joined as they were
  read, into one record of a preallocated numpy buffer; parsing, rates and utilizations happen
  once at the end, vectorised (``procread.parse_rows``, ``Probe.derive``).
* Memory stays bounded on long runs: a full buffer is written to ``spill_dir`` as ``.npy``
  chunks (with ``columns.json`` naming the columns) and reused; without ``spill_dir`` full
  buffers are kept in memory.
* It accounts for its own CPU time (the thread's CPU clock), wake-ups and buffer memory:
  the monitor's direct cost, the first model of overhead for the rate tuner.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from pilot_sys.errors import BadInput
from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import MISSING, parse_rows, row_dtype
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.plugin_loader import load_plugins

MIN_CHUNK_ROWS = 64
MAX_CHUNK_ROWS = 1 << 16
CHUNK_SECONDS = 60.0  # a chunk (and a spill file) holds about this much sampling
EVENT_WAIT_PERIOD = 0.05  # slower ticks wait on an event so that stop() returns promptly


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


def open_probes(context: ProbeContext, plugins: Sequence[Any] | None = None) -> list[Probe]:
    """Open every dynamic plug-in that has something to measure here; a plug-in that fails to
    open is skipped with a note (one unreadable file must not stop the monitor)."""
    probes: list[Probe] = []
    for plugin in plugins if plugins is not None else load_plugins("dynamic"):
        name = getattr(plugin, "NAME", getattr(plugin, "__name__", "?"))
        try:
            probe = plugin.open_probe(context)
        except Exception as exc:  # a third-party plug-in's bug must not stop the monitor either
            context.notes.append(f"dynamic plug-in {name} not used: {type(exc).__name__}: {exc}")
            continue
        if probe is not None:
            probes.append(probe)
    # plug-ins that derive from other plug-ins' metrics (PCIe sums its children) go last
    probes.sort(key=lambda p: bool(getattr(p, "derives_from_metrics", False)))
    return probes


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
            raise BadInput("--rate", f"sampling rate must be a positive number of Hz, got {rate_hz}")
        self.rate_hz = float(rate_hz)
        self.period = 1.0 / self.rate_hz
        self.graph = graph
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self.context = ProbeContext(
            root=Path(root), graph=graph, components=set(components) if components is not None else None, pid=pid
        )
        self.probes = open_probes(self.context, plugins)
        self.columns: list[str] = []
        self._readers: list[Callable[[], Sequence[Any]]] = []
        self._widths: list[int] = []
        self._reader_errors: dict[int, str] = {}  # reader index -> first error, for the notes
        self._assemble()
        self.chunk_rows = int(
            chunk_rows or min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, round(self.rate_hz * CHUNK_SECONDS)))
        )
        self._buf = np.zeros(self.chunk_rows, dtype=row_dtype(len(self.columns)))
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
        self.trace: MonitorTrace | None = None

    # -- public API ------------------------------------------------------------------------
    def follow(self, pid: int) -> None:
        """Add the process tree rooted at ``pid`` before ``start()``: a command can be started
        after the (slower) opening of every other plug-in, so that its first moments are sampled."""
        if self._thread is not None:
            raise RuntimeError("follow() must be called before start()")
        from pilot_sys.plugins.dynamic import process

        self.context.pid = pid
        probe = process.open_probe(self.context)
        if probe is None:
            return
        self.probes = [p for p in self.probes if p.name != probe.name]
        self.probes.insert(0, probe)
        self.probes.sort(key=lambda p: bool(getattr(p, "derives_from_metrics", False)))
        self._assemble()
        self._buf = np.zeros(self.chunk_rows, dtype=row_dtype(len(self.columns)))

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("a Sampler is started once; make a new one for another recording")
        if self.spill_dir is not None:  # the spilled chunks are readable on their own
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            (self.spill_dir / "columns.json").write_text(json.dumps(self._describe(), indent=1))
        self._thread = threading.Thread(target=self._run, name="pilot-sys-sampler", daemon=True)
        self._thread.start()
        self._ready.wait(5.0)
        return self

    def stop(self, *, command: list[str] | None = None, cut: str | None = None) -> MonitorTrace:
        """Stop sampling and derive every metric; safe to call twice (returns the same trace)."""
        if self.trace is not None:
            return self.trace
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for probe in self.probes:
            probe.close()
        self.trace = self._build_trace(command or [], cut)
        return self.trace

    def close(self) -> None:
        """Release the plug-ins' files without recording (a sampler that is never started)."""
        if self._thread is None and self.trace is None:
            for probe in self.probes:
                probe.close()
            self.probes = []

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def cost(self) -> SamplerCost:
        """The sampler's own cost so far (or over the whole recording once stopped)."""
        cpu = self._cpu_seconds()
        end = self._t_end if self._cpu_end is not None else time.monotonic()
        seconds = max(end - self._t0_mono, 0.0) if self._samples else 0.0
        memory = self._buf.nbytes + self._times.nbytes + sum(b.nbytes + t.nbytes for b, t in self._chunks)
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
        )

    def per_sample_cost(self, samples: int = 200) -> float:
        """CPU seconds one full sample costs (reads + storing the row), measured inline on the
        calling thread over ``samples`` samples into a scratch buffer; the recording is not
        touched. Usable before ``start()``."""
        if self.trace is not None:
            raise RuntimeError("the sampler is stopped and its files are closed")
        scratch = np.zeros(2, dtype=row_dtype(len(self.columns)))
        readers = self._readers
        monotonic = time.monotonic
        begin = time.thread_time()
        for k in range(samples):
            row: list[Any] = []
            for read in readers:
                row += read()
            scratch[k & 1] = b" ".join(row)
            monotonic()
        return (time.thread_time() - begin) / samples

    def recent(self, rows: int = 20) -> dict[str, float]:
        """The latest value of every metric, derived from the last ``rows`` samples: for a live
        view while sampling runs (the sampler thread is not disturbed)."""
        n = self._row
        if n >= 2:
            lo = max(0, n - rows)
            raw, t = self._buf[lo:n].copy(), self._times[lo:n].copy()
        elif self._chunks:
            last_raw, last_t = self._chunks[-1]
            raw = np.concatenate([last_raw[-rows:], self._buf[:n]])
            t = np.concatenate([last_t[-rows:], self._times[:n]])
        else:
            return {}
        metrics = self._derive(parse_rows(raw, len(self.columns)), t)
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
                self.context.notes.append(f"dynamic plug-in {probe.name} not used: its counters could not be read")
                probe.close()
                continue
            kept.append(probe)
            widths += [int(w or 0) for w in found]
        self.probes = kept
        self.columns = [c for p in kept for c in p.columns]
        self._readers = [r for p in kept for r in p.readers]
        self._widths = widths

    def _reader_columns(self, k: int) -> list[str]:
        start = sum(self._widths[:k])
        return self.columns[start : start + self._widths[k]]

    def _read_row_safely(self) -> list[Any]:
        """The tick's slow path, taken only after a reader raised: each reader on its own, a
        failing one's counters MISSING for this tick (it is tried again on the next)."""
        row: list[Any] = []
        for k, (read, width) in enumerate(zip(self._readers, self._widths)):
            try:
                part = read()
                if len(part) != width:
                    raise ValueError(f"{len(part)} counters instead of {width}")
                row += part
            except Exception as exc:  # noqa: BLE001 - a plug-in's failure must not end sampling
                self._reader_errors.setdefault(k, f"{type(exc).__name__}: {exc}")
                row += [MISSING] * width
        return row

    def _run(self) -> None:
        try:
            self._cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):
            self._cpu_clock = None
        self._cpu_start = time.thread_time()
        readers = self._readers
        join = b" ".join
        monotonic = time.monotonic
        sleep = time.sleep
        wait = self._stop.wait
        stopping = self._stop.is_set
        period = self.period
        use_event = period >= EVENT_WAIT_PERIOD
        self._t0_mono = monotonic()
        self._t0_wall = time.time() - (monotonic() - self._t0_mono)
        deadline = self._t0_mono
        tick = 0
        self._ready.set()
        try:
            while True:
                now = monotonic()
                row: list[Any] = []
                try:
                    for read in readers:
                        row += read()
                except Exception:  # noqa: BLE001 - see _read_row_safely
                    row = self._read_row_safely()
                i = self._row
                self._buf[i] = join(row)
                self._times[i] = now
                self._samples += 1
                if i + 1 == self.chunk_rows:
                    self._rotate()
                else:
                    self._row = i + 1
                if stopping() and self._samples >= 2:
                    break  # that was the closing sample, taken when stop() was called
                tick += 1
                deadline = self._t0_mono + tick * period
                after = monotonic()
                if after >= deadline:
                    self._late += 1
                    self._max_late = max(self._max_late, after - deadline)
                    missed = int((after - deadline) / period) + 1
                    self._skipped += missed
                    tick += missed
                    deadline = self._t0_mono + tick * period
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
            np.save(raw_path, self._buf)
            np.save(t_path, self._times)
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
        """All raw samples (float64, NaN where a counter was missing) and their monotonic times."""
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
        raw = parse_rows(np.concatenate(raws), len(self.columns))  # procread.MISSING becomes NaN
        return raw, np.concatenate(times)

    def _derive(self, raw: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
        metrics: dict[str, np.ndarray] = {}
        start = 0
        for probe in self.probes:
            width = len(probe.columns)
            block = raw[:, start : start + width]
            start += width
            metrics.update(probe.derive(block, t, metrics))
        return metrics

    def _describe(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "rate_hz": self.rate_hz,
            "limits": {k: v.model_dump(mode="json") for p in self.probes for k, v in p.limits.items()},
            "attrs": {k: v for p in self.probes for k, v in p.attrs().items()},
        }

    def _build_trace(self, command: list[str], cut: str | None) -> MonitorTrace:
        if self._error is not None:
            self.context.notes.append(f"sampling stopped early: {type(self._error).__name__}: {self._error}")
        for k, message in sorted(self._reader_errors.items()):
            names = self._reader_columns(k)
            self.context.notes.append(
                f"reading {names[0].split('/')[0] if names else 'a plug-in'} failed at times ({message}); "
                "those samples are missing, not zero"
            )
        raw, t = self.raw()
        metrics = self._derive(raw, t) if len(t) else {}
        rel = t - t[0] if len(t) else t
        series = {key: _to_list(values) for key, values in sorted(metrics.items())}
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
        )


def _to_list(values: np.ndarray) -> list[float | None]:
    """JSON-ready: NaN and infinities become None ("could not be read / not defined here")."""
    values = np.asarray(values, dtype=np.float64)
    return [v if v == v and v not in (float("inf"), float("-inf")) else None for v in values.tolist()]



def read_spill(spill_dir: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The raw counters a sampler spilled to ``spill_dir`` (columns, float64 samples x columns
    with NaN where missing, monotonic times): what survives even if the process that sampled
    them did not get to ``stop()``."""
    spill_dir = Path(spill_dir)
    try:
        columns = json.loads((spill_dir / "columns.json").read_text())["columns"]
    except (OSError, ValueError, KeyError) as exc:
        raise BadInput(str(spill_dir / "columns.json"), f"not a sampler spill directory ({exc})") from None
    raw_files = sorted(spill_dir.glob("samples-*.npy"))
    records = [np.load(f) for f in raw_files]
    times = [np.load(spill_dir / f.name.replace("samples-", "times-")) for f in raw_files]
    if not records:
        return columns, np.zeros((0, len(columns))), np.zeros(0)
    return columns, parse_rows(np.concatenate(records), len(columns)), np.concatenate(times)
