"""``pilot-sys steady``: steady state, time to steady state and cold-start cost of latencies.

Argument parsing and presentation only; the method is ``pilot_sys.stats.steady``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pilot_sys.cli.changepoints import check_plot_path, load_series, save_figure
from pilot_sys.cli.common import FINITE_FLOAT, decimal_option, library_warnings_as_notes
from pilot_sys.errors import BadInput, InsufficientData

if TYPE_CHECKING:
    import numpy as np

    from pilot_sys.stats.steady import SteadyState

# seconds per unit of the latencies; the header's unit, e.g. "latency (ms)", picks one
UNIT_SECONDS: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _unit_scale(
    unit_option: str | None, header_unit: str | None, label: str
) -> tuple[str | None, float | None]:
    """(unit, seconds per unit) from --unit, else the header ("latency (ms)" or "latency_ms");
    (None, None) when neither says: the unit is unknown, and no seconds are invented."""
    if unit_option is not None:
        return unit_option, UNIT_SECONDS[unit_option]
    if header_unit is not None and header_unit.strip() in UNIT_SECONDS:
        unit = header_unit.strip()
        return unit, UNIT_SECONDS[unit]
    suffix = label.rsplit("_", 1)[-1] if "_" in label else ""
    if suffix in UNIT_SECONDS:
        return suffix, UNIT_SECONDS[suffix]
    return None, None


def _finite_body(body: dict[str, object], source: str) -> None:
    """Refuse a result that has no finite value to print (JSON has no Infinity)."""

    def walk(v: object) -> bool:
        if isinstance(v, float):
            return math.isfinite(v)
        if isinstance(v, dict):
            return all(walk(x) for x in v.values())
        if isinstance(v, list | tuple):
            return all(walk(x) for x in v)
        return True

    if not walk(body):
        raise BadInput(
            source,
            "the readings are so large that their sums exceed the largest floating-point "
            "number (about 1.8e308); give them in a larger unit",
        )


def _as_json(result: SteadyState, source: str, unit: str | None) -> str:
    body = result.model_dump(mode="json")
    body = {"source": source, "unit": unit, **body}
    return json.dumps(body, indent=2, allow_nan=False)


def _fmt(value: float, unit: str | None) -> str:
    return f"{value:.6g} {unit}" if unit else f"{value:.6g}"


def _method_line(result: SteadyState) -> str:
    if result.method == "dual-gate":
        return f"dual gate, windows of {result.window} x {result.history}"
    cuts = len(result.changepoints or [])
    if result.method == "model":
        return f"{cuts + 1} segment(s) (the model `analyze` and `changepoints` report)"
    tolerance = 100 * (result.tolerance or 0.0)
    return f"{cuts + 1} segment(s), levels within {tolerance:g}% count as equal"


def _time_to_steady(result: SteadyState, unit: str | None) -> str:
    """Iterations, and the time they took in the unit it is known in (never an invented one)."""
    iterations = f"{result.warmup_iterations} iterations"
    if result.time_to_steady_state is not None:
        return f"{iterations}, {result.time_to_steady_state:.6g} s"
    # no timestamps and no unit: the sum of the warm-up latencies in the data's own unit
    return (
        f"{iterations}, their latencies sum to {_fmt(result.cold_start_cost, unit)} "
        "(unit unknown: set --unit for seconds)"
    )


def _excess(value: float, unit: str | None) -> str:
    if value < 0:
        return f"{_fmt(-value, unit)} less than at the steady median"
    return f"{_fmt(value, unit)} more than at the steady median"


def _as_text(result: SteadyState, source: str, unit: str | None) -> str:
    if result.too_short:
        return f"{source}: {result.reason}"
    shown = unit if unit else "unknown (set --unit)"
    lines = [f"{source}: {result.n} latencies, unit {shown}, {_method_line(result)}"]
    if result.steady_state_start is None or result.steady is None:
        lines += [
            f"steady state     : {result.reason}",
            f"cold-start cost  : >= {_fmt(result.cold_start_cost, unit)} (the whole run)",
            f"whole run        : median {_fmt(result.raw.median, unit)}, "
            f"p99 {_fmt(result.raw.p99, unit)}, "
            f"p99.9 {_fmt(result.raw.p999, unit)}, max {_fmt(result.raw.max, unit)}",
        ]
        return "\n".join(lines)
    s = result.steady
    end = result.steady_state_end if result.steady_state_end is not None else result.n
    until = f" to {end - 1}" if end < result.n else ""
    lines += [
        f"steady state     : from iteration {result.steady_state_start}{until} ({result.reason})",
        f"time to steady   : {_time_to_steady(result, unit)}",
        f"cold-start cost  : {_fmt(result.cold_start_cost, unit)} spent before steady state, "
        f"{_excess(result.cold_start_excess or 0.0, unit)}",
    ]
    lines += [f"steady changed   : {c}" for c in result.later_changes]
    lines += [
        "",
        f"  {'':<13}{'n':>10}  {'median':>12}  {'p99':>12}  {'p99.9':>12}  "
        f"{'max':>12}  {'mean':>12}",
    ]
    for label, d in (("steady state", s), ("whole run", result.raw)):
        lines.append(
            f"  {label:<13}{d.n:>10}  {d.median:>12.6g}  {d.p99:>12.6g}  {d.p999:>12.6g}  "
            f"{d.max:>12.6g}  {d.mean:>12.6g}"
        )
    return "\n".join(lines)


def plot_steady(
    values: np.ndarray, result: SteadyState, path: Path, title: str, unit: str | None
) -> None:
    """Latency per iteration (log scale) with the warm-up shaded and the steady percentiles
    drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(10, 4.2))
    positive = values > 0
    index = np.arange(values.size)
    ax.plot(
        index[positive],
        values[positive],
        lw=0.4,
        color="0.35",
        rasterized=values.size > 20_000,
        label="latency",
    )
    if result.steady_state_start is not None and result.steady is not None:
        start = result.steady_state_start
        stop = result.steady_state_end or values.size
        ax.axvspan(
            0, start, color="tab:red", alpha=0.12, lw=0, label=f"warm-up ({start} iterations)"
        )
        for value, style, name in (
            (result.steady.median, "-", "median"),
            (result.steady.p999, "--", "p99.9"),
        ):
            ax.hlines(
                value,
                start,
                stop,
                colors="tab:green",
                linestyles=style,
                lw=1.4,
                label=f"steady {name}",
            )
    if positive.all():
        ax.set_yscale("log")
    ax.set_xlim(0, max(values.size - 1, 1))
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"latency [{unit}]" if unit else "latency")
    ax.set_title(f"{title}: {result.reason}", fontsize=8, wrap=True)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


@click.command(
    "steady",
    epilog="""\b
Examples:
  pilot-sys steady iterations.csv --column latency_ms
  pilot-sys steady lat_us.txt --unit us --json
  pilot-sys steady run.csv -c latency_ms --timestamps start_s --plot warmup.png

Exit status: 0 on success (also when no steady state is reached or the series is too
short to show one), 2 on bad input.""",
)
@click.argument("source", metavar="[FILE|-]", default="-", required=False)
@click.option(
    "--column", "-c", metavar="NAME|INDEX", help="Latency column (header name or 0-based index)."
)
@decimal_option
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option(
    "--method",
    type=click.Choice(["model", "segments", "dual-gate"]),
    default="model",
    show_default=True,
    help="model: the steady part that `analyze` and `changepoints` report too; "
    "segments: where the level settles at the end (PELT, Kalibera walk-back, Traini et al.); "
    "dual-gate: windowed median and p99.9.",
)
@click.option(
    "--tolerance",
    type=FINITE_FLOAT,
    default=0.05,
    show_default=True,
    help="Level difference that counts.",
)
@click.option("--window", type=int, metavar="N", help="Iterations per window (dual-gate).")
@click.option(
    "--history",
    type=int,
    default=5,
    show_default=True,
    metavar="H",
    help="Consecutive stable windows (dual-gate).",
)
@click.option(
    "--unit",
    type=click.Choice(sorted(UNIT_SECONDS)),
    help="Unit of the latencies "
    "(default: from the header, e.g. 'latency (ms)' or 'latency_ms', else unknown: "
    "times are then given in iterations and the data's own numbers, never in seconds).",
)
@click.option(
    "--timestamps",
    metavar="NAME|INDEX",
    help="Column of per-iteration timestamps in seconds (files only).",
)
@click.option(
    "--plot", metavar="FILE.png", help="Draw latency per iteration with the warm-up shaded."
)
@library_warnings_as_notes
def steady(
    source: str,
    column: str | None,
    decimal: str | None,
    as_json: bool,
    method: str,
    tolerance: float,
    window: int | None,
    history: int,
    unit: str | None,
    timestamps: str | None,
    plot: str | None,
) -> None:
    """Split per-iteration latencies into cold start, warm-up and steady state.

    The steady state starts where the level settles: the series is cut into segments of
    constant mean and variance (PELT, penalty at the elbow of its CROPS path), and walking back
    from the last segment, the first one whose mean differs by more than --tolerance
    (Kalibera's test) ends the warm-up: the procedure of Traini et al. 2022. When the settled
    part is under a sixth of the run, the end still moves: no steady state. Reports time to
    steady state (iterations, seconds), the cold-start cost and the steady-state distribution
    (median, p99, p99.9, max) beside the whole run's. "No steady state reached" and "too short
    to show a steady state" are valid answers, with the reason.
    """
    if window is not None and window < 2:
        raise BadInput("--window", f"{window} is too small; a window needs at least 2 iterations")
    if not 0.0 < tolerance < 1.0:
        raise BadInput("--tolerance", f"{tolerance} must be between 0 and 1, e.g. 0.05")
    if history < 2:
        raise BadInput("--history", f"{history} is too small; stability needs at least 2 windows")
    if timestamps is not None and source == "-":
        raise BadInput("--timestamps", "needs a FILE: stdin can be read only once")
    plot_path = check_plot_path(plot)
    values, name, header_unit, label = load_series(source, column, decimal)
    stamps = None
    if timestamps is not None:
        stamps, _, _, _ = load_series(source, timestamps, decimal)
        if (stamps[1:] < stamps[:-1]).any():
            raise BadInput(
                f"{name} --timestamps {timestamps}",
                "timestamps go backwards; give start times in seconds",
            )
    unit_name, seconds_per_unit = _unit_scale(unit, header_unit, label)
    from pilot_sys.stats.steady import detect_steady_state

    try:
        result = detect_steady_state(
            values,
            method=method,  # type: ignore[arg-type]
            tolerance=tolerance,
            timestamps=stamps,
            window=window,
            history=history,
            seconds_per_unit=seconds_per_unit,
        )
    except InsufficientData as exc:
        raise InsufficientData(name, exc.problem) from None
    _finite_body(result.model_dump(mode="python"), name)
    click.echo(_as_json(result, name, unit_name) if as_json else _as_text(result, name, unit_name))
    if plot_path is not None:
        plot_steady(values, result, plot_path, name, unit_name)
        if not as_json:
            click.echo(f"plot: {plot_path}")
