"""Comparisons on the terminal: the table of every shared PI (saved results and interleaved
runs), an interleaved comparison's ranking, and two data files compared."""

from __future__ import annotations

from typing import Literal

import click
from pydantic import BaseModel, ConfigDict

from pilot_sys import units
from pilot_sys.session.compare_launch import SavedComparison
from pilot_sys.session.pi_table import PIRow, PITable
from pilot_sys.session.result import Comparison, SessionResult
from pilot_sys.stats.ci import Summary

P_FLOOR = 0.001  # smaller p-values are shown as "< 0.001"


class CompareOutput(BaseModel):
    """``compare A B --json`` on two data files."""

    model_config = ConfigDict(frozen=True)

    a_source: str
    b_source: str
    column: str | None
    unit: str | None  # both sides are in it (B converted when its header names another unit)
    unit_note: str | None = None  # what was converted or assumed about the units
    pi_type: str
    confidence: float
    threshold: float
    mean_a: float
    mean_b: float
    difference: float  # A - B
    relative_difference: float | None  # (A - B) / B
    difference_ci_low: float
    difference_ci_high: float
    t: float
    dof: float
    p_value: float
    verdict: Literal["a_higher", "a_lower", "undecided", "cannot_decide"]
    reason: str = ""  # why it cannot decide
    higher_is_better: bool
    a_faster: bool | None  # None unless decided
    additional_samples_a: int | None  # raw samples A still needs for p < threshold (None: never)
    additional_samples_b: int | None
    a: Summary
    b: Summary


def p_text(p: float | None) -> str:
    """Welch's p for people: two significant digits, ``< 0.001`` below that."""
    if p is None:
        return "-"
    return f"< {P_FLOOR:g}" if p < P_FLOOR else units.significant(p, 2)


def _side(
    mean: float | None, low: float | None, high: float | None, unit: str, network: bool
) -> str:
    if low is None or high is None:
        shown = units.quantity(mean, unit, network)
        return shown if mean is None else f"{shown} (no CI)"
    return units.estimate(mean, low, high, unit, network)


def _difference(row: PIRow, network: bool) -> str:
    if row.difference is None:
        return "?"
    sign = "+" if row.difference > 0 else ""
    shown = f"{sign}{units.quantity(row.difference, row.unit, network)}"
    if row.difference_ci_low is None or row.difference_ci_high is None:
        return shown
    low, high = row.difference_ci_low, row.difference_ci_high
    return f"{shown} {units.interval(low, high, row.unit, network)}"


def _rounds(n: int | None) -> str:
    return f"~{n} more round{'s' if n != 1 else ''}"


def verdict_text(row: PIRow, a: str, b: str) -> str:
    """``A faster``, ``not significant (needs ~12 more rounds of A, ~30 of B)``, ``cannot
    decide``."""
    if row.verdict == "a_faster":
        return f"{a} faster"
    if row.verdict == "b_faster":
        return f"{b} faster"
    if row.verdict == "cannot_decide":
        return "cannot decide"
    ra, rb = row.more_rounds_a, row.more_rounds_b
    if row.p_value is None:
        return "not significant (intervals overlap)"
    if ra is None or rb is None:
        return "not significant (practically equal)"
    if ra == rb:
        return f"not significant (needs {_rounds(ra)} each)"
    return f"not significant (needs {_rounds(ra)} of {a}, ~{rb} of {b})"


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def table_lines(table: PITable, network: bool = False) -> list[str]:
    """The table, one PI a line, the ranked one first and starred; then why each undecidable PI
    cannot be decided."""
    level = units.percent(table.confidence, None)
    rows = [
        ["PI", table.a, table.b, f"{table.a} - {table.b} [{level} CI]", "change", "p", "verdict"]
    ]
    for row in table.rows:
        rows.append(
            [
                f"{row.pi}{' *' if row.pi == table.primary else ''}",
                _side(row.a.mean, row.a.ci_low, row.a.ci_high, row.unit, network),
                _side(row.b.mean, row.b.ci_low, row.b.ci_high, row.unit, network),
                _difference(row, network),
                units.percent(row.relative_difference, 1, signed=True),
                p_text(row.p_value),
                verdict_text(row, table.a, table.b),
            ]
        )
    lines = [f"  {line}" for line in _aligned(rows)]
    if table.primary is not None:
        lines.append(f"  * {table.primary}: the PI ranked by (--pi chooses another)")
    if table.setup_differs:
        lines.append(
            f"  set-ups differ in {', '.join(table.setup_differs)}: a difference above may be "
            "the set-up's, not the system's"
        )
    lines += [
        f"  {row.pi}: cannot decide: {row.reason}"
        for row in table.rows
        if row.verdict == "cannot_decide"
    ]
    return lines


def _network(result: SessionResult | None) -> bool:
    if result is None:
        return False
    return any(units.network_traffic(w.command, result.bottleneck.cut) for w in result.workloads)


def comparison_lines(cmp_: Comparison | None, result: SessionResult | None = None) -> list[str]:
    """An interleaved comparison: the ranking, best first, with each adjacent difference, its CI
    and Welch's p; then the table of every shared PI of each workload against the first."""
    if cmp_ is None:
        return ["comparison: the workloads share no PI to compare yet"]
    network = _network(result)
    unit = (
        next((w.pis[cmp_.pi].unit for w in result.workloads if cmp_.pi in w.pis), "")
        if result is not None
        else ""
    )
    if not cmp_.ranking:
        lines = [f"ranking by {cmp_.pi}: not yet (a workload has no interval on it)"]
    else:
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
    if cmp_.ranking:
        lines.append(
            "all adjacent pairs separated"
            if cmp_.all_separated
            else "not every adjacent pair is separated yet"
        )
    for table in cmp_.tables:
        lines.append(f"every PI both report, {table.a} against {table.b}:")
        lines += table_lines(table, network)
    lines += [f"phase behaviour: {ph.note}" for ph in cmp_.phase_behaviour]
    return lines


def saved_lines(saved: SavedComparison) -> list[str]:
    """Which result is A and which B, what each comparison inherits, the table, phases."""
    lines = [
        f"{s.label}: {s.directory} ({s.workload}, {s.status}, {s.rounds_analysed} rounds analysed)"
        for s in saved.sides
    ]
    lines += [f"warning: {w}" for w in saved.warnings]
    lines += table_lines(saved.table, any(s.network_traffic for s in saved.sides))
    lines += [f"phase behaviour: {ph.note}" for ph in saved.phase_behaviour]
    return lines


def file_lines(out: CompareOutput) -> list[str]:
    """Two data files compared: each side, the difference with its CI, Welch's test, the
    verdict and, undecided, how many more samples would decide it."""
    unit = out.unit or ""
    lines = [f"note: {out.unit_note}"] if out.unit_note else []
    for label, s, src in (("A", out.a, out.a_source), ("B", out.b, out.b_source)):
        shown = units.estimate(s.mean, s.ci_low, s.ci_high, unit)
        lines.append(
            f"  {label}  {shown}  n={s.sample_size}  subsession {s.subsession_size} x "
            f"{s.n_subsessions}  ({src})"
        )
    rel = (
        f" ({units.percent(out.relative_difference, 2, signed=True)})"
        if out.relative_difference is not None
        else ""
    )
    sign = "+" if out.difference > 0 else ""
    ci = units.interval(out.difference_ci_low, out.difference_ci_high, unit)
    lines.append(
        f"  A - B = {sign}{units.quantity(out.difference, unit)}{rel}  "
        f"{units.percent(out.confidence, None)} CI {ci}"
    )
    shown_p = p_text(out.p_value)
    p = f"p {shown_p}" if shown_p.startswith("<") else f"p = {shown_p}"
    lines.append(f"  Welch t = {out.t:.3f}, dof = {out.dof:.1f}, {p} (threshold {out.threshold:g})")
    if out.verdict == "cannot_decide":
        lines.append(f"  verdict: cannot decide: {out.reason}")
    elif out.verdict == "undecided":
        more = (
            f"about {out.additional_samples_a} more samples of A and "
            f"{out.additional_samples_b} of B would decide it"
            if out.additional_samples_a is not None
            else "the means are practically equal; more samples will not separate them"
        )
        lines.append(f"  verdict: no significant difference; {more}")
    else:
        word = "higher" if out.verdict == "a_higher" else "lower"
        speed = "faster" if out.a_faster else "slower"
        better = "higher" if out.higher_is_better else "lower"
        lines.append(f"  verdict: A is {word} than B, so A is {speed} ({better} is better)")
    return lines


def print_comparison(cmp_: Comparison | None, result: SessionResult | None = None) -> None:
    for line in comparison_lines(cmp_, result):
        click.echo(line)


def print_saved(saved: SavedComparison, as_json: bool) -> None:
    if as_json:
        click.echo(saved.model_dump_json(indent=2))
        return
    for line in saved_lines(saved):
        click.echo(line)


def print_file_comparison(out: CompareOutput, as_json: bool) -> None:
    if as_json:
        click.echo(out.model_dump_json(indent=2))
        return
    for line in file_lines(out):
        click.echo(line)
