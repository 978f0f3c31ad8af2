"""Pieces shared by the subcommands' argument parsing."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pilot_sys.errors import BadInput

# --ci-perc: one meaning for every command (run, analyze, compare --run)
CI_PERC_HELP = (
    "Target full CI width (high - low) as a percentage of the mean: 5, 5% and 0.5 (= 0.5 %) are "
    "all percentages. The output shows the target as ± half of it (5% is shown as ± 2.5 %)."
)
MAX_CI_PERC = 1000.0  # a CI ten times as wide as the mean says nothing


def parse_percent(text: str, option: str = "--ci-perc", upper: float = MAX_CI_PERC) -> float:
    """``"5"``, ``"5%"``, ``"5 %"`` -> 5.0; ``"0.5"`` -> 0.5 (always a percentage, never a
    fraction: one reading for every command, so the same text never means two targets)."""
    raw = text.strip()
    number = raw[:-1].rstrip() if raw.endswith("%") else raw
    try:
        value = float(number)
    except ValueError:
        raise BadInput(option, f"expected a percentage such as 5 or 5%, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise BadInput(option, f"{number} must be > 0 and finite, e.g. 10 for 10% of the mean")
    if value >= upper:
        raise BadInput(
            option,
            f"{raw}: a CI {value:g} % as wide as the mean says nothing; give "
            f"less than {upper:g}, e.g. 10 for 10% of the mean",
        )
    return value


DECIMAL_HELP = (
    "Decimal mark of the numbers: ',' reads 1,65 as 1.65 (columns then separated by ';', tabs or "
    "spaces); '.' says commas separate columns. Default: refuse headerless data that could be "
    "either."
)


def decimal_option(function: Any) -> Any:
    """``--decimal [.|,]`` for the commands that read a column of numbers."""
    return click.option(
        "--decimal", type=click.Choice([".", ","]), default=None, metavar="[.|,]", help=DECIMAL_HELP
    )(function)


F = TypeVar("F", bound=Callable[..., Any])


def library_warnings_as_notes(function: F) -> F:
    """A command's stderr holds pilot-sys's own lines only: warnings of the libraries it calls
    (numpy, pandas, matplotlib) are caught where the command runs. A numeric one
    (RuntimeWarning: an overflow, an empty slice) says something about the numbers and is told
    once as a ``pilot-sys: note:`` line; the cosmetic ones (a layout or legend that does not fit)
    are dropped."""

    @functools.wraps(function)
    def command(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")  # once per place: a warning per round stays one
            try:
                return function(*args, **kwargs)
            finally:
                told: set[str] = set()
                for w in caught:
                    if not issubclass(w.category, RuntimeWarning):
                        continue
                    origin = Path(w.filename).parts
                    where = next(
                        (
                            p
                            for p in origin
                            if p in ("numpy", "pandas", "matplotlib", "scipy", "pilot_sys")
                        ),
                        "a library",
                    )
                    text = f"{w.message} (a {w.category.__name__} in {where})"
                    if text not in told:
                        told.add(text)
                        click.echo(f"pilot-sys: note: {text}", err=True)

    return command  # type: ignore[return-value]


class OneLineErrors(click.Command):
    """Usage errors (unknown option, a value of the wrong type) as one ``BadInput`` line.

    click's own four-line usage block breaks the one-line error rule and scripts that read stderr.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise usage_error(exc, ctx) from None


def usage_error(exc: click.UsageError, ctx: click.Context | None) -> BadInput:
    """A click usage error as one ``BadInput`` line naming the option or argument, so every
    command words a bad value the same way (``--rate: 'nan' is not a finite number``)."""
    param = getattr(exc, "param", None)
    command = ctx.command_path if ctx is not None else "pilot-sys"
    if isinstance(param, click.Argument):
        where = param.human_readable_name  # its metavar, e.g. DIR_OR_TRACE...
    else:
        where = getattr(exc, "option_name", None) or (
            param.opts[0] if param is not None and getattr(param, "opts", None) else ""
        )
    message = exc.format_message()
    if message.startswith("Invalid value for"):
        message = message.split(": ", 1)[-1]
    return BadInput(where, f"{message.rstrip('.')} (see {command} --help)")


def save_figure(fig: Any, path: str | Path, *, option: str = "--plot", dpi: int = 110) -> None:
    """Write a matplotlib figure and close it; an OS failure is bad input on ``option``.

    Commands check the path before measuring anything; this catches what only the write can
    reveal (a full disk, permissions changed meanwhile), so a plot never ends in a traceback.
    """
    import matplotlib.pyplot as plt

    from pilot_sys.safefile import save_figure_safely  # lazy: secrets and hmac, for plots only

    try:
        save_figure_safely(fig, path, dpi=dpi)
    except OSError as exc:
        raise BadInput(option, f"{path}: cannot write ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)


class FiniteFloat(click.types.FloatParamType):
    """A float option that refuses ``nan`` and ``inf``: click's ``float`` accepts both, and a
    non-finite bound or timeout silently means "none" (every comparison with nan is False).
    Every float option of every command uses this type (tests/test_hostile_options.py checks)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class FiniteFloatRange(click.FloatRange):
    """click's ``FloatRange`` without nan and inf (which its comparisons let through)."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.types.FloatParamType.convert(self, value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(value, param, ctx)


FINITE_FLOAT = FiniteFloat()
