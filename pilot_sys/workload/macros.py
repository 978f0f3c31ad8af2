"""Pilot-compatible command macros: ``%WORK_AMOUNT%`` and ``%RESULT_DIR%``."""

from __future__ import annotations

from pathlib import Path

WORK_AMOUNT = "%WORK_AMOUNT%"
RESULT_DIR = "%RESULT_DIR%"


def format_work_amount(value: float, *, integer: bool = True) -> str:
    """The text put in place of ``%WORK_AMOUNT%``.

    Pilot's work amounts are integers, and most tools reject ``--size=12.5M``; so by default the
    amount is rounded (the round then reports the amount actually run). ``integer=False`` keeps
    fractions for tools that take them (``iperf3 -t 2.5``), written without a trailing ``.0``.
    """
    if integer:
        return str(int(round(value)))
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def uses_work_amount(argv: list[str]) -> bool:
    return any(WORK_AMOUNT in arg for arg in argv)


def substitute(argv: list[str], work_amount: str, result_dir: Path) -> list[str]:
    """Replace both macros in every argument (anywhere inside it, e.g.
    ``--size=%WORK_AMOUNT%M``)."""
    return [
        arg.replace(WORK_AMOUNT, work_amount).replace(RESULT_DIR, str(result_dir)) for arg in argv
    ]
