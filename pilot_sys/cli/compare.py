"""``pilot-sys compare``: Welch comparison of two data files, of saved result directories, or of
workloads run live with their rounds interleaved.

Thin on purpose: data files go to ``pilot_sys.stats.compare.compare_samples``; result
directories and ``--run`` go to ``pilot_sys.cli.launch`` (over
``pilot_sys.session.compare_launch``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pilot_sys import units
from pilot_sys.cli.common import FINITE_FLOAT
from pilot_sys.cli.fleet_options import declared_hosts, prometheus_option
from pilot_sys.errors import BadInput
from pilot_sys.redaction import redact_all
from pilot_sys.stats.ci import Summary

PI_HELP = "The PI to put first and rank by (result directories and --run; default: the primary PI)."


# parameter -> option: the session options, meaningless for data already measured
RUN_ONLY = {
    "work_amount": "-w/--work-amount",
    "output_dir": "-o/--output-dir",
    "session_limit": "-s/--session-limit",
    "ci_perc": "--ci-perc",
    "preset": "--preset",
    "max_rounds": "--max-rounds",
    "parser": "--parser",
    "work_unit": "--work-unit",
    "timeout": "--timeout",
    "cut": "--cut",
    "no_monitor": "--no-monitor",
    "quiet": "--quiet",
    "verbose": "--verbose",
    "host_specs": "--host",
    "prometheus_urls": "--prometheus",
}


@click.command(
    "compare",
    epilog="""\b
Examples:
  pilot-sys compare before.csv after.csv --column 'throughput (MiB/s)' --pi-type harmonic
  pilot-sys compare a.txt b.txt --threshold 0.05 --json
  pilot-sys compare pilot-results/old-fio pilot-results/new-fio --pi write_bw
  pilot-sys compare --parser lines --run old='python3 bench.py 1' --run new='python3 bench.py 2'

\b
Each file holds one series in time order (subsession analysis handles autocorrelation).
A unit in the header, "latency (ms)", is kept: B is converted to A's unit (us -> ms) and
columns that measure different things (a time against a throughput) are refused.
A result directory is read back from its result.json (its first workload). Two of them, or
the workloads of --run (each against the first), get a table of every PI both report: A, B
(mean ± the interval's half width), A - B with its Welch CI, the change relative to B,
Welch's p and a verdict: A faster, B faster, not significant (with about how many more
rounds would decide it), or cannot decide (a side has no interval, or a rate's interval is
wider than the rate). The PI ranked by comes first: --pi, else the primary PI (the
bandwidth of fio, iperf3, dd and the built-in workload; never the WPS fit). A session that
is not valid (invalid, limit reached, interrupted) is named: the comparison inherits it.
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
@click.option(
    "--column",
    "-c",
    metavar="NAME|INDEX",
    help="Column to read in both files (header name or 0-based index).",
)
@click.option(
    "--pi-type",
    type=click.Choice(["arithmetic", "harmonic", "proportion"]),
    default="arithmetic",
    show_default=True,
    help="arithmetic: times and sizes; harmonic: rates (throughput); proportion: 0/1 outcomes.",
)
@click.option(
    "--confidence",
    type=FINITE_FLOAT,
    default=0.95,
    show_default=True,
    help="Confidence level of the CIs.",
)
@click.option(
    "--threshold",
    type=FINITE_FLOAT,
    default=0.01,
    show_default=True,
    help="p-value below which the difference is significant.",
)
@click.option(
    "--autocorr-limit",
    type=FINITE_FLOAT,
    default=0.1,
    show_default=True,
    help="Largest |lag-1 autocorrelation| of subsession means.",
)
@click.option(
    "--higher-is-better/--lower-is-better",
    default=None,
    help="Which direction is faster  [default: higher for harmonic (rates), lower otherwise].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one machine-readable JSON object.")
@click.option(
    "--run",
    "runs",
    multiple=True,
    metavar="NAME='CMD'",
    help="A workload to run live (repeat, at least twice).",
)
@click.option("--pi", help=PI_HELP)
@click.option("-w", "--work-amount", metavar="MIN,MAX", help="--run: valid range of %WORK_AMOUNT%.")
@click.option(
    "-o", "--output-dir", type=click.Path(path_type=Path), help="--run: result directory."
)
@click.option(
    "-s",
    "--session-limit",
    type=FINITE_FLOAT,
    metavar="SECONDS",
    help="--run: stop after this long (0: no limit).",
)
@click.option("--ci-perc", metavar="PCT", help="--run: target full CI width, e.g. 5%.")
@click.option(
    "--preset",
    type=click.Choice(["quick", "normal", "strict"]),
    default="normal",
    show_default=True,
    help="--run: targets and limits, as for `pilot-sys run`.",
)
@click.option("--max-rounds", type=int, help="--run: stop after this many rounds of each workload.")
@click.option(
    "--parser",
    type=click.Choice(["auto", "fio", "iperf3", "dd", "csv", "lines", "none"]),
    default="auto",
    show_default=True,
    help="--run: how to read the commands' output.",
)
@click.option(
    "--work-unit",
    default=None,
    help="--run: name of the work amount's unit, for reports (e.g. MiB, requests).",
)
@click.option(
    "--timeout", type=FINITE_FLOAT, metavar="SECONDS", help="--run: kill a round that runs longer."
)
@click.option(
    "--cut",
    metavar="COMPONENT",
    help="--run: component under test, e.g. block:vda (default: end of the data path).",
)
@click.option(
    "--host",
    "host_specs",
    multiple=True,
    metavar="NAME=URL",
    help="--run: monitor a remote host too (repeatable), as for `pilot-sys run`.",
)
@prometheus_option("--run: ")
@click.option("--no-monitor", is_flag=True, help="--run: do not sample utilization.")
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="--run: no progress output; the status line, the result directory and the ranking.",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="--run: the full progress line per round (every PI, what it still needs), also on a "
    "terminal, where the default is one status line.",
)
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
    verbose: bool,
    host_specs: tuple[str, ...] = (),
    prometheus_urls: tuple[str, ...] = (),
) -> None:
    """Is A different from B? Welch's t-test, honest under autocorrelation, on two data files,
    two result directories, or workloads run live and interleaved (--run NAME='CMD' ...).

    Prints the difference of the means with its CI, the p-value, a verdict, and, when undecided,
    how many more samples each side needs to reach the threshold.
    """
    ctx = click.get_current_context()
    if not runs:
        given = [
            opt
            for name, opt in RUN_ONLY.items()
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise BadInput(
                given[0],
                "configures a live session: it needs --run NAME='CMD' (at least two); "
                "files and result directories were measured already",
            )
    if runs:
        if inputs:
            raise BadInput(
                "A B", "give either two files/result directories or --run options, not both"
            )
        from pilot_sys.cli.launch import execute_compare
        from pilot_sys.cli.run import parse_ci_perc, parse_work_amount
        from pilot_sys.session.compare_launch import CompareRequest
        from pilot_sys.session.launch import RunRequest

        declared, fleets = declared_hosts(
            host_specs, prometheus_urls, monitor=not no_monitor, quiet=quiet
        )
        request = RunRequest(
            work_amount=parse_work_amount(work_amount) if work_amount else None,
            output_dir=output_dir,
            session_limit=session_limit,
            ci_perc=parse_ci_perc(ci_perc) if ci_perc is not None else None,
            confidence=None
            if ctx.get_parameter_source("confidence") is click.core.ParameterSource.DEFAULT
            else confidence,
            preset=preset,
            max_rounds=max_rounds,
            parser=None if parser == "auto" else parser,
            work_unit=work_unit,
            timeout=timeout,
            cut=cut,
            hosts=[h.spec for h in declared],
            prometheus=fleets,
            monitor=not no_monitor,
            quiet=quiet,
            verbose=verbose,
            as_json=as_json,
            command_line=redact_all(["pilot-sys", *sys.argv[1:]]),
        )
        compare = CompareRequest(runs=list(runs), pi=pi, threshold=threshold, run=request)
        sys.exit(execute_compare(compare))
    if len(inputs) != 2:
        raise BadInput(
            "A B", "give two data files or two result directories, or at least two --run NAME='CMD'"
        )
    file_a, file_b = inputs
    if Path(file_a).is_dir() or Path(file_b).is_dir():
        if not (Path(file_a).is_dir() and Path(file_b).is_dir()):
            raise BadInput(
                file_b if Path(file_a).is_dir() else file_a,
                "is not a result directory like the other input",
            )
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

    from pilot_sys.cli.present.comparison import CompareOutput, print_file_comparison
    from pilot_sys.dataio import read_table_column, reconcile_units
    from pilot_sys.errors import InsufficientData
    from pilot_sys.session.compare_pis import implausible
    from pilot_sys.stats.compare import compare_samples
    from pilot_sys.stats.pi import PIType

    col_a = read_table_column(file_a, column)
    col_b = read_table_column(file_b, column)
    same = reconcile_units(col_a, col_b)  # B in A's unit, or one line and exit 2
    kind = PIType(pi_type)
    try:
        result = compare_samples(
            same.values_a,
            same.values_b,
            pi_type=kind,
            confidence=confidence,
            threshold=threshold,
            autocorr_limit=autocorr_limit,
        )
    except BadInput as exc:  # "A"/"B" -> the file's name
        source = {"A": col_a.source, "B": col_b.source}.get(exc.where, exc.where)
        raise (InsufficientData if isinstance(exc, InsufficientData) else BadInput)(
            source, exc.problem
        ) from None
    better_high = higher_is_better if higher_is_better is not None else kind is PIType.HARMONIC
    w = result.welch
    verdict: str = result.verdict
    halves = {"A": _relative_half_width(result.a), "B": _relative_half_width(result.b)}
    wide = [
        f"{label}'s interval ({units.plus_minus(half)}) is wider than the rate itself"
        for label, half in halves.items()
        if implausible(pi_type, half)
    ]
    reason = f"{' and '.join(wide)}: it says nothing about where the rate is" if wide else ""
    if wide:
        verdict = "cannot_decide"
    decided = verdict in ("a_higher", "a_lower")
    out = CompareOutput(
        a_source=col_a.source,
        b_source=col_b.source,
        column=col_a.name if col_a.name is not None else str(col_a.index),
        unit=same.unit,
        unit_note=same.note,
        pi_type=pi_type,
        confidence=confidence,
        threshold=threshold,
        mean_a=result.a.mean,
        mean_b=result.b.mean,
        difference=w.difference,
        relative_difference=result.relative_difference,
        difference_ci_low=w.ci.low,
        difference_ci_high=w.ci.high,
        t=w.t,
        dof=w.dof,
        p_value=w.p_value,
        verdict=verdict,
        reason=reason,
        higher_is_better=better_high,
        a_faster=((verdict == "a_higher") == better_high) if decided else None,
        additional_samples_a=result.additional_samples_a,
        additional_samples_b=result.additional_samples_b,
        a=result.a,
        b=result.b,
    )
    print_file_comparison(out, as_json)


def _relative_half_width(s: Summary) -> float | None:
    """A summary's interval as a half width relative to its mean."""
    return units.relative_half_width(s.mean, s.ci_low, s.ci_high)
