"""``pilot-sys changepoints``: EDM change points of a column of readings and the stable segment.

Argument parsing and presentation only; the method is ``pilot_sys.stats.changepoint``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pilot_sys.cli.common import (
    FINITE_FLOAT,
    decimal_option,
    library_warnings_as_notes,
    save_figure,
)
from pilot_sys.errors import BadInput

if TYPE_CHECKING:  # numpy, scipy and matplotlib load only when the command runs
    import numpy as np

    from pilot_sys.stats.change_kind import ChangeKind
    from pilot_sys.stats.changepoint import ChangePoints
    from pilot_sys.stats.series_model import SeriesModel

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def check_plot_path(plot: str | None, option: str = "--plot") -> Path | None:
    """Refuse an unusable plot path before any work is done, so no result is lost to it."""
    if plot is None:
        return None
    path = Path(plot)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise BadInput(
            option,
            f"{plot!r}: the picture format comes from the suffix; use {', '.join(PLOT_SUFFIXES)}",
        )
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(option, f"{plot!r}: directory {str(parent)!r} does not exist")
    return path


def load_series(
    source: str, column: str | None, decimal: str | None = None
) -> tuple[np.ndarray, str, str | None, str]:
    """Values, display name, header unit and axis label of one column of ``source`` (file or
    ``-``); ``decimal`` is the decimal mark (``pilot_sys.dataio.read_table_column``)."""
    if source == "-" and sys.stdin.isatty():
        raise BadInput(
            "FILE", "no input: give a file, or pipe numbers into stdin (use - for stdin)"
        )
    from pilot_sys.dataio import read_table_column

    col = read_table_column(source, column, decimal=decimal)
    label = col.name if col.name is not None else f"column {col.index}"
    return col.values, col.source, col.unit, label


def plot_changepoints(
    values: np.ndarray, result: ChangePoints, path: Path, title: str, ylabel: str
) -> None:
    """The series with its segments shaded, segment medians drawn and the stable one marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(10, 4.2))
    index = np.arange(values.size)
    ax.plot(index, values, lw=0.5, color="0.35", rasterized=values.size > 20_000, label="readings")
    stable = result.stable_segment
    for i, seg in enumerate(result.segments):
        is_stable = stable is not None and (seg.begin, seg.end) == tuple(stable)
        ax.axvspan(
            seg.begin,
            seg.end,
            color="tab:green" if is_stable else ("tab:orange" if i % 2 else "tab:red"),
            alpha=0.18 if is_stable else 0.10,
            lw=0,
            label="stable segment" if is_stable else None,
        )
        ax.hlines(
            seg.median,
            seg.begin,
            seg.end,
            colors="tab:blue",
            lw=1.6,
            label="segment median" if i == 0 else None,
        )
    for cp in result.changepoints:
        ax.axvline(cp, color="tab:red", lw=0.8, ls="--")
    ax.set_xlim(0, max(values.size - 1, 1))
    ax.set_xlabel("reading index")
    ax.set_ylabel(ylabel)
    verdict = (
        "stable segment marked green"
        if stable is not None
        else "no stable phase (no segment > 50%)"
    )
    ax.set_title(f"{title}: {len(result.changepoints)} change point(s), {verdict}", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def _model_lines(model: SeriesModel, unit: str | None) -> list[str]:
    """The one model of the series in this command's words: warm-up, steady part, changes."""
    from pilot_sys.stats.series_model import describe_change

    if model.steady is None:
        return [f"{model.reason}; no reading is called warm-up"]
    begin, end = model.steady
    lines = [
        f"warm-up: readings [0, {begin})" if begin else "warm-up: none",
        f"steady part: {model.reason}",
    ]
    lines += [
        f"the steady state changed: {describe_change(model, k, unit)}" for k in model.later_changes
    ]
    lines.append(
        f"`analyze`, `steady` and a session round keep readings [{begin}, {end}) "
        "(all three report this model)"
    )
    return lines


def _as_json(result: ChangePoints, source: str, model: SeriesModel) -> str:
    steady = list(model.steady) if model.steady is not None else None
    body = {
        "source": source,
        "n": result.n,
        "changepoints": result.changepoints,
        "kinds": [k.model_dump() for k in model.kinds],
        "stable_segment": steady,
        "stable_reason": model.reason,
        "warmup_removal": {
            "begin": model.steady[0] if model.steady else 0,
            "end": model.steady[1] if model.steady else result.n,
            "found": model.steady is not None,
        },
        "model": {
            "warmup": list(model.warmup) if model.warmup else None,
            "steady": steady,
            "later_changes": [k.model_dump() for k in model.later_changes],
            "reason": model.reason,
        },
        "segments": [
            {"begin": s.begin, "end": s.end, "n": s.size, "median": s.median}
            for s in result.segments
        ],
        "details": [d.model_dump() for d in result.details],
        "min_size": result.min_size,
        "significance": result.significance,
        "penalty": result.penalty,
        "statistic": result.statistic,
    }
    return json.dumps(_finite_or_null(body), indent=2, allow_nan=False)


def _finite_or_null(value: object) -> object:
    """JSON has no Infinity: a ratio over a noiseless segment (spread_ratio) is null instead."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(v) for v in value]
    return value


def _as_text(result: ChangePoints, source: str, unit: str | None, model: SeriesModel) -> str:
    suffix = f" {unit}" if unit else ""
    lines = [
        f"{source}: {result.n} readings, {len(result.changepoints)} change point(s) "
        f"(EDM, {result.statistic} statistic, min segment {result.min_size}, "
        f"false-alarm rate {result.significance:g} per test)",
        "",
        f"  {'segment':>8}  {'begin':>9}  {'end':>9}  {'n':>9}  {'share':>6}  "
        f"{'median':>12}  change",
    ]
    kind_at = {k.index: k for k in model.kinds}
    steady = model.steady
    for i, seg in enumerate(result.segments):
        inside = steady is not None and steady[0] <= seg.begin and seg.end <= steady[1]
        mark = "  <- steady" if inside else ""
        change = _change_text(kind_at.get(seg.begin))
        lines.append(
            f"  {i:>8}  {seg.begin:>9}  {seg.end:>9}  {seg.size:>9}  "
            f"{100.0 * seg.size / result.n:>5.1f}%  "
            f"{seg.median:>12.6g}{suffix}  {change}{mark}"
        )
    lines += ["", *_model_lines(model, unit)]
    return "\n".join(lines)


def _change_text(kind: ChangeKind | None) -> str:
    """The kind of the change that starts a segment, with the p-value of the test that named it
    (the level, trend or spread test; "none" has no such test)."""
    if kind is None:
        return "-"
    return kind.kind if kind.kind == "none" else f"{kind.kind}, p={kind.p_value:.2g}"


def _too_short(n: int, size: int, source: str, as_json: bool) -> str:
    """The answer for a series shorter than two segments: no change can be shown (not an error)."""
    reason = f"too short to show a change: {n} readings, two segments of {size} needed (--min-size)"
    if as_json:
        body = {"source": source, "n": n, "changepoints": [], "kinds": [], "too_short": True}
        return json.dumps({**body, "reason": reason, "min_size": size}, indent=2)
    return f"{source}: {reason}"


@click.command(
    "changepoints",
    epilog="""\b
Examples:
  pilot-sys changepoints lat.csv --column latency_us
  cat urs.txt | pilot-sys changepoints - --json
  pilot-sys changepoints tput.txt --plot tput.png --min-size 200

Exit status: 0 on success (also for a series too short to show a change),
2 on bad input (one line naming the file:line:column).""",
)
@click.argument("source", metavar="[FILE|-]", default="-", required=False)
@click.option(
    "--column", "-c", metavar="NAME|INDEX", help="Column to read (header name or 0-based index)."
)
@decimal_option
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option(
    "--plot",
    metavar="FILE.png",
    help="Draw the series with segments shaded and the stable one marked.",
)
@click.option(
    "--min-size",
    type=int,
    metavar="N",
    help="Shortest segment (default: largest power of 2 <= sqrt(n), at least 10).",
)
@click.option(
    "--significance",
    type=FINITE_FLOAT,
    default=0.01,
    show_default=True,
    help="False-alarm rate of each split test on data without a change.",
)
@click.option(
    "--statistic",
    type=click.Choice(["sign", "median"]),
    default="sign",
    show_default=True,
    help="sign: O(n), consistent split location; median: the literal EDM median difference.",
)
@click.option(
    "--trend/--no-trend",
    default=True,
    show_default=True,
    help="Drop change points that a straight line through both segments explains (a trend).",
)
@library_warnings_as_notes
def changepoints(
    source: str,
    column: str | None,
    decimal: str | None,
    as_json: bool,
    plot: str | None,
    min_size: int | None,
    significance: float,
    statistic: str,
    trend: bool,
) -> None:
    """Find where the level or spread of a series of readings changes (E-Divisive with Medians).

    Reads one column of numbers (unit readings such as per-I/O latencies or per-second
    throughput) from FILE or stdin, splits it where the median or spread changes, and names the
    dominant stable segment: the longest one, if it holds more than 50% of the readings.
    Each change is named level (a jump), trend (a turn) or spread; a series too short for two
    segments is answered "too short to show a change".
    """
    if min_size is not None and min_size < 2:
        raise BadInput(
            "--min-size", f"{min_size} is too small; a segment needs at least 2 readings"
        )
    if not 0.0 < significance < 1.0:
        raise BadInput("--significance", f"{significance} must be between 0 and 1, e.g. 0.01")
    plot_path = check_plot_path(plot)
    values, name, unit, label = load_series(source, column, decimal)
    # the model's minimum segment size: a series too short for two loads no detector
    from pilot_sys.stats.series_model import default_min_size, series_model

    size = default_min_size(values.size) if min_size is None else min_size
    if values.size < 2 * size:
        click.echo(_too_short(values.size, size, name, as_json))
        return
    model = series_model(
        values,
        min_size=size,
        significance=significance,
        statistic=statistic,  # type: ignore[arg-type]
        trend=trend,
    )
    assert model.detection is not None  # not too short
    result = model.detection
    click.echo(_as_json(result, name, model) if as_json else _as_text(result, name, unit, model))
    if plot_path is not None:
        plot_changepoints(values, result, plot_path, name, label)
        if not as_json:
            click.echo(f"plot: {plot_path}")
