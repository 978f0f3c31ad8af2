"""``pilot-sys tune``: the highest sampling rate whose measured overhead stays within a budget.

Argument parsing only; the method is in ``pilot_sys.monitor.tuner`` and
``pilot_sys.monitor.overhead``.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pilot_sys import units
from pilot_sys.cli.common import FINITE_FLOAT, save_figure
from pilot_sys.cli.fleet_options import declared_hosts, prometheus_option
from pilot_sys.errors import BadInput, ExitCode

if TYPE_CHECKING:  # the method's modules load numpy and scipy: only when the command runs
    from pilot_sys.monitor.tuner import TuneIteration, TuneResult
    from pilot_sys.workload.base import Workload

_DURATION = re.compile(
    r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|sec|m|min)?\s*$"
)
_UNIT_SECONDS = {
    None: 1.0,
    "s": 1.0,
    "sec": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "m": 60.0,
    "min": 60.0,
}


def parse_budget(text: str, option: str = "--budget") -> float:
    """``"1%"`` or ``"0.01"`` -> 0.01. A bare number of 1 or more is refused as ambiguous."""
    raw = text.strip()
    is_percent = raw.endswith("%")
    try:
        value = float(raw[:-1] if is_percent else raw)
    except ValueError:
        raise BadInput(
            option,
            f"{text!r} is not a budget; write a percentage such as 1% or a fraction such as 0.01",
        ) from None
    if is_percent:
        value /= 100.0
    elif value >= 1.0:
        raise BadInput(
            option,
            f"{text} would be {units.percent(value, None)} of the PI; write {text}% for "
            f"{text} percent",
        )
    if not (0.0 < value < 1.0) or not math.isfinite(value):
        raise BadInput(option, f"{text} must be more than 0% and less than 100% of the PI")
    return value


def parse_duration(text: str, option: str) -> float:
    """``"100ms"``, ``"0.5s"``, ``"2"`` (seconds) -> seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise BadInput(option, f"{text!r} is not a duration; write e.g. 100ms, 0.5s or 2s")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise BadInput(option, f"{text} must be longer than zero")
    return seconds


def _pct(fraction: float) -> str:
    return units.percent(fraction, 2, signed=True)


def _print_iteration_header() -> None:
    click.echo(
        f"{'#':>2}  {'step':<9} {'rate Hz':>8}  {'model':>9}  {'measured overhead [CI]':<31} "
        f"{'p':>7}  bracket Hz"
    )


def _print_iteration(it: TuneIteration) -> None:
    model = _pct(it.predicted) if it.predicted is not None else "-"
    measured = f"{_pct(it.overhead)} [{_pct(it.ci_low)}, {_pct(it.ci_high)}]"
    bracket = f"{it.bracket_low_hz:.1f}-{it.bracket_high_hz:.1f}"
    click.echo(
        f"{it.index:>2}  {it.step.value:<9} {it.rate_hz:>8.1f}  {model:>9}  {measured:<31} "
        f"{it.p_value:>7.2g}  {bracket}"
    )


def _plot(result: TuneResult, path: Path) -> None:
    """Measured overhead against rate, with CIs, the final model, the budget and the choice."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from pilot_sys.monitor.tuner import fit_overhead_model, percent

    rates = np.array([m.rate_hz for m in result.measurements])
    est = [m.estimate for m in result.measurements]
    mid = np.array([e.overhead for e in est]) * 100
    low = mid - np.array([e.ci_low for e in est]) * 100
    high = np.array([e.ci_high for e in est]) * 100 - mid
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.errorbar(rates, mid, yerr=[low, high], fmt="o", capsize=4, label="measured overhead (CI)")
    for i, (r, m) in enumerate(zip(rates, mid, strict=True), start=1):
        ax.annotate(str(i), (r, m), textcoords="offset points", xytext=(6, 4), fontsize=8)
    if len(rates):
        model = fit_overhead_model(
            rates, mid / 100, np.array([e.se for e in est]), around=result.rate_hz
        )
        xs = np.linspace(0, result.bounds.max_hz, 100)
        ax.plot(
            xs, (model.intercept + model.slope * xs) * 100, "--", color="grey", label="fitted model"
        )
    ax.axhline(result.budget * 100, color="red", label=f"budget {percent(result.budget)}")
    ax.axvline(
        result.rate_hz, color="green", label=f"{result.status.value}: {result.rate_hz:.1f} Hz"
    )
    ax.axvspan(0, result.bounds.min_hz, color="0.9", label="below slowest useful rate")
    ax.set_xlim(0, result.bounds.max_hz * 1.05)
    ax.set_xlabel("sampling rate (Hz)")
    ax.set_ylabel("overhead (% of the PI)")
    ax.set_title(f"pilot-sys tune: {result.status.value}, {len(rates)} measurement(s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def budget_line(result: TuneResult) -> str:
    """Whether the budget is met, in the interval's terms, and the exit code that says so."""
    from pilot_sys.errors import ExitCode
    from pilot_sys.monitor.tuner import percent

    budget, est, code = percent(result.budget), result.overhead, result.exit_code
    if est is None:
        return f"{budget}: not shown (no measurement at the chosen rate; exit {code})"
    interval = f"[{_pct(est.ci_low)}, {_pct(est.ci_high)}]"
    if code == ExitCode.OK:
        return f"{budget}: met (the interval {interval} lies below it)"
    if code == ExitCode.LIMIT_REACHED:
        state = "met at this rate" if result.met else "not shown at this rate"
        return f"{budget}: {state}, but the search did not converge (exit {code})"
    if code == ExitCode.OVER_BUDGET:
        return (
            f"{budget}: over budget (the interval {interval} lies above it even at the "
            f"slowest useful rate; exit {code})"
        )
    return f"{budget}: undecided (the interval {interval} straddles it; exit {code})"


def _print_summary(result: TuneResult) -> None:
    click.echo("")
    click.echo(f"rate:      {result.rate_hz:.1f} Hz ({result.status.value})")
    if result.overhead is not None:
        click.echo(f"overhead:  {result.overhead.describe()} on {result.overhead.pi}")
    click.echo(f"budget:    {budget_line(result)}")
    click.echo(
        f"bounds:    {result.bounds.min_hz:g} Hz ({result.bounds.min_reason}) .. "
        f"{result.bounds.max_hz:g} Hz ({result.bounds.max_reason})"
    )
    if result.monitor_cost is not None:
        click.echo(
            f"monitor:   {result.monitor_cost.describe()} at {result.monitor_cost.rate_hz:.1f} Hz "
            "(monitored rounds)"
        )
    if result.calibration is not None:
        click.echo(
            f"           {result.calibration.describe()} at {result.calibration.rate_hz:g} Hz "
            "(sampler alone; first model)"
        )
    click.echo(
        f"time:      {units.duration(result.elapsed_s)}, {len(result.iterations)} measurement(s)"
    )
    click.echo(f"verdict:   {result.message}")


EPILOG = """\b
Examples:
  pilot-sys tune --budget 1% -- python3 -c "sum(range(30_000_000))"
  pilot-sys tune --budget 0.5% --min-spike 50ms --json -- fio job.fio --size=%WORK_AMOUNT%M

\b
The monitor measured is the sampler `pilot-sys run -- CMD` runs (every dynamic plug-in over the
component graph of CMD's arguments, and CMD's own processes), so the rate carries over to run.
Each measurement runs --pairs pairs of rounds, one monitored and one not in a random order,
and compares them with Welch's test. The overhead is the relative loss of the PI (the round's
duration unless --pi names a reading the workload reports), with its interval at --confidence.
The budget is met only when that interval lies within it (its upper bound at most the
budget); the search steers to the highest such rate. docs/tune.md explains the method.

\b
Exit codes (a script can act on each):
  0  met: the rate printed keeps the overhead's interval within the budget
  2  bad input (an option, the command): nothing was measured
  4  out of measurements before converging: the rate printed is the fastest shown within
     the budget, if any (raise --max-measurements)
  5  the workload failed
  6  undecided: at the slowest useful rate the interval straddles the budget; more pairs
     (--pairs; the verdict says about how many) or a quieter machine would decide it
  7  over budget: the interval lies above the budget even at the slowest useful rate;
     raise the budget, or lengthen --min-spike to allow slower sampling
"""


@click.command("tune", epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--budget", default="1%", show_default=True, help="Largest acceptable overhead: 1% or 0.01."
)
@click.option(
    "--min-spike",
    default="100ms",
    show_default=True,
    help="Shortest utilization spike to catch; sets the slowest useful rate (2 samples per spike).",
)
@click.option(
    "--max-rate",
    type=FINITE_FLOAT,
    default=None,
    help="Fastest rate to consider, Hz [default: USER_HZ, the per-CPU counters' tick].",
)
@click.option(
    "--max-measurements",
    type=int,
    default=6,
    show_default=True,
    help="Most overhead measurements (each --pairs x 2 rounds) to spend.",
)
@click.option(
    "--pairs",
    type=int,
    default=8,
    show_default=True,
    help="Monitored/unmonitored round pairs per measurement.",
)
@click.option(
    "--trim",
    type=FINITE_FLOAT,
    default=0.0,
    show_default=True,
    help="Fraction trimmed from each end of each arm (Yuen's test) so that rounds hit by other "
    "load do not decide; 0 is Welch's test on plain means.",
)
@click.option(
    "--confidence",
    type=FINITE_FLOAT,
    default=0.95,
    show_default=True,
    help="Confidence level of the overhead's interval, which must lie within the budget.",
)
@click.option(
    "--work-amount",
    type=FINITE_FLOAT,
    default=1.0,
    show_default=True,
    help="Value of %WORK_AMOUNT% in the command.",
)
@click.option(
    "--pi",
    default="duration",
    show_default=True,
    help="Performance index to compare: 'duration' or a reading the workload reports.",
)
@click.option(
    "--timeout", type=FINITE_FLOAT, default=None, help="Seconds before a round is killed."
)
@click.option("--seed", type=int, default=None, help="Seed of the randomised round order.")
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep every round's output in this directory.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a PNG of overhead against rate with the model and the choice.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option(
    "--host",
    "host_specs",
    multiple=True,
    metavar="NAME=URL",
    help="Monitor a remote host too (repeatable), as `pilot-sys run --host` would: its scrapes "
    "are part of the overhead measured.",
)
@prometheus_option()
@click.argument(
    "command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS]..."
)
def tune(
    budget: str,
    min_spike: str,
    max_rate: float | None,
    max_measurements: int,
    pairs: int,
    trim: float,
    confidence: float,
    work_amount: float,
    pi: str,
    timeout: float | None,
    seed: int | None,
    keep: Path | None,
    plot: Path | None,
    as_json: bool,
    command: tuple[str, ...],
    host_specs: tuple[str, ...] = (),
    prometheus_urls: tuple[str, ...] = (),
) -> None:
    """Find the highest sampling rate whose overhead stays within a budget (Newton's method).

    Runs CMD in rounds with the monitor on and off, measures the overhead, and steers the rate
    with a safeguarded Newton's method between the slowest useful rate and the counters'
    resolution. Prints each iteration, the chosen rate and the overhead measured at it (the rate
    carries over to run --sample-rate: see below).
    """
    hosts, _ = declared_hosts(host_specs, prometheus_urls)
    if keep is not None:
        _check_keep(keep)
    budget_value = parse_budget(budget)
    spike_s = parse_duration(min_spike, "--min-spike")
    if max_measurements < 1:
        raise BadInput("--max-measurements", f"must be at least 1, got {max_measurements}")
    if pairs < 2:
        raise BadInput("--pairs", f"need at least 2 pairs of rounds for Welch's test, got {pairs}")
    if not 0.0 <= trim < 0.5:
        raise BadInput("--trim", f"must be at least 0 and below 0.5, got {trim:g}")
    if not 0.5 <= confidence < 1.0:
        raise BadInput("--confidence", f"must be at least 0.5 and below 1, got {confidence:g}")
    if plot is not None and plot.suffix.lower() != ".png":
        raise BadInput("--plot", f"{plot} must end in .png")
    from pilot_sys.monitor.tuner import TuneStatus, percent, rate_bounds, tune_for_workload
    from pilot_sys.session.monitoring import session_sampler_factory

    bounds = rate_bounds(spike_s, max_rate)  # refuses impossible bounds before any round runs
    workload = _command_workload(list(command), timeout)
    # what `run -- CMD` samples with
    factory = session_sampler_factory(workload.data_path_args(), hosts)

    if not as_json:
        click.echo(f"tuning the sampling rate of: {' '.join(command)}")
        click.echo(
            f"budget {percent(budget_value)} of {pi} (the interval's upper bound), "
            f"rates {bounds.min_hz:g}-{bounds.max_hz:g} Hz, "
            f"{pairs} pairs of rounds per measurement, at most {max_measurements} measurements"
        )
        _print_iteration_header()
    done: list[TuneIteration] = []

    def progress(it: TuneIteration) -> None:
        done.append(it)
        if not as_json:
            _print_iteration(it)

    try:
        result = tune_for_workload(
            workload,
            budget_value,
            work_amount=work_amount,
            pi=pi,
            higher_is_better=_higher_is_better(workload, pi),
            min_spike_s=spike_s,
            max_rate_hz=max_rate,
            max_measurements=max_measurements,
            pairs=pairs,
            trim=trim,
            confidence=confidence,
            sampler_factory=factory,
            workdir=keep,
            seed=seed,
            allow_unreachable=True,
            on_iteration=progress,
        )
    except KeyboardInterrupt:
        # What was measured is not lost: text mode printed it already, --json gets it now.
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "status": "interrupted",
                        "iterations": [i.model_dump(mode="json") for i in done],
                    }
                )
            )
        raise
    if as_json:
        click.echo(json.dumps(result.model_dump(mode="json")))
    else:
        _print_summary(result)
    if plot is not None:
        _plot(result, plot)
        if not as_json:
            click.echo(f"plot:      {plot}")
    if result.exit_code != ExitCode.OK:
        # an outcome, not an error: stdout has the measurement, stderr the one line that matters
        word = "warning: " if result.status is TuneStatus.MAX_MEASUREMENTS else ""
        click.echo(f"pilot-sys: {word}{result.message}", err=True)
        sys.exit(result.exit_code)


def _command_workload(argv: list[str], timeout: float | None) -> Workload:
    """The command as a workload (the runner's ``CommandWorkload``)."""
    from pilot_sys.workload.runner import CommandWorkload

    kwargs: dict[str, object] = {}
    if timeout is not None:
        kwargs["timeout"] = timeout
    return CommandWorkload(argv, **kwargs)


def _higher_is_better(workload: Workload, pi: str) -> bool | None:
    """Direction of a named reading from the workload's PI specs; None lets the probe decide."""
    if pi == "duration":
        return False
    try:
        specs = workload.pi_specs()
    except Exception:  # noqa: BLE001 - specs may only be known after a round; the default applies
        return None
    for spec in specs:
        if spec.name == pi:
            return bool(spec.higher_is_better)
    return None


def _check_keep(keep: Path) -> None:
    """--keep names a new or empty directory this user can write: the rounds' folders are made
    in it (never into folders or links already there), and a path that cannot take them is bad
    input before anything is measured."""
    try:
        keep.mkdir(parents=True, exist_ok=True)
        if any(keep.iterdir()):
            raise BadInput("--keep", f"{keep}: not empty; choose a new or empty directory")
        os.rmdir(tempfile.mkdtemp(prefix=".pilot-sys-keep-", dir=keep))
    except OSError as exc:
        raise BadInput(
            "--keep", f"{keep}: cannot keep rounds there ({exc.strerror or exc})"
        ) from None
