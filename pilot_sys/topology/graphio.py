"""Export formats of the component graph, kept apart from discovery: GraphML, DOT and pictures
(matplotlib, imported only when a picture is asked for).

A picture's boxes are filled by utilization and framed by role with the colours of
``pilot_sys.palette``, the same rule as every other picture; DOT keeps one colour per kind
(:func:`kind_colour`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from pilot_sys import palette, units
from pilot_sys.safefile import replace_file_with, save_figure_safely
from pilot_sys.topology.components import ComponentKind
from pilot_sys.topology.graph import OUTWARD, ROOT_ID, ComponentGraph
from pilot_sys.topology.humanize import network_link, short_limit
from pilot_sys.units import network_component

KIND_COLOURS: dict[str, str] = {
    ComponentKind.CPU: "#e45756",
    ComponentKind.CORE: "#e45756",
    ComponentKind.MEMORY: "#f58518",
    ComponentKind.NUMA: "#f58518",
    ComponentKind.PCI: "#72b7b2",
    ComponentKind.CONTROLLER: "#54a24b",
    ComponentKind.BLOCK: "#4c78a8",
    ComponentKind.MOUNT: "#b279a2",
    ComponentKind.NIC: "#eeca3b",
    ComponentKind.NETWORK: "#9d755d",
    ComponentKind.REMOTE: "#bab0ac",
    ComponentKind.HOST: "#ff9da6",
    ComponentKind.ACCELERATOR: "#8e6c8a",
    ComponentKind.CGROUP: "#d67195",
    ComponentKind.QDISC: "#d8b5a5",
    ComponentKind.CPUFREQ: "#fcbfd2",
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
        attrs = {
            "direction": link.direction,
            "capacity_source": link.capacity.source.value,
            "capacity_detail": link.capacity.detail,
        }
        if link.capacity.known and link.capacity.value is not None:
            attrs["capacity"] = float(link.capacity.value)
        flat.add_edge(link.source, link.target, **attrs)
    return flat


def write_graphml(graph: ComponentGraph, path: str | Path) -> None:
    replace_file_with(path, lambda fh: nx.write_graphml(flat_graph(graph), fh))


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
    lines = [
        "digraph components {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=9, dir=both, arrowtail=normal];',
    ]
    for c in graph.components():
        label = c.id + ("\n" + "; ".join(c.warnings) if c.warnings else "")
        fill = _dot_quote(kind_colour(c.kind))
        lines.append(f"  {_dot_quote(c.id)} [label={_dot_quote(label)}, fillcolor={fill}];")
    for source, target in physical_links(graph):
        label = _dot_quote(_pair_label(graph, source, target))
        lines.append(f"  {_dot_quote(source)} -> {_dot_quote(target)} [label={label}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _layers(graph: ComponentGraph) -> dict[str, int]:
    """Depth from the CPU (or, in a loaded graph without one, from its sources) along outward
    edges: the columns of the picture."""
    view = nx.subgraph_view(
        graph.g, filter_edge=lambda a, b: graph.link(a, b).direction in (*OUTWARD, "contains")
    )
    roots = [ROOT_ID] if ROOT_ID in graph else [n for n in graph.g.nodes if view.in_degree(n) == 0]
    depth = nx.multi_source_dijkstra_path_length(view, set(roots)) if roots else {}
    deepest = max(depth.values(), default=0)
    return {node: int(depth.get(node, deepest + 1)) for node in graph.g.nodes}


def picture_order(graph: ComponentGraph, nodes: Iterable[str]) -> list[str]:
    """``nodes`` from the CPU outward (the picture's columns, then by name); nodes the graph
    does not hold come last, in their order."""
    nodes = list(dict.fromkeys(nodes))
    layers = _layers(graph)
    present = sorted((n for n in nodes if n in graph), key=lambda n: (layers[n], n))
    return present + [n for n in nodes if n not in graph]


def _caption(graph: ComponentGraph, node: str) -> str:
    """The component's own limit, short: ``r/w 238 MiB/s``, ``tx 1.16 GiB/s rx ?``, ``2 cores``."""
    limits = graph.component(node).limits

    def short(key: str) -> str:
        return short_limit(limits[key], network_component(node))

    link = {"send", "receive"} <= limits.keys()  # an accelerator: its link when compute is unknown
    if "compute" in limits and (limits["compute"].known or not link):
        return short("compute")
    for (a, b), (la, lb) in ((("read", "write"), ("r", "w")), (("send", "receive"), ("tx", "rx"))):
        if a in limits and b in limits:
            return (
                f"{la}/{lb} {short(a)}"
                if short(a) == short(b)
                else f"{la} {short(a)} {lb} {short(b)}"
            )
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


# -- pictures ----------------------------------------------------------------------------------
# Boxes are sized to their text and placed in columns by distance from the CPU, so a data path
# reads left to right in a picture no larger than its text needs. The fill is the component's
# utilization on the one scale of ``pilot_sys.palette``; the frame says its role.
NAME_SIZE = 9.0  # points
DETAIL_SIZE = 8.0
EDGE_SIZE = 7.0
PAD = 5.0  # inside a box, points
LINE_GAP = 2.0
ROW_GAP = 12.0  # between boxes of one column
MIN_COLUMN_GAP = 26.0
MARGIN = 14.0
TITLE_SPACE = 26.0
CUT_TAG = "component under test"
HIDDEN_TAG = "hidden bottleneck"
LEGEND_SPACE = 24.0  # one row of swatches
SCALE_LABEL_SPACE = 14.0  # the line above them when a measurement fills the boxes


@dataclass(frozen=True)
class NodeLook:
    """How one component is drawn: its fill, frame and the lines under its name."""

    fill: str = palette.NOT_MEASURED
    frame: str = palette.OTHER
    frame_width: float = 0.8
    lines: tuple[str, ...] = ()
    tag: str = ""  # a role line in the frame's colour, e.g. "component under test"


@dataclass
class PictureLayout:
    """Boxes and links placed in points (origin bottom left), and the picture's size."""

    width: float
    height: float
    boxes: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)  # x, y, w, h
    looks: dict[str, NodeLook] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # source, target, label
    title: str = ""
    legend: bool = True
    measured: bool = False
    threshold: float = palette.DEFAULT_THRESHOLD


def _text_size(text: str, size: float, bold: bool = False) -> tuple[float, float]:
    """Width and height of one line of text in points, as matplotlib will draw it."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    renderer = _text_size.renderer  # type: ignore[attr-defined]
    if renderer is None:
        renderer = _text_size.renderer = RendererAgg(1, 1, 72)  # type: ignore[attr-defined]
    prop = FontProperties(size=size, weight="bold" if bold else "normal")
    width, height, _ = renderer.get_text_width_height_descent(text or " ", prop, ismath=False)
    return float(width), float(height)


_text_size.renderer = None  # type: ignore[attr-defined]


def limit_caption(graph: ComponentGraph, node: str) -> str:
    """``limit r/w 238 MiB/s``; ``no stated limit`` when every limit is unknown."""
    caption = _caption(graph, node).strip()
    if not caption:
        return ""
    if not any(ch.isdigit() for ch in caption):
        return "no stated limit"
    return f"limit {caption}"


def default_looks(
    graph: ComponentGraph, cut: str | None = None, hidden: Iterable[str] = ()
) -> dict[str, NodeLook]:
    """Nothing measured: white boxes with their limits; the CUT and hidden bottlenecks framed."""
    hidden = set(hidden)
    looks = {}
    for node in graph.g.nodes:
        lines = (limit_caption(graph, node),) if limit_caption(graph, node) else ()
        if graph.component(node).warnings:
            lines += ("⚠ see warnings",)
        looks[node] = role_look(node, cut, hidden, palette.NOT_MEASURED, lines)
    return looks


def role_look(
    node: str, cut: str | None, hidden: set[str], fill: str, lines: tuple[str, ...]
) -> NodeLook:
    """A box's frame and role line from its role: hidden bottleneck, CUT, or neither."""
    if node in hidden:
        return NodeLook(fill, palette.HIDDEN, 2.6, lines, HIDDEN_TAG)
    if node == cut:
        return NodeLook(fill, palette.CUT, 2.6, lines, CUT_TAG)
    return NodeLook(fill, palette.OTHER, 0.8, lines)


def _box_lines(node: str, look: NodeLook) -> list[tuple[str, float, bool]]:
    """(text, size, bold) of each line of a box, top to bottom."""
    lines = [(node, NAME_SIZE, True)]
    lines += [(line, DETAIL_SIZE, False) for line in look.lines if line]
    if look.tag:
        lines.append((look.tag, DETAIL_SIZE, True))
    return lines


def _box_size(node: str, look: NodeLook) -> tuple[float, float]:
    sizes = [_text_size(text, size, bold) for text, size, bold in _box_lines(node, look)]
    width = max(w for w, _ in sizes)
    height = sum(h for _, h in sizes) + LINE_GAP * (len(sizes) - 1)
    return width + 2 * PAD + 4, height + 2 * PAD


def picture_layout(
    graph: ComponentGraph,
    looks: dict[str, NodeLook],
    title: str = "",
    measured: bool = False,
    threshold: float = palette.DEFAULT_THRESHOLD,
) -> PictureLayout:
    """Place every component of ``graph`` (columns by distance from the CPU, rows by the
    barycentre of their neighbours) and every physical link with its known capacities."""
    layers = _layers(graph)
    g = nx.DiGraph()
    g.add_nodes_from(graph.g.nodes)
    g.add_edges_from(physical_links(graph))
    rows = _positions(g, layers)
    sizes = {n: _box_size(n, looks.get(n, NodeLook())) for n in g.nodes}
    columns = sorted(set(layers.values()))
    col_width = {c: max(sizes[n][0] for n in g.nodes if layers[n] == c) for c in columns}
    labels: dict[tuple[str, str], str] = {}
    for a, b in g.edges:
        label = _pair_label(graph, a, b, "  ")
        if any(ch.isdigit() for ch in label):  # both directions unknown: say nothing
            labels[(a, b)] = label
    gaps: dict[int, float] = {}
    for (a, b), label in labels.items():
        if layers[a] != layers[b]:
            left = min(layers[a], layers[b])
            gaps[left] = max(gaps.get(left, 0.0), _text_size(label, EDGE_SIZE)[0] + 10)
    pitch = max((h for _, h in sizes.values()), default=20.0) + ROW_GAP
    x = MARGIN
    col_x: dict[int, float] = {}
    for c in columns:
        col_x[c] = x
        x += col_width[c] + max(MIN_COLUMN_GAP, gaps.get(c, 0.0))
    width = x - max(MIN_COLUMN_GAP, gaps.get(columns[-1], 0.0)) + MARGIN if columns else 2 * MARGIN
    top_row = min((-y for _, y in rows.values()), default=0.0)
    bottom_row = max((-y for _, y in rows.values()), default=0.0)
    body = (bottom_row - top_row) * pitch + pitch
    legend = LEGEND_SPACE + (SCALE_LABEL_SPACE if measured else 0.0)
    height = body + (TITLE_SPACE if title else MARGIN / 2) + legend + 4
    layout = PictureLayout(
        width=width, height=height, title=title, measured=measured, threshold=threshold
    )
    for node in g.nodes:
        w, h = sizes[node]
        c = layers[node]
        cx = col_x[c] + col_width[c] / 2
        row = -rows[node][1] - top_row
        cy = height - (TITLE_SPACE if title else MARGIN / 2) - pitch / 2 - row * pitch
        layout.boxes[node] = (cx - w / 2, cy - h / 2, w, h)
    layout.looks = {n: looks.get(n, NodeLook()) for n in g.nodes}
    layout.edges = [(a, b, labels.get((a, b), "")) for a, b in g.edges]
    return layout


def _anchor(
    box: tuple[float, float, float, float], toward: tuple[float, float]
) -> tuple[float, float]:
    """Where a line toward ``toward`` leaves the box: its left or right side when the other end
    lies in another column, its top or bottom when it lies above or below."""
    x, y, w, h = box
    cx, cy = x + w / 2, y + h / 2
    if abs(toward[0] - cx) > w / 2:
        return (x + w if toward[0] > cx else x, cy)
    return (cx, y + h if toward[1] > cy else y)


def render_layout(ax: Any, layout: PictureLayout, origin: tuple[float, float] = (0.0, 0.0)) -> None:
    """Draw ``layout`` on ``ax``, whose data coordinates are points (the caller sets limits)."""
    from matplotlib.patches import FancyBboxPatch, Rectangle

    ox, oy = origin
    centre = {n: (ox + x + w / 2, oy + y + h / 2) for n, (x, y, w, h) in layout.boxes.items()}
    for a, b, label in layout.edges:
        ba = layout.boxes[a]
        bb = layout.boxes[b]
        pa = _anchor((ox + ba[0], oy + ba[1], ba[2], ba[3]), centre[b])
        pb = _anchor((ox + bb[0], oy + bb[1], bb[2], bb[3]), centre[a])
        ax.plot(
            [pa[0], pb[0]], [pa[1], pb[1]], color="#8a8a8a", lw=1.0, zorder=1, solid_capstyle="butt"
        )
        if label:
            ax.text(
                (pa[0] + pb[0]) / 2,
                (pa[1] + pb[1]) / 2 + 2,
                label,
                fontsize=EDGE_SIZE,
                ha="center",
                va="bottom",
                color="#555555",
                zorder=2,
            )
    for node, (x, y, w, h) in layout.boxes.items():
        look = layout.looks[node]
        ax.add_patch(
            FancyBboxPatch(
                (ox + x, oy + y),
                w,
                h,
                boxstyle="round,pad=0,rounding_size=4",
                fc=look.fill,
                ec=look.frame,
                lw=look.frame_width,
                zorder=3,
            )
        )
        ink = palette.text_colour(look.fill)
        ty = oy + y + h - PAD
        for text, size, bold in _box_lines(node, look):
            colour = ink
            if text == look.tag and bold and text != node:
                colour = look.frame if ink == "#000000" else "#ffffff"
            ax.text(
                ox + x + w / 2,
                ty,
                text,
                fontsize=size,
                ha="center",
                va="top",
                color=colour,
                fontweight="bold" if bold else "normal",
                zorder=4,
            )
            ty -= _text_size(text, size, bold)[1] + LINE_GAP
    if layout.title:
        ax.text(
            ox + MARGIN,
            oy + layout.height - 8,
            layout.title,
            fontsize=9,
            ha="left",
            va="top",
            color="#222222",
        )
    if layout.legend:
        _legend(ax, layout, ox + MARGIN, oy + MARGIN / 2, Rectangle)


def _legend_items(layout: PictureLayout) -> list[tuple[str, str, str, float]]:
    """(fill, frame, label, frame width) of each swatch: the utilization scale when something
    was measured, then the roles this picture shows."""
    items: list[tuple[str, str, str, float]] = []
    if layout.measured:
        thr = layout.threshold
        for fraction in (0.0, thr / 2, thr, 1.0):
            label = units.percent(fraction, 0)
            items.append((palette.utilization_colour(fraction, thr), "#777777", label, 0.5))
        items.append((palette.NO_LIMIT, "#777777", "no limit known", 0.5))
    items.append((palette.NOT_MEASURED, "#777777", "not measured", 0.5))
    tags = {look.tag for look in layout.looks.values()}
    for colour, tag in ((palette.CUT, CUT_TAG), (palette.HIDDEN, HIDDEN_TAG)):
        if tag in tags:
            items.append((palette.NOT_MEASURED, colour, tag, 2.0))
    return items


def _swatch_width(label: str) -> float:
    return 14 + _text_size(label, EDGE_SIZE)[0] + 12


def _legend(ax: Any, layout: PictureLayout, x: float, y: float, rectangle: Any) -> None:
    """The colour rule in one row under the boxes."""
    if layout.measured:
        label = "peak utilization (share of the stated limit):"
        ax.text(x, y + 13, label, fontsize=EDGE_SIZE, ha="left", va="bottom", color="#333333")
    for fill, frame, label, lw in _legend_items(layout):
        ax.add_patch(rectangle((x, y), 11, 9, fc=fill, ec=frame, lw=lw))
        ax.text(x + 14, y + 4.5, label, fontsize=EDGE_SIZE, ha="left", va="center", color="#333333")
        x += _swatch_width(label)


def legend_width(layout: PictureLayout) -> float:
    """Points the legend row needs (the picture is widened to hold it)."""
    return 2 * MARGIN + sum(_swatch_width(label) for _, _, label, _ in _legend_items(layout))


def draw_picture(layout: PictureLayout, path: str | Path, dpi: int = 130) -> None:
    """Save ``layout`` alone as a picture (PNG, SVG or PDF by the suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = max(layout.width, legend_width(layout) if layout.legend else 0.0)
    fig = plt.figure(figsize=(width / 72, layout.height / 72))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, layout.height)
    ax.set_axis_off()
    render_layout(ax, layout)
    try:
        save_figure_safely(fig, path, dpi=dpi)
    finally:
        plt.close(fig)


def draw(
    graph: ComponentGraph,
    path: str | Path,
    *,
    highlight: Iterable[str] = (),
    title: str = "",
    cut: str | None = None,
    hidden: Iterable[str] = (),
    looks: dict[str, NodeLook] | None = None,
    threshold: float = palette.DEFAULT_THRESHOLD,
) -> None:
    """A left-to-right picture of ``graph``: boxes sized to their text with each component's
    limit, links labelled with their known capacities (→ outward, ← back). ``looks`` (from a
    measurement) fill the boxes by utilization; without them nothing was measured and the boxes
    are white. ``highlight`` is the component under test when ``cut`` is not given."""
    if cut is None:
        cut = next(iter(highlight), None)
    measured = looks is not None
    if looks is None:
        looks = default_looks(graph, cut, hidden)
    default = "component data-link graph: links → outward from memory, ← back"
    layout = picture_layout(graph, looks, title or default, measured=measured, threshold=threshold)
    draw_picture(layout, path)
