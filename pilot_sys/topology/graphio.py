"""Export formats of the component graph, kept apart from discovery: GraphML, DOT and pictures
(matplotlib via networkx drawing, imported only when a picture is asked for)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

import networkx as nx

from pilot_sys.topology.components import ComponentKind
from pilot_sys.topology.graph import OUTWARD, ROOT_ID, ComponentGraph
from pilot_sys.topology.humanize import network_link, short_limit
from pilot_sys.units import network_component

KIND_COLOURS: dict[str, str] = {
    ComponentKind.CPU: "#e45756", ComponentKind.CORE: "#e45756", ComponentKind.MEMORY: "#f58518",
    ComponentKind.NUMA: "#f58518", ComponentKind.PCI: "#72b7b2", ComponentKind.CONTROLLER: "#54a24b",
    ComponentKind.BLOCK: "#4c78a8", ComponentKind.MOUNT: "#b279a2", ComponentKind.NIC: "#eeca3b",
    ComponentKind.NETWORK: "#9d755d", ComponentKind.REMOTE: "#bab0ac", ComponentKind.HOST: "#ff9da6",
    ComponentKind.ACCELERATOR: "#8e6c8a", ComponentKind.CGROUP: "#d67195",
    ComponentKind.QDISC: "#d8b5a5", ComponentKind.CPUFREQ: "#fcbfd2",
}
DEFAULT_COLOUR = "#dddddd"  # any kind without a colour of its own (``other``, kinds added later)


def kind_colour(kind: str) -> str:
    """The fill colour of a component of ``kind``; the default for a kind without one."""
    return KIND_COLOURS.get(kind, DEFAULT_COLOUR)


def flat_graph(graph: ComponentGraph) -> nx.DiGraph:
    """Scalar attributes only (what GraphML can hold); unknown limits are left out, and the
    ``limit_<key>``/``direction``/``capacity`` names are those ``--load`` reads back."""
    flat = nx.DiGraph()
    for c in graph.components():
        attrs: dict[str, object] = {"kind": c.kind.value, "name": c.name}
        for key, limit in c.limits.items():
            if limit.known and limit.value is not None:
                attrs[f"limit_{key}"] = float(limit.value)
                attrs[f"source_{key}"] = limit.source.value
            attrs[f"detail_{key}"] = limit.detail
        if c.warnings:
            attrs["warnings"] = "; ".join(c.warnings)
        flat.add_node(c.id, **attrs)
    for link in graph.links():
        attrs = {"direction": link.direction, "capacity_source": link.capacity.source.value,
                 "capacity_detail": link.capacity.detail}
        if link.capacity.known and link.capacity.value is not None:
            attrs["capacity"] = float(link.capacity.value)
        flat.add_edge(link.source, link.target, **attrs)
    return flat


def write_graphml(graph: ComponentGraph, path: str | Path) -> None:
    nx.write_graphml(flat_graph(graph), str(path))


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _pair_label(graph: ComponentGraph, source: str, target: str, sep: str = "  ") -> str:
    """``↓ 3.67 GiB/s  ↑ 3.67 GiB/s`` for one physical link (outward and back)."""
    out = graph.link(source, target).capacity
    back = graph.link(target, source).capacity if graph.g.has_edge(target, source) else None
    parts = []
    for arrow, limit in (("→", out), ("←", back)):
        if limit is not None:
            parts.append(f"{arrow} {short_limit(limit, network_link(source, target))}")
    return sep.join(parts)


def physical_links(graph: ComponentGraph) -> list[tuple[str, str]]:
    """Each physical link once, as its outward edge (or the only edge of a one-way link)."""
    pairs = []
    for link in graph.links():
        if link.direction in OUTWARD or not graph.g.has_edge(link.target, link.source):
            pairs.append((link.source, link.target))
    return pairs


def to_dot(graph: ComponentGraph) -> str:
    lines = ["digraph components {", "  rankdir=LR;", '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=9, dir=both, arrowtail=normal];']
    for c in graph.components():
        label = c.id + ("\n" + "; ".join(c.warnings) if c.warnings else "")
        fill = _dot_quote(kind_colour(c.kind))
        lines.append(f"  {_dot_quote(c.id)} [label={_dot_quote(label)}, fillcolor={fill}];")
    for source, target in physical_links(graph):
        lines.append(f"  {_dot_quote(source)} -> {_dot_quote(target)} [label={_dot_quote(_pair_label(graph, source, target))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _layers(graph: ComponentGraph) -> dict[str, int]:
    """Depth from the CPU (or, in a loaded graph without one, from its sources) along outward
    edges: the columns of the picture."""
    view = nx.subgraph_view(graph.g, filter_edge=lambda a, b: graph.link(a, b).direction in (*OUTWARD, "contains"))
    roots = [ROOT_ID] if ROOT_ID in graph else [n for n in graph.g.nodes if view.in_degree(n) == 0]
    depth = nx.multi_source_dijkstra_path_length(view, set(roots)) if roots else {}
    deepest = max(depth.values(), default=0)
    return {node: int(depth.get(node, deepest + 1)) for node in graph.g.nodes}


def _caption(graph: ComponentGraph, node: str) -> str:
    """The component's own limit, short: ``r/w 238 MiB/s``, ``tx 1.16 GiB/s rx ?``, ``2 cores``."""
    limits = graph.component(node).limits

    def short(key: str) -> str:
        return short_limit(limits[key], network_component(node))

    if "compute" in limits:
        return short("compute")
    for (a, b), (la, lb) in ((("read", "write"), ("r", "w")), (("send", "receive"), ("tx", "rx"))):
        if a in limits and b in limits:
            return f"{la}/{lb} {short(a)}" if short(a) == short(b) else f"{la} {short(a)} {lb} {short(b)}"
    return ""


def _positions(g: nx.DiGraph, layers: dict[str, int]) -> dict[str, tuple[float, float]]:
    """Columns by layer; within a column, nodes ordered by the mean row of their neighbours in
    earlier columns (the barycentre heuristic), which keeps a path's nodes level and avoids most
    crossings."""
    rows: dict[str, float] = {}
    columns: dict[int, list[str]] = {}
    for node, layer in layers.items():
        columns.setdefault(layer, []).append(node)
    height = max((len(nodes) for nodes in columns.values()), default=1)
    pos: dict[str, tuple[float, float]] = {}
    for layer in sorted(columns):
        def key(node: str) -> tuple[float, str]:
            seen = [rows[n] for n in (*g.predecessors(node), *g.successors(node)) if n in rows]
            return (sum(seen) / len(seen) if seen else float("inf"), node)

        ordered = sorted(columns[layer], key=key)
        offset = (height - len(ordered)) / 2
        for index, node in enumerate(ordered):
            rows[node] = offset + index
            pos[node] = (float(layer), -(offset + index))
    return pos


def draw(graph: ComponentGraph, path: str | Path, *, highlight: Iterable[str] = (), title: str = "") -> None:
    """A left-to-right picture: columns by distance from the CPU, nodes coloured by kind, each
    physical link labelled with its capacity per direction (→ outward, ← back)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    layers = _layers(graph)
    g = nx.DiGraph()
    g.add_nodes_from(graph.g.nodes)
    g.add_edges_from(physical_links(graph))
    pos = _positions(g, layers)
    columns = max(layers.values(), default=0) + 1
    rows = max((list(layers.values()).count(i) for i in set(layers.values())), default=1)
    fig, ax = plt.subplots(figsize=(min(26.0, max(8.0, 1.9 * columns)), max(3.5, 0.9 * rows + 1.5)))
    highlight = set(highlight)
    kinds = [graph.component(n).kind for n in g.nodes]
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowstyle="<|-|>", arrowsize=9, edge_color="#888888",
                           node_size=3200, width=1.1)
    for node, kind in zip(g.nodes, kinds):
        label = node.replace(":", ":\n", 1) if len(node) > 16 else node
        caption = _caption(graph, node) + (" ⚠" if graph.component(node).warnings else "")
        label += f"\n{caption.strip()}" if caption.strip() else ""
        hot = node in highlight
        ax.text(*pos[node], label, ha="center", va="center", fontsize=7, zorder=3,
                fontweight="bold" if hot else "normal",
                bbox={"boxstyle": "round,pad=0.45", "fc": kind_colour(kind),
                      "ec": "#d62728" if hot else "#333333", "lw": 2.5 if hot else 0.7})
    edge_labels = {(a, b): _pair_label(graph, a, b, "\n") for a, b in g.edges}
    nx.draw_networkx_edge_labels(g, pos, edge_labels=edge_labels, ax=ax, font_size=6, rotate=False,
                                 bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    present = sorted({str(k) for k in kinds})
    ax.legend(handles=[Patch(color=kind_colour(k), label=k) for k in present], loc="lower left",
              fontsize=7, frameon=False, ncols=min(len(present), 6), bbox_to_anchor=(0, -0.08))
    default = "component data-link graph: links → outward from memory, ← back; ? unknown; ⚠ see warnings"
    if highlight:
        default += "; red frame: component under test"
    ax.set_title(title or default, fontsize=9)
    ax.axis("off")
    ax.margins(x=0.08, y=0.08)
    with warnings.catch_warnings():  # a one-row graph cannot fit its legend: the picture is still right,
        warnings.simplefilter("ignore", UserWarning)  # and a warning would break the one-line stderr
        fig.tight_layout()
    try:
        fig.savefig(str(path), dpi=130)
    finally:
        plt.close(fig)
