"""The cgroups a session's workload runs in, and their limits in the session's graph.

Discovery's cgroup plug-in reads the limits binding pilot-sys itself, which a workload it starts
inherits. Two things change that:

* ``pilot-sys run --cgroup PATH`` starts every round inside a cgroup of the user's choice
  (``workload.cgroup_launch``): before the first round, the graph's cgroup limiters are replaced
  by those binding a process in that cgroup (in each v1 hierarchy that has PATH, and pilot-sys's
  own cgroup in the others; the v2 leaf PATH), so the first round is already judged against them;
* a workload that moves itself (``systemd-run --scope``, ``cgexec``, a container runtime): each
  round's sampler runs a small source (``MembershipSource``) that reads ``/proc/PID/cgroup`` of
  the round's processes every half second; after the round, cgroups other than the ones assumed
  are discovered from those texts and replace the graph's limiters, with a note, from the next
  round on.

Everything that cannot be read is a note (no such process, no permission, a hierarchy not
mounted here); a limit is never assumed.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.processes import read_pids
from pilot_sys.monitor.source import Source, SourceReading
from pilot_sys.topology.cgroups import joined_membership
from pilot_sys.topology.components import ComponentKind, Discovery
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.sysroot import SysRoot
from pilot_sys.workload.cgroup_launch import CgroupTarget, cgroup_target

WATCH_INTERVAL_S = 0.5
MAX_PROCESSES = 64  # of a round's process tree whose memberships are read per sample


def replace_cgroup_limiters(graph: ComponentGraph, found: Discovery) -> list[str]:
    """The graph with its cgroup limiters replaced by ``found``'s; the ids added."""
    graph.g.remove_nodes_from([c.id for c in graph.components(ComponentKind.CGROUP)])
    for component in found.components:
        graph.add_component(component)
    for link in found.links:
        if link.source in graph and link.target in graph:
            graph.add_link(link)
    if found.unreadable:
        graph.unreadable["cgroup"] = list(found.unreadable)
    else:
        graph.unreadable.pop("cgroup", None)
    return [c.id for c in found.components]


def _describe(found: Discovery) -> str:
    if not found.components:
        return "no CPU, memory or I/O limit"
    return ", ".join(
        f"{c.id} ({', '.join(f'{k} {v.value:g} {v.unit}' for k, v in c.limits.items())})"
        for c in found.components
    )


PF_EXITING = 0x4  # include/linux/sched.h: the task is in do_exit


def _exiting(stat: bytes) -> bool:
    """``/proc/PID/stat`` read *after* its cgroup file says the process is exiting or a zombie
    (fields 3 state and 9 flags): the kernel moves an exiting task out of its cgroups, so the
    membership read may be the root's rather than the workload's."""
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return fields[0] in (b"Z", b"X", b"x") or bool(int(fields[6]) & PF_EXITING)
    except (IndexError, ValueError):
        return True


class MembershipSource(Source):
    """Reads the cgroup membership of the processes the round's thread starts (the entries of
    ``/proc/self/task/<tid>/children`` that were not there when it opened, and their trees):
    the latest ``/proc/PID/cgroup`` text of each, kept in ``latest``. It has no series of its
    own; the trace keeps its cost and call times like any source's."""

    name = "workload-cgroups"
    interval_s = WATCH_INTERVAL_S
    columns = ()

    def __init__(self, proc: Path, tid: int) -> None:
        super().__init__()
        self.proc = proc
        self._fd = os.open(
            proc / str(os.getpid()) / "task" / str(tid) / "children", os.O_RDONLY | os.O_CLOEXEC
        )
        self._before = frozenset(read_pids(self._fd))
        self._lock = threading.Lock()
        self.latest: dict[int, str] = {}

    def _tree(self) -> list[int]:
        pending = [p for p in read_pids(self._fd) if p not in self._before]
        found: list[int] = []
        while pending and len(found) < MAX_PROCESSES:
            pid = pending.pop()
            if pid in found:
                continue
            found.append(pid)
            try:
                for task in os.listdir(self.proc / str(pid) / "task"):
                    children = (self.proc / str(pid) / "task" / task / "children").read_bytes()
                    pending += [int(c) for c in children.split()]
            except OSError:  # it exited meanwhile
                continue
        return found

    def sample(self) -> SourceReading:
        for pid in self._tree():
            try:
                text = (self.proc / str(pid) / "cgroup").read_text()
                stat = (self.proc / str(pid) / "stat").read_bytes()
            except OSError:
                continue
            if _exiting(stat):
                continue  # an exiting task has left its cgroups (it reads as the root's)
            with self._lock:
                self.latest[pid] = text
        return SourceReading(values=[])

    def memberships(self) -> set[str]:
        with self._lock:
            return set(self.latest.values())

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {}

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class MembershipWatch:
    """The dynamic plug-in object a round's sampler gets (``Sampler(plugins=...)``): opens a
    ``MembershipSource`` for the calling thread's children and keeps it for ``after_round``."""

    KIND = "dynamic"
    NAME = "workload-cgroups"

    def __init__(self, tid: int) -> None:
        self.tid = tid
        self.source: MembershipSource | None = None

    def open_probe(self, context: ProbeContext) -> MembershipSource | None:
        try:
            self.source = MembershipSource(context.path("proc"), self.tid)
        except OSError as exc:  # no CONFIG_PROC_CHILDREN: the assumed cgroups stay
            context.notes.append(
                f"the workload's cgroups are not followed ({exc.strerror or exc}); its limits "
                "are those of the cgroups it was started in"
            )
            self.source = None
        return self.source


class WorkloadCgroups:
    """The session's knowledge of where its workload runs: the cgroup it was asked to start in
    (``--cgroup``), the membership texts its graph's limiters were discovered for, and a watch
    per round."""

    def __init__(self, spec: str | None = None, root: str | Path = "/") -> None:
        self.sysroot = SysRoot(root)
        self.target: CgroupTarget | None = cgroup_target(spec, self.sysroot) if spec else None
        own = self.sysroot.read("/proc/self/cgroup") or ""
        self.own = self._normal(own) if own else ""
        self.assumed: set[str] = {self.own} if own else set()
        self.watch: MembershipWatch | None = None
        self._told = False  # discovery's notes on the cgroups go into the first round's trace

    @staticmethod
    def _normal(text: str) -> str:
        return "\n".join(line.strip() for line in text.strip().splitlines()) + "\n"

    def graph(self, root: str | Path = "/") -> ComponentGraph | None:
        """The discovered graph with the ``--cgroup`` target's limiters (None without one:
        discovery's own, pilot-sys's cgroups, are the workload's)."""
        if self.target is None:
            return None
        from pilot_sys.topology.discover import discover

        graph = discover(root)
        own = self.sysroot.read("/proc/self/cgroup") or ""
        directories = [str(Path(f).parent) for f in self.target.procs_files]
        membership = self._normal(joined_membership(self.sysroot, own, directories))
        self.assumed = {membership}
        found = cgroup_discovery(self.sysroot, (), memberships=[membership])
        replace_cgroup_limiters(graph, found)
        graph.g.graph["workload_cgroup"] = {"spec": self.target.spec, "limits": _describe(found)}
        return graph

    def watcher(self) -> MembershipWatch:
        """The plug-in object for the next round's sampler (call it from the round's thread)."""
        self.watch = MembershipWatch(threading.get_native_id())
        return self.watch

    def after_round(self, graph: Any) -> tuple[bool, list[str]]:
        """Compare the memberships seen in the round with the assumed ones; when the workload
        ran elsewhere, replace the graph's cgroup limiters by those binding where it ran.
        Returns whether the graph changed, and notes for the round's trace."""
        source = self.watch.source if self.watch is not None else None
        self.watch = None
        told: list[str] = []
        if not self._told and graph is not None:  # what could not be read about the cgroups
            self._told = True
            unreadable = graph.unreadable.get("cgroup", [])
            told = [f"cgroup discovery: {u}" for u in unreadable]
        if source is None or graph is None:
            return False, told
        seen = {self._normal(text) for text in source.memberships()}
        if self.target is not None:  # the launcher's moment before it joined the target
            seen.discard(self.own)
        if not seen or seen <= self.assumed:
            return False, told
        found = cgroup_discovery(self.sysroot, (), memberships=sorted(seen))
        replace_cgroup_limiters(graph, found)
        self.assumed = seen
        paths = sorted(
            {
                line.split(":", 2)[2]
                for text in seen
                for line in text.splitlines()
                if line.count(":") >= 2
            }
        )
        return True, told + [
            f"the workload ran in cgroups other than the ones it was started in "
            f"({', '.join(paths)}); their limits, {_describe(found)}, are sampled and judged "
            "from the next round on"
        ] + [f"cgroup discovery: {u}" for u in found.unreadable]
