"""Run every static plug-in and assemble the component data-link graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pilot_sys.plugin_loader import load_plugins
from pilot_sys.topology.components import Component, ComponentKind, Discovery, Limit
from pilot_sys.topology.derive import derive_limits
from pilot_sys.topology.graph import MEMORY_ID, OUTWARD, ROOT_ID, ComponentGraph
from pilot_sys.topology.sysroot import SysRoot

# PCI functions worth keeping even when nothing discovered hangs below them.
_PCI_KEEP = {"storage", "network", "display", "accelerator", "signal processing"}


def static_plugins() -> tuple[Any, ...]:
    """The static plug-ins (``load_plugins`` looks them up once per process)."""
    return load_plugins("static")


def run_plugins(root: str | Path = "/", *, probe_memory: bool = False) -> list[Discovery]:
    """Every static plug-in's findings; a plug-in that fails is reported, never fatal."""
    found: list[Discovery] = []
    for plugin in static_plugins():
        sysroot = SysRoot(root, probe_memory=probe_memory)
        name = str(getattr(plugin, "NAME", getattr(plugin, "__name__", "plugin")))
        try:
            discovery = plugin.discover(sysroot)
        except Exception as exc:  # noqa: BLE001 - one broken plug-in must not hide the others
            discovery = Discovery(
                plugin=name, unreadable=[f"plug-in failed: {type(exc).__name__}: {exc}"]
            )
        discovery.unreadable.extend(u for u in sysroot.unreadable if u not in discovery.unreadable)
        found.append(discovery)
    return found


def build_graph(discoveries: list[Discovery]) -> ComponentGraph:
    """Nodes first, then links whose two ends exist; dangling links are reported as unreadable."""
    graph = ComponentGraph()
    for discovery in discoveries:
        for component in discovery.components:
            graph.add_component(component)
    if ROOT_ID not in graph:
        graph.add_component(
            Component(
                id=ROOT_ID,
                kind=ComponentKind.CPU,
                name="CPU complex",
                limits={"compute": Limit(unit="cores", detail="no CPU plug-in ran")},
            )
        )
    if MEMORY_ID not in graph:
        graph.add_component(Component(id=MEMORY_ID, kind=ComponentKind.MEMORY, name="memory"))
    if not graph.g.has_edge(ROOT_ID, MEMORY_ID):
        graph.connect(ROOT_ID, MEMORY_ID, "write")
    for discovery in discoveries:
        dangling = []
        for link in discovery.links:
            if link.source in graph and link.target in graph:
                graph.add_link(link)
            else:
                dangling.append(f"link {link.source} -> {link.target}: endpoint not discovered")
        if discovery.unreadable or dangling:
            graph.unreadable[discovery.plugin] = discovery.unreadable + dangling
    _prune_idle_pci(graph)
    return graph


def _prune_idle_pci(graph: ComponentGraph) -> None:
    """Drop PCI leaves that carry nothing we track (host bridges, balloon devices), repeatedly,
    so the host picture shows data paths rather than every PCI function."""
    while True:
        idle = [
            c.id
            for c in graph.components(ComponentKind.PCI)
            if c.attrs.get("class_name") not in _PCI_KEEP
            and not any(graph.link(c.id, n).direction in OUTWARD for n in graph.g.successors(c.id))
        ]
        if not idle:
            return
        graph.g.remove_nodes_from(idle)


def discover(root: str | Path = "/", *, probe_memory: bool = False) -> ComponentGraph:
    """The component data-link graph of the machine under ``root`` (``/`` = this machine)."""
    graph = build_graph(run_plugins(root, probe_memory=probe_memory))
    derive_limits(graph)
    graph.g.graph["root"] = str(root)  # resolve() reads routes and device nodes from the same root
    return graph
