"""Pieces shared by the subcommands' argument parsing."""

from __future__ import annotations

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
