"""Physical and effective limits.

A limit that the kernel or the platform imposes (a cgroup's CPU quota, an I/O throttle, a qdisc
rate, a frequency cap) is a component of its own, joined to the component it limits by one
``limits`` link (limiter -> limited). Its limits use the limited component's keys: a quota's
``compute`` in cores limits ``cpu:host``'s ``compute``, a throttle's ``write`` in B/s limits
``block:vda``'s ``write``, a qdisc's ``send`` limits its NIC's ``send``.

The component's own limit is its *physical* one (link speed, CPU count, hardware maximum
frequency); the tightest limiter's is its *effective* one. Utilization is judged against the
tighter of the two, and ``AppliedLimit`` says which applied and where it came from. In a data
path each limiter stands just before what it limits (``with_limiters``), so the path reads in
the order the data meets them: the quota before the CPU, the throttle before the disk, the qdisc
before the NIC.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from pilot_sys.topology.components import Limit, Link
from pilot_sys.topology.graph import ComponentGraph

LIMITS = "limits"  # the direction of a limiter -> limited link; not a data link


class AppliedLimit(BaseModel):
    """The limit a component's utilization is judged against, and why that one."""

    component: str
    key: str
    physical: Limit
    effective: Limit | None = None  # the tightest limiter's limit for this key
    imposed_by: str | None = None  # the limiter's component id
    applied: Literal["physical", "effective", "unknown"]

    @property
    def limit(self) -> Limit:
        if self.applied == "effective" and self.effective is not None:
            return self.effective
        return self.physical


def limits_link(limiter: str, limited: str) -> Link:
    """The link that makes ``limiter``'s limits apply to ``limited``."""
    return Link(source=limiter, target=limited, direction=LIMITS)


def limiters_of(graph: ComponentGraph, component_id: str) -> list[str]:
    """The components whose ``limits`` links point at ``component_id``, in id order."""
    if component_id not in graph:
        return []
    return sorted(
        p
        for p in graph.g.predecessors(component_id)
        if graph.link(p, component_id).direction == LIMITS
    )


def applied_limit(graph: ComponentGraph, component_id: str, key: str) -> AppliedLimit:
    """The tighter of ``component_id``'s physical ``key`` limit and its limiters' (a tie keeps
    the physical one: a limiter that does not bind below the hardware is not what applied)."""
    physical = graph.limit(component_id, key)
    best: tuple[str, Limit] | None = None
    for limiter in limiters_of(graph, component_id):
        limit = graph.limit(limiter, key)
        if (
            limit.known
            and limit.value is not None
            and (best is None or limit.value < (best[1].value or 0.0))
        ):
            best = (limiter, limit)
    if best is None:
        return AppliedLimit(
            component=component_id,
            key=key,
            physical=physical,
            applied="physical" if physical.known else "unknown",
        )
    limiter, effective = best
    tighter = (
        not physical.known or physical.value is None or (effective.value or 0.0) < physical.value
    )
    return AppliedLimit(
        component=component_id,
        key=key,
        physical=physical,
        effective=effective,
        imposed_by=limiter,
        applied="effective" if tighter else "physical",
    )


def with_limiters(graph: ComponentGraph, path: list[str]) -> list[str]:
    """``path`` with each component's limiters inserted just before it (each once)."""
    out: list[str] = []
    for node in path:
        out += [
            limiter
            for limiter in limiters_of(graph, node)
            if limiter not in out and limiter not in path
        ]
        out.append(node)
    return out
