"""The component data-link graph (seed paper §III-B, Fig. 5).

A ``networkx.DiGraph`` whose nodes carry a ``Component`` (attribute ``component``) and whose
edges carry a ``Link`` (attribute ``link``). Every physical link is two directed edges, one per
direction, each with its own capacity: the *outward* edge points away from memory (``write``,
``send``, ``down``), its reverse points back (``read``, ``receive``, ``up``). Paths from the CPU
outward along outward edges are the data paths a workload's arguments resolve to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from pilot_sys.topology.components import (
    UNKNOWN_LIMIT,
    Component,
    ComponentKind,
    Limit,
    LimitSource,
    Link,
)

OUTWARD = {"write": "read", "send": "receive", "down": "up"}
INWARD = {v: k for k, v in OUTWARD.items()}
ROOT_ID = "cpu:host"
MEMORY_ID = "memory:host"
NODE_LINK_SCHEMA = 1


def reverse_direction(direction: str) -> str:
    return OUTWARD.get(direction) or INWARD.get(direction) or direction


class ComponentGraph:
    """Components and their directed data links, with the queries the monitor and reports need."""

    def __init__(self, g: nx.DiGraph | None = None) -> None:
        self.g: nx.DiGraph = g if g is not None else nx.DiGraph()
        self.unreadable: dict[str, list[str]] = {}

    # -- building -------------------------------------------------------------------------
    def add_component(self, component: Component) -> None:
        """Add a node; a component already present keeps its data and gains new attrs/limits."""
        if component.id in self.g:
            old: Component = self.g.nodes[component.id]["component"]
            limits = {**component.limits, **old.limits}
            attrs = {**component.attrs, **old.attrs}
            warnings = old.warnings + [w for w in component.warnings if w not in old.warnings]
            component = old.model_copy(
                update={"limits": limits, "attrs": attrs, "warnings": warnings}
            )
        self.g.add_node(component.id, component=component)

    def add_link(self, link: Link) -> None:
        self.g.add_edge(link.source, link.target, link=link)

    def connect(
        self,
        parent: str,
        child: str,
        outward: str,
        capacity_out: Limit = UNKNOWN_LIMIT,
        capacity_in: Limit | None = None,
        **attrs: Any,
    ) -> None:
        """One physical link as two directed edges: parent -> child (``outward``) and back."""
        self.add_link(
            Link(source=parent, target=child, direction=outward, capacity=capacity_out, attrs=attrs)
        )
        back = capacity_out if capacity_in is None else capacity_in
        self.add_link(
            Link(
                source=child,
                target=parent,
                direction=reverse_direction(outward),
                capacity=back,
                attrs=attrs,
            )
        )

    # -- queries --------------------------------------------------------------------------
    def __contains__(self, component_id: object) -> bool:
        return component_id in self.g

    def __len__(self) -> int:
        return self.g.number_of_nodes()

    def component(self, component_id: str) -> Component:
        try:
            return self.g.nodes[component_id]["component"]
        except KeyError:
            raise KeyError(f"no component {component_id!r} in the graph") from None

    def components(self, kind: ComponentKind | str | None = None) -> list[Component]:
        found = [data["component"] for _, data in self.g.nodes(data=True)]
        return found if kind is None else [c for c in found if c.kind == kind]

    def links(self) -> list[Link]:
        return [data["link"] for _, _, data in self.g.edges(data=True)]

    def link(self, source: str, target: str) -> Link:
        return self.g.edges[source, target]["link"]

    def limit(self, component_id: str, direction: str) -> Limit:
        """A component's limit for a direction or resource; unknown when it has none."""
        return self.component(component_id).limits.get(direction, UNKNOWN_LIMIT)

    def set_limit(self, component_id: str, key: str, limit: Limit) -> None:
        component = self.component(component_id)
        self.g.nodes[component_id]["component"] = component.model_copy(
            update={"limits": {**component.limits, key: limit}}
        )

    def outward_view(self) -> nx.DiGraph:
        """Only the edges that point away from memory: the graph data paths are walked on."""
        return nx.subgraph_view(
            self.g, filter_edge=lambda a, b: self.g.edges[a, b]["link"].direction in OUTWARD
        )

    def paths_to(self, target: str, *, source: str = ROOT_ID, limit: int = 64) -> list[list[str]]:
        """Every data path from the CPU outward to ``target`` (at most ``limit``), shortest
        first."""
        if target not in self.g or source not in self.g:
            return []
        view = self.outward_view()
        found: list[list[str]] = []
        for path in nx.all_simple_paths(view, source, target):
            found.append(list(path))
            if len(found) >= limit:
                break
        return sorted(found, key=len)

    def subgraph(self, nodes: Iterable[str]) -> ComponentGraph:
        sub = ComponentGraph(self.g.subgraph(list(nodes)).copy())
        sub.unreadable = self.unreadable
        return sub

    # -- merging a user graph -------------------------------------------------------------
    def merge(self, other: ComponentGraph, *, override: bool = False) -> list[str]:
        """Add ``other``'s components and links; its limits fill in unknown ones (marked
        source=user). With ``override`` they also replace known ones. Returns notes on conflicts."""
        notes: list[str] = []
        for theirs in other.components():
            if theirs.attrs.get("placeholder"):
                continue  # a user link's endpoint defined by this graph
            if theirs.id not in self.g:
                self.g.add_node(theirs.id, component=theirs)
                continue
            ours = self.component(theirs.id)
            limits = dict(ours.limits)
            for key, limit in theirs.limits.items():
                current = limits.get(key, UNKNOWN_LIMIT)
                if limit.known and (not current.known or override):
                    limits[key] = limit.model_copy(update={"source": LimitSource.USER})
                elif limit.known and current.known and current.value != limit.value:
                    notes.append(
                        f"{theirs.id}: kept discovered {key} limit {current.value:g} "
                        f"({current.source}); "
                        f"user graph says {limit.value:g}"
                    )
            self.g.nodes[theirs.id]["component"] = ours.model_copy(
                update={"limits": limits, "attrs": {**theirs.attrs, **ours.attrs}}
            )
        for link in other.links():
            if not self.g.has_edge(link.source, link.target):
                self.add_link(link)
                continue
            current = self.link(link.source, link.target)
            if link.capacity.known and (not current.capacity.known or override):
                capacity = link.capacity.model_copy(update={"source": LimitSource.USER})
                self.add_link(current.model_copy(update={"capacity": capacity}))
        return notes

    # -- node-link ------------------------------------------------------------------------
    def to_node_link(self) -> dict[str, Any]:
        """JSON-ready node-link data (``nodes``, ``links``), readable back by ``from_node_link``."""
        return {
            "schema_version": NODE_LINK_SCHEMA,
            "directed": True,
            "multigraph": False,
            "graph": {"unreadable": self.unreadable},
            "nodes": [c.model_dump(mode="json") for c in self.components()],
            "links": [link.model_dump(mode="json") for link in self.links()],
        }

    @classmethod
    def from_node_link(cls, data: dict[str, Any]) -> ComponentGraph:
        """Rebuild a graph written by ``to_node_link`` (pydantic validates every node and link)."""
        graph = cls()
        for node in data.get("nodes", []):
            graph.add_component(Component.model_validate(node))
        for link in data.get("links", []):
            graph.add_link(Link.model_validate(link))
        graph.unreadable = dict(data.get("graph", {}).get("unreadable", {}))
        return graph
