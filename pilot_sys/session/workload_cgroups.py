"""The cgroups a session's workload runs in, and their limits in the session's graph.

Discovery's cgroup plug-in reads the limits binding pilot-sys itself, which a workload it starts
inherits. Two things change that:

* ``pilot-sys run --cgroup PATH`` starts every round inside a cgroup of the user's choice
  (``workload.cgroup_launch``): before the first round, the graph's cgroup limiters are replaced
  by those binding a process in that cgroup (in each v1 hierarchy that has PATH, and pilot-sys's
  own cgroup in the others; the v2 leaf PATH), so the first round is already judged against them;
* a workload that moves itself (``systemd-run --scope``, ``cgexec``, a container runtime): each
  round's sampler runs a source (``MembershipSource``, a ``monitor.cgroup_follow.
  FollowedCgroups``) that reads ``/proc/PID/cgroup`` of the round's processes at the sampling
  rate and samples the limiters of a cgroup they enter from the moment it sees them there, so
  the round itself is judged against them; after the round, cgroups other than the ones
  assumed are discovered from those texts and replace the graph's limiters, with a note, so
  that later rounds sample them from their start.

Everything that cannot be read is a note (no such process, no permission, a hierarchy not
mounted here); a limit is never assumed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pilot_sys.monitor.cgroup_follow import FollowedCgroups, describe, normal_membership
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.processes import read_pids
from pilot_sys.topology.cgroups import joined_membership
from pilot_sys.topology.components import ComponentKind, Discovery
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.sysroot import SysRoot
from pilot_sys.workload.cgroup_launch import CgroupTarget, cgroup_target

WATCH_INTERVAL_S = 0.5  # without a sampling rate (the tuner's samplers)


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


_describe = describe


class MembershipSource(FollowedCgroups):
    """``FollowedCgroups`` over the processes the round's thread starts (the entries of
    ``/proc/self/task/<tid>/children`` that were not there when it opened, and their trees):
    the latest ``/proc/PID/cgroup`` text of each, and the counters of the limiters of a cgroup
    they entered, sampled in this round already."""

    def __init__(
        self,
        context: ProbeContext,
        tid: int,
        *,
        interval_s: float = WATCH_INTERVAL_S,
        ignore: Iterable[str] = (),
    ) -> None:
        proc = context.path("proc")
        self._fd = os.open(
            proc / str(os.getpid()) / "task" / str(tid) / "children", os.O_RDONLY | os.O_CLOEXEC
        )
        self._before = frozenset(read_pids(self._fd))
        super().__init__(context, self._new_children, interval_s=interval_s, ignore=ignore)

    def _new_children(self) -> list[int]:
        if self._fd < 0:
            return []
        return [p for p in read_pids(self._fd) if p not in self._before]

    def close(self) -> None:
        super().close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class MembershipWatch:
    """The dynamic plug-in object a round's sampler gets (``Sampler(plugins=...)``): opens a
    ``MembershipSource`` for the calling thread's children and keeps it for ``after_round``."""

    KIND = "dynamic"
    NAME = "workload-cgroups"

    def __init__(
        self, tid: int, interval_s: float = WATCH_INTERVAL_S, ignore: Iterable[str] = ()
    ) -> None:
        self.tid = tid
        self.interval_s = interval_s
        self.ignore = list(ignore)
        self.source: MembershipSource | None = None

    def open_probe(self, context: ProbeContext) -> MembershipSource | None:
        try:
            self.source = MembershipSource(
                context, self.tid, interval_s=self.interval_s, ignore=self.ignore
            )
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

    _normal = staticmethod(normal_membership)

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

    def watcher(self, rate_hz: float | None = None) -> MembershipWatch:
        """The plug-in object for the next round's sampler (call it from the round's thread),
        calling at the sampling rate. pilot-sys's own cgroups are ignored where the graph's
        limiters are no longer theirs: a process seen there is the launcher, for a moment."""
        interval = 1.0 / rate_hz if rate_hz else WATCH_INTERVAL_S
        ignore = [self.own] if self.own and self.own not in self.assumed else []
        self.watch = MembershipWatch(threading.get_native_id(), interval, ignore)
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
