"""The end of a session on the terminal: the status, the verdict's headline, each PI's mean ±
its CI against the target, why a target was missed and what to do, the excluded rounds and the
bottleneck line (all from ``result.verdict``, the one decision), the monitoring rate and where
the report is."""

from __future__ import annotations

from pathlib import Path

import click

from pilot_sys import units
from pilot_sys.session.result import PIResult, SessionResult, Status, WorkloadResult
from pilot_sys.session.verdict import estimate_text, needs_text, verdict_of


def network_of(result: SessionResult, workload: WorkloadResult) -> bool:
    """Whether this workload's byte rates are shown in bit/s (see ``units.network_traffic``)."""
    return units.network_traffic(workload.command, result.bottleneck.cut)


def time_text(result: SessionResult) -> str:
    """``31.2 s session time, 27.9 s of it in rounds``: the wall time -s limits (every
    invocation, without the gaps between them) and the measured time within it."""
    wall = f"{units.duration(result.elapsed_seconds)} session time"
    if result.measured_seconds is None:
        return wall
    return f"{wall}, {units.duration(result.measured_seconds)} of it in rounds"


def status_line(result: SessionResult) -> str:
    """``status: valid (every CI target met); 31.2 s session time, 27.9 s of it in rounds``."""
    return f"status: {result.status} ({result.stop_reason}); {time_text(result)}"


def quiet_lines(result: SessionResult) -> list[str]:
    """What ``--quiet`` prints: the status, the verdict's headline and where the result is."""
    return [
        status_line(result),
        verdict_of(result).headline,
        f"result directory: {result.result_dir}",
    ]


def alarm_lines(result: SessionResult) -> list[str]:
    """Lines for stderr that a person must see whatever else is asked for (also with --quiet)."""
    lines: list[str] = []
    if result.status is Status.INVALID:
        lines.append(f"{verdict_of(result).headline.replace('INVALID', 'INVALID RESULT', 1)}")
    if result.status is Status.WORKLOAD_FAILED:
        lines += [
            f"pilot-sys: {note} (the rounds before it are kept: `pilot-sys run --resume "
            f"{result.result_dir}` continues)"
            for note in result.notes
            if note.startswith("workload failed: ")
        ]
    return lines


def pi_summary(p: PIResult, network: bool) -> str:
    """``  write_bw: 2.17 GiB/s ± 3.2 %, 95% CI [2.10 GiB/s, 2.24 GiB/s] (target ± 5 % met;
    unit_readings)``: the estimate in the words of ``session.verdict.estimate_text``."""
    if p.mean is None:
        return f"  {p.name}: {estimate_text(p, network)}"
    text = estimate_text(p, network)
    if (p.ci_low is None or p.ci_high is None) and p.drifting is None:
        return f"  {p.name}: {text}: {needs_text(p)} ({p.source_label})"
    goal = f"target {units.target(p.target)}"
    mark = (
        "reported only"
        if not p.gates_stop
        else (f"{goal} met" if p.ci_reached else f"{goal} NOT met")
    )
    return f"  {p.name}: {text} ({mark}; {p.source_label})"


def command_lines(w: WorkloadResult) -> list[str]:
    """``  per round: user 1.2 ms, system 0.8 ms, peak RSS 210 MiB (rusage, 40 rounds)`` and
    ``  process start here: 0.52 ms (in every round's time; alpha 30 ms)``, for a command."""
    out = []
    u = w.usage
    if u is not None:
        rss = (
            f", peak RSS {units.quantity(float(u.max_rss_bytes), 'B')}"
            if u.max_rss_bytes is not None
            else ""
        )
        out.append(
            f"  per round: user {units.duration(u.user_seconds)}, system "
            f"{units.duration(u.system_seconds)}{rss} (the command's rusage, mean of "
            f"{u.rounds} rounds)"
        )
    if w.process_start_seconds is not None:
        alpha = (
            f"; WPS alpha {units.duration(w.wps.alpha)}"
            if w.wps is not None and w.wps.alpha is not None
            else ""
        )
        out.append(
            f"  process start here: {units.duration(w.process_start_seconds)} "
            f"(in every round's time{alpha})"
        )
    return out


def rounds_text(w: WorkloadResult) -> str:
    """``w: 12 rounds, 10 analysed, 2 short, 1 excluded``."""
    c = w.rounds
    return (
        f"{w.name}: {c.total} rounds, {c.analysed} analysed"
        f"{f', {c.short} short' if c.short else ''}"
        f"{f', {c.excluded} excluded' if c.excluded else ''}"
        f"{f', {c.below_alpha} below alpha' if c.below_alpha else ''}"
        f"{f', {c.failed} failed' if c.failed else ''}"
    )


def summary_lines(result: SessionResult) -> list[str]:
    """The summary a person reads on stdout at the end of a session: the status, the verdict's
    headline, each PI, then why a target was missed and what to do, the excluded rounds, the
    bottleneck line (every status, interrupted and failed included)."""
    verdict = verdict_of(result)
    lines = [status_line(result), verdict.headline]
    for w in result.workloads:
        lines.append(rounds_text(w))
        network = network_of(result, w)
        for p in w.pis.values():
            lines.append(pi_summary(p, network))
            if p.description and p.mean is not None:
                lines.append(f"    ({p.name}: {p.description})")
        lines += command_lines(w)
        # the report also says why a check was not done; the terminal, what it found
        ph = w.phase_check
        if (
            ph is not None
            and ph.checked_rounds
            and (ph.inconsistent_rounds or len(result.workloads) == 1)
        ):
            lines.append(f"  phase check: {ph.note}")
    lines += verdict.lines()[1:]
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
