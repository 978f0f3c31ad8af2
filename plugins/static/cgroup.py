"""Static plug-in: the cgroup limits binding this process (CPU quota and cpuset, memory limit,
I/O throttles per disk), which a workload it starts inherits. A workload placed elsewhere is
discovered by ``topology.kernel_limits.cgroup_discovery`` with its own pids."""

from __future__ import annotations

from pilot_sys.topology.components import Discovery
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "cgroup"


def discover(root: SysRoot) -> Discovery:
    return cgroup_discovery(root, ("self",), plugin=NAME)
