"""The end of a session on the terminal: the status, each PI's mean ± its CI against the
target, the bottleneck check, the monitoring rate and where the report is."""

from __future__ import annotations

from pathlib import Path

import click

from pilot_sys import units
from pilot_sys.cli.present.progress import precision
from pilot_sys.session.result import PIResult, SessionResult, Status, WorkloadResult


def network_of(result: SessionResult, workload: WorkloadResult) -> bool:
    """Whether this workload's byte rates are shown in bit/s (see ``units.network_traffic``)."""
    return units.network_traffic(workload.command, result.bottleneck.cut)


def status_line(result: SessionResult) -> str:
    """``status: valid (every CI target met), 31.2 s``."""
    return (
        f"status: {result.status} ({result.stop_reason}), {units.duration(result.elapsed_seconds)}"
    )


def quiet_lines(result: SessionResult) -> list[str]:
    """What ``--quiet`` prints: the status and where the result is."""
    return [status_line(result), f"result directory: {result.result_dir}"]


def alarm_lines(result: SessionResult) -> list[str]:
    """Lines for stderr that a person must see whatever else is asked for (also with --quiet)."""
    lines: list[str] = []
    if result.status is Status.INVALID:
        hidden = ", ".join(result.bottleneck.hidden_bottlenecks) or "?"
        lines.append(
            f"INVALID RESULT: hidden bottleneck at {hidden} "
            f"(component under test: {result.bottleneck.cut or 'unknown'})"
        )
    if result.status is Status.WORKLOAD_FAILED:
        lines += [
            f"pilot-sys: {note} (the rounds before it are kept: `pilot-sys run --resume "
            f"{result.result_dir}` continues)"
            for note in result.notes
            if note.startswith("workload failed: ")
        ]
    return lines


def pi_summary(p: PIResult, network: bool) -> str:
    """``  write_bw: 2.17 GiB/s ± 3.2 %  95% CI [2.10 GiB/s, 2.24 GiB/s] (target ± 5 % met;
    unit_readings)``."""
    from pilot_sys.stats.rounds import refusal  # (lazy: the CLI's bad-input exits stay fast)

    if p.mean is None:
        return f"  {p.name}: no result yet ({p.sample_size} samples)"
    if p.ci_low is None or p.ci_high is None:
        more = f", about {p.required_sample_size} needed" if p.required_sample_size else ""
        # the rounds drift or wander
        why = refusal(p.warnings) if p.interval_basis == "rounds" else None
        more += f"; {why}" if why else ""
        mean = units.quantity(p.mean, p.unit, network)
        return f"  {p.name}: {mean}  no CI yet ({p.sample_size} samples{more}; {p.source_label})"
    goal = f"target {units.target(p.target)}"
    mark = (
        "reported only"
        if not p.gates_stop
        else (f"{goal} met" if p.ci_reached else f"{goal} NOT met")
    )
    mean, low, high = units.ci_parts(p.mean, p.ci_low, p.ci_high, p.unit, network)
    return (
        f"  {p.name}: {mean} {precision(p)}  {int(round(100 * p.confidence))}% CI "
        f"[{low}, {high}] ({mark}; {p.source_label})"
    )


def summary_lines(result: SessionResult) -> list[str]:
    """The summary a person reads on stdout at the end of a session."""
    lines = [status_line(result)]
    for w in result.workloads:
        c = w.rounds
        lines.append(
            f"{w.name}: {c.total} rounds, {c.analysed} analysed"
            f"{f', {c.short} short' if c.short else ''}"
            f"{f', {c.below_alpha} below alpha' if c.below_alpha else ''}"
            f"{f', {c.failed} failed' if c.failed else ''}"
        )
        network = network_of(result, w)
        lines += [pi_summary(p, network) for p in w.pis.values()]
        ph = (
            w.phase_check
        )  # the report also says why a check was not done; the terminal, what it found
        if (
            ph is not None
            and ph.checked_rounds
            and (ph.inconsistent_rounds or len(result.workloads) == 1)
        ):
            lines.append(f"  phase check: {ph.note}")
    b = result.bottleneck
    if b.valid is True:
        lines.append(f"bottleneck check: passed (component under test: {b.cut or 'unknown'})")
    elif b.valid is None:
        lines.append(f"bottleneck check: not done{f' ({b.error})' if b.error else ''}")
    o = result.overhead
    if o.sampling_rate_hz is not None and o.rate_chosen_by == "tuner":
        measured = ""
        if o.measured_overhead is not None and o.measured_overhead_ci is not None:
            low, high = o.measured_overhead_ci
            measured = (
                f", measured overhead {units.percent(o.measured_overhead, 2, signed=True)} "
                f"[{units.percent(low, 2, signed=True)}, {units.percent(high, 2, signed=True)}]"
            )
        budget = f" (budget {units.percent(o.budget, None)})" if o.budget is not None else ""
        lines.append(
            f"monitoring: {o.sampling_rate_hz:.1f} Hz chosen by the tuner{measured}{budget}"
        )
    lines.append(f"report: {Path(result.result_dir) / 'report.md'}")
    return lines


def print_summary(result: SessionResult, as_json: bool = False, quiet: bool = False) -> None:
    """JSON, or the lines above; alarms go to stderr in red whatever was asked."""
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    for i, line in enumerate(alarm_lines(result)):
        invalid = i == 0 and result.status is Status.INVALID
        click.secho(line, fg="red", bold=invalid, err=True)
    for line in quiet_lines(result) if quiet else summary_lines(result):
        click.echo(line)
