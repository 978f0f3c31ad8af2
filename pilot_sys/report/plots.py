"""PNG plots of a session, for the things a person would rather look at than read:
readings per round with the CI converging, unit readings with their change points and removed
phases, the WPS fit, and utilization over time against the bottleneck threshold.

matplotlib is imported lazily (Agg backend) so that commands which do not plot never pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys import units

MAX_POINTS = 20000  # unit readings beyond this are thinned for the picture (never for analysis)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _scale(unit: str, values: np.ndarray, network: bool = False) -> tuple[float, str]:
    """Divisor and label unit so the axis reads in MiB/s (Gbit/s for network traffic) rather
    than 1e8 B/s; the prefixes are those of ``pilot_sys.units``."""
    finite = values[np.isfinite(values)] if values.size else values
    peak = float(np.max(np.abs(finite))) if finite.size else 0.0
    if unit == "B/s" and network:
        for div, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if 8 * peak >= div:
                return div / 8, f"{prefix}bit/s"
        return 1 / 8, "bit/s"
    if unit in ("B/s", "B"):
        for div, prefix in ((2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")):
            if peak >= div:
                return float(div), f"{prefix}{unit}"
    if unit == "s" and 0 < peak < 1:
        return (1e-6, "µs") if peak < 1e-3 else (1e-3, "ms")
    return 1.0, unit


def plot_readings(
    pi: str, unit: str, rounds: list[dict[str, Any]], history: list[tuple[int, float, float, float]],
    target: float, path: Path, network: bool = False,
) -> Path:
    """Per-round readings (analysed, short, excluded) and the running mean with its CI band.

    ``rounds``: dicts with ``index``, ``value`` (or None) and ``state`` (analysed/short/excluded/
    failed); ``history``: (round index, mean, ci_low, ci_high) after each analysed round."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    values = np.array([r["value"] if r["value"] is not None else np.nan for r in rounds], dtype=float)
    hist = np.array(history, dtype=float).reshape(-1, 4)
    shown = np.concatenate([values, hist[:, 1]]) if hist.size else values
    div, label = _scale(unit, shown, network)
    styles = {"analysed": ("o", "tab:blue", "reading (analysed)"), "short": ("x", "grey", "short round (not analysed)"),
              "excluded": ("s", "tab:orange", "below alpha (not analysed)"), "failed": ("X", "tab:red", "failed round")}
    for state, (marker, color, name) in styles.items():
        sel = [i for i, r in enumerate(rounds) if r["state"] == state and r["value"] is not None]
        if sel:
            ax.scatter([rounds[i]["index"] for i in sel], values[sel] / div, marker=marker, color=color, s=18, label=name, zorder=3)
    if hist.size:
        ax.plot(hist[:, 0], hist[:, 1] / div, color="black", lw=1.5, label="mean so far")
        ax.fill_between(hist[:, 0], hist[:, 2] / div, hist[:, 3] / div, color="tab:green", alpha=0.25, step=None,
                        label="confidence interval")
        last = hist[-1]
        ax.set_title(f"{pi}: {units.estimate(last[1], last[2], last[3], unit, network)}, "
                     f"CI {units.interval(last[2], last[3], unit, network)} "
                     f"(target {units.target(target)})",
                     fontsize=10)
    else:
        ax.set_title(f"{pi}: no confidence interval yet", fontsize=10)
    ax.set_xlabel("round")
    ax.set_ylabel(f"{pi} ({label})" if label else pi)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.13, top=0.9)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_units(
    pi: str, unit: str, segments: list[dict[str, Any]], path: Path, network: bool = False,
) -> Path:
    """All rounds' unit readings end to end; removed (non-stable) parts grey, change points red.

    ``segments``: one dict per analysed round with ``values`` (array), ``start``/``end`` (kept
    part) and ``changepoints`` (indices within the round)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4), dpi=110)
    total = sum(len(s["values"]) for s in segments)
    step = max(1, total // MAX_POINTS)
    allv = np.concatenate([np.asarray(s["values"], dtype=float) for s in segments]) if segments else np.empty(0)
    div, label = _scale(unit, allv, network)
    xs_keep: list[np.ndarray] = []
    ys_keep: list[np.ndarray] = []
    xs_drop: list[np.ndarray] = []
    ys_drop: list[np.ndarray] = []
    cps: list[int] = []
    starts: list[int] = []
    offset = 0
    for s in segments:
        v = np.asarray(s["values"], dtype=float) / div
        x = np.arange(offset, offset + v.size)
        keep = np.zeros(v.size, dtype=bool)
        keep[s["start"] : s["end"]] = True
        xs_keep.append(x[keep])
        ys_keep.append(v[keep])
        xs_drop.append(x[~keep])
        ys_drop.append(v[~keep])
        cps.extend(offset + int(cp) for cp in s["changepoints"])
        starts.append(offset)
        offset += v.size
    # one artist per kind: thousands of per-round artists make savefig crawl
    xk, yk = np.concatenate(xs_keep), np.concatenate(ys_keep)
    ax.plot(xk[::step], yk[::step], ".", ms=2, color="tab:blue", label="kept (stable)")
    xd, yd = np.concatenate(xs_drop), np.concatenate(ys_drop)
    if xd.size:
        ax.plot(xd[::step], yd[::step], ".", ms=2, color="grey", label="removed (non-stable)")
    ax.vlines(starts, 0, 1, transform=ax.get_xaxis_transform(), color="black", lw=0.3, alpha=0.4)
    if cps:
        ax.vlines(cps, 0, 1, transform=ax.get_xaxis_transform(), color="tab:red", ls="--", lw=0.8, label="change point")
    ax.set_xlabel("unit reading (rounds end to end; thin lines: round starts)")
    ax.set_ylabel(f"{pi} ({label})")
    ax.set_title(f"{pi}: unit readings of {len(segments)} analysed round(s), EDM change points", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best", markerscale=4)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.13, top=0.9)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_wps(work: np.ndarray, seconds: np.ndarray, analysed: np.ndarray, alpha: float | None, v: float | None,
             work_unit: str, path: Path) -> Path:
    """Round duration against work: the WPS line t = alpha + w / v."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    ax.scatter(work[analysed], seconds[analysed], s=14, color="tab:blue", label="analysed round")
    if (~analysed).any():
        ax.scatter(work[~analysed], seconds[~analysed], s=14, color="grey", marker="x", label="not analysed")
    if alpha is not None and v:
        xs = np.linspace(0, float(work.max()) if work.size else 1.0, 50)
        rate = units.quantity(v, f"{work_unit}/s")
        fit = f"t = {units.duration(alpha)} + w / ({rate})"
        ax.plot(xs, alpha + xs / v, color="black", lw=1, label=fit)
    ax.set_xlabel(f"work ({work_unit})")
    ax.set_ylabel("round duration (s)")
    ax.set_title("work-per-second regression", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.13, top=0.9)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_utilization(series: dict[str, tuple[np.ndarray, np.ndarray]], threshold: float, cut: str | None,
                     path: Path, top: int = 8) -> Path:
    """Utilization (fraction of each stated limit) over session time; the threshold dashed."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4), dpi=110)
    peaks = sorted(series.items(), key=lambda kv: -float(np.nanmax(kv[1][1])) if kv[1][1].size else 0.0)
    for key, (t, u) in peaks[:top]:
        comp = key.rsplit("/", 1)[0]
        style = "-" if comp == cut else "-"
        lw = 2.0 if comp == cut else 1.0
        ax.plot(t, u, style, lw=lw, label=f"{key}{' (CUT)' if comp == cut else ''}")
    ax.axhline(threshold, color="tab:red", ls="--", lw=1,
               label=f"threshold {units.percent(threshold, 0)}")
    ax.set_ylim(0, max(1.05, max((float(np.nanmax(u)) for _, (_, u) in peaks[:top] if u.size), default=1.0) * 1.05))
    ax.set_xlabel("session time (s)")
    ax.set_ylabel("utilization (fraction of limit)")
    ax.set_title("utilization during rounds (top components by peak)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="upper right")
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.13, top=0.9)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_comparison(rows: list[tuple[str, float, float, float]], pi: str, unit: str, path: Path,
                    network: bool = False) -> Path:
    """Each workload's mean and CI, best first (a forest plot): separation is seen at a glance."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.5 * len(rows)), dpi=110)
    values = np.array([[m, lo, hi] for _, m, lo, hi in rows], dtype=float)
    div, label = _scale(unit, values.ravel(), network)
    y = np.arange(len(rows))[::-1]
    means, lows, highs = values[:, 0] / div, values[:, 1] / div, values[:, 2] / div
    ax.errorbar(means, y, xerr=[means - lows, highs - means], fmt="o", color="tab:blue", capsize=4)
    ax.set_yticks(y, [name for name, *_ in rows])
    ax.set_xlabel(f"{pi} ({label})" if label else pi)
    ax.set_title(f"{pi}: mean and confidence interval per workload (best at the top)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.margins(y=0.3)
    fig.subplots_adjust(left=0.22, right=0.97, bottom=0.25 if len(rows) < 4 else 0.12, top=0.85)
    fig.savefig(path)
    plt.close(fig)
    return path
