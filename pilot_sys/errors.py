"""Errors that the CLI turns into one clear line and an exit code, never a traceback."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, shared by every command (documented in README.md).

    2 is for input that cannot be used; a measurement that ran says what it found with 0 or
    3-7, so a script can tell "fix the command line" from "the machine said so". ``tune``
    (and ``run --overhead-budget``, which tunes first) ends with 0 when the overhead's interval
    shows the budget met, 6 when the interval straddles the budget (more pairs of rounds or a
    quieter machine would decide it) and 7 when the interval lies above the budget even at the
    slowest useful rate (raise the budget or accept slower sampling).
    """

    OK = 0
    ERROR = 1  # an unexpected internal error
    BAD_INPUT = 2  # usage errors and bad input files (click also uses 2 for usage)
    INVALID_RESULT = 3  # a hidden bottleneck made the result invalid
    LIMIT_REACHED = 4  # session time limit (tune: measurements) ran out before the answer
    WORKLOAD_FAILED = 5  # the workload exited with a code not accepted
    UNDECIDED = 6  # the measurement cannot decide: its interval straddles the threshold asked for
    OVER_BUDGET = 7  # the overhead is shown above the budget even at the slowest useful rate
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


class MeasuredOutcome(PilotError):
    """A measurement that ran and found an answer the command cannot proceed on (the budget of
    ``run --overhead-budget`` not shown met): one line and its own exit code, not bad input.

    ``where`` names the option whose value the measurement was held against."""

    def __init__(self, where: str, problem: str, exit_code: int) -> None:
        self.where = where
        self.problem = problem
        self.exit_code = exit_code
        super().__init__(f"{where}: {problem}")
