"""From the options of `pilot-sys run` to a running session and a printed summary.

Kept out of the CLI module so that the option parsing stays thin and this logic can be called
from Python (and tested) without a subprocess.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pilot_sys.errors import BadInput
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import Journal, WorkloadSpec
from pilot_sys.session.progress import human, make_progress
from pilot_sys.session.result import SessionResult, Status
from pilot_sys.session.tuning import refuse_conflicts, tune_session_rate
from pilot_sys.workload.base import Workload

# SessionConfig field -> the option that sets it, for one-line error messages
OPTION_OF = {
    "ci_perc": "--ci-perc", "confidence": "--confidence", "session_limit": "-s/--session-limit",
    "first_result_seconds": "--first-result", "min_round_seconds": "--min-round-seconds",
    "max_round_seconds": "--max-round-seconds", "min_rounds": "--min-rounds", "max_rounds": "--max-rounds",
    "work_min": "-w/--work-amount", "work_max": "-w/--work-amount", "sample_rate_hz": "--sample-rate",
}


class RunRequest(BaseModel):
    """Everything `pilot-sys run` was asked, validated at the boundary."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    command: list[str] = Field(default_factory=list)
    work_amount: tuple[float, float] | None = None
    output_dir: Path | None = None
    session_limit: float | None = None
    ci_perc: float | None = None
    confidence: float | None = None
    preset: str = "normal"
    min_rounds: int | None = None
    max_rounds: int | None = None
    first_result: float | None = None
    min_round_seconds: float | None = None
    max_round_seconds: float | None = None
    parser: str | None = None
    work_unit: str | None = None
    timeout: float | None = None
    accept_rc: list[int] = Field(default_factory=lambda: [0])
    env: dict[str, str] = Field(default_factory=dict)
    directory: Path | None = None
    name: str | None = None
    cut: str | None = None
    monitor: bool = True
    sample_rate: float | None = None
    overhead_budget: float | None = None  # --overhead-budget: tune the rate first (fraction of the PI)
    resume: Path | None = None
    plots: bool = True
    quiet: bool = False
    as_json: bool = False
    command_line: list[str] = Field(default_factory=list)
    # filled by the sampling-rate tuner (--overhead-budget) before the session starts:
    # sampling_rate_hz, rate_chosen_by ("tuner"), measured_overhead (fraction), measured_overhead_ci
    # ([low, high]), method; the rate is used for the session and the rest goes into result.json
    overhead: dict[str, Any] | None = None


def build_config(req: RunRequest, work: tuple[float, float], fixed: bool, unit: str) -> SessionConfig:
    """The preset with the options given on top, validated; errors name the option."""
    limit = req.session_limit
    overrides: dict[str, Any] = dict(
        ci_perc=req.ci_perc, confidence=req.confidence, first_result_seconds=req.first_result,
        min_round_seconds=req.min_round_seconds, max_round_seconds=req.max_round_seconds,
        min_rounds=req.min_rounds, max_rounds=req.max_rounds, cut=req.cut, monitor=req.monitor,
        sample_rate_hz=req.sample_rate, work_unit=unit,
        work_min=work[0], work_max=work[0] if fixed else work[1],
    )
    if req.sample_rate is not None:
        overrides["sample_rate_source"] = "--sample-rate"
    try:
        cfg = SessionConfig.from_preset(req.preset, **overrides)
        if limit is not None:
            if limit < 0:
                raise BadInput("-s/--session-limit", f"must be >= 0 seconds (0: no limit), got {limit:g}")
            cfg = cfg.model_copy(update={"session_limit": None if limit == 0 else limit})
        return SessionConfig.model_validate(cfg.model_dump())
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        raise BadInput(OPTION_OF.get(field, field or "options"), str(err["msg"]).removeprefix("Value error, ")) from None


def _command_workload(req: RunRequest) -> tuple[WorkloadSpec, Workload, tuple[float, float], bool, str]:
    from pilot_sys.workload import macros
    from pilot_sys.workload.runner import CommandWorkload

    unit = req.work_unit or "work"
    fixed = not macros.uses_work_amount(req.command)
    if fixed and req.work_amount is not None:
        raise BadInput("-w/--work-amount", "the command has no %WORK_AMOUNT% to put it in; add the macro or drop -w")
    if not fixed and req.work_amount is None:
        raise BadInput("-w/--work-amount", "the command uses %WORK_AMOUNT%: give its valid range, e.g. -w 16,1024")
    work = req.work_amount or (1.0, 1.0)
    wl = CommandWorkload(req.command, parser=req.parser, env=req.env, accepted_returncodes=req.accept_rc,
                         timeout=req.timeout, name=req.name, work_amount_unit=unit)
    spec = WorkloadSpec(
        name=wl.name, kind="command", argv=list(req.command), parser=wl.parser, env=req.env,
        accepted_returncodes=list(req.accept_rc), timeout=req.timeout,
        options={"cwd": str(Path.cwd()), "work_amount_unit": unit, "integer_work_amount": True},
        pis=wl.pi_specs(), data_path_args=wl.data_path_args(),
    )
    return spec, wl, work, fixed, unit


def _builtin_workload(req: RunRequest) -> tuple[WorkloadSpec, Workload, tuple[float, float], bool, str]:
    from pilot_sys.workload.builtin import SequentialIOWorkload

    for opt, given in (("--parser", req.parser), ("--timeout", req.timeout), ("--env", req.env or None)):
        if given is not None:
            raise BadInput(opt, "applies to a COMMAND; the built-in workload takes --dir and -w only")
    directory = req.directory or Path(".")
    wl = SequentialIOWorkload(directory)
    if req.work_amount is not None:  # a range too big for the free space fails now, not at round n
        wl.validate_work_amount_range(*req.work_amount)
    work = req.work_amount or wl.default_work_amount_range()
    spec = WorkloadSpec(
        name=req.name or "builtin-seqio", kind="builtin", directory=str(Path(directory).resolve()),
        options={"block_size": wl.block_size, "read_back": wl.read_back, "method": wl.requested_method},
        pis=wl.pi_specs(), data_path_args=wl.data_path_args(),
    )
    return spec, wl, work, False, "MiB"


def _plain_note(req: RunRequest) -> Callable[[str], None]:
    """Lines on stderr before the session's progress display starts (nothing with --quiet)."""

    def note(text: str) -> None:
        if not req.quiet:
            click.echo(f"pilot-sys: {text}", err=True)

    return note


def launch_run(req: RunRequest) -> int:
    """Run (or resume) a session, print its summary; returns the exit code."""
    from pilot_sys.session.session import Session, default_result_dir

    if req.cut is not None and not req.monitor:
        raise BadInput("--cut", "names the component the monitor judges; it needs monitoring (drop --no-monitor)")
    refuse_conflicts(req.overhead_budget, req.sample_rate, req.monitor, req.resume is not None)

    if req.resume is not None:
        if req.command or req.work_amount is not None:
            raise BadInput("--resume", "continues the session as it was configured; give no COMMAND or -w with it")
        progress = make_progress(req.quiet)
        try:
            session = Session.resume(req.resume, req.command_line, progress=progress, plots=req.plots)
        except BaseException:
            progress.close()
            raise
        m = session.manifest
        if req.session_limit is not None:
            m.config = m.config.model_copy(update={"session_limit": None if req.session_limit == 0 else req.session_limit})
        if req.max_rounds is not None:
            m.config = m.config.model_copy(update={"max_rounds": req.max_rounds})
    else:
        if req.directory is not None and req.command:
            raise BadInput("--dir", "is for the built-in workload; a COMMAND names its own files")
        spec, wl, work, fixed, unit = _command_workload(req) if req.command else _builtin_workload(req)
        cfg = build_config(req, work, fixed, unit)
        root = req.output_dir or default_result_dir(spec.name.split(" ")[0])
        if req.overhead_budget is not None:
            # before the result directory exists: an unreachable budget leaves nothing behind
            Journal.refuse_existing(root)
            req.overhead = tune_session_rate(wl, cfg, req.overhead_budget, note=_plain_note(req))
        if req.overhead and req.overhead.get("sampling_rate_hz"):
            cfg = cfg.model_copy(update={"sample_rate_hz": float(req.overhead["sampling_rate_hz"]),
                                         "sample_rate_source": str(req.overhead.get("rate_chosen_by", "tuner"))})
        progress = make_progress(req.quiet)
        try:
            session = Session.create(root, cfg, [spec], [wl], req.command_line, progress=progress, plots=req.plots)
        except BaseException:
            progress.close()
            raise
        if req.overhead:
            session.manifest.overhead = dict(req.overhead)
            session.journal.save_manifest()
    if not req.quiet and not req.as_json:
        progress.note(f"result directory: {session.journal.root}")
    try:
        result = session.run()
    finally:
        progress.close()
    print_summary(result, as_json=req.as_json, quiet=req.quiet)
    if result.comparison is not None and not req.as_json and not req.quiet:  # a resumed comparison
        from pilot_sys.session.compare_launch import print_comparison

        print_comparison(result.comparison, result)
    return result.exit_code


def print_summary(result: SessionResult, as_json: bool = False, quiet: bool = False) -> None:
    """The end of a session on stdout: JSON, or a few lines a person reads."""
    from pilot_sys.stats.rounds import refusal  # (lazy: the CLI's bad-input exits stay fast)

    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    if result.status is Status.INVALID:
        click.secho(
            f"INVALID RESULT: hidden bottleneck at {', '.join(result.bottleneck.hidden_bottlenecks) or '?'} "
            f"(component under test: {result.bottleneck.cut or 'unknown'})",
            fg="red", bold=True, err=True,
        )
    if result.status is Status.WORKLOAD_FAILED:
        for note in result.notes:
            if note.startswith("workload failed: "):
                click.secho(f"pilot-sys: {note} (the rounds before it are kept: `pilot-sys run --resume "
                            f"{result.result_dir}` continues)", fg="red", err=True)
    if quiet:
        return
    click.echo(f"status: {result.status} ({result.stop_reason}), {result.elapsed_seconds:.1f} s")
    for w in result.workloads:
        counts = w.rounds
        click.echo(f"{w.name}: {counts.total} rounds, {counts.analysed} analysed"
                   f"{f', {counts.short} short' if counts.short else ''}"
                   f"{f', {counts.below_alpha} below alpha' if counts.below_alpha else ''}"
                   f"{f', {counts.failed} failed' if counts.failed else ''}")
        for p in w.pis.values():
            if p.mean is None:
                click.echo(f"  {p.name}: no result yet ({p.sample_size} samples)")
                continue
            if p.ci_low is None or p.ci_high is None:
                more = f", about {p.required_sample_size} needed" if p.required_sample_size else ""
                why = refusal(p.warnings) if p.interval_basis == "rounds" else None  # the rounds drift or wander
                more += f"; {why}" if why else ""
                click.echo(f"  {p.name}: {human(p.mean, p.unit)}  no CI yet ({p.sample_size} samples{more}; {p.source_label})")
                continue
            width = f"{100 * p.ci_width_rel:.1f}%" if p.ci_width_rel is not None else "?"
            mark = "target met" if p.ci_reached else f"target {100 * p.target:g}% NOT met"
            if not p.gates_stop:
                mark = "reported only"
            click.echo(f"  {p.name}: {human(p.mean, p.unit)}  {int(round(100 * p.confidence))}% CI "
                       f"[{human(p.ci_low, p.unit)}, {human(p.ci_high, p.unit)}] width {width} ({mark}; {p.source_label})")
        ph = w.phase_check  # the report also says why a check was not done; the terminal, what it found
        if ph is not None and ph.checked_rounds and (ph.inconsistent_rounds or len(result.workloads) == 1):
            click.echo(f"  phase check: {ph.note}")
    b = result.bottleneck
    if b.valid is True:
        click.echo(f"bottleneck check: passed (component under test: {b.cut or 'unknown'})")
    elif b.valid is None:
        click.echo(f"bottleneck check: not done{f' ({b.error})' if b.error else ''}")
    o = result.overhead
    if o.sampling_rate_hz is not None and o.rate_chosen_by == "tuner":
        measured = ""
        if o.measured_overhead is not None and o.measured_overhead_ci is not None:
            measured = (f", measured overhead {o.measured_overhead:+.2%} [{o.measured_overhead_ci[0]:+.2%}, "
                        f"{o.measured_overhead_ci[1]:+.2%}]")
        budget = f" (budget {100 * o.budget:.3g}%)" if o.budget is not None else ""
        click.echo(f"monitoring: {o.sampling_rate_hz:.1f} Hz chosen by the tuner{measured}{budget}")
    click.echo(f"report: {Path(result.result_dir) / 'report.md'}")
    sys.stdout.flush()
