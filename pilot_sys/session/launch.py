"""From the options of `pilot-sys run` to a session ready to run.

Kept out of the CLI module so that the option parsing stays thin and this logic can be called
from Python (and tested) without a subprocess; the CLI runs the session it returns and prints
the summary (``pilot_sys.cli.launch``).
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pilot_sys.errors import BadInput
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import MANIFEST, Journal, WorkloadSpec
from pilot_sys.session.progress import Note, Progress
from pilot_sys.session.tuning import refuse_conflicts, tune_session_rate
from pilot_sys.topology.prometheus_fleet import PrometheusFleet
from pilot_sys.workload.base import Workload

if TYPE_CHECKING:
    from pilot_sys.session.session import Session
    from pilot_sys.workload.runner import CommandWorkload

# SessionConfig field -> the option that sets it, for one-line error messages
OPTION_OF = {
    "ci_perc": "--ci-perc",
    "confidence": "--confidence",
    "session_limit": "-s/--session-limit",
    "first_result_seconds": "--first-result",
    "min_round_seconds": "--min-round-seconds",
    "max_round_seconds": "--max-round-seconds",
    "min_rounds": "--min-rounds",
    "max_rounds": "--max-rounds",
    "work_min": "-w/--work-amount",
    "work_max": "-w/--work-amount",
    "sample_rate_hz": "--sample-rate",
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
    preset: str | None = None  # None: "normal" for a new session, the session's own on --resume
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
    cgroup: str | None = None  # --cgroup: start every round inside this cgroup
    hosts: list[str] = Field(default_factory=list)  # --host NAME=URL, validated by the CLI
    # --prometheus URL: the fleets as resolved at start (their hosts are in ``hosts`` too)
    prometheus: list[PrometheusFleet] = Field(default_factory=list)
    monitor: bool = True
    sample_rate: float | None = None
    overhead_budget: float | None = (
        None  # --overhead-budget: tune the rate first (fraction of the PI)
    )
    resume: Path | None = None
    repair: bool = False  # --repair (with --resume): set aside round folders the journal lacks
    plots: bool = True
    quiet: bool = False
    verbose: bool = False  # -v: the full progress line per round, also on a terminal
    as_json: bool = False
    command_line: list[str] = Field(default_factory=list)
    # options given explicitly on the command line (click's parameter source), for those whose
    # default cannot be told from a value given (--accept-rc 0, --no-monitor ...)
    given: list[str] = Field(default_factory=list)
    # filled by the sampling-rate tuner (--overhead-budget) before the session starts:
    # sampling_rate_hz, rate_chosen_by ("tuner"), measured_overhead (fraction), measured_overhead_ci
    # ([low, high]), method; the rate is used for the session and the rest goes into result.json
    overhead: dict[str, Any] | None = None


def check_sample_rate(rate: float) -> None:
    """``--sample-rate`` within what the counters resolve: per-CPU times tick at USER_HZ, so
    faster sampling reads the same counts and turns one tick into a burst of 100 % (a spurious
    ``cpu:host`` bottleneck) while adding cost."""
    from pilot_sys.monitor.tuner import counter_resolution_hz

    top = counter_resolution_hz()
    if not (math.isfinite(rate) and 0 < rate <= top):
        raise BadInput(
            "--sample-rate",
            f"{rate:g} Hz is outside the allowed range: above 0 and "
            f"at most {top:g} Hz (USER_HZ, the tick of the CPU time "
            "counters)",
        )


def build_config(
    req: RunRequest, work: tuple[float, float], fixed: bool, unit: str
) -> SessionConfig:
    """The preset with the options given on top, validated; errors name the option."""
    if req.sample_rate is not None:
        check_sample_rate(req.sample_rate)
    limit = req.session_limit
    overrides: dict[str, Any] = dict(
        ci_perc=req.ci_perc,
        confidence=req.confidence,
        first_result_seconds=req.first_result,
        min_round_seconds=req.min_round_seconds,
        max_round_seconds=req.max_round_seconds,
        min_rounds=req.min_rounds,
        max_rounds=req.max_rounds,
        cut=req.cut,
        monitor=req.monitor,
        hosts=req.hosts,
        prometheus=req.prometheus,
        sample_rate_hz=req.sample_rate,
        work_unit=unit,
        work_min=work[0],
        work_max=work[0] if fixed else work[1],
    )
    if req.sample_rate is not None:
        overrides["sample_rate_source"] = "--sample-rate"
    try:
        cfg = SessionConfig.from_preset(req.preset or "normal", **overrides)
    except ValidationError as exc:
        raise _option_error(exc) from None
    if limit is not None:
        cfg = cfg.model_copy(update={"session_limit": session_limit(limit)})
    return validated(cfg.model_dump())


def session_limit(seconds: float) -> float | None:
    """``-s``: seconds, 0 for no limit (None)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise BadInput("-s/--session-limit", f"must be >= 0 seconds (0: no limit), got {seconds:g}")
    return None if seconds == 0 else seconds


def _option_error(exc: ValidationError) -> BadInput:
    """The first validation error, named by the option that sets the field."""
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
    return BadInput(
        OPTION_OF.get(field, field or "options"), str(err["msg"]).removeprefix("Value error, ")
    )


def validated(values: dict[str, Any]) -> SessionConfig:
    try:
        return SessionConfig.model_validate(values)
    except ValidationError as exc:
        raise _option_error(exc) from None


def check_program(argv: list[str], env: dict[str, str]) -> None:
    """The program exists and is executable, checked before a result directory is made: a typo
    would otherwise leave a session of one failed round where -o is to be used again."""
    program = argv[0] if argv else ""
    if not program or "%" in program:  # a macro in the program name: known only per round
        return
    if "/" in program:
        found = os.path.isfile(program) and os.access(program, os.X_OK)
    else:
        found = shutil.which(program, path=env.get("PATH", os.environ.get("PATH"))) is not None
    if not found:
        raise BadInput(
            program,
            "command not found or not executable (check the spelling and PATH); nothing was run",
        )


def _command_workload(
    req: RunRequest,
) -> tuple[WorkloadSpec, Workload, tuple[float, float], bool, str]:
    from pilot_sys.workload import macros
    from pilot_sys.workload.runner import CommandWorkload

    check_program(req.command, req.env)

    # a unit is the one given, or the one the command states after the macro, or none ("work",
    # shown as a bare number: a work amount in the workload's own terms)
    unit = req.work_unit or macros.work_unit_of(req.command) or "work"
    fixed = not macros.uses_work_amount(req.command)
    if fixed and req.work_amount is not None:
        raise BadInput(
            "-w/--work-amount",
            "the command has no %WORK_AMOUNT% to put it in; add the macro or drop -w",
        )
    if not fixed and req.work_amount is None:
        raise BadInput(
            "-w/--work-amount",
            "the command uses %WORK_AMOUNT%: give its valid range, e.g. -w 16,1024",
        )
    work = req.work_amount or (1.0, 1.0)
    from pilot_sys.workload.cgroup_launch import cgroup_target

    target = cgroup_target(req.cgroup) if req.cgroup is not None else None  # bad: BadInput now
    wl = CommandWorkload(
        req.command,
        parser=req.parser,
        env=req.env,
        accepted_returncodes=req.accept_rc,
        timeout=req.timeout,
        name=req.name,
        work_amount_unit=unit,
        cgroup=target,
    )
    spec = command_spec(wl, req, unit, cgroup=req.cgroup)
    return spec, wl, work, fixed, unit


def command_spec(
    wl: CommandWorkload, req: RunRequest, unit: str, cgroup: str | None = None
) -> WorkloadSpec:
    """What session.json records of a command workload: enough for ``--resume`` to rebuild it
    (``run`` and ``compare --run`` alike)."""
    return WorkloadSpec(
        name=wl.name,
        kind="command",
        argv=list(wl.argv),
        parser=wl.parser,
        env=req.env,
        accepted_returncodes=list(req.accept_rc),
        timeout=req.timeout,
        options={
            "cwd": str(Path.cwd()),
            "work_amount_unit": unit,
            "integer_work_amount": True,
            **({"cgroup": cgroup} if cgroup is not None else {}),
        },
        pis=wl.pi_specs(),
        data_path_args=wl.data_path_args(),
    )


def _builtin_workload(
    req: RunRequest,
) -> tuple[WorkloadSpec, Workload, tuple[float, float], bool, str]:
    from pilot_sys.workload.builtin import SequentialIOWorkload

    for opt, given in (
        ("--parser", req.parser),
        ("--timeout", req.timeout),
        ("--env", req.env or None),
        ("--cgroup", req.cgroup),
    ):
        if given is not None:
            raise BadInput(
                opt, "applies to a COMMAND; the built-in workload takes --dir and -w only"
            )
    directory = req.directory or Path(".")
    wl = SequentialIOWorkload(directory)
    if req.work_amount is not None:  # a range too big for the free space fails now, not at round n
        wl.validate_work_amount_range(*req.work_amount)
    work = req.work_amount or wl.default_work_amount_range()
    spec = WorkloadSpec(
        name=req.name or "builtin-seqio",
        kind="builtin",
        directory=str(Path(directory).resolve()),
        options={
            "block_size": wl.block_size,
            "read_back": wl.read_back,
            "method": wl.requested_method,
        },
        pis=wl.pi_specs(),
        data_path_args=wl.data_path_args(),
    )
    return spec, wl, work, False, "MiB"


# on --resume: options that configure what was measured (refused: the journal's rounds were made
# with the session's own) and options that set targets and limits (applied from now on)
FIXED_ON_RESUME = {
    "work_amount": "-w/--work-amount",
    "parser": "--parser",
    "work_unit": "--work-unit",
    "env": "--env",
    "directory": "--dir",
    "name": "--name",
    "cut": "--cut",
    "sample_rate": "--sample-rate",
    "hosts": "--host",
    "prometheus": "--prometheus",
    "cgroup": "--cgroup",
}
TARGETS_ON_RESUME = {
    "ci_perc": "ci_perc",
    "confidence": "confidence",
    "first_result": "first_result_seconds",
    "min_round_seconds": "min_round_seconds",
    "max_round_seconds": "max_round_seconds",
    "min_rounds": "min_rounds",
    "max_rounds": "max_rounds",
}
PRESET_FIELDS = (
    "ci_perc",
    "confidence",
    "session_limit",
    "first_result_seconds",
    "min_round_seconds",
    "max_round_seconds",
    "min_rounds",
)


def resumed_config(
    req: RunRequest, old: SessionConfig
) -> tuple[SessionConfig, dict[str, list[Any]]]:
    """The session's configuration with the targets and limits given on --resume applied:
    ``--preset`` sets its values, the options given beside it override them. Returns the new
    configuration and what changed (field -> [old, new], recorded in the invocation)."""
    update: dict[str, Any] = {}
    if req.preset is not None:
        preset = SessionConfig.from_preset(req.preset)
        update.update({"preset": preset.preset, **{f: getattr(preset, f) for f in PRESET_FIELDS}})
    for option, field in TARGETS_ON_RESUME.items():
        value = getattr(req, option)
        if value is not None:
            update[field] = value
    if req.session_limit is not None:
        update["session_limit"] = session_limit(req.session_limit)
    cfg = validated({**old.model_dump(), **update})
    before = old.model_dump(mode="json")
    after = cfg.model_dump(mode="json")
    changes = {k: [before[k], after[k]] for k in after if before.get(k) != after[k]}
    return cfg, changes


def _resume(req: RunRequest, progress: Progress) -> Session:
    """``--resume DIR``: the session as it was measured, with new targets and limits if given;
    an option that cannot apply to rounds already measured is refused with one line."""
    from pilot_sys.session.session import Session, build_workload

    assert req.resume is not None
    if not (Path(req.resume) / MANIFEST).is_file():
        raise BadInput(str(req.resume), "not a pilot-sys result directory (no session.json)")
    if req.command:
        raise BadInput("--resume", "continues the session's own workload; give no COMMAND with it")
    if req.output_dir is not None and Path(req.output_dir).resolve() != Path(req.resume).resolve():
        raise BadInput(
            "-o/--output-dir",
            f"--resume continues the session in {req.resume} and "
            "writes there; drop -o (a resumed session cannot move)",
        )
    fixed = {
        opt for field, opt in FIXED_ON_RESUME.items() if getattr(req, field) not in (None, {}, [])
    }
    fixed |= {opt for opt in ("--accept-rc", "--no-monitor") if opt in req.given}
    if fixed:
        first = sorted(fixed)[0]
        raise BadInput(
            first,
            "configures what the session measures, and its rounds were measured "
            "with the session's own; --resume takes only targets and limits "
            "(--ci-perc, --confidence, --preset, -s, --min-rounds, --max-rounds, "
            "--timeout ...): start a new session (-o) to change it",
        )
    if req.timeout is not None and not (math.isfinite(req.timeout) and req.timeout > 0):
        raise BadInput("--timeout", f"must be a positive number of seconds, got {req.timeout:g}")
    session = Session.resume(req.resume, req.command_line, set_aside=req.repair, progress=progress)
    try:
        m = session.manifest
        m.config, changes = resumed_config(req, m.config)
        if req.timeout is not None:
            for spec in m.workloads:
                if spec.timeout != req.timeout:
                    changes[f"{spec.name}.timeout"] = [spec.timeout, req.timeout]
                    spec.timeout = req.timeout
            session.workloads = [build_workload(spec) for spec in m.workloads]
    except BaseException:
        session.journal.unlock()
        raise
    session.config_changes = changes
    return session


def open_run(req: RunRequest, progress: Progress) -> Session:
    """The session `pilot-sys run` asked for, created (after tuning the sampling rate when
    ``--overhead-budget`` asks) or resumed, ready to ``run()``; its events go to ``progress``."""
    from pilot_sys.session.session import Session, default_result_dir

    if req.cut is not None and not req.monitor:
        raise BadInput(
            "--cut",
            "names the component the monitor judges; it needs monitoring (drop --no-monitor)",
        )
    if req.hosts and not req.monitor:
        raise BadInput("--host", "names a host to monitor; it needs monitoring (drop --no-monitor)")
    refuse_conflicts(req.overhead_budget, req.sample_rate, req.monitor, req.resume is not None)

    if req.resume is not None:
        return _resume(req, progress)
    if req.repair:
        raise BadInput(
            "--repair",
            "repairs the result directory of a session being continued; use it with --resume DIR",
        )
    if req.directory is not None and req.command:
        raise BadInput("--dir", "is for the built-in workload; a COMMAND names its own files")
    spec, wl, work, fixed, unit = _command_workload(req) if req.command else _builtin_workload(req)
    cfg = build_config(req, work, fixed, unit)
    root = req.output_dir or default_result_dir(spec.name.split(" ")[0])
    if req.overhead_budget is not None:
        # before the result directory exists: an unreachable budget leaves nothing behind
        Journal.refuse_existing(root)
        req.overhead = tune_session_rate(
            wl, cfg, req.overhead_budget, note=lambda text: progress.emit(Note(text))
        )
    if req.overhead and req.overhead.get("sampling_rate_hz"):
        chosen_by = str(req.overhead.get("rate_chosen_by", "tuner"))
        cfg = cfg.model_copy(
            update={
                "sample_rate_hz": float(req.overhead["sampling_rate_hz"]),
                "sample_rate_source": chosen_by,
            }
        )
    session = Session.create(root, cfg, [spec], [wl], req.command_line, progress=progress)
    if req.overhead:
        session.manifest.overhead = dict(req.overhead)
        session.journal.save_manifest()
    return session
