"""Follow the workload's cgroups while it runs, and sample the limits of any cgroup it enters.

A workload does not always stay where it was started: ``cgexec``, ``systemd-run --scope``, a
container's entry point or a wrapper script (``sh -c 'echo $$ > .../cgroup.procs; exec CMD'``)
moves it into another cgroup right after it starts. The graph's limiters were discovered for
the cgroups pilot-sys itself runs in, so the limits of the cgroup the workload moved into would
never be sampled, and a run held by a CPU quota would blame the host's CPU instead.

``FollowedCgroups`` is a source (``monitor.source``: its own thread, off the sampler's tick)
that, on every call:

1. walks the workload's process tree (the roots it is given, then the ``children`` files of
   their threads; at most ``MAX_PROCESSES``) and reads each member's ``/proc/PID/cgroup``;
   ``/proc/PID/stat`` is read after it, and a process that is exiting is skipped (the kernel
   moves an exiting task out of its cgroups, so its membership would read as the root's);
2. for a membership text not seen before, discovers the limits binding a process there
   (``topology.kernel_limits.cgroup_discovery``, the same discovery ``run --cgroup`` uses) and
   opens, for the limiters not already in the graph, the probes of the limiter plug-ins
   (``LIMITER_PLUGINS``: CPU quota, cpuset and I/O throttle; memory limit) over a graph of
   just those limiters;
3. reads those probes' counters.

After the run each late probe derives its metrics from its own reads (``Probe.derive``, the
same formulas and keys as when the limiter was sampled from the start: ``cgroup:/q/cpu/
throttled_periods`` ...), and the source hands out their ``limits`` and ``attrs``, so that the
verdict judges the late limiter exactly as one the session put there (it reads only the trace).
Before the workload was seen in the cgroup its series are missing (NaN), not zero.

Cost per call: one ``pread`` of each tree member's ``children`` files, one read each of its
``cgroup`` and ``stat`` files, plus the late probes' counter files once a cgroup is found
(``benchmarks/cgroup_follow_cost.py`` measures it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.processes import read_pids
from pilot_sys.monitor.source import Source, SourceReading
from pilot_sys.plugin_loader import load_plugins
from pilot_sys.topology.components import ComponentKind, Discovery
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.sysroot import SysRoot

NAME = "workload-cgroups"
MAX_PROCESSES = 64  # of the workload's tree whose memberships are read per call
MIN_INTERVAL_S = 0.1  # a CFS period is 100 ms by default: faster calls see no new period
LIMITER_PLUGINS = ("cgroup", "memory_limit")  # the dynamic plug-ins that sample cgroup limiters
PF_EXITING = 0x4  # include/linux/sched.h: the task is in do_exit
READ_BYTES = 4096
_OPEN = os.O_RDONLY | os.O_CLOEXEC


def exiting(stat: bytes) -> bool:
    """``/proc/PID/stat`` read *after* its cgroup file says the process is exiting or a zombie
    (fields 3 state and 9 flags): the kernel moves an exiting task out of its cgroups, so the
    membership read may be the root's rather than the workload's."""
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return fields[0] in (b"Z", b"X", b"x") or bool(int(fields[6]) & PF_EXITING)
    except (IndexError, ValueError):
        return True


def normal_membership(text: str) -> str:
    """A ``/proc/PID/cgroup`` text with its lines stripped: one spelling per membership."""
    return "\n".join(line.strip() for line in text.strip().splitlines()) + "\n"


def _read(path: str) -> bytes:
    """A small /proc file in one raw read (``pathlib`` and ``open()`` cost several times more
    than the read itself)."""
    fd = os.open(path, _OPEN)
    try:
        return os.read(fd, READ_BYTES)
    finally:
        os.close(fd)


def process_tree(proc: Path | str, roots: Iterable[int], limit: int = MAX_PROCESSES) -> list[int]:
    """The pids of the trees rooted at ``roots`` (through each thread's ``children`` file), at
    most ``limit``; a process that exits meanwhile is skipped."""
    proc = str(proc)
    pending = list(roots)
    found: list[int] = []
    while pending and len(found) < limit:
        pid = pending.pop()
        if pid in found:
            continue
        found.append(pid)
        try:
            for task in os.listdir(f"{proc}/{pid}/task"):
                fd = os.open(f"{proc}/{pid}/task/{task}/children", _OPEN)
                try:
                    pending += read_pids(fd)
                finally:
                    os.close(fd)
        except OSError:  # it exited meanwhile, or no CONFIG_PROC_CHILDREN: the root alone
            continue
    return found


def _tokens(values: Iterable[bytes]) -> list[float]:
    out = []
    for token in values:
        try:
            out.append(float(token))
        except ValueError:
            out.append(np.nan)
    return out


class FollowedCgroups(Source):
    """The workload's cgroup memberships (``memberships()``), and the counters of the limiters
    of any cgroup it entered that the graph did not have (see the module docstring).

    ``roots`` gives the workload's root processes now (an empty list while there are none);
    ``ignore``: membership texts that are not the workload's own (the launcher's, for a moment,
    before it joins the ``--cgroup`` target)."""

    name = NAME
    columns = ("call",)  # which call a kept sample is: the late probes' reads are kept per call

    def __init__(
        self,
        context: ProbeContext,
        roots: Callable[[], list[int]],
        *,
        interval_s: float = MIN_INTERVAL_S,
        ignore: Iterable[str] = (),
    ) -> None:
        super().__init__()
        self.interval_s = max(float(interval_s), MIN_INTERVAL_S)
        self.context = context
        self.root = Path(context.root)
        self.roots = roots
        self.ignore = {normal_membership(t) for t in ignore}
        self.known = self._graph_limiters(context.graph)
        self.latest: dict[int, str] = {}
        self.probes: list[Probe] = []
        self.joined: list[dict[str, Any]] = []  # per cgroup entered: where, which limiters
        self._texts: set[str] = set()
        self._normal: dict[bytes, str] = {}  # membership as read -> normalised
        self._proc = str(self.root / "proc")
        self._reads: list[dict[int, list[float]]] = []  # per call: probe index -> counters
        self._lock = threading.Lock()

    def _graph_limiters(self, graph: Any) -> set[str]:
        """The limiters already sampled by the limiter plug-ins (those of the graph; without a
        graph, those binding pilot-sys itself, which the cgroup plug-in then discovers)."""
        if graph is not None:
            return {c.id for c in graph.components(ComponentKind.CGROUP)}
        found = cgroup_discovery(SysRoot(self.root), ["self"])
        return {c.id for c in found.components}

    # -- on the source's thread ----------------------------------------------------------------
    def sample(self) -> SourceReading:
        proc = self._proc
        for pid in process_tree(proc, self.roots()):
            try:
                raw = _read(f"{proc}/{pid}/cgroup")
                stat = _read(f"{proc}/{pid}/stat")
            except OSError:
                continue
            if exiting(stat):
                continue
            text = self._normal.get(raw)
            if text is None:  # a membership not seen before (each text is normalised once)
                text = self._normal[raw] = normal_membership(raw.decode(errors="replace"))
                if text not in self._texts and text not in self.ignore:
                    self._texts.add(text)
                    self._entered(text)
            with self._lock:
                self.latest[pid] = text
        call: dict[int, list[float]] = {}
        for index, probe in enumerate(self.probes):
            try:
                call[index] = _tokens(probe.read())
            except Exception:  # noqa: BLE001 - a failed read is a missing sample of that probe
                continue
        self._reads.append(call)
        return SourceReading(values=[float(len(self._reads) - 1)])

    def _entered(self, text: str) -> None:
        """A membership not seen before: open the probes of its limiters the graph lacks."""
        found = cgroup_discovery(SysRoot(self.root), (), memberships=[text])
        new = [c for c in found.components if c.id not in self.known]
        if not new:
            return
        self.known |= {c.id for c in new}
        graph = ComponentGraph()
        for component in new:
            graph.add_component(component)
        context = ProbeContext(root=self.root, graph=graph, notes=self.context.notes)
        opened: list[str] = []
        for plugin in load_plugins("dynamic"):
            if getattr(plugin, "NAME", None) not in LIMITER_PLUGINS:
                continue
            try:
                probe = plugin.open_probe(context)
            except Exception as exc:  # noqa: BLE001 - reported, the others are still opened
                self.context.notes.append(f"{NAME}: {plugin.NAME} could not open: {exc}")
                continue
            if isinstance(probe, Probe):
                self.probes.append(probe)
                self.limits.update(probe.limits)
                opened += list(probe.attrs())
        paths = sorted({c.attrs.get("cgroup", "?") for c in new})
        described = describe(Discovery(plugin=NAME, components=new))
        self.joined.append({"cgroups": paths, "limiters": [c.id for c in new]})
        self.context.notes.append(
            f"the workload entered cgroup(s) {', '.join(paths)} after it started; their limits, "
            f"{described}, were sampled from the moment it was seen there"
            + ("" if opened else " (no counter beside them could be opened: not judged)")
        )
        self.context.notes += [f"cgroup discovery: {u}" for u in found.unreadable]

    def memberships(self) -> set[str]:
        with self._lock:
            return set(self.latest.values())

    # -- after the run -------------------------------------------------------------------------
    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        calls = raw[:, 0] if raw.size else np.zeros(0)
        for index, probe in enumerate(self.probes):
            rows = [
                r
                for r, c in enumerate(calls)
                if np.isfinite(c) and int(c) < len(self._reads) and index in self._reads[int(c)]
            ]
            if not rows:
                continue
            width = len(probe.columns)
            block = np.array(
                [self._reads[int(calls[r])][index] for r in rows], dtype=np.float64
            ).reshape(len(rows), width)
            for key, values in probe.derive(block, t[rows], {}).items():
                full = np.full(len(t), np.nan)
                full[rows] = values
                out[key] = full
        return out

    def interval_metric(self, key: str) -> bool:
        return any(p.interval_metric(key) for p in self.probes) or super().interval_metric(key)

    def attrs(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for probe in self.probes:
            for cid, attrs in probe.attrs().items():
                out[cid] = {**attrs, "entered_after_start": True}
        return out

    def close(self) -> None:
        for probe in self.probes:
            probe.close()


class FollowedCgroupsPlugin:
    """A dynamic plug-in object for ``Sampler(plugins=...)``: follows the trees of the
    workload's processes (``ProbeContext.workload_pids``: ``Sampler.follow`` sets
    ``context.pid`` after the plug-ins opened)."""

    KIND = "dynamic"
    NAME = NAME

    def __init__(self, rate_hz: float) -> None:
        self.interval_s = 1.0 / rate_hz if rate_hz > 0 else MIN_INTERVAL_S
        self.source: FollowedCgroups | None = None

    def open_probe(self, context: ProbeContext) -> FollowedCgroups:
        self.source = FollowedCgroups(context, context.workload_pids, interval_s=self.interval_s)
        return self.source


def describe(found: Discovery) -> str:
    """The limiters of a discovery in words: ``cgroup:/q/cpu (compute 0.2 cores)``."""
    if not found.components:
        return "no CPU, memory or I/O limit"
    return ", ".join(
        f"{c.id} ({', '.join(f'{k} {v.value:g} {v.unit}' for k, v in c.limits.items())})"
        for c in found.components
    )
