"""PNG plots of a session, for what a person would rather look at than read:

- ``<pi>-units.png``: each round's unit readings summarised (median, interquartile and 5-95 %
  bands of the part kept after non-stable removal) above the share of each round removed as
  warm-up and cool-down, with the final mean and its interval as a band;
- ``<pi>-rounds.png``: each round's value and the interval converging on the target;
- ``utilization.png``: the data path's components over the session (``pilot_sys.monitor.plot``);
- ``wps-fit.png`` and ``comparison.png``.

Every title states the final result as result.json does (``session.verdict.estimate_text``, the
words of the summary and report.md), and the rounds the verdict excluded are drawn as
"excluded: hidden bottleneck". Colours are those of ``pilot_sys.palette``; numbers in titles and
labels go through ``pilot_sys.units``. The data preparation (:func:`round_quantiles`,
:func:`removed_shares`) is pure; matplotlib is imported lazily with the Agg backend, so commands
that do not plot never pay for it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys import palette, units
from pilot_sys.safefile import save_figure_safely
from pilot_sys.session.result import PIResult, WPSResult
from pilot_sys.session.verdict import NO_ESTIMATE, alpha_text, estimate_text
from pilot_sys.stats.pi import PIType, point_estimate

QUANTILES = (5.0, 25.0, 50.0, 75.0, 95.0)
WIDTH = 9.0  # inches: every session plot is as wide, so they line up in report.html
DPI = 110
MAX_POINTS = 20000  # scatter points beyond this are thinned for the picture (never for analysis)

# how a round took part in the analysis, and how it is drawn: marker, colour, legend text
ANALYSED = "analysed"
EXCLUDED = "excluded"  # by the verdict: its own monitor check found a hidden bottleneck
EXCLUDED_WORDS = "excluded: hidden bottleneck"
STATES: dict[str, tuple[str, str, str]] = {
    ANALYSED: ("o", palette.MEASURE, "analysed round"),
    "short": ("x", palette.EXCLUDED, "short round (not analysed)"),
    "below alpha": ("s", palette.EXCLUDED, "below the smallest useful work (not analysed)"),
    EXCLUDED: ("D", palette.EXCLUDED, EXCLUDED_WORDS),
    "failed": ("X", palette.FAILED, "failed round"),
}
# a round that saw a hidden bottleneck but was too short to be judged on its own (the rounds
# are judged together at the end): a tick on the round axis
FLAGGED_WORDS = "saw a hidden bottleneck, too short to judge on its own"
MEAN_WORDS = {"harmonic": "harmonic mean", "arithmetic": "mean", "proportion": "success share"}


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


def _axis_label(pi: str, label: str) -> str:
    return f"{pi} ({label})" if label else pi


def _save(fig: Any, path: Path) -> Path:
    save_figure_safely(fig, path, dpi=DPI)
    _pyplot().close(fig)
    return path


# -- data preparation (pure) -------------------------------------------------------------------
def round_quantiles(groups: Sequence[np.ndarray], q: Sequence[float] = QUANTILES) -> np.ndarray:
    """The ``q`` percentiles of each group's finite values, one row per group (NaN for a group
    without any). numpy's default (linear) interpolation, as ``np.percentile``."""
    out = np.full((len(groups), len(q)), np.nan)
    for i, values in enumerate(groups):
        v = np.asarray(values, dtype=np.float64)
        v = v[np.isfinite(v)]
        if v.size:
            out[i] = np.percentile(v, q)
    return out


def removed_shares(starts: np.ndarray, ends: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Per round, the share of its unit readings removed before the kept segment (warm-up) and
    after it (cool-down): an (n, 2) array; 0 for a round without readings."""
    starts, ends, totals = (np.asarray(a, dtype=np.float64) for a in (starts, ends, totals))
    safe = np.where(totals > 0, totals, 1.0)
    warm = np.where(totals > 0, starts / safe, 0.0)
    cool = np.where(totals > 0, (totals - ends) / safe, 0.0)
    return np.column_stack([warm, cool])


@dataclass(frozen=True)
class RoundUnits:
    """One round's unit readings of a PI and the part non-stable removal kept."""

    index: int
    values: np.ndarray
    start: int
    end: int
    state: str  # a key of ``STATES``


@dataclass(frozen=True)
class Estimate:
    """The final mean of a PI and its interval (None while unknown), as result.json says, and
    the words every output states it in (``text``)."""

    mean: float | None
    low: float | None
    high: float | None
    pi_type: str = "arithmetic"
    target: float | None = None  # full width relative to the mean
    text: str = ""  # ``session.verdict.estimate_text`` of the final result

    @classmethod
    def of(cls, p: PIResult, network: bool = False) -> Estimate:
        """The final result of PI ``p`` (never a point of the interval's history)."""
        return cls(p.mean, p.ci_low, p.ci_high, p.pi_type, p.target, estimate_text(p, network))

    def title(self, pi: str) -> str:
        goal = f" (target {units.target(self.target)})" if self.target is not None else ""
        return f"{pi}: {self.text or NO_ESTIMATE}{goal}"


def _estimate_band(ax: Any, est: Estimate, div: float, label: str) -> None:
    """The final mean (a line) and its interval (a band) across the whole axis."""
    if est.mean is None:
        return
    if est.low is not None and est.high is not None:
        ax.axhspan(
            est.low / div,
            est.high / div,
            color=palette.ESTIMATE,
            alpha=0.12,
            lw=0,
            label="its confidence interval",
        )
    ax.axhline(est.mean / div, color=palette.ESTIMATE, lw=1.2, label=label)


# -- unit readings -----------------------------------------------------------------------------
Badge = tuple[str, str]  # the session's status in words and its colour, top right of a plot


def _titles(fig: Any, ax: Any, title: str, subtitle: str, badge: Badge | None = None) -> None:
    """The title (the result, as result.json says) above a smaller line on what is drawn, and
    the session's status at the right: every plot says the verdict it belongs to."""
    fig.text(0.08, 0.985, title, fontsize=10, ha="left", va="top")
    if badge is not None:
        fig.text(
            0.98,
            0.985,
            badge[0],
            fontsize=9,
            ha="right",
            va="top",
            color=badge[1],
            fontweight="bold",
        )
    if subtitle:
        ax.set_title(subtitle, fontsize=7.5, loc="left", color="#555555")


def _swatch(colour: str, **kw: Any) -> Any:
    from matplotlib.patches import Patch

    return Patch(facecolor=colour, edgecolor=kw.pop("edgecolor", "none"), **kw)


def _round_ticks(ax: Any, xs: Sequence[int], label: str) -> None:
    """Red ticks on the round axis under rounds ``xs`` (a hidden bottleneck's colour)."""
    if xs:
        ax.plot(
            list(xs),
            [0.0] * len(xs),
            "|",
            color=palette.HIDDEN,
            ms=9,
            mew=1.5,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
            label=label,
        )


def plot_units(
    pi: str,
    unit: str,
    rounds: Sequence[RoundUnits],
    estimate: Estimate,
    path: Path,
    network: bool = False,
    subtitle: str = "",
    badge: Badge | None = None,
) -> Path:
    """Each round's unit readings as a median with interquartile and 5-95 % bands (of the part
    kept after non-stable removal; all of a round that was not analysed) and the round's mean
    the PI's way, above the share of each round removed as warm-up (bottom) and cool-down
    (top); the final mean and its interval across both."""
    from matplotlib.lines import Line2D

    plt = _pyplot()
    x = np.array([r.index for r in rounds], dtype=float)
    analysed = np.array([r.state == ANALYSED for r in rounds], dtype=bool)
    kept = [r.values[r.start : r.end] if r.state == ANALYSED else r.values for r in rounds]
    qs = round_quantiles(kept)
    means = np.array([round_mean(v, estimate.pi_type) for v in kept])
    shown = np.concatenate([qs.ravel(), means, [v for v in (estimate.low, estimate.high) if v]])
    div, label = _scale(unit, shown, network)
    qs, means = qs / div, means / div
    fig, (ax, ax_rm) = plt.subplots(
        2,
        1,
        sharex=True,
        figsize=(WIDTH, 5.6),
        gridspec_kw={"height_ratios": [3.2, 1.0], "hspace": 0.1},
    )
    width = 0.7 if len(rounds) < 120 else 0.9
    for sel, light, mid in (
        (analysed, palette.MEASURE_LIGHT, palette.MEASURE_MID),
        (~analysed, "#dddddd", palette.EXCLUDED),
    ):
        if sel.any():
            q = qs[sel]
            ax.bar(x[sel], q[:, 4] - q[:, 0], bottom=q[:, 0], width=width * 0.4, color=light, lw=0)
            ax.bar(x[sel], q[:, 3] - q[:, 1], bottom=q[:, 1], width=width, color=mid, lw=0)
            ax.scatter(
                x[sel], q[:, 2], marker="_", s=70 * width, color="white", linewidths=1.6, zorder=3
            )
    ax.scatter(x, means, marker="o", s=9, color=palette.ESTIMATE, zorder=4)
    mean_words = MEAN_WORDS.get(estimate.pi_type, "mean")
    _estimate_band(ax, estimate, div, "")
    ax.set_ylabel(_axis_label(pi, label), fontsize=8)
    ax.grid(axis="y", color=palette.GRID, lw=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=7)
    _titles(fig, ax, estimate.title(pi), subtitle, badge)
    excluded = [r.index for r in rounds if r.state == EXCLUDED]
    _round_ticks(ax, excluded, f"{EXCLUDED_WORDS} (the round's readings grey)")

    starts = np.array([r.start if r.state == ANALYSED else 0 for r in rounds])
    ends = np.array([r.end if r.state == ANALYSED else r.values.size for r in rounds])
    totals = np.array([r.values.size for r in rounds])
    shares = removed_shares(starts, ends, totals) * 100
    keep = 100 - shares[:, 0] - shares[:, 1]
    ax_rm.bar(x, shares[:, 0], width=width, color=palette.REMOVED, lw=0)
    ax_rm.bar(
        x,
        keep,
        bottom=shares[:, 0],
        width=width,
        color=np.where(analysed, palette.MEASURE_LIGHT, "#dddddd"),
        lw=0,
    )
    ax_rm.bar(
        x,
        shares[:, 1],
        bottom=shares[:, 0] + keep,
        width=width,
        color=palette.REMOVED,
        lw=0,
        hatch="////",
        edgecolor="white",
    )
    ax_rm.set_ylim(0, 100)
    ax_rm.set_yticks([0, 50, 100])
    ax_rm.yaxis.set_major_formatter(lambda v, _pos: units.percent(v / 100, 0))
    ax_rm.set_ylabel("share of\nthe round", fontsize=7)
    ax_rm.tick_params(labelsize=7)
    ax_rm.set_xlabel("round", fontsize=8)
    ax_rm.xaxis.get_major_locator().set_params(integer=True)

    handles = [
        _swatch(palette.MEASURE_LIGHT, label="5-95 % of a round's kept readings"),
        _swatch(palette.MEASURE_MID, label="25-75 % (white tick: the median)"),
        Line2D(
            [],
            [],
            marker="o",
            ls="none",
            color=palette.ESTIMATE,
            ms=3.5,
            label=f"the round's {mean_words}",
        ),
    ]
    if estimate.mean is not None:
        handles.append(
            Line2D([], [], color=palette.ESTIMATE, lw=1.2, label=f"final {mean_words} (the result)")
        )
    if estimate.low is not None and estimate.high is not None:
        handles.append(_swatch(palette.ESTIMATE, alpha=0.12, label="its confidence interval"))
    if (~analysed).any():
        handles.append(_swatch(palette.EXCLUDED, label="round not analysed (all its readings)"))
    if excluded:
        handles.append(
            Line2D(
                [],
                [],
                marker="|",
                ls="none",
                color=palette.HIDDEN,
                ms=9,
                mew=1.5,
                label=EXCLUDED_WORDS,
            )
        )
    handles += [
        _swatch(palette.REMOVED, label="removed as warm-up (lower bar)"),
        _swatch(
            palette.REMOVED,
            hatch="////",
            edgecolor="white",
            label="removed as cool-down (upper bar)",
        ),
    ]
    fig.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0.07, 0.0),
        ncol=3,
        fontsize=7,
        frameon=False,
    )
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, top=0.9)
    return _save(fig, path)


def round_mean(values: np.ndarray, pi_type: str) -> float:
    """A round's mean the PI's way (``pilot_sys.stats.pi``: harmonic for rates over equal
    work), NaN without finite values."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return float("nan")
    with np.errstate(divide="ignore"):
        return float(point_estimate(v, PIType(pi_type)))


# -- readings per round and the interval converging --------------------------------------------
@dataclass(frozen=True)
class RoundValue:
    index: int
    value: float | None
    state: str  # a key of ``STATES``


def plot_readings(
    pi: str,
    unit: str,
    rounds: Sequence[RoundValue],
    history: Sequence[tuple[int, float, float, float]],
    estimate: Estimate,
    path: Path,
    network: bool = False,
    value_words: str = "the round's reading",
    flagged: frozenset[int] = frozenset(),
    badge: Badge | None = None,
) -> Path:
    """Each round's value, and after each analysed round the PI's mean so far with its interval
    and the target around it: the interval shrinking into the target is the session converging.

    ``history``: (round index, mean, ci_low, ci_high) after successive rounds, NaN bounds where
    there was no interval; ``flagged``: rounds that saw a hidden bottleneck but were too short
    to be judged on their own (a red tick on the round axis). The title is the final result's
    (``estimate``), not the history's last point."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 4.6))
    values = np.array([np.nan if r.value is None else r.value for r in rounds], dtype=float)
    hist = np.array(history, dtype=float).reshape(-1, 4)
    shown = np.concatenate([values, hist[:, 1:].ravel()])
    div, label = _scale(unit, shown, network)
    mean_words = MEAN_WORDS.get(estimate.pi_type, "mean")
    if hist.size:
        h = hist / np.array([1.0, div, div, div])
        ax.fill_between(
            h[:, 0],
            h[:, 2],
            h[:, 3],
            color=palette.ESTIMATE,
            alpha=0.13,
            lw=0,
            step="post",
            label="its confidence interval (a gap: none yet)",
        )
        ax.step(
            h[:, 0],
            h[:, 1],
            where="post",
            color=palette.ESTIMATE,
            lw=1.4,
            label=f"{mean_words} so far: the PI's estimate after each round",
        )
        if estimate.target:
            half = estimate.target / 2
            for sign in (1, -1):
                ax.step(
                    h[:, 0],
                    h[:, 1] * (1 + sign * half),
                    where="post",
                    color=palette.TARGET,
                    lw=1.0,
                    ls=(0, (4, 2)),
                    label=f"target: the interval within {units.target(estimate.target)}"
                    if sign == 1
                    else None,
                )
    for state, (marker, colour, name) in STATES.items():
        sel = np.array([r.state == state for r in rounds], dtype=bool) & np.isfinite(values)
        if sel.any():
            xs = np.array([r.index for r in rounds])[sel]
            ax.scatter(
                xs,
                values[sel] / div,
                marker=marker,
                s=16,
                color=colour,
                zorder=3,
                label=value_words if state == ANALYSED else name,
            )
    if flagged:
        present = {r.index for r in rounds} | {int(i) for i in hist[:, 0]}
        _round_ticks(ax, sorted(i for i in flagged if i in present), FLAGGED_WORDS)
    _titles(fig, ax, estimate.title(pi), "", badge)
    ax.set_xlabel("round", fontsize=8)
    ax.set_ylabel(_axis_label(pi, label), fontsize=8)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.tick_params(labelsize=7)
    ax.grid(color=palette.GRID, lw=0.6)
    ax.set_axisbelow(True)
    fig.legend(
        *ax.get_legend_handles_labels(),
        loc="lower left",
        bbox_to_anchor=(0.07, 0.0),
        ncol=2,
        fontsize=7,
        frameon=False,
    )
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.27, top=0.9)
    return _save(fig, path)


# -- utilization over the session --------------------------------------------------------------
def plot_utilization(
    t: np.ndarray,
    series: dict[str, np.ndarray],
    data_path: Sequence[str] | None,
    cut: str | None,
    hidden: Sequence[str],
    threshold: float,
    path: Path,
    spans: Sequence[tuple[float, float]] = (),
) -> Path | None:
    """The data path's components over the session, one panel each (``monitor.plot``);
    ``spans``: time of rounds that are not part of the analysis, shaded."""
    from pilot_sys.monitor.plot import draw_panels, path_panels, timeline_height

    panels, silent = path_panels(series, data_path, cut, hidden)
    if not panels:
        return None
    plt = _pyplot()
    height = timeline_height(panels) + 0.9
    fig = plt.figure(figsize=(WIDTH, height))
    area = fig.add_gridspec(1, 1, left=0.09, right=0.8, top=1 - 0.45 / height, bottom=0.6 / height)[
        0
    ]
    draw_panels(
        fig, area, t, series, panels, threshold, spans=spans, span_label="round not in the analysis"
    )
    title = "utilization of the data path over the session"
    if silent:
        title += f" (no signal: {', '.join(silent)})"
    fig.suptitle(title, fontsize=9, x=0.09, ha="left", y=1 - 0.08 / height)
    return _save(fig, path)


# -- the WPS fit and a comparison --------------------------------------------------------------
def plot_wps(
    work: np.ndarray,
    seconds: np.ndarray,
    states: Sequence[str],
    wps: WPSResult,
    work_unit: str,
    path: Path,
    title: str = "",
    badge: Badge | None = None,
) -> Path:
    """Round duration against work: the WPS line t = alpha + w / v, each round drawn by how it
    took part in the analysis (``states``: keys of ``STATES``), and the smallest useful work
    from alpha where the bound was applied. ``title``: the ``wps`` PI's final result; the line
    under it says what became of the alpha bound (``session.verdict.alpha_text``)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 4.4))
    div, label = _scale(work_unit, np.asarray(work, dtype=float))
    kinds = np.array(list(states))
    for state, (marker, colour, name) in STATES.items():
        sel = kinds == state
        if sel.any():
            ax.scatter(
                work[sel] / div,
                seconds[sel],
                s=14,
                marker=marker,
                color=colour,
                label="analysed round" if state == ANALYSED else name,
            )
    alpha, v = wps.alpha, wps.v
    if alpha is not None and v:
        xs = np.linspace(0, float(work.max()) if work.size else 1.0, 50)
        rate = units.quantity(v, f"{work_unit}/s")
        fit = f"t = {units.duration(alpha)} + w / ({rate})"
        ax.plot(xs / div, alpha + xs / v, color=palette.ESTIMATE, lw=1, label=fit)
    if wps.alpha_bound == "applied" and wps.alpha_work:
        ax.axvline(
            wps.alpha_work / div,
            color=palette.ESTIMATE,
            lw=0.9,
            ls=(0, (4, 2)),
            label=f"smallest useful work: {units.quantity(wps.alpha_work, work_unit)}",
        )
    alpha_ci = (
        f", CI [{units.duration(wps.alpha_ci_low)}, {units.duration(wps.alpha_ci_high)}]"
        if wps.alpha_ci_low is not None and wps.alpha_ci_high is not None
        else ""
    )
    sub = (
        f"alpha = {units.duration(alpha)}{alpha_ci}; the alpha bound: {alpha_text(wps)}"
        if alpha is not None
        else ""
    )
    _titles(fig, ax, title or "work-per-second regression", textwrap.fill(sub, 130), badge)
    ax.set_xlabel(_axis_label("work", label), fontsize=8)
    ax.set_ylabel("round duration (s)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(color=palette.GRID, lw=0.6)
    ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.12, top=0.84)
    return _save(fig, path)


def plot_comparison(
    rows: list[tuple[str, float, float, float]],
    pi: str,
    unit: str,
    path: Path,
    network: bool = False,
) -> Path:
    """Each workload's mean and CI, best first (a forest plot): separation is seen at a glance."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH * 0.8, 1.2 + 0.5 * len(rows)))
    values = np.array([[m, lo, hi] for _, m, lo, hi in rows], dtype=float)
    div, label = _scale(unit, values.ravel(), network)
    y = np.arange(len(rows))[::-1]
    means, lows, highs = values[:, 0] / div, values[:, 1] / div, values[:, 2] / div
    ax.errorbar(
        means, y, xerr=[means - lows, highs - means], fmt="o", color=palette.MEASURE, capsize=4
    )
    ax.set_yticks(y, [name for name, *_ in rows])
    ax.set_xlabel(_axis_label(pi, label), fontsize=8)
    ax.set_title(
        f"{pi}: mean and confidence interval per workload (best at the top)",
        fontsize=10,
        loc="left",
    )
    ax.grid(axis="x", color=palette.GRID, lw=0.6)
    ax.margins(y=0.3)
    fig.subplots_adjust(left=0.22, right=0.97, bottom=0.25 if len(rows) < 4 else 0.12, top=0.85)
    return _save(fig, path)
