"""Which kernel-imposed limiters the dynamic plug-ins sample, and what the trace records of each.

The limiters are the graph's limiter components (``topology.kernel_limits``: a cgroup's CPU
quota, cpuset, memory limit or I/O throttle, a NIC's shaping qdisc), found for the workload's
processes by the session. Without a graph (a bare ``Sampler``), the cgroup limiters binding the
followed process, or this one, are discovered here. Each limiter's ``attrs`` in the trace say
what it limits (``limits``: the component id) and what it is (``limiter``), so that the verdict,
which reads only the trace, can judge a component against its effective limit and name the
limiter in words.
"""

from __future__ import annotations

from typing import Any

from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.topology.components import Component, ComponentKind
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.sysroot import SysRoot


def _wanted(context: ProbeContext, component: Component) -> bool:
    """A limiter is sampled when it, or what it limits, is monitored."""
    return context.wants(component.id) or context.wants(str(component.attrs.get("limits", "")))


def cgroup_limiters(context: ProbeContext, resources: set[str]) -> list[Component]:
    """The cgroup limiters limiting any of ``resources`` (cpu, cpuset, memory, io)."""
    if context.graph is not None:
        found = context.graph.components(ComponentKind.CGROUP)
    else:
        pid: str | int = context.pid if context.pid is not None else "self"
        found = cgroup_discovery(SysRoot(context.root), [pid]).components
    return [
        c for c in found if set(c.attrs.get("resources", [])) & resources and _wanted(context, c)
    ]


def qdisc_limiters(context: ProbeContext) -> list[Component]:
    """The graph's shaping qdiscs (none without a graph: discovery asks the kernel for them)."""
    if context.graph is None:
        return []
    return [c for c in context.graph.components(ComponentKind.QDISC) if _wanted(context, c)]


def limiter_attrs(component: Component, limiter: str, **facts: Any) -> dict[str, Any]:
    """The trace's record of a limiter: what it limits and what it is, in words."""
    return {
        "limiter": limiter,
        "limits": component.attrs.get("limits"),
        "name": component.name,
        **facts,
    }
