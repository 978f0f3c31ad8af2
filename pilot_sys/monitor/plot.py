"""Pictures of a monitored run: utilization over time per component, and the component graph
coloured by each component's peak utilization (seeds/002 Fig. 5 with measured colours).

Export only: reads a ``MonitorTrace`` and its ``Verdict``; matplotlib is imported lazily with
the Agg backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from pilot_sys.monitor.bottleneck import ComponentStats, Verdict
from pilot_sys.monitor.trace import MonitorTrace

MAX_LINES = 12  # more lines than this on one axis stop being readable


def _values(trace: MonitorTrace, key: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in trace.series.get(key, [])], dtype=np.float64)


def plotted_signals(verdict: Verdict) -> list[ComponentStats]:
    """The CUT's and the judged signals that moved at all (peak >= 1 %), hottest first, at most
    ``MAX_LINES``."""
    chosen = [
        s for s in verdict.per_component
        if s.mean is not None and (s.judged or s.component == verdict.cut) and (s.peak or 0.0) >= 0.01
    ]
    chosen.sort(key=lambda s: (s.component != verdict.cut, -(s.p95 or 0.0)))
    return chosen[:MAX_LINES]


def peak_by_component(verdict: Verdict) -> dict[str, float]:
    """Each component's highest judged peak (the CUT's counted even if not judged)."""
    peaks: dict[str, float] = {}
    for s in verdict.per_component:
        if s.peak is None or not (s.judged or s.component == verdict.cut):
            continue
        peaks[s.component] = max(peaks.get(s.component, 0.0), s.peak)
    return peaks


def draw(trace: MonitorTrace, verdict: Verdict, path: str | Path, *, graph: Any = None, data_path: Any = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import cm, colors

    fig, (ax_time, ax_graph) = plt.subplots(1, 2, figsize=(16, 6.5), gridspec_kw={"width_ratios": [3, 2]})
    t = np.asarray(trace.timestamps)
    top = 105.0
    for s in plotted_signals(verdict):
        label = f"{s.component} {s.direction}" + (" (busy time)" if s.kind == "busy" else "")
        style = "-" if s.kind == "utilization" else "--"
        width = 2.4 if s.component == verdict.cut else 1.2
        ax_time.plot(t, _values(trace, s.metric) * 100, style, lw=width, label=label)
        top = max(top, (s.peak or 0.0) * 105)  # above 100 %: the stated limit was exceeded; show it
    ax_time.axhline(verdict.threshold * 100, color="#d62728", ls=":", lw=1.2,
                    label=f"threshold {verdict.threshold:.0%}")
    ax_time.set_xlabel("seconds since start")
    ax_time.set_ylabel("% of the stated limit (dashed: % of time busy)")
    ax_time.set_ylim(0, top)
    status = "valid" if verdict.valid else "INVALID: " + ", ".join(h.component for h in verdict.hidden_bottlenecks)
    command = " ".join(trace.command)[:70]
    ax_time.set_title(f"{command}\n{status}", fontsize=10)
    ax_time.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.12), ncol=3, frameon=False)
    ax_time.grid(alpha=0.3)

    peaks = peak_by_component(verdict)
    g = _graph_to_draw(trace, graph, data_path, set(peaks) | {h.component for h in verdict.hidden_bottlenecks})
    layers = _layers(g)
    nx.set_node_attributes(g, layers, "layer")
    pos = nx.multipartite_layout(g, subset_key="layer", align="vertical") if g.number_of_nodes() else {}
    cmap = matplotlib.colormaps["RdYlGn_r"]
    norm = colors.Normalize(vmin=0.0, vmax=1.0)
    nx.draw_networkx_edges(g, pos, ax=ax_graph, arrows=False, edge_color="#999999")
    hidden = {h.component for h in verdict.hidden_bottlenecks}
    for node in g.nodes:
        peak = peaks.get(node)
        face = cmap(norm(min(peak, 1.0))) if peak is not None else "#dddddd"
        edge = "#d62728" if node in hidden else ("#1f3b99" if node == verdict.cut else "#333333")
        text = node + (f"\npeak {peak:.0%}" if peak is not None else "\nno limit/signal")
        ax_graph.text(*pos[node], text, ha="center", va="center", fontsize=7,
                      bbox={"boxstyle": "round,pad=0.4", "fc": face, "ec": edge,
                            "lw": 2.5 if node in hidden or node == verdict.cut else 0.7})
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax_graph, fraction=0.04, pad=0.02,
                 label="peak utilization (grey: unknown limit, no signal)")
    ax_graph.set_title("data path coloured by peak utilization\n(blue frame: CUT, red frame: hidden bottleneck)",
                       fontsize=10)
    ax_graph.set_axis_off()
    ax_graph.margins(0.2)
    fig.subplots_adjust(left=0.06, right=0.97, top=0.88, bottom=0.2, wspace=0.12)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # "tight" keeps the legend below the axes
    plt.close(fig)


def _graph_to_draw(trace: MonitorTrace, graph: Any, data_path: Any, extra: set[str]) -> nx.Graph:
    """The data path (or every measured component) as an undirected picture graph."""
    wanted = set(extra)
    if data_path is not None and getattr(data_path, "components", None):
        wanted |= set(data_path.components)
    if trace.component_under_test:
        wanted.add(trace.component_under_test)
    g = nx.Graph()
    if graph is not None:
        present = [n for n in wanted if n in graph]
        g.add_nodes_from(present)
        for a, b in graph.g.edges:
            if a in g and b in g:
                g.add_edge(a, b)
        # keep isolated measured components (e.g. cores) off the picture unless they are hot
        g.remove_nodes_from([n for n in list(g.nodes) if g.degree(n) == 0 and n not in extra])
    else:
        g.add_nodes_from(sorted(wanted))
    return g


def _layers(g: nx.Graph) -> dict[str, int]:
    """Columns by hops from the CPU (components not connected to it go in the last column)."""
    start = "cpu:host" if "cpu:host" in g else None
    hops = nx.single_source_shortest_path_length(g, start) if start else {}
    last = max(hops.values(), default=0) + 1
    return {n: hops.get(n, last) for n in g.nodes}
