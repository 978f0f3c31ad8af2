"""`pilot-sys run`: option parsing only; the session lives in ``pilot_sys.session``."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from pilot_sys.cli.common import (
    CI_PERC_HELP,
    FINITE_FLOAT,
    library_warnings_as_notes,
    parse_percent,
)
from pilot_sys.cli.fleet_options import declared_hosts, prometheus_option
from pilot_sys.errors import BadInput
from pilot_sys.redaction import redact_all

PARSER_CHOICES = ["auto", "fio", "iperf3", "dd", "csv", "lines", "none"]


# the largest whole number a float holds exactly: %WORK_AMOUNT% is substituted as an integer
MAX_WORK_AMOUNT = float(2**53)


def parse_work_amount(text: str) -> tuple[float, float]:
    """``MIN,MAX`` (Pilot's -w); finite, 0 <= MIN <= MAX, 0 < MAX <= 2**53."""
    parts = text.split(",")
    if len(parts) != 2:
        raise BadInput("-w/--work-amount", f"expected MIN,MAX (e.g. 16,1024), got {text!r}")
    try:
        low, high = float(parts[0]), float(parts[1])
    except ValueError:
        raise BadInput("-w/--work-amount", f"MIN and MAX must be numbers, got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise BadInput("-w/--work-amount", f"MIN and MAX must be finite numbers, got {text!r}")
    if low < 0 or high <= 0 or high < low:
        raise BadInput("-w/--work-amount", f"need 0 <= MIN <= MAX and MAX > 0, got {text!r}")
    if high > MAX_WORK_AMOUNT:
        raise BadInput(
            "-w/--work-amount",
            f"MAX must be at most 2^53 = {MAX_WORK_AMOUNT:.0f} (the "
            f"largest whole number held exactly), got {text!r}",
        )
    return low, high


def parse_ci_perc(text: str) -> float:
    """The --ci-perc text as a fraction of the mean: ``5``, ``5%`` -> 0.05; ``0.5`` -> 0.005
    (always a percentage, as in every command: ``pilot_sys.cli.common.parse_percent``)."""
    return parse_percent(text, "--ci-perc") / 100


def parse_output_dir(text: str | None) -> Path | None:
    """``-o DIR``; an empty path would silently mean the current directory."""
    if text is None:
        return None
    if not text.strip():
        raise BadInput("-o/--output-dir", "is empty; name a directory (e.g. -o results/run1)")
    return Path(text)


def parse_env(items: tuple[str, ...]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput("--env", f"expected K=V, got {item!r}")
        env[key] = value
    return env


def parse_codes(text: str) -> list[int]:
    try:
        codes = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise BadInput(
            "--accept-rc", f"expected comma-separated integers like 0,1, got {text!r}"
        ) from None
    if not codes:
        raise BadInput("--accept-rc", "no return code given")
    return codes


EXAMPLES = """
\b
Examples:
  pilot-sys run --preset quick
      benchmark the storage under the current directory (built-in sequential write/read)
  pilot-sys run -w 16,1024 -- fio --name=w --rw=write --bs=1M --size=%WORK_AMOUNT%M \\
      --filename=/tmp/fio.dat --direct=1
  pilot-sys run --parser lines --ci-perc 5% -- python3 bench.py
  pilot-sys run --overhead-budget 1% --parser lines -- python3 bench.py
      tune the monitor's sampling rate first (see `pilot-sys tune`), then run at that rate
  pilot-sys run --resume pilot-results/20261121-064500-fio

\b
Exit codes: 0 valid result; 2 bad input (also a result directory that cannot be written);
3 invalid (hidden bottleneck); 4 stopped before every CI target: the session limit, or a full
disk (every journaled round is kept); 5 workload failure; with --overhead-budget, 6 the
tuner could not decide the budget and 7 it is exceeded even at the slowest rate (see `pilot-sys
tune`); 130 interrupted during the rounds
(all rounds kept: continue with --resume DIR, rebuild reports with `pilot-sys report DIR`).
After the last round, a first Ctrl-C lets the result and the reports be finished.
"""


def preset_help() -> str:
    """The presets as a table, from ``session.config.PRESETS`` at help time."""
    from pilot_sys.session.config import Preset, preset_rows

    rows = preset_rows()
    width = max(len(label) for label, _ in rows)
    cols = [max(len(p.value), *(len(v[i]) for _, v in rows)) for i, p in enumerate(Preset)]
    head = " " * (width + 2) + "  ".join(
        p.value.ljust(c) for p, c in zip(Preset, cols, strict=True)
    )
    body = [
        f"{label.ljust(width)}  " + "  ".join(v.ljust(c) for v, c in zip(values, cols, strict=True))
        for label, values in rows
    ]
    return "\n".join(
        [
            "Presets (--preset; each value can be overridden by its own option):",
            "",
            *(f"  {line.rstrip()}" for line in [head, *body]),
        ]
    )


class RunCommand(click.Command):
    """`run`: the preset table (``session.config.PRESETS``) and the terms (``session.glossary``,
    as report.md's Terms section) are read from the code when --help is asked."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from pilot_sys.session.glossary import GLOSSARY

        super().format_epilog(ctx, formatter)
        formatter.write_paragraph()
        head, _, table = preset_help().partition("\n\n")
        formatter.write_text(head)
        formatter.write_paragraph()
        indent = " " * formatter.current_indent
        formatter.write("".join(f"{indent}{line}\n" for line in table.splitlines()))
        formatter.write_paragraph()
        formatter.write_text("Terms in the output:")
        with formatter.indentation():
            formatter.write_dl(list(GLOSSARY), col_max=18)


@click.command(
    "run", cls=RunCommand, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "-w",
    "--work-amount",
    "work_amount",
    metavar="MIN,MAX",
    help="Valid range of %WORK_AMOUNT% "
    "(built-in workload: MiB, default 16,1024 capped by free space).",
)
@click.option(
    "-o",
    "--output-dir",
    metavar="DIR",
    help="Result directory: new, empty, or a result directory with --resume "
    "(default: ./pilot-results/<time>-<name>).",
)
@click.option(
    "-s",
    "--session-limit",
    type=FINITE_FLOAT,
    metavar="SECONDS",
    help="Stop after this much session time (0: no limit): every invocation's, --resume "
    "included, not the gaps between them. Default: the preset's (table below).",
)
@click.option("--ci-perc", metavar="PCT", help=f"{CI_PERC_HELP} Default: the preset's.")
@click.option(
    "--confidence", type=FINITE_FLOAT, help="Confidence level of the CIs. Default: the preset's."
)
@click.option(
    "--preset",
    type=click.Choice(["quick", "normal", "strict"]),
    default="normal",
    show_default=True,
    help="Targets and limits: quick, normal, strict (table below).",
)
@click.option(
    "--min-rounds", type=int, help="Analysed rounds needed before stopping. Default: the preset's."
)
@click.option("--max-rounds", type=int, help="Stop after this many rounds.")
@click.option(
    "--first-result",
    type=FINITE_FLOAT,
    metavar="SECONDS",
    help="t of the k heuristic: a first rough result within t seconds.",
)
@click.option(
    "--min-round-seconds",
    type=FINITE_FLOAT,
    help="Shorter rounds are stored but not analysed. Default: the preset's.",
)
@click.option(
    "--max-round-seconds", type=FINITE_FLOAT, help="Longest planned round. Default: the preset's."
)
@click.option(
    "--parser",
    type=click.Choice(PARSER_CHOICES),
    default="auto",
    show_default=True,
    help="How to read the command's output "
    "(auto: from the program name: fio, iperf3, dd; else none).",
)
@click.option(
    "--work-unit",
    default=None,
    help="Name of the work amount's unit, for reports (e.g. MiB, requests).",
)
@click.option(
    "--timeout",
    type=FINITE_FLOAT,
    metavar="SECONDS",
    help="Kill a round that runs longer (a workload failure).",
)
@click.option(
    "--accept-rc",
    default="0",
    show_default=True,
    metavar="CODES",
    help="Return codes that count as success.",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="K=V",
    help="Environment variable for the command (repeatable).",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    help="Directory for the built-in workload (default: .).",
)
@click.option("--name", help="Workload name used in reports and the result directory.")
@click.option(
    "--cut",
    metavar="COMPONENT",
    help="Component under test, e.g. block:vda (default: end of the data path).",
)
@click.option(
    "--cgroup",
    metavar="PATH",
    help="Start every round inside this cgroup: a path inside the hierarchies (/bench: every "
    "mounted v1 hierarchy that has it, or the v2 leaf) or one hierarchy's directory. "
    "Its limits are discovered and judged. Default: the cgroup pilot-sys runs in.",
)
@click.option(
    "--host",
    "host_specs",
    multiple=True,
    metavar="NAME=URL",
    help="Monitor a remote host too (repeatable): http://H:9100 is node_exporter, "
    "pcp://H:44322 is PCP's pmproxy, prom://P:9090?instance=H:9100 a Prometheus server "
    "that scrapes H. Hosts the command names are placed on its "
    "data path.",
)
@prometheus_option()
@click.option(
    "--no-monitor", is_flag=True, help="Do not sample utilization (no bottleneck verdict)."
)
@click.option(
    "--sample-rate",
    type=FINITE_FLOAT,
    metavar="HZ",
    help="Monitor sampling rate, above 0 and at most USER_HZ (100 Hz on Linux: the "
    "CPU counters' tick; faster reads the same counts). Default 10 Hz.",
)
@click.option(
    "--overhead-budget",
    metavar="PCT",
    help="Tune the sampling rate first: the highest rate whose measured overhead (CI upper bound) "
    "stays within PCT of the PI, e.g. 1%. See `pilot-sys tune`.",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Continue the session in DIR; targets and limits given with it (--ci-perc, "
    "--preset, -s, --max-rounds ...) apply from now on and are recorded.",
)
@click.option(
    "--repair",
    is_flag=True,
    help="With --resume: set aside (rename to *.incomplete, never delete) round folders "
    "the journal does not know, which are otherwise refused as damage.",
)
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots (faster on very long sessions).")
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress output; print only the status line and the result directory.",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="The full progress line per round (every PI, what it still needs), also on a "
    "terminal, where the default is one status line.",
)
@click.option("--json", "as_json", is_flag=True, help="Print result.json to stdout at the end.")
@library_warnings_as_notes
def run(
    command: tuple[str, ...],
    work_amount: str | None,
    output_dir: str | None,
    session_limit: float | None,
    ci_perc: str | None,
    confidence: float | None,
    preset: str,
    min_rounds: int | None,
    max_rounds: int | None,
    first_result: float | None,
    min_round_seconds: float | None,
    max_round_seconds: float | None,
    parser: str,
    work_unit: str | None,
    timeout: float | None,
    accept_rc: str,
    env: tuple[str, ...],
    directory: Path | None,
    name: str | None,
    cut: str | None,
    no_monitor: bool,
    sample_rate: float | None,
    overhead_budget: str | None,
    resume: Path | None,
    repair: bool,
    cgroup: str | None,
    no_plots: bool,
    quiet: bool,
    verbose: bool,
    as_json: bool,
    host_specs: tuple[str, ...] = (),
    prometheus_urls: tuple[str, ...] = (),
) -> None:
    """Run a workload in rounds until every performance index meets its CI target.

    With no COMMAND, benchmarks the storage under the current directory (or --dir) with the
    built-in sequential write/read workload. COMMAND may use %WORK_AMOUNT% (set per round
    within -w MIN,MAX) and %RESULT_DIR% (the round's folder). Every round is journaled in the
    result directory before the next decision; Ctrl-C keeps everything measured.
    """
    from pilot_sys.cli.tune import parse_budget

    budget = (
        parse_budget(overhead_budget, "--overhead-budget") if overhead_budget is not None else None
    )
    ctx = click.get_current_context()
    given = [
        p.opts[-1]
        for p in ctx.command.params
        if isinstance(p, click.Option)
        and p.name
        and ctx.get_parameter_source(p.name) not in (None, click.core.ParameterSource.DEFAULT)
    ]
    from pilot_sys.cli.launch import execute_run
    from pilot_sys.session.launch import RunRequest

    # one line naming the bad --host or --prometheus before anything runs; the fleets expanded
    # to hosts once, here, and stored with passwords masked
    declared, fleets = declared_hosts(
        host_specs,
        prometheus_urls,
        monitor=not no_monitor,
        discover=resume is None,
        quiet=quiet,
    )
    hosts = [h.spec for h in declared]

    request = RunRequest(
        command=list(command),
        work_amount=parse_work_amount(work_amount) if work_amount else None,
        output_dir=parse_output_dir(output_dir),
        session_limit=session_limit,
        ci_perc=parse_ci_perc(ci_perc) if ci_perc is not None else None,
        confidence=confidence,
        preset=preset if "--preset" in given else None,
        min_rounds=min_rounds,
        max_rounds=max_rounds,
        first_result=first_result,
        min_round_seconds=min_round_seconds,
        max_round_seconds=max_round_seconds,
        parser=None if parser == "auto" else parser,
        work_unit=work_unit,
        timeout=timeout,
        accept_rc=parse_codes(accept_rc),
        env=parse_env(env),
        directory=directory,
        name=name,
        cut=cut,
        cgroup=cgroup,
        hosts=hosts,
        prometheus=fleets,
        monitor=not no_monitor,
        sample_rate=sample_rate,
        overhead_budget=budget,
        resume=resume,
        repair=repair,
        plots=not no_plots,
        quiet=quiet,
        verbose=verbose,
        as_json=as_json,
        command_line=redact_all(["pilot-sys", *sys.argv[1:]]),
        given=given,
    )
    code = execute_run(request)
    sys.exit(code)
