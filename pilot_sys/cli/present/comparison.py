"""Rankings on the terminal: an interleaved comparison's pairs, and saved results side by side."""

from __future__ import annotations

import click

from pilot_sys import units
from pilot_sys.session.compare_launch import SavedComparison
from pilot_sys.session.result import Comparison, SessionResult


def _pi_of(cmp_: Comparison, result: SessionResult | None) -> tuple[str, bool]:
    """The compared PI's unit, and whether its byte rates are network traffic."""
    if result is None:
        return "", False
    for w in result.workloads:
        if cmp_.pi in w.pis:
            return w.pis[cmp_.pi].unit, units.network_traffic(w.command, result.bottleneck.cut)
    return "", False


def comparison_lines(cmp_: Comparison | None, result: SessionResult | None = None) -> list[str]:
    """The ranking, best first, with each adjacent difference, its CI and Welch's p."""
    if cmp_ is None:
        return ["comparison: not enough data for an interval on every side yet"]
    unit, network = _pi_of(cmp_, result)
    lines = [f"ranking by {cmp_.pi} (best first): {' > '.join(cmp_.ranking)}"]
    for pr in cmp_.pairs:
        rel = (
            f" ({units.percent(pr.difference_rel, 2, signed=True)})"
            if pr.difference_rel is not None
            else ""
        )
        ci = (
            f", CI of the difference {units.interval(pr.ci_low, pr.ci_high, unit, network)}"
            if pr.ci_low is not None and pr.ci_high is not None
            else ""
        )
        p = f", Welch p = {pr.p_value:.3g}" if pr.p_value is not None else ""
        how = (
            "CIs do not overlap"
            if not pr.cis_overlap
            else (f"p < {cmp_.p_threshold:g}" if pr.separated else "NOT separated")
        )
        difference = units.quantity(pr.difference, unit, network)
        lines.append(f"  {pr.better} vs {pr.worse}: {difference}{rel}{ci}{p} -> {how}")
    lines.append(
        "all adjacent pairs separated"
        if cmp_.all_separated
        else "not every adjacent pair is separated yet"
    )
    lines += [f"phase behaviour: {ph.note}" for ph in cmp_.phase_behaviour]
    return lines


def saved_lines(saved: SavedComparison) -> list[str]:
    """Each saved result's value of the compared PI, then the ranking."""
    cmp_ = saved.comparison
    lines = []
    for label, res in zip(saved.labels, saved.results):
        w = res.primary()
        p = w.pis[cmp_.pi]
        network = units.network_traffic(w.command, res.bottleneck.cut)
        lines.append(
            f"  {label}: {cmp_.pi} {units.estimate(p.mean, p.ci_low, p.ci_high, p.unit, network)} "
            f"CI {units.interval(p.ci_low, p.ci_high, p.unit, network)} "
            f"({res.status}, {w.rounds.analysed} rounds)"
        )
    return lines + comparison_lines(cmp_, saved.results[0])


def print_comparison(cmp_: Comparison | None, result: SessionResult | None = None) -> None:
    for line in comparison_lines(cmp_, result):
        click.echo(line)


def print_saved(saved: SavedComparison, as_json: bool) -> None:
    if as_json:
        click.echo(saved.comparison.model_dump_json(indent=2))
        return
    for line in saved_lines(saved):
        click.echo(line)
