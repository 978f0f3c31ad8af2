"""`pilot-sys compare --run NAME='CMD' ...` (interleaved live runs) and `compare DIR_A DIR_B`
(saved results): the logic behind the CLI's options. It returns a session to run or the
comparison made; the CLI runs and prints (``pilot_sys.cli.launch``)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from pilot_sys import units
from pilot_sys.errors import BadInput
from pilot_sys.session.compare_pis import Side, build_table, session_warning, shared_pis
from pilot_sys.session.launch import RunRequest, build_config, command_spec
from pilot_sys.session.pi_table import PITable
from pilot_sys.session.progress import Progress
from pilot_sys.session.result import PhaseComparison, load_result
from pilot_sys.session.setup_diff import SetupDifference, setup_differences, setup_warning

if TYPE_CHECKING:
    from pilot_sys.session.session import Session


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


def open_compare(req: CompareRequest, progress: Progress) -> Session:
    """The interleaved session `compare --run` asked for, ready to ``run()``: it ranks and
    separates the workloads itself (``mode="compare"``, also on --resume)."""
    from pilot_sys.session.session import Session, default_result_dir
    from pilot_sys.workload import macros
    from pilot_sys.workload.runner import CommandWorkload

    if not 0 < req.threshold < 1:
        raise BadInput("--threshold", f"must be between 0 and 1, e.g. 0.01, got {req.threshold:g}")
    runs = parse_runs(req.runs)
    r = req.run
    if r.cut is not None and not r.monitor:  # as `pilot-sys run`: --cut is what the monitor judges
        raise BadInput(
            "--cut",
            "names the component the monitor judges; it needs monitoring (drop --no-monitor)",
        )
    uses = {name: macros.uses_work_amount(argv) for name, argv in runs}
    if len(set(uses.values())) > 1:
        raise BadInput("--run", "either every command uses %WORK_AMOUNT% or none does")
    fixed = not next(iter(uses.values()))
    if fixed and r.work_amount is not None:
        raise BadInput("-w/--work-amount", "no command has %WORK_AMOUNT% to put it in")
    if not fixed and r.work_amount is None:
        raise BadInput(
            "-w/--work-amount",
            "the commands use %WORK_AMOUNT%: give its valid range, e.g. -w 16,1024",
        )
    stated = {macros.work_unit_of(argv) for _, argv in runs}
    unit = r.work_unit or (stated.pop() if len(stated) == 1 else "") or "work"
    specs, workloads = [], []
    for name, argv in runs:
        wl = CommandWorkload(
            argv,
            parser=r.parser,
            env=r.env,
            accepted_returncodes=r.accept_rc,
            timeout=r.timeout,
            name=name,
            work_amount_unit=unit,
        )
        specs.append(command_spec(wl, r, unit))
        workloads.append(wl)
    cfg = build_config(r, r.work_amount or (1.0, 1.0), fixed, unit)
    cfg = cfg.model_copy(update={"compare_p_threshold": req.threshold, "compare_pi": req.pi})
    root = r.output_dir or default_result_dir("compare-" + "-".join(n for n, _ in runs))
    return Session.create(
        root, cfg, specs, workloads, r.command_line, mode="compare", progress=progress
    )


class SavedSide(BaseModel):
    """One saved result in a comparison."""

    label: str  # "A" or "B", as the table names it
    directory: str
    workload: str
    status: str
    stop_reason: str
    rounds_analysed: int
    network_traffic: bool = False  # its byte rates are shown in bit/s (``units.network_traffic``)
    warning: str | None = None  # what the comparison inherits from a session that is not valid


class SavedComparison(BaseModel):
    """Two saved results compared on every PI they share (``compare DIR_A DIR_B --json``)."""

    sides: list[SavedSide]
    pi: str | None  # the PI ranked by, first in the table: --pi, else A's primary PI
    table: PITable
    warnings: list[str] = Field(default_factory=list)
    phase_behaviour: list[PhaseComparison] = Field(default_factory=list)
    # what the two set-ups do not share (pyperf's compare_to checks its metadata the same way)
    setup_differences: list[SetupDifference] = Field(default_factory=list)


def compare_directories(dirs: list[Path], pi: str | None, threshold: float) -> SavedComparison:
    """Saved results, read back from result.json (the first workload of each), compared on every
    PI both report; ``pi`` (when given) must be one of them."""
    from pilot_sys.session.phase_check import compare_saved_runs

    results = [load_result(d) for d in dirs]
    works = [r.primary() for r in results]
    labels = ["A", "B"]
    shared = shared_pis(works[0].pis, works[1].pis)
    if not shared:
        raise BadInput(
            str(dirs[1]),
            f"reports no PI that {dirs[0]} reports "
            f"(A: {', '.join(works[0].pis) or 'none'}; "
            f"B: {', '.join(works[1].pis) or 'none'})",
        )
    if pi is not None and pi not in shared:
        raise BadInput(
            "--pi", f"{pi!r} is not a PI both results report (shared: {', '.join(shared)})"
        )
    sides = [Side(label, w.pis, w.rounds.analysed) for label, w in zip(labels, works, strict=True)]
    confidence = float(results[0].config.get("confidence", 0.95))
    table = build_table(sides[0], sides[1], confidence, threshold, first=pi)
    saved = [
        SavedSide(
            label=label,
            directory=str(d),
            workload=w.name,
            status=str(r.status),
            stop_reason=r.stop_reason,
            rounds_analysed=w.rounds.analysed,
            network_traffic=units.network_traffic(w.command, r.bottleneck.cut),
            warning=session_warning(f"{label} ({d})", r),
        )
        for label, d, r, w in zip(labels, dirs, results, works, strict=True)
    ]
    warnings = [s.warning for s in saved if s.warning]
    diffs = setup_differences(results[0], results[1], (dirs[0], dirs[1]))
    table.setup_differs = [d.what for d in diffs]
    if (line := setup_warning(diffs)) is not None:
        warnings.append(line)
    other = float(results[1].config.get("confidence", confidence))
    if other != confidence:
        warnings.append(
            f"A's intervals are at {units.percent(confidence, None)} confidence, B's at "
            f"{units.percent(other, None)}: the table shows each side's own"
        )
    phases = compare_saved_runs([(str(d), d, w.name) for d, w in zip(dirs, works, strict=True)])
    return SavedComparison(
        sides=saved,
        pi=table.primary,
        table=table,
        warnings=warnings,
        phase_behaviour=phases,
        setup_differences=diffs,
    )
