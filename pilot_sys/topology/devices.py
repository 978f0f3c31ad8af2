"""The device-level graph (seed paper §III-B, Fig. 4): the component graph with interconnect and
logical layers folded into the physical device they serve, so a person sees "client SSD ->
memory -> NIC -> network -> NAS" before the component detail of Fig. 5.

Folding rules, each component to one device:
- CPU, network and remote hosts are devices; every memory component belongs to ``memory:host``.
- A disk, md array or zram device is a device; a partition belongs to its disk; a dm or loop
  device with a single parent belongs to that parent's device (a dm over several disks, like an
  md array, is a device of its own); a mount belongs to the device it sits on.
- A physical NIC and a bond are devices; a VLAN or bridge over one lower device belongs to it.
- A PCI function or controller with exactly one device beyond it belongs to that device (the
  SSD's PCIe function and NVMe controller are the SSD); one that fans out stays (a switch).
"""

from __future__ import annotations

from functools import cache

import networkx as nx

from pilot_sys.topology.components import ComponentKind
from pilot_sys.topology.graph import INWARD, MEMORY_ID, OUTWARD, ComponentGraph

DEVICE_ROLES = {"disk", "md", "zram"}


def device_map(graph: ComponentGraph) -> dict[str, str]:
    """Component id -> the id of the device it belongs to."""
    g = graph.g

    def parents(node: str) -> list[str]:
        return sorted(
            p for p in g.predecessors(node) if g.edges[p, node]["link"].direction in OUTWARD
        )

    def children(node: str) -> list[str]:
        return sorted(
            c for c in g.successors(node) if g.edges[node, c]["link"].direction in OUTWARD
        )

    @cache
    def inward(node: str) -> str:
        c = graph.component(node)
        ups = parents(node)
        if c.kind in (
            ComponentKind.CPU,
            ComponentKind.NETWORK,
            ComponentKind.REMOTE,
            ComponentKind.HOST,
        ):
            return node
        if c.kind == ComponentKind.MEMORY:
            return MEMORY_ID if MEMORY_ID in graph else node
        if c.kind == ComponentKind.BLOCK:
            role = c.attrs.get("role", "disk")
            if role in DEVICE_ROLES or len(ups) != 1:
                return node
            return inward(ups[0])
        if c.kind == ComponentKind.MOUNT:
            return inward(ups[0]) if len(ups) == 1 else node
        if c.kind == ComponentKind.NIC:
            lowers = [p for p in ups if graph.component(p).kind == ComponentKind.NIC]
            return inward(lowers[0]) if len(lowers) == 1 else node
        if c.kind in (ComponentKind.PCI, ComponentKind.CONTROLLER):
            beyond = {outward(child) for child in children(node)}
            return beyond.pop() if len(beyond) == 1 else node
        return node

    @cache
    def outward(node: str) -> str:
        """The device a component beyond an interconnect belongs to (walks outward first)."""
        c = graph.component(node)
        if c.kind in (ComponentKind.PCI, ComponentKind.CONTROLLER):
            beyond = {outward(child) for child in children(node)}
            return beyond.pop() if len(beyond) == 1 else node
        return inward(node)

    return {node: inward(node) for node in g.nodes}


def device_graph(graph: ComponentGraph) -> nx.DiGraph:
    """Devices as nodes (attribute ``members``: the components folded in) and one edge per
    direction between devices whose components are linked, with the directions seen."""
    mapping = device_map(graph)
    devices = nx.DiGraph()
    for component, device in mapping.items():
        if device not in devices:
            devices.add_node(device, kind=graph.component(device).kind.value, members=[])
        devices.nodes[device]["members"].append(component)
    for link in graph.links():
        a, b = mapping[link.source], mapping[link.target]
        if a == b or link.direction not in (*OUTWARD, *INWARD):
            continue
        if devices.has_edge(a, b):
            directions = devices.edges[a, b]["directions"]
            if link.direction not in directions:
                directions.append(link.direction)
        else:
            devices.add_edge(a, b, directions=[link.direction])
    return devices
