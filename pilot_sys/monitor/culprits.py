"""Who else used the host during the run: the other processes, ranked, so that a hot component
that is not the workload's names its culprits ("other processes 1.88 cores (stress-ng pid 1234
0.95, ...)"), as atop or pidstat would.

``HostProcesses`` is a source (its own thread, off the sampler's tick) that scans every
process in ``/proc`` every ``SCAN_INTERVAL_S`` and once more when it stops, reading per process:

* ``/proc/PID/stat``: ``comm`` (2), ``ppid`` (4), ``utime`` + ``stime`` (14, 15, clock ticks;
  every thread's), ``starttime`` (22, ticks since boot: a process whose pid was reused is a new
  one) and ``rss`` (24, pages);
* ``/proc/PID/io``: ``read_bytes`` / ``write_bytes`` (bytes fetched from / sent to storage, all
  disks; unreadable without the right to ptrace the process: then unknown, not zero), read
  only when the process used CPU time since its previous scan, and on the closing scan (a
  process that did not run issued no I/O; the counters are cumulative, so nothing is lost).

A process's share of the run is what its counters advanced from its first scan (or from zero,
when it started after the run did) to its last: CPU seconds / the run's seconds = cores. The
workload (every descendant of this process: the command ``monitor`` runs, a session's rounds)
is left out; pilot-sys itself is kept and marked as such. For the few processes that rank at
the top, the source also records their command line, whether they run in another network
namespace (``/proc/PID/ns/net``) and their cgroup (``/proc/PID/cgroup``: the v2 path, or the v1
``cpu`` hierarchy's), read while they still exist.

What a scan misses: the CPU a process used in its last scan interval before it exited, and
processes that lived less than one interval (their CPU moves into a parent's ``cutime``,
which is not counted: ``utime`` + ``stime`` only, so nothing is counted twice).

A session shares one scanner among its rounds (``SessionScan``): a round's source scans only
when the shared scan is due, so short rounds cost no scan of their own, and each round's
ranking covers the session so far (``cumulative``).

The ranking is in the trace's ``attrs`` under ``OTHERS`` (``rank``: pure, over the per-process
records); the verdict's evidence names the top ones (``bottleneck_culprits``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.source import Source, SourceReading

NAME = "host-processes"
OTHERS = "processes:other"  # the trace's attrs key of the ranking
SCAN_INTERVAL_S = 1.0
TOP = 5  # processes named per ranking
DESCRIBED = 2 * TOP  # processes whose command line, netns and cgroup are read per scan, at most
USER_HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
CMDLINE_CHARS = 120
READ_BYTES = 4096
MAX_TRACKED = 4096  # processes kept before the gone ones that cannot rank are forgotten
_OPEN = os.O_RDONLY | os.O_CLOEXEC


@dataclass
class Counters:
    """One process's counters at one scan."""

    comm: str
    ppid: int
    cpu_ticks: int
    start: int  # starttime, ticks since boot
    rss_pages: int
    read_bytes: int | None  # None: /proc/PID/io unreadable
    write_bytes: int | None


def parse_stat(text: bytes) -> tuple[str, int, int, int, int] | None:
    """``(comm, ppid, utime + stime, starttime, rss)`` of a ``/proc/PID/stat`` text (comm may
    hold spaces and parentheses: it ends at the last ``)``)."""
    open_at, close_at = text.find(b"("), text.rfind(b")")
    if open_at < 0 or close_at < open_at:
        return None
    fields = text[close_at + 2 :].split()
    try:
        return (
            text[open_at + 1 : close_at].decode(errors="replace"),
            int(fields[1]),
            int(fields[11]) + int(fields[12]),
            int(fields[19]),
            int(fields[21]),
        )
    except (IndexError, ValueError):
        return None


def parse_io(text: bytes) -> tuple[int | None, int | None]:
    """``(read_bytes, write_bytes)`` of a ``/proc/PID/io`` text."""
    found: dict[bytes, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(b":")
        if key in (b"read_bytes", b"write_bytes"):
            try:
                found[key] = int(value)
            except ValueError:
                continue
    return found.get(b"read_bytes"), found.get(b"write_bytes")


def _read(path: str) -> bytes:
    """A small /proc file in one read (raw calls: a third of what ``open()`` costs)."""
    fd = os.open(path, _OPEN)
    try:
        return os.read(fd, READ_BYTES)
    finally:
        os.close(fd)


def read_process(proc: str, pid: int, before: Counters | None = None) -> Counters | None:
    """A process's counters now (None: gone, or not readable). With its counters from the
    previous scan (``before``, same process) and no CPU time since, ``io`` is not read again:
    a process that did not run issued no I/O (the counters are cumulative, so what a skipped
    read would have shown is in the next one)."""
    try:
        parsed = parse_stat(_read(f"{proc}/{pid}/stat"))
    except OSError:
        return None
    if parsed is None:
        return None
    comm, ppid, cpu, start, rss = parsed
    if before is not None and before.start == start and before.cpu_ticks == cpu:
        return Counters(comm, ppid, cpu, start, rss, before.read_bytes, before.write_bytes)
    try:
        read_bytes, write_bytes = parse_io(_read(f"{proc}/{pid}/io"))
    except OSError:
        read_bytes = write_bytes = None
    return Counters(comm, ppid, cpu, start, rss, read_bytes, write_bytes)


def descendants(parents: dict[int, int], roots: set[int]) -> set[int]:
    """Every pid whose chain of parents reaches one of ``roots`` (the roots not included)."""
    found: set[int] = set()
    for pid in parents:
        chain = []
        current = pid
        while current in parents and current not in roots and current not in found:
            chain.append(current)
            current = parents[current]
            if len(chain) > len(parents):  # a cycle in a torn read: not the workload
                break
        if current in roots or current in found:
            found.update(c for c in chain if c not in roots)
    return found


@dataclass
class Tracked:
    """One process over the run: its counters at its first and last scans."""

    pid: int
    first: Counters
    last: Counters
    workload: bool = False
    facts: dict[str, str] = field(default_factory=dict)  # cmdline, netns, cgroup

    def cpu_seconds(self) -> float:
        return max(self.last.cpu_ticks - self.first.cpu_ticks, 0) / USER_HZ

    def io_bytes(self, which: str) -> int | None:
        a, b = getattr(self.first, which), getattr(self.last, which)
        return None if a is None or b is None else max(b - a, 0)


def _disk_of(tracked: Tracked) -> int:
    return (tracked.io_bytes("read_bytes") or 0) + (tracked.io_bytes("write_bytes") or 0)


def record(tracked: Tracked, seconds: float, me: int) -> dict[str, Any]:
    """A process's row in the ranking (JSON-ready)."""
    cpu = tracked.cpu_seconds()
    row: dict[str, Any] = {
        "pid": tracked.pid,
        "command": tracked.last.comm,
        "cpu_seconds": cpu,
        "cores": cpu / seconds if seconds > 0 else None,
        "read_bytes": tracked.io_bytes("read_bytes"),
        "write_bytes": tracked.io_bytes("write_bytes"),
        "rss_bytes": tracked.last.rss_pages * PAGE,
        **tracked.facts,
    }
    if tracked.pid == me:
        row["note"] = "pilot-sys itself (the monitor)"
    return row


def _disk(row: dict[str, Any]) -> int:
    return int(row.get("read_bytes") or 0) + int(row.get("write_bytes") or 0)


def rank(
    rows: list[dict[str, Any]],
    seconds: float,
    top: int = TOP,
    extra: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The ranking the trace keeps: the other processes' total CPU, and the ``top`` ones by CPU
    time, by disk bytes (read + written) and by resident memory, each with its share of the
    others' total (pure: rows as ``record`` gives them; ``extra``: the totals of processes
    not in ``rows``, ``cpu_seconds``, ``disk_bytes`` and ``processes``)."""
    extra = extra or {}
    cpu_total = sum(float(r.get("cpu_seconds") or 0.0) for r in rows) + extra.get(
        "cpu_seconds", 0.0
    )
    disk_total = sum(_disk(r) for r in rows) + int(extra.get("disk_bytes", 0))

    def top_by(key: Any, total: float) -> list[dict[str, Any]]:
        ranked = sorted((r for r in rows if key(r) > 0), key=lambda r: (-key(r), r["pid"]))
        return [{**r, "share": key(r) / total if total > 0 else None} for r in ranked[:top]]

    return {
        "seconds": seconds,
        "processes": len(rows) + int(extra.get("processes", 0)),
        "cpu_seconds": cpu_total,
        "cores": cpu_total / seconds if seconds > 0 else None,
        "disk_bytes": disk_total,
        "top_cpu": top_by(lambda r: float(r.get("cpu_seconds") or 0.0), cpu_total),
        "top_disk": top_by(_disk, float(disk_total)),
        "top_memory": top_by(lambda r: int(r.get("rss_bytes") or 0), 0.0),
    }


def merge_rankings(rankings: list[dict[str, Any]], top: int = TOP) -> dict[str, Any]:
    """Several runs' rankings as one (a session's rounds taken together; rankings of a shared
    scan, ``cumulative``, are the session so far: the latest is taken): each process's CPU
    time and disk bytes summed over the rankings it appears in, its resident memory the
    largest seen, over the runs' seconds together (pure). Only the processes each ranking
    named are known, so a process just below one round's top is left out of that round."""
    cumulative = [r for r in rankings if r.get("cumulative")]
    if cumulative:  # a session's shared scan: each holds the session so far; the latest is all
        return max(cumulative, key=lambda r: float(r.get("seconds") or 0.0))
    seconds = sum(float(r.get("seconds") or 0.0) for r in rankings)
    merged: dict[tuple[int, str], dict[str, Any]] = {}
    for ranking in rankings:
        seen: dict[tuple[int, str], dict[str, Any]] = {}
        for key in ("top_cpu", "top_disk", "top_memory"):
            for row in ranking.get(key) or []:
                seen.setdefault((int(row["pid"]), str(row.get("command"))), row)
        for ident, row in seen.items():
            into = merged.get(ident)
            if into is None:
                into = merged[ident] = {
                    **{k: v for k, v in row.items() if k not in ("share", "cores")},
                    "cpu_seconds": 0.0,
                    "read_bytes": 0,
                    "write_bytes": 0,
                    "rss_bytes": 0,
                }
            into["cpu_seconds"] += float(row.get("cpu_seconds") or 0.0)
            for which in ("read_bytes", "write_bytes"):
                known = into[which] is not None and row.get(which) is not None
                into[which] = into[which] + int(row[which]) if known else None
            into["rss_bytes"] = max(into["rss_bytes"], int(row.get("rss_bytes") or 0))
    rows = [
        {**row, "cores": row["cpu_seconds"] / seconds if seconds > 0 else None}
        for row in merged.values()
    ]
    out = rank(rows, seconds, top)
    out["cpu_seconds"] = sum(float(r.get("cpu_seconds") or 0.0) for r in rankings)
    out["cores"] = out["cpu_seconds"] / seconds if seconds > 0 else None
    out["runs"] = len(rankings)
    return out


def _cgroup(text: str) -> str | None:
    """The cgroup to name: the v2 path when the process has one below the root, else the v1
    ``cpu`` hierarchy's."""
    lines = [line.split(":", 2) for line in text.splitlines() if line.count(":") >= 2]
    unified = [p for h, c, p in lines if h == "0" and not c]
    if unified and unified[0] not in ("", "/"):
        return unified[0]
    cpu = [p for _, c, p in lines if "cpu" in c.split(",")]
    return cpu[0] if cpu else (unified[0] if unified else None)


class HostProcesses(Source):
    """Scans every process every ``interval_s`` (see the module docstring); no series of its
    own, the ranking in ``attrs()``."""

    name = NAME
    columns = ()

    def __init__(
        self, root: Path = Path("/"), interval_s: float = SCAN_INTERVAL_S, me: int | None = None
    ) -> None:
        """``me``: the process whose descendants are the workload (default: this one)."""
        super().__init__()
        self.interval_s = interval_s
        self.proc = Path(root) / "proc"
        self._proc = str(self.proc)
        self.me = os.getpid() if me is None else me
        self.tracked: dict[tuple[int, int], Tracked] = {}  # (pid, starttime) -> its counters
        self._live: dict[int, int] = {}  # pid -> starttime of the process it is, at the last scan
        # the gone processes forgotten to bound memory (``_prune``): their totals
        self.pruned: dict[str, float] = {"cpu_seconds": 0.0, "disk_bytes": 0, "processes": 0}
        self._lock = threading.Lock()
        self._own_netns = self._netns(self.me)
        self._started_ticks = self._uptime_ticks()
        self._first_scan: float | None = None
        self._last_scan: float | None = None
        self.scans = 0
        self.scan_cpu_seconds = 0.0
        self._scanning = threading.Lock()

    def _uptime(self) -> float | None:
        """Seconds since boot (``/proc/uptime``): the clock of ``starttime``, and of the scans."""
        try:
            return float(_read(f"{self._proc}/uptime").split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _uptime_ticks(self) -> float:
        uptime = self._uptime()
        # unknown: every process's first scan is its baseline
        return uptime * USER_HZ if uptime is not None else float("inf")

    def _netns(self, pid: int) -> str | None:
        try:
            return os.readlink(self.proc / str(pid) / "ns" / "net")
        except OSError:
            return None

    def scan(self, closing: bool = False) -> None:
        """One pass over ``/proc``: every process's counters, the workload marked (``closing``:
        every process's ``io`` is read again)."""
        begin = time.thread_time()
        try:
            pids = [int(n) for n in os.listdir(self.proc) if n.isdigit()]
        except OSError:
            return
        now: dict[int, Counters] = {}
        for pid in pids:
            kept = None if closing else self.tracked.get((pid, self._live.get(pid, -1)))
            counters = read_process(self._proc, pid, kept.last if kept is not None else None)
            if counters is not None:
                now[pid] = counters
        workload = descendants({p: c.ppid for p, c in now.items()}, {self.me})
        with self._lock:
            for pid, counters in now.items():
                key = (pid, counters.start)  # a reused pid is another process: both are kept
                kept = self.tracked.get(key)
                if kept is None:
                    first = counters
                    if counters.start >= self._started_ticks:  # started during the run
                        first = Counters(counters.comm, counters.ppid, 0, counters.start, 0, 0, 0)
                    kept = self.tracked[key] = Tracked(pid, first, counters)
                kept.last = counters
                kept.workload = kept.workload or pid in workload
            self._live = {pid: c.start for pid, c in now.items()}
            self._describe_top()
            if len(self.tracked) > MAX_TRACKED:
                self._prune()
        uptime = self._uptime()
        stamp = uptime if uptime is not None else time.monotonic()
        self._first_scan = self._first_scan if self._first_scan is not None else stamp
        self._last_scan = stamp
        self.scans += 1
        self.scan_cpu_seconds += time.thread_time() - begin

    def _describe_top(self) -> None:
        """Command line, network namespace and cgroup of the processes at the top so far, read
        while they exist (each once)."""
        others = [t for t in self.tracked.values() if not t.workload]
        by_cpu = sorted(others, key=lambda t: -t.cpu_seconds())[:TOP]
        by_disk = sorted(others, key=lambda t: -_disk_of(t))[:TOP]
        for tracked in [*by_cpu, *by_disk][:DESCRIBED]:
            if tracked.facts or self._live.get(tracked.pid) != tracked.first.start:
                continue  # described already, or gone (its pid may be another process's now)
            base = self.proc / str(tracked.pid)
            try:
                cmdline = (base / "cmdline").read_bytes().replace(b"\0", b" ").strip()
                tracked.facts["cmdline"] = cmdline.decode(errors="replace")[:CMDLINE_CHARS]
                cgroup = _cgroup((base / "cgroup").read_text())
            except OSError:
                tracked.facts["cmdline"] = ""
                continue
            if cgroup is not None:
                tracked.facts["cgroup"] = cgroup
            netns = self._netns(tracked.pid)
            if netns is not None and self._own_netns is not None and netns != self._own_netns:
                tracked.facts["netns"] = netns

    def _prune(self) -> None:
        """Bounded memory on long runs: forget the processes that are gone and can no longer
        rank (below the ``TOP``-th by CPU time, by disk bytes and by memory: live processes'
        counters only grow, so that rank only rises), keeping their totals."""
        gone = [
            (k, t)
            for k, t in self.tracked.items()
            if self._live.get(t.pid) != t.first.start and not t.workload
        ]
        others = [t for t in self.tracked.values() if not t.workload]
        keep: set[int] = set()
        for key in (lambda t: t.cpu_seconds(), _disk_of, lambda t: t.last.rss_pages):
            keep |= {id(t) for t in sorted(others, key=lambda t: -key(t))[:TOP]}
        for k, t in gone:
            if id(t) in keep:
                continue
            self.pruned["cpu_seconds"] += t.cpu_seconds()
            self.pruned["disk_bytes"] += _disk_of(t)
            self.pruned["processes"] += 1
            del self.tracked[k]

    def scan_if_due(self) -> None:
        """A scan unless the last one is less than ``interval_s`` old (or one is under way):
        a scanner shared by a session's rounds scans at most once per interval, however short
        its rounds."""
        uptime = self._uptime()
        if (
            uptime is not None
            and self._last_scan is not None
            and uptime - self._last_scan < self.interval_s
        ):
            return
        if self._scanning.acquire(blocking=False):
            try:
                self.scan()
            finally:
                self._scanning.release()

    def sample(self) -> SourceReading:
        self.scan()
        return SourceReading(values=[])

    def ranking(self) -> dict[str, Any]:
        with self._lock:
            seconds = (
                self._last_scan - self._first_scan
                if self._first_scan is not None and self._last_scan is not None
                else 0.0
            )
            rows = [record(t, seconds, self.me) for t in self.tracked.values() if not t.workload]
        out = rank(rows, seconds, extra=self.pruned)
        out.update(
            interval_s=self.interval_s,
            scans=self.scans,
            scan_cpu_seconds=self.scan_cpu_seconds / self.scans if self.scans else None,
            workload_processes=sum(1 for t in self.tracked.values() if t.workload),
        )
        return out

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {}

    def attrs(self) -> dict[str, dict[str, Any]]:
        return {OTHERS: self.ranking()} if self.scans >= 2 else {}

    def close(self) -> None:
        """The closing scan: the run's end (called on the source's thread after its last call)."""
        self.scan(closing=True)


class SessionScan(Source):
    """A round's view of a scanner shared by the whole session (``HostProcessesPlugin(shared=
    ...)``): each call scans only when the shared scan is due, so a session of short rounds
    scans once per interval, not twice per round. Its ranking covers the session so far
    (``cumulative``), gaps between rounds included."""

    name = NAME
    columns = ()

    def __init__(self, shared: HostProcesses) -> None:
        super().__init__()
        self.shared = shared
        self.interval_s = shared.interval_s

    def sample(self) -> SourceReading:
        self.shared.scan_if_due()
        return SourceReading(values=[])

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {}

    def attrs(self) -> dict[str, dict[str, Any]]:
        found = self.shared.attrs()
        if OTHERS in found:
            found[OTHERS] = {**found[OTHERS], "cumulative": True}
        return found


class HostProcessesPlugin:
    """A dynamic plug-in object for ``Sampler(plugins=...)``: a scanner of its own (``monitor``:
    one run), or a round's view of a session's ``shared`` scanner."""

    KIND = "dynamic"
    NAME = NAME

    def __init__(
        self, interval_s: float = SCAN_INTERVAL_S, shared: HostProcesses | None = None
    ) -> None:
        self.interval_s = interval_s
        self.shared = shared

    def open_probe(self, context: ProbeContext) -> HostProcesses | SessionScan:
        if self.shared is not None:
            return SessionScan(self.shared)
        return HostProcesses(context.root, self.interval_s)
