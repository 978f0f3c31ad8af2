"""Limits of logical block devices derived from the devices under them, once those are known
(sysfs never rates a disk, so this matters after a user graph adds ratings with ``--load``).

A partition, and a dm device over one slave, carry what the device under them carries. md
arrays follow their level's data layout for large sequential transfers: raid0 stripes over all
members; raid1 reads from every mirror but writes each block to all; raid10 (two copies) reads
from all and writes half; raid4/5/6 read and write through the data members only (n-1, n-2);
linear sends a stream to one member at a time. Limits that discovery or the user stated are
never replaced; derived ones are recomputed.
"""

from __future__ import annotations

import networkx as nx

from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.graph import OUTWARD, ComponentGraph

PARITY = {"raid4": 1, "raid5": 1, "raid6": 2}


def md_limit(level: str, values: list[float], direction: str) -> tuple[float, str] | None:
    n = len(values)
    if level == "raid0":
        return sum(values), f"raid0: sum of {n} members"
    if level == "raid1":
        return (
            (sum(values), f"raid1: reads from all {n} mirrors")
            if direction == "read"
            else (min(values), f"raid1: every write goes to all {n} mirrors")
        )
    if level == "raid10":
        return (
            (sum(values), f"raid10: reads from all {n} members")
            if direction == "read"
            else (sum(values) / 2, f"raid10: two copies over {n} members")
        )
    if level in PARITY and n > PARITY[level]:
        data = n - PARITY[level]
        return min(values) * data, f"{level}: {data} data members of {n}"
    if level == "linear":
        return min(values), "linear: a stream uses one member at a time"
    return None


def _derivable(limit: Limit | None) -> bool:
    return limit is None or not limit.known or limit.source == LimitSource.DERIVED


def derive_limits(graph: ComponentGraph) -> None:
    """Fill unknown read/write limits of partitions, single-slave dm devices and md arrays."""
    view = graph.outward_view()
    try:
        order = list(nx.topological_sort(view))
    except nx.NetworkXUnfeasible:  # a cycle (never in a kernel's stacking): derive what we can
        order = list(graph.g.nodes)
    for node in order:
        component: Component = graph.component(node)
        if component.kind != ComponentKind.BLOCK:
            continue
        role = component.attrs.get("role")
        below = [
            p
            for p in graph.g.predecessors(node)
            if graph.link(p, node).direction in OUTWARD
            and graph.component(p).kind == ComponentKind.BLOCK
        ]
        for direction in ("read", "write"):
            if not _derivable(component.limits.get(direction)):
                continue
            limits = [graph.limit(p, direction) for p in below]
            if not limits or not all(lim.known and lim.value is not None for lim in limits):
                continue
            values = [float(lim.value) for lim in limits if lim.value is not None]
            derived: tuple[float, str] | None = None
            if role == "partition" or (role == "dm" and len(values) == 1):
                derived = values[0], f"{role}: the limit of {below[0].removeprefix('block:')}"
            elif role == "md":
                derived = md_limit(str(component.attrs.get("level")), values, direction)
            if derived is not None:
                graph.set_limit(
                    node,
                    direction,
                    Limit(value=derived[0], source=LimitSource.DERIVED, detail=derived[1]),
                )
                component = graph.component(node)
