"""The ``pilot-sys`` entry point.

Argument parsing stays thin: every subcommand lives in its own module under
``pilot_sys.cli`` and is imported only when it is called, so ``pilot-sys --help`` does not pay
for numpy, scipy or matplotlib.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import click

from pilot_sys import __version__
from pilot_sys.errors import ExitCode, MeasuredOutcome, PilotError
from pilot_sys.redaction import redact

# name -> (module, attribute, one-line help shown in `pilot-sys --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("pilot_sys.cli.run", "run", "Run a workload in rounds until every CI target is met."),
    "analyze": ("pilot_sys.cli.analyze", "analyze", "Mean and honest CI of one column of numbers."),
    "changepoints": (
        "pilot_sys.cli.changepoints",
        "changepoints",
        "EDM change points and the dominant stable segment.",
    ),
    "steady": (
        "pilot_sys.cli.steady",
        "steady",
        "Steady state, time to steady state and cold-start cost of latencies.",
    ),
    "compare": (
        "pilot_sys.cli.compare",
        "compare",
        "Welch comparison of saved results or interleaved live runs.",
    ),
    "graph": (
        "pilot_sys.cli.graph",
        "graph",
        "Discover the component data-link graph and the data path of arguments.",
    ),
    "monitor": (
        "pilot_sys.cli.monitor",
        "monitor",
        "Run a command while sampling utilization; name hidden bottlenecks.",
    ),
    "tune": (
        "pilot_sys.cli.tune",
        "tune",
        "Highest sampling rate within an overhead budget (Newton's method).",
    ),
    "report": (
        "pilot_sys.cli.report",
        "report",
        "Regenerate result.json, report.md and plots from a result directory.",
    ),
    "phases": (
        "pilot_sys.cli.phases",
        "phases",
        "Recurrent phase signatures of recorded runs and their matching score.",
    ),
}

# Commands that only read numbers or result directories and start no process. Their arithmetic
# is on vectors; numpy's OpenBLAS starts a worker thread per core when it loads, and their
# start-up and spinning cost 0.1-0.3 s of CPU per command (15 % of `analyze` on 1e6 readings)
# on cores that other jobs use. These commands ask OpenBLAS for one thread, before numpy is
# loaded, unless the user set a thread count. Commands that run a workload never do: the
# workload inherits the environment and its own threads are the user's choice.
ONE_BLAS_THREAD = frozenset({"analyze", "changepoints", "steady", "report", "phases"})
THREAD_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def ask_one_blas_thread(command: str) -> bool:
    """Set OPENBLAS_NUM_THREADS=1 for a read-only ``command`` when numpy is not loaded yet and
    the user chose no thread count; whether it was set."""
    if command not in ONE_BLAS_THREAD or "numpy" in sys.modules:
        return False
    if any(os.environ.get(name) for name in THREAD_COUNT_VARIABLES):
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [
            name
            for name, (mod, _, _) in COMMANDS.items()
            if importlib.util.find_spec(mod) is not None
        ]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr, _ = entry
        if importlib.util.find_spec(module_name) is None:
            return None
        ask_one_blas_thread(cmd_name)
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pilot-sys")
def cli() -> None:
    """pilot-sys: benchmark the right way, and know what you measured.

    Runs workloads in rounds until every performance index reaches its confidence-interval
    target, removes warm-up and cool-down, handles autocorrelation, and flags hidden
    bottlenecks in the data path. `pilot-sys COMMAND --help` explains each command.
    """


def fail(message: str, code: int = ExitCode.BAD_INPUT) -> None:
    """Print one line to stderr and exit; the shared way out for every command."""
    click.echo(f"pilot-sys: error: {redact(message)}", err=True)
    sys.exit(int(code))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: run the group, turning PilotError into one line and its exit code."""
    try:
        rv = cli.main(args=argv, prog_name="pilot-sys", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("pilot-sys: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except click.UsageError as exc:
        # One line naming the option, like every other bad input (the same words as the
        # commands that turn their own parse errors into BadInput)
        from pilot_sys.cli.common import usage_error

        fail(str(usage_error(exc, exc.ctx)), ExitCode.BAD_INPUT)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except MeasuredOutcome as exc:  # a measured answer, not an error: no "error:" before it
        click.echo(f"pilot-sys: {exc}", err=True)
        sys.exit(int(exc.exit_code))
    except PilotError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        click.echo("pilot-sys: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - the user gets one line; PILOT_SYS_DEBUG=1 shows the traceback
        if os.environ.get("PILOT_SYS_DEBUG"):
            raise
        fail(
            f"internal error: {type(exc).__name__}: {exc} "
            "(set PILOT_SYS_DEBUG=1 for the traceback, and please report it)",
            ExitCode.ERROR,
        )
    sys.exit(rv if isinstance(rv, int) else 0)
