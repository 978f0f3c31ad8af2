"""Pictures of monitored time: a utilization timeline of the components on the data path, and
the data path coloured by each component's peak utilization (the Pilot paper's component graph,
Fig. 5, with measured colours).

One panel per component on the data path, the component under test first, then any hidden
bottleneck: a component's directions share its panel, its busy time (a share of wall time with
a request in flight, not a fraction of a limit) is a grey fill behind them, and every component
off the path is collapsed into one "others (max)" panel. The colours are those of
``pilot_sys.palette``. The selection (:func:`path_panels`) is pure; matplotlib is imported
lazily with the Agg backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys import palette, units
from pilot_sys.monitor.bottleneck import ALWAYS_ON_PATH, BUSIEST_CORE, ComponentStats, Verdict
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.safefile import save_figure_safely

MAX_LINES = 12  # more lines than this on one axis stop being readable
OTHERS = "others (max)"
# the order of the path's components after the CUT and the hidden bottlenecks: the data's way
# from the CPU outward
KIND_ORDER = (
    "cpu",
    "memory",
    "cgroup",
    "qdisc",
    "pci",
    "accelerator",
    "controller",
    "block",
    "mount",
    "nic",
    "network",
    "host",
    "remote",
)
DIRECTION_STYLES = ("-", "--", ":", "-.")
PANEL_HEIGHT = 1.2  # inches
PANEL_WIDTH = 9.0


def _values(trace: MonitorTrace, key: str) -> np.ndarray:
    return np.array(
        [np.nan if v is None else v for v in trace.series.get(key, [])], dtype=np.float64
    )


# -- which series ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Panel:
    """One component's panel: its utilization lines and its busy time."""

    component: str
    role: str  # "cut", "hidden", "path" or "others"
    lines: tuple[tuple[str, str], ...] = ()  # (series key, label)
    busy: str | None = None  # series key of the busy time
    collapsed: tuple[str, ...] = field(default_factory=tuple)  # "others": the keys folded in


def _signal(key: str) -> tuple[str, str, str] | None:
    """(component, kind, label) of a saturation signal: ``util_<direction>`` ("util"), the
    busiest core ("util"), a block device's busy time ("busy"); None for anything else."""
    if "/" not in key:
        return None
    component, metric = key.split("/", 1)
    if metric.startswith("util_"):
        return component, "util", metric[len("util_") :]
    if metric == BUSIEST_CORE:
        return component, "util", "busiest core"
    if metric == "busy" and component.startswith("block:"):
        return component, "busy", "busy time"
    if metric == "busy" and component.startswith("accelerator:"):
        return component, "busy", "kernel time"  # utilization.gpu: a share of time, not a load
    return None


def _kind_rank(component: str) -> tuple[int, str]:
    kind = component.split(":", 1)[0]
    return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), component)


def path_panels(
    keys: Iterable[str],
    data_path: Sequence[str] | None,
    cut: str | None,
    hidden: Iterable[str] = (),
) -> tuple[list[Panel], list[str]]:
    """The panels of a utilization timeline, and the path's components that have no signal.

    On the path: ``data_path`` (all measured components when it is unknown, None), the CPU and
    memory (every workload's data passes them), the CUT and the hidden bottlenecks. Their
    ``util_*`` series, the busiest core and a disk's busy time get a panel each, the CUT first,
    then the hidden bottlenecks, then the rest from the CPU outward. Every other component's
    ``util_*`` series is folded into one "others (max)" panel; per-core series are left out (the
    busiest core stands for them)."""
    hidden = list(dict.fromkeys(hidden))
    signals: dict[str, list[tuple[str, str, str]]] = {}
    for key in sorted(keys):
        found = _signal(key)
        if found is not None and not found[0].startswith("core:"):
            signals.setdefault(found[0], []).append((key, found[1], found[2]))
    on_path = set(ALWAYS_ON_PATH) | set(hidden) | ({cut} if cut else set())
    on_path |= set(data_path) if data_path is not None else set(signals)
    ordered = ([cut] if cut else []) + [h for h in hidden if h != cut]
    ordered += sorted((c for c in on_path if c not in ordered), key=_kind_rank)
    panels: list[Panel] = []
    silent: list[str] = []
    for component in ordered:
        own = signals.get(component, [])
        lines = tuple((key, label) for key, kind, label in own if kind == "util")
        busy = next((key for key, kind, _ in own if kind == "busy"), None)
        role = "cut" if component == cut else "hidden" if component in hidden else "path"
        if lines or busy:
            panels.append(Panel(component, role, lines, busy))
        elif data_path is None or component in data_path or role != "path":
            silent.append(component)
    others = tuple(
        key
        for component, own in sorted(signals.items())
        if component not in on_path
        for key, kind, _ in own
        if kind == "util"
    )
    if others:
        panels.append(Panel(OTHERS, "others", collapsed=others))
    return panels, silent


def others_max(series: Mapping[str, np.ndarray], keys: Sequence[str]) -> np.ndarray:
    """The highest of ``keys`` at each sample (NaN where none is known)."""
    stacked = np.vstack([series[k] for k in keys])
    known = np.isfinite(stacked).any(axis=0)
    out = np.full(stacked.shape[1], np.nan)
    out[known] = np.nanmax(stacked[:, known], axis=0)
    return out


def plotted_signals(verdict: Verdict) -> list[ComponentStats]:
    """The CUT's and the judged signals that moved at all (peak >= 1 %), hottest first, at most
    ``MAX_LINES``."""
    chosen = [
        s
        for s in verdict.per_component
        if s.mean is not None
        and (s.judged or s.component == verdict.cut)
        and (s.peak or 0.0) >= 0.01
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


# -- what each box says ------------------------------------------------------------------------
@dataclass(frozen=True)
class Usage:
    """A component's peaks over the pictured time: utilization per direction, busy time."""

    peaks: dict[str, float] = field(default_factory=dict)  # label -> peak utilization
    busy: float | None = None

    @property
    def peak(self) -> float | None:
        return max(self.peaks.values()) if self.peaks else None


def signal_peaks(series: Mapping[str, Any]) -> dict[str, float]:
    """The peak of every saturation signal of a trace (``util_*``, the busiest core, a block
    device's busy time), unknown samples skipped: the one figure the graph boxes, the
    utilization plot and the report's peak table all show for a series (the busiest core is
    the busiest core, whoever kept it busy)."""
    out: dict[str, float] = {}
    for key, values in series.items():
        if _signal(key) is None:
            continue
        v = np.asarray([np.nan if x is None else x for x in values], dtype=float)
        finite = v[np.isfinite(v)]
        if finite.size:
            out[key] = float(finite.max())
    return out


def usage_of(series: Mapping[str, np.ndarray]) -> dict[str, Usage]:
    """Each measured component's peaks (per-core series left out; the busiest core counts for
    the CPU)."""
    peaks: dict[str, dict[str, float]] = {}
    busy: dict[str, float] = {}
    for key, peak in signal_peaks(series).items():
        found = _signal(key)
        assert found is not None
        if found[0].startswith("core:"):
            continue
        component, kind, label = found
        if kind == "busy":
            busy[component] = peak
        else:
            peaks.setdefault(component, {})[label] = peak
    return {c: Usage(peaks.get(c, {}), busy.get(c)) for c in set(peaks) | set(busy)}


def _short(label: str) -> str:
    return {
        "read": "r",
        "write": "w",
        "send": "tx",
        "receive": "rx",
        "compute": "",
        "capacity": "",
        "busiest core": "1 core",
    }.get(label, label)


def usage_lines(usage: Usage | None) -> tuple[str, ...]:
    """``peak w 92 %, r 40 %``, ``peak busy 97 %``: what a box says about its measurement."""
    if usage is None:
        return ()
    lines = []
    if usage.peaks:
        main = {k: v for k, v in usage.peaks.items() if k != "busiest core"}
        parts = [
            f"{_short(k)} {units.percent(v, 0)}".strip()
            for k, v in sorted(main.items(), key=lambda kv: -kv[1])
        ]
        if "busiest core" in usage.peaks:
            parts.append(f"1 core {units.percent(usage.peaks['busiest core'], 0)}")
        lines.append("peak " + ", ".join(parts))
    if usage.busy is not None:
        lines.append(f"peak busy {units.percent(usage.busy, 0)}")
    return tuple(lines)


def measured_looks(
    graph: Any, usage: Mapping[str, Usage], cut: str | None, hidden: Iterable[str], threshold: float
) -> dict[str, Any]:
    """Boxes of ``graph`` filled by peak utilization (grey: measured without a known limit,
    white: not measured), with their limit and what was measured."""
    from pilot_sys.topology.graphio import limit_caption, role_look

    hidden = set(hidden)
    looks = {}
    for node in graph.g.nodes:
        use = usage.get(node)
        peak = use.peak if use is not None else None
        if use is None:
            fill = palette.NOT_MEASURED
        else:
            fill = palette.utilization_colour(peak, threshold)
        caption = limit_caption(graph, node)
        lines = ((caption,) if caption else ()) + usage_lines(use)
        looks[node] = role_look(node, cut, hidden, fill, lines)
    return looks


# -- drawing -----------------------------------------------------------------------------------
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


ROLE_COLOURS = {
    "cut": palette.CUT,
    "hidden": palette.HIDDEN,
    "path": palette.OTHER,
    "others": palette.EXCLUDED,
}
ROLE_WORDS = {
    "cut": "component under test",
    "hidden": "hidden bottleneck",
    "path": "",
    "others": "components off the data path",
}


def draw_panels(
    fig: Any,
    area: Any,
    t: np.ndarray,
    series: Mapping[str, np.ndarray],
    panels: Sequence[Panel],
    threshold: float,
    spans: Sequence[tuple[float, float]] = (),
    span_label: str = "",
    xlabel: str = "session time (s)",
) -> list[Any]:
    """One axes per panel in ``area`` (a SubplotSpec), sharing the time axis; ``spans`` are
    shaded grey (time that does not count, named ``span_label``)."""
    grid = area.subgridspec(len(panels), 1, hspace=0.42)
    axes: list[Any] = []
    top_needed = 1.05
    for p in panels:
        for key, _ in p.lines:
            v = series.get(key)
            if v is not None and np.isfinite(v).any():
                top_needed = max(top_needed, float(np.nanmax(v)) * 1.05)
    for i, p in enumerate(panels):
        ax = fig.add_subplot(grid[i, 0], sharex=axes[0] if axes else None)
        axes.append(ax)
        colour = ROLE_COLOURS[p.role]
        for k, (a, b) in enumerate(spans):
            ax.axvspan(
                a,
                b,
                facecolor="none",
                edgecolor=palette.EXCLUDED,
                hatch="////",
                lw=0,
                label=span_label if i == 0 and k == 0 else None,
            )
        if p.busy is not None and p.busy in series:
            b = series[p.busy] * 100
            known = np.isfinite(b)
            ax.fill_between(
                t,
                0,
                np.where(known, b, 0),
                where=known,
                color=palette.BUSY,
                alpha=0.75,
                lw=0,
                label="busy time",
            )
        if p.role == "others":
            named = ", ".join(k.replace("/util_", " ") for k in p.collapsed)
            label = named if len(named) <= 30 else f"highest of {len(p.collapsed)} series"
            ax.plot(
                t, others_max(series, p.collapsed) * 100, color=palette.OTHER, lw=1.0, label=label
            )
        for j, (key, label) in enumerate(p.lines):
            if key in series:
                ax.plot(
                    t,
                    series[key] * 100,
                    DIRECTION_STYLES[j % len(DIRECTION_STYLES)],
                    color=colour,
                    lw=1.6 if p.role in ("cut", "hidden") else 1.1,
                    label=label,
                )
        ax.axhline(
            threshold * 100,
            color=palette.THRESHOLD,
            ls=(0, (4, 3)),
            lw=0.9,
            label=f"threshold {units.percent(threshold, 0)}",
        )
        ax.set_ylim(0, max(top_needed, 1.12) * 100)
        ax.set_yticks([0, 50, 100])
        ax.yaxis.set_major_formatter(lambda v, _pos: units.percent(v / 100, 0))
        ax.tick_params(labelsize=7, length=2)
        ax.grid(axis="y", color=palette.GRID, lw=0.6)
        for spine in ax.spines.values():
            spine.set_color(colour if p.role in ("cut", "hidden") else "#bbbbbb")
            spine.set_linewidth(1.8 if p.role in ("cut", "hidden") else 0.8)
        words = ROLE_WORDS[p.role]
        if p.role != "others" and not p.lines:
            words = f"{words}; " if words else ""
            words += "no stated limit: busy time only"
        ax.text(
            0.0,
            1.0,
            p.component + (f"  ({words})" if words else ""),
            transform=ax.transAxes,
            ha="left",
            va="bottom",
            fontsize=8,
            fontweight="bold",
            color=colour,
        )
        handles, labels = ax.get_legend_handles_labels()
        if labels:
            ax.legend(
                handles,
                labels,
                loc="center left",
                bbox_to_anchor=(1.005, 0.5),
                fontsize=7,
                frameon=False,
                handlelength=1.8,
            )
        if i < len(panels) - 1:
            ax.tick_params(labelbottom=False)
    if any(p.busy for p in panels):
        xlabel += (
            "\ngrey fill: busy time, the share of time a request was in flight "
            "(not a share of a limit)"
        )
    axes[-1].set_xlabel(xlabel, fontsize=8)
    return axes


def timeline_height(panels: Sequence[Panel]) -> float:
    return 0.45 + PANEL_HEIGHT * len(panels)


def draw(
    trace: MonitorTrace,
    verdict: Verdict,
    path: str | Path,
    *,
    graph: Any = None,
    data_path: Any = None,
) -> None:
    """``pilot-sys monitor --plot``: the utilization timeline of the data path's components
    above the data path coloured by peak utilization."""
    from pilot_sys.topology.graphio import legend_width, render_layout

    plt = _pyplot()
    t = np.asarray(trace.timestamps, dtype=np.float64)
    series = {k: _values(trace, k) for k in trace.series}
    path_ids = list(data_path.components) if getattr(data_path, "components", None) else None
    if path_ids is not None:  # a GPU the workload drove is on its path (its own panel)
        path_ids += [g for g in verdict.accelerators if verdict.accelerators[g]["workload_on_gpu"]]
    hidden = [h.component for h in verdict.hidden_bottlenecks]
    panels, _ = path_panels(series, path_ids, verdict.cut, hidden)
    layout = _graph_layout(verdict, series, graph, path_ids, hidden)
    # inches: the title; the time axis' labels (two lines when busy time is drawn)
    title_h, axis_h = 0.55, 0.75 if any(p.busy for p in panels) else 0.5
    timeline_h = timeline_height(panels) if panels else 0.0
    graph_h = layout.height / 72
    graph_w = max(layout.width, legend_width(layout)) / 72
    width = max(PANEL_WIDTH, graph_w)
    total = title_h + timeline_h + axis_h + graph_h
    fig = plt.figure(figsize=(width, total))
    status = "valid" if verdict.valid else "INVALID: hidden bottleneck at " + ", ".join(hidden)
    fig.suptitle(
        "\n".join(line for line in (" ".join(trace.command)[:90], status) if line),
        fontsize=9,
        y=1 - 0.08 / total,
        color=palette.HIDDEN if not verdict.valid else "#222222",
    )
    if panels:
        area = fig.add_gridspec(
            1,
            1,
            left=0.8 / width,
            right=1 - 1.9 / width,
            top=1 - title_h / total,
            bottom=(graph_h + axis_h) / total,
        )[0]
        draw_panels(fig, area, t, series, panels, verdict.threshold, xlabel="seconds since start")
    ax = fig.add_axes((0, 0, 1, graph_h / total))
    ax.set_xlim(0, width * 72)
    ax.set_ylim(0, layout.height)
    ax.set_axis_off()
    render_layout(ax, layout)
    save_figure_safely(fig, path, dpi=110)
    plt.close(fig)


def _graph_layout(
    verdict: Verdict,
    series: Mapping[str, np.ndarray],
    graph: Any,
    path_ids: list[str] | None,
    hidden: list[str],
) -> Any:
    """The data path (or every measured component without a graph) as a picture layout."""
    from pilot_sys.topology.graph import ComponentGraph
    from pilot_sys.topology.graphio import picture_layout

    usage = usage_of(series)
    wanted = set(path_ids or []) | set(hidden) | ({verdict.cut} if verdict.cut else set())
    if graph is not None:
        wanted |= {n for n in ALWAYS_ON_PATH if n in graph}
        shown = graph.subgraph([n for n in graph.g.nodes if n in wanted]) if wanted else graph
    else:
        from pilot_sys.topology.components import Component, ComponentKind

        shown = ComponentGraph()
        for node in sorted(wanted | {c for c in usage if c in ALWAYS_ON_PATH}):
            kind = node.split(":", 1)[0]
            known = kind in {k.value for k in ComponentKind}
            shown.add_component(
                Component(
                    id=node, kind=ComponentKind(kind) if known else ComponentKind.OTHER, name=node
                )
            )
    looks = measured_looks(shown, usage, verdict.cut, hidden, verdict.threshold)
    return picture_layout(
        shown,
        looks,
        "data path coloured by peak utilization",
        measured=True,
        threshold=verdict.threshold,
    )
