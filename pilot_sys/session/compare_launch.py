"""`pilot-sys compare --run NAME='CMD' ...` (interleaved live runs) and `compare DIR_A DIR_B`
(saved results): the logic behind the CLI's options."""

from __future__ import annotations

import shlex
from pathlib import Path

import click
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.errors import BadInput
from pilot_sys.session.interleave import compare_saved
from pilot_sys.session.journal import WorkloadSpec
from pilot_sys.session.launch import RunRequest, build_config, print_summary
from pilot_sys.session.progress import human, make_progress
from pilot_sys.session.result import Comparison, SessionResult, load_result


class CompareRequest(BaseModel):
    """The live comparison's options; the session options are those of `pilot-sys run`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    runs: list[str] = Field(default_factory=list)  # NAME=CMD
    pi: str | None = None
    threshold: float = 0.01
    run: RunRequest


def parse_runs(items: list[str]) -> list[tuple[str, list[str]]]:
    """``NAME=CMD`` pairs; names unique, commands split like a shell would."""
    out: list[tuple[str, list[str]]] = []
    for item in items:
        name, sep, cmd = item.partition("=")
        if not sep or not name.strip() or not cmd.strip():
            raise BadInput("--run", f"expected NAME='COMMAND ARGS', got {item!r}")
        try:
            argv = shlex.split(cmd)
        except ValueError as exc:
            raise BadInput("--run", f"{name}: {exc}") from None
        if any(n == name for n, _ in out):
            raise BadInput("--run", f"the name {name!r} is used twice")
        out.append((name.strip(), argv))
    if len(out) < 2:
        raise BadInput("--run", "give at least two: --run A='cmd a' --run B='cmd b'")
    return out


def launch_compare(req: CompareRequest) -> int:
    """Interleave the workloads' rounds until every adjacent pair is separated; print the ranking."""
    from pilot_sys.session.session import Session, default_result_dir
    from pilot_sys.workload import macros
    from pilot_sys.workload.runner import CommandWorkload

    if not 0 < req.threshold < 1:
        raise BadInput("--threshold", f"must be between 0 and 1, e.g. 0.01, got {req.threshold:g}")
    runs = parse_runs(req.runs)
    r = req.run
    if r.cut is not None and not r.monitor:  # as `pilot-sys run`: --cut is what the monitor judges
        raise BadInput("--cut", "names the component the monitor judges; it needs monitoring (drop --no-monitor)")
    uses = {name: macros.uses_work_amount(argv) for name, argv in runs}
    if len(set(uses.values())) > 1:
        raise BadInput("--run", "either every command uses %WORK_AMOUNT% or none does")
    fixed = not next(iter(uses.values()))
    if fixed and r.work_amount is not None:
        raise BadInput("-w/--work-amount", "no command has %WORK_AMOUNT% to put it in")
    if not fixed and r.work_amount is None:
        raise BadInput("-w/--work-amount", "the commands use %WORK_AMOUNT%: give its valid range, e.g. -w 16,1024")
    unit = r.work_unit or "work"
    specs, workloads = [], []
    for name, argv in runs:
        wl = CommandWorkload(argv, parser=r.parser, env=r.env, accepted_returncodes=r.accept_rc,
                             timeout=r.timeout, name=name, work_amount_unit=unit)
        specs.append(WorkloadSpec(name=name, kind="command", argv=argv, parser=wl.parser, env=r.env,
                                  accepted_returncodes=list(r.accept_rc), timeout=r.timeout,
                                  options={"cwd": str(Path.cwd()), "work_amount_unit": unit,
                                           "integer_work_amount": True},
                                  pis=wl.pi_specs(), data_path_args=wl.data_path_args()))
        workloads.append(wl)
    cfg = build_config(r, r.work_amount or (1.0, 1.0), fixed, unit)
    cfg = cfg.model_copy(update={"compare_p_threshold": req.threshold, "compare_pi": req.pi})
    root = r.output_dir or default_result_dir("compare-" + "-".join(n for n, _ in runs))
    progress = make_progress(r.quiet)

    # mode="compare": the session ranks and separates the workloads itself (also on --resume)
    try:
        session = Session.create(root, cfg, specs, workloads, r.command_line, mode="compare", progress=progress,
                                 plots=r.plots)
        if not r.quiet and not r.as_json:
            progress.note(f"result directory: {session.journal.root}")
        result = session.run()  # an unknown --cut is refused here, before any round, leaving no directory
    finally:
        progress.close()
    print_summary(result, as_json=r.as_json, quiet=r.quiet)
    if not r.as_json:
        print_comparison(result.comparison, result)
    return result.exit_code


def print_comparison(cmp_: Comparison | None, result: SessionResult | None = None, labels: dict[str, str] | None = None) -> None:
    """The ranking, best first, with each adjacent difference, its CI and Welch's p."""
    if cmp_ is None:
        click.echo("comparison: not enough data for an interval on every side yet")
        return
    unit = ""
    if result is not None:
        first = next((w.pis.get(cmp_.pi) for w in result.workloads if cmp_.pi in w.pis), None)
        unit = first.unit if first is not None else ""
    click.echo(f"ranking by {cmp_.pi} (best first): {' > '.join(cmp_.ranking)}")
    for pr in cmp_.pairs:
        rel = f" ({100 * pr.difference_rel:+.2f}%)" if pr.difference_rel is not None else ""
        ci = (f", CI of the difference [{human(pr.ci_low, unit)}, {human(pr.ci_high, unit)}]"
              if pr.ci_low is not None and pr.ci_high is not None else "")
        p = f", Welch p = {pr.p_value:.3g}" if pr.p_value is not None else ""
        how = "CIs do not overlap" if not pr.cis_overlap else (f"p < {cmp_.p_threshold:g}" if pr.separated else "NOT separated")
        click.echo(f"  {pr.better} vs {pr.worse}: {human(pr.difference, unit)}{rel}{ci}{p} -> {how}")
    click.echo("all adjacent pairs separated" if cmp_.all_separated else "not every adjacent pair is separated yet")
    for ph in cmp_.phase_behaviour:
        click.echo(f"phase behaviour: {ph.note}")


def compare_directories(dirs: list[Path], pi: str | None, threshold: float, as_json: bool) -> None:
    """Saved results, read back from result.json (the first workload of each)."""
    results = [load_result(d) for d in dirs]
    labels = [str(d) for d in dirs]
    cmp_ = compare_saved(results, labels, pi, threshold)
    if cmp_ is None:
        names = sorted(set.intersection(*(set(r.primary().pis) for r in results)))
        raise BadInput("--pi" if pi else str(dirs[1]),
                       f"no shared PI with a CI to compare{f' named {pi!r}' if pi else ''} (shared: {', '.join(names) or 'none'})")
    from pilot_sys.session.phase_check import compare_saved_runs

    cmp_.phase_behaviour = compare_saved_runs([(label, d, res.primary().name) for label, d, res in zip(labels, dirs, results)])
    if as_json:
        click.echo(cmp_.model_dump_json(indent=2))
        return
    for label, res in zip(labels, results):
        p = res.primary().pis[cmp_.pi]
        click.echo(f"  {label}: {cmp_.pi} {human(p.mean, p.unit)} CI [{human(p.ci_low, p.unit)}, {human(p.ci_high, p.unit)}] "
                   f"({res.status}, {res.primary().rounds.analysed} rounds)")
    print_comparison(cmp_, results[0])
