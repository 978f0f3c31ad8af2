"""Pieces shared by the subcommands' argument parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pilot_sys.errors import BadInput


class OneLineErrors(click.Command):
    """Usage errors (unknown option, a value of the wrong type) as one ``BadInput`` line.

    click's own four-line usage block breaks the one-line error rule and scripts that read stderr.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            param = getattr(exc, "param", None)
            if isinstance(param, click.Argument):
                where = param.human_readable_name  # its metavar, e.g. DIR_OR_TRACE...
            else:
                where = getattr(exc, "option_name", None) or (
                    param.opts[0] if param is not None and getattr(param, "opts", None) else ctx.command_path
                )
            message = exc.format_message()
            if message.startswith("Invalid value for"):
                message = message.split(": ", 1)[-1]
            raise BadInput(where, f"{message.rstrip('.')} (see {ctx.command_path} --help)") from None


def save_figure(fig: Any, path: str | Path, *, option: str = "--plot", dpi: int = 110) -> None:
    """Write a matplotlib figure and close it; an OS failure is bad input on ``option``.

    Commands check the path before measuring anything; this catches what only the write can
    reveal (a full disk, permissions changed meanwhile), so a plot never ends in a traceback.
    """
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path, dpi=dpi)
    except OSError as exc:
        raise BadInput(option, f"{path}: cannot write ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
