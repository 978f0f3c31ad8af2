"""Errors that the CLI turns into one clear line and an exit code, never a traceback."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, shared by every command (documented in README.md)."""

    OK = 0
    ERROR = 1  # an unexpected internal error
    BAD_INPUT = 2  # usage errors and bad input files (click also uses 2 for usage)
    INVALID_RESULT = 3  # a hidden bottleneck made the result invalid
    LIMIT_REACHED = 4  # session time limit reached before every CI target
    WORKLOAD_FAILED = 5  # the workload exited with a code not accepted
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), after everything measured was saved


class PilotError(Exception):
    """Base of the errors pilot-sys reports as one line."""

    exit_code: int = ExitCode.ERROR


class BadInput(PilotError):
    """The user's input (a file, a value, an option) cannot be used.

    ``where`` names the input, e.g. ``data.csv:12:3`` (file, line, column) or ``--ci-perc``.
    """

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}" if where else problem)


class InsufficientData(BadInput):
    """Fewer samples than a method needs; reported like bad input (exit 2)."""


class WorkloadFailed(PilotError):
    exit_code = ExitCode.WORKLOAD_FAILED
