"""The readable view: a rich tree of data paths (or of the whole host) with each component's
limits and where they came from, and its warnings."""

from __future__ import annotations

from collections import deque

import networkx as nx
from rich.text import Text
from rich.tree import Tree

from pilot_sys import units
from pilot_sys.topology.components import Component, ComponentKind
from pilot_sys.topology.graph import OUTWARD, ROOT_ID, ComponentGraph
from pilot_sys.topology.humanize import format_limits
from pilot_sys.topology.resolve import DataPath

KIND_STYLES = {
    ComponentKind.CPU: "red",
    ComponentKind.MEMORY: "dark_orange",
    ComponentKind.PCI: "cyan",
    ComponentKind.CONTROLLER: "green",
    ComponentKind.BLOCK: "blue",
    ComponentKind.MOUNT: "magenta",
    ComponentKind.NIC: "yellow",
    ComponentKind.NETWORK: "bright_black",
    ComponentKind.REMOTE: "white",
}


def accelerator_summary(c: Component) -> str:
    """``NVIDIA H200, 140 GiB, NUMA node unknown, local CPUs 0-15``: what it is and where."""
    a = c.attrs
    parts = [str(a.get("model") or f"{a.get('vendor')} GPU")]
    capacity = c.limits.get("capacity")
    if capacity is not None and capacity.known and capacity.value is not None:
        parts.append(units.size(capacity.value))
    numa = a.get("numa_node")
    parts.append(f"NUMA node {numa if numa is not None else 'unknown'}")
    cpus = a.get("local_cpus")
    if cpus:
        parts.append(f"local CPUs {cpulist_text(cpus)}")
    return ", ".join(parts)


def cpulist_text(cpus: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in runs)


def _summary(c: Component) -> str:
    """A few attributes that say what the component is (only those the graph has)."""
    a = c.attrs
    parts: list[str] = []
    if c.kind == ComponentKind.CPU and "cores" in a:
        parts.append(
            f"{a.get('sockets')} socket(s), {a.get('cores')} cores, {a.get('online_cpus')} CPUs"
        )
    elif c.kind == ComponentKind.BLOCK and "role" in a:
        role = str(a["role"])
        parts.append(
            role
            + {
                "md": f" {a.get('level')} of {', '.join(a.get('members', []))}",
                "dm": f" {a.get('dm_target')} {a.get('dm_name')}",
                "loop": f" backed by {a.get('backing_file')}",
            }.get(role, "")
        )
        if "rotational" in a:
            parts.append("rotational" if a["rotational"] else "non-rotational")
    elif c.kind == ComponentKind.MOUNT and "fstype" in a:
        parts.append(
            f"{a['fstype']} from {a.get('source')}"
            + (f", bind of {a['bind_of']}" if a.get("bind_of") else "")
        )
    elif c.kind == ComponentKind.NIC and "type" in a:
        parts.append(f"{a['type']}, mtu {a.get('mtu')}, {a.get('operstate')}")
    elif c.kind == ComponentKind.CONTROLLER and "type" in a:
        parts.append(
            str(a["type"]) + (f", transport {a['transport']}" if a.get("transport") else "")
        )
    elif c.kind == ComponentKind.ACCELERATOR and "vendor" in a:
        parts.append(accelerator_summary(c))
    elif c.kind == ComponentKind.PCI and "class_name" in a:
        parts.append(str(a["class_name"]) + (f", driver {a['driver']}" if a.get("driver") else ""))
    if a.get("user") and c.name and c.name != c.id.partition(":")[2]:
        parts.append(c.name)
    return ", ".join(parts)


def _label(graph: ComponentGraph, node: str, cut: str | None) -> Text:
    c = graph.component(node)
    text = Text()
    text.append(node, style=f"bold {KIND_STYLES.get(c.kind, '')}")
    if node == cut:
        text.append("  ◀ component under test", style="bold red")
    summary = _summary(c)
    if summary:
        text.append(f"  {summary}", style="dim")
    for line in format_limits({k: v for k, v in c.limits.items() if k != "capacity"}, node):
        text.append(f"\n  {line}")
    for warning in c.warnings:
        text.append(f"\n  ⚠ {warning}", style="bold yellow")
    return text


#: Deepest indentation drawn: a deeper component is listed flat under the last level drawn,
#: with its depth and parent, so a long chain costs its length in lines, not its square.
MAX_DEPTH = 16
#: Most components one tree draws; the rest are counted in a last line (``--json`` lists all).
MAX_DRAWN = 2_000


class _Drawing:
    """Adds components to a tree, at most ``MAX_DEPTH`` deep and ``MAX_DRAWN`` in all."""

    def __init__(self) -> None:
        self.count = 0
        self.left_out = 0

    def add(self, container: Tree, depth: int, parent: str, label: Text) -> Tree | None:
        """Add ``label`` at ``depth`` under ``container`` (the tree of ``parent``, or for a
        component below ``MAX_DEPTH`` the flat list it joins); the Tree its children go into,
        or None once the drawing is full."""
        if self.count >= MAX_DRAWN:
            self.left_out += 1
            return None
        self.count += 1
        if depth > MAX_DEPTH:
            marker = Text(f"↳ depth {depth}, under {parent}: ", style="dim")
            container.add(Text.assemble(marker, label))
            return container
        return container.add(label)

    def finish(self, top: Tree) -> None:
        if self.left_out:
            top.add(
                Text(
                    f"… and {self.left_out} more component(s), not drawn (at most {MAX_DRAWN}: "
                    "--json lists every one)",
                    style="bold yellow",
                )
            )


def path_tree(graph: ComponentGraph, data: DataPath) -> Tree:
    """One branch per argument; the argument's paths merged into a tree from the CPU outward."""
    top = Tree(Text("data paths", style="bold"))
    drawing = _Drawing()
    for argument in data.arguments:
        branch = top.add(
            Text.assemble(
                (argument.argument, "bold"),
                f"  ({argument.kind}) → {argument.component}",
                ("  CUT " + (argument.cut or "none"), "red"),
            )
        )
        drawn: dict[str, tuple[Tree, int]] = {}
        edges: set[tuple[str, str]] = set()
        for path in argument.paths:  # paths share prefixes and rejoin (bond slaves, md members)
            parent, previous, depth = branch, "", 2
            for node in path:
                if node in drawn:
                    if previous and (previous, node) not in edges:
                        parent.add(Text(f"{node} (joins the path drawn above)", style="dim"))
                        edges.add((previous, node))
                        break
                    (parent, depth), previous = drawn[node], node
                    depth += 1
                    continue
                added = drawing.add(parent, depth, previous, _label(graph, node, argument.cut))
                if added is None:
                    break
                drawn[node] = (added, depth)
                edges.add((previous, node))
                parent, previous, depth = added, node, depth + 1
    drawing.finish(top)
    return top


def host_tree(graph: ComponentGraph) -> Tree:
    """The whole graph from the CPU outward (then from any other root, e.g. the clients of a
    loaded graph); a component reached from several parents (an md member set, a bond) is drawn
    under the first and referenced under the others."""
    view = nx.subgraph_view(
        graph.g, filter_edge=lambda a, b: graph.link(a, b).direction in (*OUTWARD, "contains")
    )
    drawn: set[str] = set()
    drawing = _Drawing()

    def grow(root: str, top: Tree | None) -> None:
        drawn.add(root)
        queue: deque[tuple[str, Tree, int]] = deque([(root, top, 2)] if top is not None else [])
        while queue:
            node, branch, depth = queue.popleft()
            for child in sorted(view.successors(node)):
                if child in drawn:
                    branch.add(Text(f"{child} (drawn under another parent)", style="dim"))
                    continue
                drawn.add(child)
                added = drawing.add(branch, depth, node, _label(graph, child, None))
                if added is not None:
                    queue.append((child, added, depth + 1))

    top = Tree(Text("component graph", style="bold"), hide_root=True)
    roots = [ROOT_ID] if ROOT_ID in graph else []
    roots += sorted(n for n in graph.g.nodes if n != ROOT_ID and view.in_degree(n) == 0)
    for root in roots:
        if root not in drawn:
            grow(root, drawing.add(top, 1, "", _label(graph, root, None)))
    for node in sorted(graph.g.nodes):  # cycles with no root
        if node not in drawn:
            grow(node, drawing.add(top, 1, "", _label(graph, node, None)))
    drawing.finish(top)
    return top


def device_tree(graph: ComponentGraph) -> Tree:
    """The device-level view (Fig. 4): each device with the components folded into it."""
    from pilot_sys.topology.devices import device_graph

    devices = device_graph(graph)
    outward = nx.DiGraph()
    outward.add_nodes_from(devices.nodes)
    outward.add_edges_from(
        (a, b) for a, b, d in devices.edges(data=True) if set(d["directions"]) & set(OUTWARD)
    )
    top = Tree(Text("devices", style="bold"), hide_root=True)
    drawn: set[str] = set()
    drawing = _Drawing()

    def label(device: str) -> Text:
        members = [m for m in devices.nodes[device]["members"] if m != device]
        text = Text(device, style=f"bold {KIND_STYLES.get(graph.component(device).kind, '')}")
        if members:
            text.append(f"  + {', '.join(sorted(members))}", style="dim")
        return text

    roots = [ROOT_ID] if ROOT_ID in outward else []
    roots += sorted(n for n in outward.nodes if n not in roots and outward.in_degree(n) == 0)
    for root in roots + sorted(outward.nodes):
        if root in drawn:
            continue
        drawn.add(root)
        first = drawing.add(top, 1, "", label(root))
        queue: deque[tuple[str, Tree, int]] = deque([(root, first, 2)] if first else [])
        while queue:
            node, branch, depth = queue.popleft()
            for child in sorted(outward.successors(node)):
                if child in drawn:
                    branch.add(Text(f"{child} (drawn under another parent)", style="dim"))
                    continue
                drawn.add(child)
                added = drawing.add(branch, depth, node, label(child))
                if added is not None:
                    queue.append((child, added, depth + 1))
    drawing.finish(top)
    return top
