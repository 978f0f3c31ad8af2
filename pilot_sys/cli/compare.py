"""``pilot-sys compare``: Welch comparison of two data files, of saved result directories, or of
workloads run live with their rounds interleaved.

Thin on purpose: data files go to ``pilot_sys.stats.compare.compare_samples``; result
directories and ``--run`` go to ``pilot_sys.cli.launch`` (over
``pilot_sys.session.compare_launch``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import click
from pydantic import BaseModel, ConfigDict

from pilot_sys.errors import BadInput
from pilot_sys.stats.ci import Summary  # nested in the JSON model; loaded only when compare runs


class CompareOutput(BaseModel):
    """The ``--json`` object of an offline comparison."""

    model_config = ConfigDict(frozen=True)

    a_source: str
    b_source: str
    column: str | None
    unit: str | None
    pi_type: str
    confidence: float
    threshold: float
    mean_a: float
    mean_b: float
    difference: float  # A - B
    relative_difference: float | None  # (A - B) / B
    difference_ci_low: float
    difference_ci_high: float
    t: float
    dof: float
    p_value: float
    verdict: Literal["a_higher", "a_lower", "undecided"]
    higher_is_better: bool
    a_faster: bool | None  # None when undecided
    additional_samples_a: int | None  # raw samples A still needs for p < threshold (None: never)
    additional_samples_b: int | None
    a: Summary
    b: Summary


def _render(out: CompareOutput) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, soft_wrap=True)
    unit = f" {escape(out.unit)}" if out.unit else ""
    for label, s, src in (("A", out.a, out.a_source), ("B", out.b, out.b_source)):
        half = (s.ci_high - s.ci_low) / 2  # type: ignore[operator]
        console.print(f"  {label}  {s.mean:.6g} ± {half:.3g}{unit}  n={s.sample_size}  subsession {s.subsession_size} x {s.n_subsessions}  ({escape(src)})")
    rel = f" ({100 * out.relative_difference:+.2f}%)" if out.relative_difference is not None else ""
    console.print(
        f"  A - B = {out.difference:+.6g}{unit}{rel}  {100 * out.confidence:g}% CI [{out.difference_ci_low:.6g}, {out.difference_ci_high:.6g}]"
    )
    console.print(f"  Welch t = {out.t:.3f}, dof = {out.dof:.1f}, p = {out.p_value:.3g} (threshold {out.threshold:g})")
    if out.verdict == "undecided":
        more = (
            f"about {out.additional_samples_a} more samples of A and {out.additional_samples_b} of B would decide it"
            if out.additional_samples_a is not None
            else "the means are practically equal; more samples will not separate them"
        )
        console.print(f"  [yellow]verdict: no significant difference[/]; {more}")
    else:
        word = "higher" if out.verdict == "a_higher" else "lower"
        speed = "faster" if out.a_faster else "slower"
        console.print(f"  [bold]verdict: A is {word} than B, so A is {speed}[/] ({'higher' if out.higher_is_better else 'lower'} is better)")


# parameter -> option: the session options, meaningless for data already measured
RUN_ONLY = {
    "work_amount": "-w/--work-amount", "output_dir": "-o/--output-dir", "session_limit": "-s/--session-limit",
    "ci_perc": "--ci-perc", "preset": "--preset", "max_rounds": "--max-rounds", "parser": "--parser",
    "work_unit": "--work-unit", "timeout": "--timeout", "cut": "--cut", "no_monitor": "--no-monitor",
    "quiet": "--quiet", "host_specs": "--host",
}


@click.command(
    "compare",
    epilog="""\b
Examples:
  pilot-sys compare before.csv after.csv --column 'throughput (MiB/s)' --pi-type harmonic
  pilot-sys compare a.txt b.txt --threshold 0.05 --json
  pilot-sys compare pilot-results/old-fio pilot-results/new-fio --pi write_bw
  pilot-sys compare --parser lines --run old='python3 bench.py --v1' --run new='python3 bench.py --v2'

\b
Each file holds one series in time order (subsession analysis handles autocorrelation).
A result directory is read back from its result.json (its first workload).
With --run, rounds of the workloads are interleaved (W1, W2, ..., W1, W2, ...) until every
adjacent pair of the ranking is separated (CIs apart, or Welch p below --threshold) and
every CI meets its target; the session options (marked --run:) are those of `pilot-sys run`
and are refused without --run.

\b
Exit status: 0 whatever the verdict of files and directories (it is in the output), 2 on bad
input; with --run the exit codes of `pilot-sys run` (0 all separated, 4 limit reached first).""",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("inputs", nargs=-1, metavar="[A B]")
@click.option("--column", "-c", metavar="NAME|INDEX", help="Column to read in both files (header name or 0-based index).")
@click.option(
    "--pi-type",
    type=click.Choice(["arithmetic", "harmonic", "proportion"]),
    default="arithmetic",
    show_default=True,
    help="arithmetic: times and sizes; harmonic: rates (throughput); proportion: 0/1 outcomes.",
)
@click.option("--confidence", type=float, default=0.95, show_default=True, help="Confidence level of the CIs.")
@click.option("--threshold", type=float, default=0.01, show_default=True, help="p-value below which the difference is significant.")
@click.option("--autocorr-limit", type=float, default=0.1, show_default=True, help="Largest |lag-1 autocorrelation| of subsession means.")
@click.option(
    "--higher-is-better/--lower-is-better",
    default=None,
    help="Which direction is faster  [default: higher for harmonic (rates), lower otherwise (times)].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one machine-readable JSON object.")
@click.option("--run", "runs", multiple=True, metavar="NAME='CMD'", help="A workload to run live (repeat, at least twice).")
@click.option("--pi", help="The PI to rank by (result directories and --run; default: the first one all report).")
@click.option("-w", "--work-amount", metavar="MIN,MAX", help="--run: valid range of %WORK_AMOUNT%.")
@click.option("-o", "--output-dir", type=click.Path(path_type=Path), help="--run: result directory.")
@click.option("-s", "--session-limit", type=float, metavar="SECONDS", help="--run: stop after this long (0: no limit).")
@click.option("--ci-perc", metavar="PCT", help="--run: target full CI width, e.g. 5%.")
@click.option("--preset", type=click.Choice(["quick", "normal", "strict"]), default="normal", show_default=True,
              help="--run: targets and limits, as for `pilot-sys run`.")
@click.option("--max-rounds", type=int, help="--run: stop after this many rounds of each workload.")
@click.option("--parser", type=click.Choice(["auto", "fio", "iperf3", "dd", "csv", "lines", "none"]), default="auto",
              show_default=True, help="--run: how to read the commands' output.")
@click.option("--work-unit", default=None,
              help="--run: name of the work amount's unit, for reports (e.g. MiB, requests).")
@click.option("--timeout", type=float, metavar="SECONDS", help="--run: kill a round that runs longer.")
@click.option("--cut", metavar="COMPONENT",
              help="--run: component under test, e.g. block:vda (default: end of the data path).")
@click.option("--host", "host_specs", multiple=True, metavar="NAME=URL",
              help="--run: monitor a remote host too (repeatable), as for `pilot-sys run`.")
@click.option("--no-monitor", is_flag=True, help="--run: do not sample utilization.")
@click.option("--quiet", "-q", is_flag=True,
              help="--run: no progress output; the status line, the result directory and the "
                   "ranking.")
def compare(
    inputs: tuple[str, ...],
    column: str | None,
    pi_type: str,
    confidence: float,
    threshold: float,
    autocorr_limit: float,
    higher_is_better: bool | None,
    as_json: bool,
    runs: tuple[str, ...],
    pi: str | None,
    work_amount: str | None,
    output_dir: Path | None,
    session_limit: float | None,
    ci_perc: str | None,
    preset: str,
    max_rounds: int | None,
    parser: str,
    work_unit: str | None,
    timeout: float | None,
    cut: str | None,
    no_monitor: bool,
    quiet: bool,
    host_specs: tuple[str, ...] = (),
) -> None:
    """Is A different from B? Welch's t-test, honest under autocorrelation, on two data files,
    two result directories, or workloads run live and interleaved (--run NAME='CMD' ...).

    Prints the difference of the means with its CI, the p-value, a verdict, and, when undecided,
    how many more samples each side needs to reach the threshold.
    """
    ctx = click.get_current_context()
    if not runs:
        given = [opt for name, opt in RUN_ONLY.items()
                 if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
        if given:
            raise BadInput(given[0], "configures a live session: it needs --run NAME='CMD' (at least two); "
                                     "files and result directories were measured already")
    if runs:
        if inputs:
            raise BadInput("A B", "give either two files/result directories or --run options, not both")
        from pilot_sys.cli.run import parse_ci_perc, parse_work_amount
        from pilot_sys.cli.launch import execute_compare
        from pilot_sys.session.compare_launch import CompareRequest
        from pilot_sys.session.launch import RunRequest
        from pilot_sys.topology.remote_hosts import parse_host_specs

        request = RunRequest(
            work_amount=parse_work_amount(work_amount) if work_amount else None, output_dir=output_dir,
            session_limit=session_limit, ci_perc=parse_ci_perc(ci_perc) if ci_perc is not None else None,
            confidence=None if ctx.get_parameter_source("confidence")
            is click.core.ParameterSource.DEFAULT else confidence, preset=preset, max_rounds=max_rounds, parser=None if parser == "auto" else parser,
            work_unit=work_unit, timeout=timeout, cut=cut, monitor=not no_monitor, quiet=quiet, as_json=as_json,
            hosts=[h.spec for h in parse_host_specs(host_specs)],
            command_line=["pilot-sys", *sys.argv[1:]],
        )
        compare = CompareRequest(runs=list(runs), pi=pi, threshold=threshold, run=request)
        sys.exit(execute_compare(compare))
    if len(inputs) != 2:
        raise BadInput("A B", "give two data files or two result directories, or at least two --run NAME='CMD'")
    file_a, file_b = inputs
    if Path(file_a).is_dir() or Path(file_b).is_dir():
        if not (Path(file_a).is_dir() and Path(file_b).is_dir()):
            raise BadInput(file_b if Path(file_a).is_dir() else file_a, "is not a result directory like the other input")
        if not 0.0 < threshold < 1.0:
            raise BadInput("--threshold", f"{threshold:g} must be between 0 and 1, e.g. 0.01")
        from pilot_sys.cli.launch import execute_saved_compare

        execute_saved_compare([Path(file_a), Path(file_b)], pi, threshold, as_json)
        return
    if not 0.0 < confidence < 1.0:
        raise BadInput("--confidence", f"{confidence:g} must be between 0 and 1, e.g. 0.95")
    if not 0.0 < threshold < 1.0:
        raise BadInput("--threshold", f"{threshold:g} must be between 0 and 1, e.g. 0.01")
    if not 0.0 < autocorr_limit < 1.0:
        raise BadInput("--autocorr-limit", f"{autocorr_limit:g} must be between 0 and 1, e.g. 0.1")
    if file_a == "-" and file_b == "-":
        raise BadInput("B", "only one of A and B can be stdin (-)")

    from pilot_sys.dataio import read_table_column
    from pilot_sys.errors import InsufficientData
    from pilot_sys.stats.compare import compare_samples
    from pilot_sys.workload.base import PIType

    col_a = read_table_column(file_a, column)
    col_b = read_table_column(file_b, column)
    kind = PIType(pi_type)
    try:
        result = compare_samples(col_a.values, col_b.values, pi_type=kind, confidence=confidence,
                                 threshold=threshold, autocorr_limit=autocorr_limit)
    except BadInput as exc:  # "A"/"B" -> the file's name
        source = {"A": col_a.source, "B": col_b.source}.get(exc.where, exc.where)
        raise (InsufficientData if isinstance(exc, InsufficientData) else BadInput)(source, exc.problem) from None
    better_high = higher_is_better if higher_is_better is not None else kind is PIType.HARMONIC
    w = result.welch
    a_faster = None if result.verdict == "undecided" else ((result.verdict == "a_higher") == better_high)
    out = CompareOutput(
        a_source=col_a.source, b_source=col_b.source,
        column=col_a.name if col_a.name is not None else str(col_a.index), unit=col_a.unit or col_b.unit,
        pi_type=pi_type, confidence=confidence, threshold=threshold, mean_a=result.a.mean, mean_b=result.b.mean,
        difference=w.difference, relative_difference=result.relative_difference,
        difference_ci_low=w.ci.low, difference_ci_high=w.ci.high, t=w.t, dof=w.dof, p_value=w.p_value,
        verdict=result.verdict, higher_is_better=better_high, a_faster=a_faster,
        additional_samples_a=result.additional_samples_a, additional_samples_b=result.additional_samples_b,
        a=result.a, b=result.b,
    )
    if as_json:
        click.echo(out.model_dump_json(indent=2))
    else:
        _render(out)
