"""Record monitor traces of real workloads with deliberate run-to-run variability.

Why: `pilot-sys phases` must be judged on traces of real workloads recorded on a real (shared,
noisy) machine, not on synthetic signals. Each scenario below is a sequence of phases (fio, iperf3
over loopback, dd, stress-ng job mixes); every repetition varies the start delay, stretches or
shrinks the phase durations and sometimes inserts a short pause, which are the shifts, dilations
and glitches of Isci and Martonosi's taxonomy.

The real `pilot_sys.monitor.sampler.Sampler` is used when it is importable; otherwise a minimal
recorder in this script reads /proc/stat, /proc/diskstats, /proc/net/dev and /proc/meminfo at a
fixed rate and writes the same `MonitorTrace` format.

Example::

    python benchmarks/record_traces.py --out /tmp/pilot-sys-phase-traces --repeats 5
    python benchmarks/record_traces.py --out /tmp/harsh --dilation 0.2 --jitter 0.2 --pause 0.3:0.6
    python benchmarks/record_traces.py --only stress_cpu_ramp --repeats 1

Each trace is written as ``<out>/<scenario>/run<k>.json`` with the phase schedule actually run
in ``command`` (so a reader can see the variability that was injected).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from pilot_sys.monitor.trace import MonitorTrace

# --------------------------------------------------------------------------------------------
# Minimal recorder (used only when the real Sampler has not landed)
# --------------------------------------------------------------------------------------------

_USER_HZ = os.sysconf("SC_CLK_TCK")
_SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size


def _read_cpu_jiffies() -> list[list[int]]:
    """Rows of /proc/stat `cpu*` lines: user nice system idle iowait irq softirq steal."""
    rows = []
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            rows.append([int(x) for x in line.split()[1:9]])
    return rows


def _block_devices() -> list[str]:
    return sorted(d for d in os.listdir("/sys/block") if not d.startswith(("loop", "ram")))


def _read_disks(names: list[str]) -> list[list[int]]:
    """Per device: sectors read (field 6), sectors written (field 10), io_ticks ms (field 13)."""
    wanted = {n: i for i, n in enumerate(names)}
    out = [[0, 0, 0] for _ in names]
    with open("/proc/diskstats") as f:
        for line in f:
            parts = line.split()
            idx = wanted.get(parts[2])
            if idx is not None:
                out[idx] = [int(parts[5]), int(parts[9]), int(parts[12])]
    return out


def _nic_names() -> list[str]:
    with open("/proc/net/dev") as f:
        return [line.split(":")[0].strip() for line in f.readlines()[2:]]


def _read_nics(names: list[str]) -> list[list[int]]:
    """Per interface: rx bytes (field 1) and tx bytes (field 9) of /proc/net/dev."""
    wanted = {n: i for i, n in enumerate(names)}
    out = [[0, 0] for _ in names]
    with open("/proc/net/dev") as f:
        for line in f.readlines()[2:]:
            name, rest = line.split(":", 1)
            idx = wanted.get(name.strip())
            if idx is not None:
                fields = rest.split()
                out[idx] = [int(fields[0]), int(fields[8])]
    return out


def _read_mem_used_fraction() -> float:
    """(MemTotal - MemAvailable) / MemTotal from /proc/meminfo."""
    info: dict[str, int] = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, value = line.split(":", 1)
            if key in ("MemTotal", "MemAvailable"):
                info[key] = int(value.split()[0])
                if len(info) == 2:
                    break
    return 1.0 - info["MemAvailable"] / info["MemTotal"]


def _read_session_processes(
    sessions: set[int], strangers: set[int]
) -> dict[int, tuple[int, int, int]]:
    """CPU jiffies (utime + stime), read bytes and write bytes of every process in ``sessions``.

    Processes already found to belong to other sessions are remembered in ``strangers`` and not
    read again, so a tick costs one /proc listing plus reads of the workload's own processes.
    """
    out: dict[int, tuple[int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in strangers:
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # comm may hold spaces and ')'
            if int(fields[3]) not in sessions:  # field 6: session id
                strangers.add(pid)
                continue
            cpu = int(fields[11]) + int(fields[12])  # fields 14 and 15: utime, stime
            rd = wr = 0
            with open(f"/proc/{pid}/io") as f:
                for line in f:
                    if line.startswith("read_bytes"):
                        rd = int(line.split()[1])
                    elif line.startswith("write_bytes"):
                        wr = int(line.split()[1])
            out[pid] = (cpu, rd, wr)
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue  # the process ended while we looked
    return out


def _sum_process_deltas(ticks: list[dict[int, tuple[int, int, int]]]) -> np.ndarray:
    """Per interval, the growth of the counters summed over processes (a new process counts whole).

    Summing per-process deltas, rather than differencing a total, keeps a process that exits
    from showing up as negative work.
    """
    out = np.zeros((max(len(ticks) - 1, 0), 3))
    for i in range(1, len(ticks)):
        prev, cur = ticks[i - 1], ticks[i]
        for pid, counters in cur.items():
            before = prev.get(pid, (0, 0, 0))
            out[i - 1] += np.maximum(np.subtract(counters, before), 0)
    return out


class _Recorder(Protocol):
    def start(self) -> object: ...

    def stop(self) -> MonitorTrace: ...


class _Ticker:
    """A fixed-rate thread calling ``tick``; late ticks are skipped rather than bunched up."""

    def __init__(self, rate_hz: float, tick: Callable[[], None], name: str) -> None:
        self.rate_hz = rate_hz
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        period = 1.0 / self.rate_hz
        next_tick = time.monotonic()
        while not self._stop.is_set():
            self._tick()
            next_tick += period
            delay = next_tick - time.monotonic()
            if delay < 0:  # fell behind (noisy host): skip missed ticks instead of bursting
                next_tick = time.monotonic()
                delay = 0.0
            self._stop.wait(delay)


class ProcessAccountant:
    """CPU time and I/O bytes of the workload's own processes (every session it is told about).

    Why: on a shared host other tenants can keep every core busy, so host-wide busy shows none of
    the workload's phases; its own CPU share still does. The real Sampler has no process-tree
    plug-in yet, so this script measures it next to whichever recorder runs and puts the result
    on that recorder's time grid as ``process:workload/*`` series.
    """

    def __init__(self, rate_hz: float) -> None:
        self.sessions: set[int] = set()
        self._strangers: set[int] = set()
        self._wall: list[float] = []
        self._ticks: list[dict[int, tuple[int, int, int]]] = []
        self._ticker = _Ticker(rate_hz, self._tick, "process-accountant")

    def watch(self, session_id: int) -> None:
        self.sessions.add(session_id)

    def _tick(self) -> None:
        self._wall.append(time.time())
        self._ticks.append(_read_session_processes(self.sessions, self._strangers))

    def start(self) -> None:
        self._ticker.start()

    def stop_into(self, trace: MonitorTrace) -> None:
        """Add ``process:workload/{busy,read_bytes_per_s,write_bytes_per_s}`` on the trace's grid.

        Cumulative counters are interpolated to the trace's sample times (wall clock) and then
        differenced, so nothing is lost or counted twice between the two grids.
        """
        self._ticker.join()
        cumulative = np.vstack(
            [np.zeros((1, 3)), np.cumsum(_sum_process_deltas(self._ticks), axis=0)]
        )
        t = trace.start_time + np.asarray(trace.timestamps, dtype=float)
        wall = np.asarray(self._wall)
        # the trace's first sample closes an interval that starts one period earlier
        edges = np.concatenate(([t[0] - 1.0 / trace.rate_hz], t))
        at = np.column_stack([np.interp(edges, wall, cumulative[:, j]) for j in range(3)])
        delta = np.diff(at, axis=0)
        dt = np.diff(edges)
        ncpu = os.cpu_count() or 1
        busy = np.clip(delta[:, 0] / _USER_HZ / dt / ncpu, 0.0, 1.0)
        trace.series["process:workload/busy"] = [round(float(v), 6) for v in busy]
        trace.series["process:workload/read_bytes_per_s"] = [
            round(float(v), 1) for v in delta[:, 1] / dt
        ]
        trace.series["process:workload/write_bytes_per_s"] = [
            round(float(v), 1) for v in delta[:, 2] / dt
        ]


class ProcRecorder:
    """Fixed-rate reader of raw /proc counters; rates are computed once, vectorised, at stop().

    Hand-written (not psutil) because the tick must stay cheap at 20 Hz: one read of each file,
    integers appended to lists, no per-tick conversion.
    """

    def __init__(self, rate_hz: float) -> None:
        self.rate_hz = rate_hz
        self.disks = _block_devices()
        self.nics = _nic_names()
        self._t: list[float] = []
        self._cpu: list[list[list[int]]] = []
        self._disk: list[list[list[int]]] = []
        self._nic: list[list[list[int]]] = []
        self._mem: list[float] = []
        self._ticker = _Ticker(rate_hz, self._tick, "proc-recorder")
        self._start_unix = 0.0

    def start(self) -> None:
        self._ticker.start()

    def _tick(self) -> None:
        if not self._t:
            self._start_unix = time.time()
        self._t.append(time.monotonic())
        self._cpu.append(_read_cpu_jiffies())
        self._disk.append(_read_disks(self.disks))
        self._nic.append(_read_nics(self.nics))
        self._mem.append(_read_mem_used_fraction())

    def stop(self) -> MonitorTrace:
        self._ticker.join()
        t = np.asarray(self._t)
        dt = np.diff(t)
        series: dict[str, list[float | None]] = {}

        cpu = np.asarray(self._cpu, dtype=float)  # (n, 1 + ncpu, 8)
        dcpu = np.diff(cpu, axis=0)
        total = dcpu.sum(axis=2)
        total[total == 0] = np.nan  # no jiffy elapsed in this interval: unknown, not idle
        idle = dcpu[:, :, 3] + dcpu[:, :, 4]
        busy = 1.0 - idle / total
        names = ["host"] + [f"cpu{i}" for i in range(cpu.shape[1] - 1)]
        for j, name in enumerate(names):
            series[f"cpu:{name}/busy"] = busy[:, j].tolist()
        series["cpu:host/iowait"] = (dcpu[:, 0, 4] / total[:, 0]).tolist()

        disk = np.asarray(self._disk, dtype=float)  # (n, ndisk, 3)
        ddisk = np.diff(disk, axis=0)
        for j, name in enumerate(self.disks):
            series[f"block:{name}/busy"] = np.clip(ddisk[:, j, 2] / 1000.0 / dt, 0.0, 1.0).tolist()
            series[f"block:{name}/read_bytes_per_s"] = (ddisk[:, j, 0] * _SECTOR / dt).tolist()
            series[f"block:{name}/write_bytes_per_s"] = (ddisk[:, j, 1] * _SECTOR / dt).tolist()

        nic = np.asarray(self._nic, dtype=float)  # (n, nnic, 2)
        dnic = np.diff(nic, axis=0)
        for j, name in enumerate(self.nics):
            series[f"nic:{name}/rx_bytes_per_s"] = (dnic[:, j, 0] / dt).tolist()
            series[f"nic:{name}/tx_bytes_per_s"] = (dnic[:, j, 1] / dt).tolist()

        series["memory:host/util_capacity"] = self._mem[1:]
        for key, values in series.items():  # NaN (unknown) becomes None, as the trace contract says
            series[key] = [None if v != v else round(float(v), 6) for v in values]
        return MonitorTrace(
            rate_hz=self.rate_hz,
            start_time=self._start_unix + float(t[1] - t[0]),  # the first interval's end
            timestamps=(t[1:] - t[1]).round(4).tolist(),
            series=series,
        )


def make_recorder(rate_hz: float, kind: str = "auto") -> tuple[_Recorder, str]:
    """The real Sampler when it has landed (or ``kind="sampler"``), else the minimal /proc
    recorder."""
    if kind in ("auto", "sampler"):
        try:
            from pilot_sys.monitor.sampler import Sampler
        except ImportError:
            if kind == "sampler":
                raise
        else:
            return Sampler(graph=None, rate_hz=rate_hz), "pilot_sys.monitor.sampler.Sampler"
    return ProcRecorder(rate_hz), "benchmarks/record_traces.py:ProcRecorder"


# --------------------------------------------------------------------------------------------
# Scenarios: sequences of bounded phases
# --------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One phase: a command run for `seconds` (then stopped), or idle when argv is empty."""

    seconds: float
    argv: list[str] = field(default_factory=list)
    label: str = "idle"


@dataclass
class Context:
    workdir: Path
    iperf_port: int


def _fio(ctx: Context, rw: str, bs: str, seconds: float) -> list[str]:
    return [
        "fio", "--name=phase", f"--filename={ctx.workdir / 'fio.dat'}", "--size=64M",
        f"--rw={rw}", f"--bs={bs}", "--direct=1", "--ioengine=psync", "--time_based",
        f"--runtime={int(seconds * 1000) + 1000}ms", "--output=/dev/null",
    ]  # fmt: skip


def _stress(*args: str) -> list[str]:
    return ["stress-ng", *args, "--timeout", "60s", "--quiet"]


def _iperf(ctx: Context, seconds: float, *extra: str) -> list[str]:
    return [
        "iperf3",
        "-c",
        "127.0.0.1",
        "-p",
        str(ctx.iperf_port),
        "-t",
        str(int(seconds) + 2),
        *extra,
    ]


def _dd_write(ctx: Context, name: str = "dd_w.dat", mib: int = 2048) -> list[str]:
    # Sized to outlast the phase (the step stops it), capped so a runaway cannot fill the disk.
    return [
        "dd",
        "if=/dev/zero",
        f"of={ctx.workdir / name}",
        "bs=1M",
        f"count={mib}",
        "oflag=direct",
        "status=none",
    ]


def _dd_read(ctx: Context) -> list[str]:
    # Small direct reads of a 1 GiB file: slow enough to outlast the phase on a fast virtio disk.
    return [
        "dd",
        f"if={ctx.workdir / 'dd.dat'}",
        "of=/dev/null",
        "bs=16k",
        "iflag=direct",
        "status=none",
    ]


def scenarios(ctx: Context) -> dict[str, list[Step]]:
    """Nominal phase schedules (seconds); every repetition perturbs them."""
    hdd = ("--hdd", "1", "--hdd-bytes", "64M", "--temp-path", str(ctx.workdir))
    return {
        "fio_mix": [
            Step(1.5, _fio(ctx, "write", "1M", 1.5), "fio write 1M"),
            Step(1.0, _fio(ctx, "randread", "4k", 1.0), "fio randread 4k"),
            Step(0.5),
            Step(2.0, _fio(ctx, "read", "1M", 2.0), "fio read 1M"),
            Step(1.0, _fio(ctx, "randwrite", "4k", 1.0), "fio randwrite 4k"),
        ],
        "iperf3_loopback": [
            Step(1.5, _iperf(ctx, 1.5, "-b", "1G"), "iperf3 -b 1G"),
            Step(0.7),
            Step(1.0, _iperf(ctx, 1.0), "iperf3 unlimited"),
            Step(0.5),
            Step(1.5, _iperf(ctx, 1.5, "-b", "300M"), "iperf3 -b 300M"),
        ],
        "dd_write_read": [
            Step(1.0, _dd_write(ctx), "dd write direct"),
            Step(0.5),
            Step(2.0, _dd_read(ctx), "dd read direct"),
            Step(0.5),
            Step(1.0, _dd_write(ctx), "dd write direct"),
        ],
        "stress_cpu_ramp": [
            Step(1.0, _stress("--cpu", "1"), "stress-ng --cpu 1"),
            Step(1.5, _stress("--cpu", "2"), "stress-ng --cpu 2"),
            Step(1.0, _stress("--vm", "1", "--vm-bytes", "256M"), "stress-ng --vm 1"),
            Step(1.5, _stress("--cpu", "1"), "stress-ng --cpu 1"),
        ],
        "stress_io_cpu": [
            Step(1.5, _stress(*hdd), "stress-ng --hdd 1"),
            Step(1.0, _stress("--cpu", "2"), "stress-ng --cpu 2"),
            Step(0.6),
            Step(1.0, _stress("--cpu", "1"), "stress-ng --cpu 1"),
            Step(1.0, _stress(*hdd), "stress-ng --hdd 1"),
        ],
        "stress_pulses": [
            step
            for _ in range(4)
            for step in (Step(0.6, _stress("--cpu", "2"), "stress-ng --cpu 2"), Step(0.6))
        ],
    }


@dataclass
class Variability:
    """How much one repetition differs from the nominal schedule (shift, dilation, glitch)."""

    max_delay: float = 1.5  # start delay drawn from [0.2, max_delay] s: a time shift
    dilation: float = 0.05  # every run stretched by a factor in [1 - d, 1 + d]: time dilation
    jitter: float = 0.03  # and every phase by its own factor in [1 - j, 1 + j]
    # a pause of this many seconds inserted in half the runs
    pause: tuple[float, float] = (
        0.1,
        0.2,
    )
    pause_probability: float = 0.5


def perturb(steps: list[Step], rng: random.Random, v: Variability) -> tuple[float, list[Step]]:
    """Start delay, dilation of the run and of every phase, and sometimes a short inserted pause."""
    delay = rng.uniform(0.2, v.max_delay)
    factor = rng.uniform(1 - v.dilation, 1 + v.dilation)
    stretched = [
        Step(
            round(s.seconds * factor * rng.uniform(1 - v.jitter, 1 + v.jitter), 2), s.argv, s.label
        )
        for s in steps
    ]
    if rng.random() < v.pause_probability:
        where = rng.randrange(1, len(stretched))
        stretched.insert(where, Step(round(rng.uniform(*v.pause), 2), label="inserted pause"))
    return delay, stretched


def _run_step(step: Step, accountant: ProcessAccountant, deadline_slack: float = 3.0) -> float:
    """Run one bounded phase (stopped after its duration, whatever it is doing); its wall time."""
    start = time.monotonic()
    if not step.argv:
        time.sleep(step.seconds)
        return time.monotonic() - start
    proc = subprocess.Popen(
        step.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    accountant.watch(proc.pid)  # its own session: the pid is the session id
    try:
        proc.wait(timeout=step.seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=deadline_slack)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return time.monotonic() - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def record_one(
    name: str,
    steps: list[Step],
    rng: random.Random,
    variability: Variability,
    rate_hz: float,
    tail: float,
    background: list[int],
    kind: str,
) -> MonitorTrace:
    delay, plan = perturb(steps, rng, variability)
    recorder, source = make_recorder(rate_hz, kind)
    accountant = ProcessAccountant(rate_hz)
    for sid in background:  # long-lived helpers of the workload, e.g. the iperf3 server
        accountant.watch(sid)
    accountant.start()
    recorder.start()
    time.sleep(delay)
    elapsed = [_run_step(step, accountant) for step in plan]
    time.sleep(tail)
    trace = recorder.stop()
    accountant.stop_into(trace)
    schedule = [
        f"idle {delay:.2f}s",
        *(f"{s.label} {e:.2f}s" for s, e in zip(plan, elapsed, strict=True)),
        f"idle {tail:.2f}s",
    ]
    schedule.append(f"recorder={source}")
    trace.command = [f"scenario={name}", *schedule]
    return trace


#: Series kept in test fixtures: what `pilot-sys phases` uses by default plus the workload's own.
FIXTURE_SERIES = (
    "*/util*",
    "*/busy",
    "process:workload/*",
    "nic:lo/rx_bytes_per_s",
    "block:vda/*_bytes_per_s",
)


def export_fixtures(src: Path, dst: Path, decimals: int = 3) -> int:
    """Copy recorded traces as small test fixtures: only FIXTURE_SERIES, values rounded.

    Fractions keep 3 decimals (a 0.1 % step, far below the quantisation of the counters);
    rates keep 3 significant digits.
    """
    import fnmatch

    total = 0
    for path in sorted(src.glob("*/*.json")):
        trace = MonitorTrace.model_validate_json(path.read_text())
        keep = {
            k: v
            for k, v in trace.series.items()
            if any(fnmatch.fnmatchcase(k, g) for g in FIXTURE_SERIES)
        }
        for key, values in keep.items():
            rate = key.endswith("_per_s")
            keep[key] = [
                None if v is None else (float(f"{v:.3g}") if rate else round(v, decimals))
                for v in values
            ]
        small = trace.model_copy(
            update={
                "series": keep,
                "timestamps": [round(t, 3) for t in trace.timestamps],
                "monitor_cost": None,
                "limits": {},
                "attrs": {},
            }
        )
        out = dst / path.parent.name / path.name
        out.parent.mkdir(parents=True, exist_ok=True)
        text = small.model_dump_json(exclude_defaults=False)
        out.write_text(text)
        total += len(text)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/pilot-sys-phase-traces"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--rate", type=float, default=10.0, help="sampling rate in Hz (default 10, the monitor's)"
    )
    parser.add_argument(
        "--dilation", type=float, default=0.05, help="whole-run stretch, +- fraction (default 0.05)"
    )
    parser.add_argument(
        "--jitter", type=float, default=0.03, help="per-phase stretch, +- fraction (default 0.03)"
    )
    parser.add_argument(
        "--pause", default="0.1:0.2", help="inserted pause range in seconds (default 0.1:0.2)"
    )
    parser.add_argument(
        "--cycles",
        type=int,
        default=1,
        help="run each scenario's phase list this many times per trace",
    )
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--only", action="append", help="record only this scenario (repeatable)")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="scratch directory on the disk under test"
    )
    parser.add_argument(
        "--recorder", choices=("auto", "sampler", "proc"), default="auto",
        help="auto: the real Sampler if it is installed, else this script's /proc recorder",
    )  # fmt: skip
    parser.add_argument(
        "--export-fixtures",
        nargs=2,
        type=Path,
        metavar=("SRC", "DST"),
        help="only shrink recorded traces into test fixtures",
    )
    args = parser.parse_args(argv)

    if args.export_fixtures:
        size = export_fixtures(*args.export_fixtures)
        print(f"fixtures written to {args.export_fixtures[1]}: {size / 1024:.0f} KiB")
        return 0
    for tool in ("fio", "iperf3", "dd", "stress-ng"):
        if shutil.which(tool) is None:
            print(f"record_traces: {tool} is not installed", file=sys.stderr)
            return 2
    # a stopped recording still removes its scratch files and its iperf3 server (finally below)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    rng = random.Random(args.seed)
    low, _, high = args.pause.partition(":")
    variability = Variability(
        dilation=args.dilation, jitter=args.jitter, pause=(float(low), float(high or low))
    )
    workdir = Path(tempfile.mkdtemp(prefix="pilot-phases-", dir=args.workdir or "/var/tmp"))
    ctx = Context(workdir=workdir, iperf_port=_free_port())
    server = subprocess.Popen(
        ["iperf3", "-s", "-p", str(ctx.iperf_port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        time.sleep(0.3)
        # Lay the data files out once so that no scenario pays for allocation in its first phase.
        subprocess.run(_dd_write(ctx, "dd.dat", 1024), check=True)
        subprocess.run(
            _fio(ctx, "write", "1M", 0.5)[:-3] + ["--runtime=500ms", "--output=/dev/null"],
            check=True,
        )
        table = {name: steps * args.cycles for name, steps in scenarios(ctx).items()}
        names = args.only or list(table)
        for name in names:
            if name not in table:
                print(
                    f"record_traces: unknown scenario {name!r}; known: {', '.join(table)}",
                    file=sys.stderr,
                )
                return 2
        for k in range(args.repeats):
            for name in names:  # interleave scenarios so slow drifts of the host hit all of them
                trace = record_one(
                    name, table[name], rng, variability, args.rate, 0.6, [server.pid], args.recorder
                )
                path = args.out / name / f"run{k}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(trace.model_dump(mode="json"), separators=(",", ":")))
                print(
                    f"{path}: {len(trace.timestamps)} samples; {' | '.join(trace.command[1:])}",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait(timeout=5)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
