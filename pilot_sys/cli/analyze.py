"""``pilot-sys analyze``: mean and honest CI of one column of numbers.

Argument parsing and presentation only: reading is ``pilot_sys.dataio``, the statistics are
``pilot_sys.stats.ci.summarize``, warm-up removal is the other stats modules' job.
"""

from __future__ import annotations

import math
import os
import re
import sys
from typing import TYPE_CHECKING

import click

from pilot_sys.cli.common import (
    CI_PERC_HELP,
    FINITE_FLOAT,
    OneLineErrors,
    decimal_option,
    library_warnings_as_notes,
    parse_percent,
    save_figure,
)
from pilot_sys.errors import BadInput, InsufficientData

if TYPE_CHECKING:
    import numpy as np

    # the output models import numpy and pydantic: loaded once numbers are read, so that
    # `analyze --help` and a bad option cost only click
    from pilot_sys.cli.analyze_output import AnalyzeOutput, StablePart, WarmupMethod
    from pilot_sys.stats.ci import Summary


def find_stable_part(
    values: np.ndarray, method: WarmupMethod, unit: str | None = None
) -> tuple[StablePart, list[str]]:
    """The steady part of ``values`` in the one model of a series
    (``pilot_sys.stats.series_model``), which ``steady``, ``changepoints`` and a session round
    report too; ``edm`` and ``steady`` name the same model (both kept for old command lines)."""
    from pilot_sys.cli.analyze_output import StablePart

    n = int(values.size)
    if method == "none":
        return StablePart(method=method, begin=0, end=n, removed=[], found=True), []
    from pilot_sys.stats.series_model import describe_change, series_model

    model = series_model(values)
    if model.steady is None:
        return StablePart(method=method, begin=0, end=n, removed=[], found=False), [
            f"warm-up removal ({method}): {model.reason}; all samples are used"
        ]
    begin, end = model.steady
    later = [describe_change(model, k, unit) for k in model.later_changes]
    removed = [r for r in [(0, begin), (end, n)] if r[1] > r[0]]
    part = StablePart(
        method=method, begin=begin, end=end, removed=removed, found=True, later_changes=later
    )
    return part, []


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def _render(out: AnalyzeOutput, stable: Summary, raw: Summary) -> None:
    from pilot_sys.cli.styled_lines import Line, print_lines

    lines: list[Line] = []
    unit = f" {out.unit}" if out.unit else ""
    column = f" column {out.column!s}" if out.column else ""
    lines.append(
        [
            (out.source, "bold"),
            f"{column}: {out.pi_type} mean, {100 * out.confidence:g}% CI",
        ]
    )

    def line(label: str, s: Summary) -> None:
        if s.ci_low is None:
            lines.append(
                [
                    f"  {label:<7} {_fmt(s.mean)}{unit}  ",
                    ("no CI", "red"),
                    f" (too few effective samples)  n={s.sample_size}",
                ]
            )
            return
        half = (s.ci_high - s.ci_low) / 2  # type: ignore[operator]
        # harmonic (mapped from reciprocals) and Wilson intervals are not centred on the mean: a ±
        # would misstate them (e.g. "1 ± 0.02" for a success fraction that cannot exceed 1)
        spread = f" ± {half:.3g}" if s.pi_type == "arithmetic" else ""
        lines.append(
            [
                f"  {label:<7} ",
                (f"{_fmt(s.mean)}{spread}{unit}", "bold"),
                f"  CI [{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]{unit}  n={s.sample_size}  "
                f"subsession {s.subsession_size} x {s.n_subsessions}  "
                f"lag-1 r={s.autocorrelation:+.3f}",
            ]
        )

    sp = out.stable_part
    removed = ", ".join(f"{b}..{e - 1}" for b, e in sp.removed) or "nothing"
    if sp.removed:
        line("stable", stable)
        lines.append(
            [f"          samples {sp.begin}..{sp.end - 1} ({sp.method}; removed {removed})"]
        )
        for change in sp.later_changes:
            lines.append([f"          the steady state changed: {change}"])
        line("raw", raw)
    else:
        line("all", stable)
    if stable.ci_low is not None:
        verdict = ("reached", "green") if stable.ci_reached else ("not reached", "yellow")
        still = stable.samples_still_needed
        lines.append(
            [
                f"  target  width {_fmt(stable.ci_width)}{unit} vs {_fmt(stable.target_width)}"
                f"{unit} ({stable.target}): ",
                verdict,
                f"; needs {stable.required_sample_size} samples"
                + (f", {still} more" if still else ""),
            ]
        )
    for w in out.warnings:
        lines.append(["  ", ("warning:", "yellow"), f" {w}"])
    print_lines(lines)


def plot_analysis(values: np.ndarray, out: AnalyzeOutput, path: str) -> None:
    """The series, the removed ranges shaded, and the mean with its CI over the stable part."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(10, 4))
    dense = values.size > 500  # points, not a line, once a line would only draw a grey block
    ax.plot(
        np.arange(values.size),
        values,
        color="0.4",
        label="samples",
        **({"ls": "none", "marker": ".", "ms": 1.5} if dense else {"lw": 0.6}),
    )
    for b, e in out.stable_part.removed:
        ax.axvspan(
            b,
            e,
            color="tab:red",
            alpha=0.12,
            lw=0,
            label="removed" if b == out.stable_part.removed[0][0] else None,
        )
    sp = out.stable_part
    ax.hlines(out.mean, sp.begin, sp.end, color="tab:blue", lw=1.5, label=f"{out.pi_type} mean")
    if out.ci_low is not None and out.ci_high is not None:
        ax.fill_between(
            [sp.begin, sp.end],
            out.ci_low,
            out.ci_high,
            color="tab:blue",
            alpha=0.2,
            label=f"{100 * out.confidence:g}% CI",
        )
    ax.set_xlabel("sample index")
    ax.set_ylabel(out.unit or (out.column or "value"))
    ax.set_title(f"{out.source}: mean {_fmt(out.mean)}", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


@click.command(
    "analyze",
    cls=OneLineErrors,
    epilog="""\b
Examples:
  pilot-sys analyze data/throughput-example.csv --column 'throughput (MiB/s)' --pi-type harmonic
  seq 1 100 | pilot-sys analyze - --json
  pilot-sys analyze lat.txt --ci-abs 0.5 --warmup none --plot lat.png

The CI uses the stable part only (--warmup); the raw result over all samples is shown too.
Samples must be in time order: autocorrelation is handled by subsession analysis, and no
interval is printed when the data hold too few effective samples.
Exit status: 0 on success, 2 on bad input (one line naming the file:line:column).""",
)
@click.argument("source", metavar="[FILE|-]", default="-", required=False)
@click.option(
    "--column", "-c", metavar="NAME|INDEX", help="Column to read (header name or 0-based index)."
)
@click.option(
    "--pi-type",
    type=click.Choice(["arithmetic", "harmonic", "proportion"]),
    default="arithmetic",
    show_default=True,
    help="arithmetic: times and sizes; harmonic: rates of equal work units (throughput); "
    "proportion: 0/1 outcomes.",
)
@click.option(
    "--confidence",
    type=FINITE_FLOAT,
    default=0.95,
    show_default=True,
    help="Confidence level of the interval.",
)
@click.option("--ci-perc", default=None, metavar="PCT", help=f"{CI_PERC_HELP}  [default: 10]")
@click.option(
    "--ci-abs",
    type=FINITE_FLOAT,
    default=None,
    metavar="X",
    help="Target CI width as an absolute value (overrides --ci-perc).",
)
@click.option(
    "--autocorr-limit",
    type=FINITE_FLOAT,
    default=0.1,
    show_default=True,
    help="Largest |lag-1 autocorrelation| of subsession means.",
)
@click.option(
    "--warmup",
    type=click.Choice(["edm", "steady", "none"]),
    default="edm",
    show_default=True,
    help="Warm-up/cool-down removal: the steady part of the series (edm and steady are the "
    "same model that `pilot-sys steady` and `changepoints` report), or none.",
)
@decimal_option
@click.option("--json", "as_json", is_flag=True, help="Print one machine-readable JSON object.")
@click.option(
    "--plot",
    metavar="FILE.png",
    help="Draw the samples, the removed ranges and the mean with its CI.",
)
@library_warnings_as_notes
def analyze(
    source: str,
    column: str | None,
    pi_type: str,
    confidence: float,
    ci_perc: str | None,
    ci_abs: float | None,
    autocorr_limit: float,
    warmup: WarmupMethod,
    decimal: str | None,
    as_json: bool,
    plot: str | None,
) -> None:
    """Mean and confidence interval of one column of numbers, honest under autocorrelation.

    Reads FILE (CSV or whitespace-separated text; a header is detected; # starts a comment) or
    stdin, removes warm-up/cool-down, finds the subsession size that makes the samples nearly
    independent, and reports the mean, its CI, and how many samples the target width needs.
    """
    if not 0.0 < confidence < 1.0:
        raise BadInput("--confidence", f"{confidence:g} must be between 0 and 1, e.g. 0.95")
    percent = parse_percent(ci_perc, "--ci-perc") if ci_perc is not None else None
    if ci_abs is not None and not (0 < ci_abs < math.inf):
        raise BadInput("--ci-abs", f"{ci_abs:g} must be > 0 and finite, in the unit of the data")
    if not 0.0 < autocorr_limit < 1.0:
        raise BadInput("--autocorr-limit", f"{autocorr_limit:g} must be between 0 and 1, e.g. 0.1")
    if plot is not None and not plot.lower().endswith((".png", ".svg", ".pdf")):
        raise BadInput(
            "--plot", f"{plot!r}: the picture format comes from the suffix; use .png, .svg or .pdf"
        )
    if plot is not None and not os.path.isdir(os.path.dirname(os.path.abspath(plot))):
        # before the analysis, so the result is not printed and then followed by an error
        raise BadInput(
            "--plot", f"{plot!r}: directory {os.path.dirname(os.path.abspath(plot))} does not exist"
        )
    if source == "-" and sys.stdin.isatty():
        raise BadInput(
            "FILE", "no input: give a file, or pipe numbers into stdin (use - for stdin)"
        )

    from pilot_sys.cli.analyze_output import AnalyzeOutput, StablePart
    from pilot_sys.dataio import read_table_column
    from pilot_sys.stats.ci import CITarget, summarize, too_few_for_interval
    from pilot_sys.stats.pi import PIType
    from pilot_sys.stats.subsession import MIN_SUBSESSIONS

    col = read_table_column(source, column, decimal=decimal)
    values = col.values
    target = CITarget(absolute=ci_abs) if ci_abs is not None else CITarget(percent=percent or 10.0)
    kind = PIType(pi_type)

    def run(samples: np.ndarray) -> Summary:
        try:
            if samples.size < MIN_SUBSESSIONS:  # a mean without an interval, and why (exit 0)
                return too_few_for_interval(samples, kind, confidence, target, MIN_SUBSESSIONS)
            return summarize(
                samples,
                pi_type=kind,
                confidence=confidence,
                target=target,
                autocorr_limit=autocorr_limit,
            )
        except (
            BadInput
        ) as exc:  # name the file (and the line of "sample N"), not the internal "samples"
            bad = re.match(r"sample (\d+) is", exc.problem)
            where = col.where(int(bad.group(1)) - 1) if bad and samples is values else col.source
            raise type(exc)(where, exc.problem) from None

    raw = run(values)
    part, warnings = find_stable_part(values, warmup, col.unit)
    stable = raw
    if part.removed:
        try:
            stable = run(values[part.begin : part.end])
        except InsufficientData as exc:
            warnings.append(f"the stable part is too short ({exc.problem}); all samples are used")
            part = StablePart(method=warmup, begin=0, end=values.size, removed=[], found=False)
    out = AnalyzeOutput(
        source=col.source,
        column=col.name if col.name is not None else str(col.index),
        unit=col.unit,
        **stable.model_dump(exclude={"warnings", "samples_still_needed"}),
        warnings=warnings + stable.warnings,
        stable_part=part,
        raw=raw if part.removed else None,
    )
    if as_json:
        click.echo(out.model_dump_json(indent=2))
    else:
        _render(out, stable, raw)
    if plot is not None:
        plot_analysis(values, out, plot)
        if not as_json:
            click.echo(f"plot: {plot}")
