"""Pilot-compatible command macros: ``%WORK_AMOUNT%`` and ``%RESULT_DIR%``."""

from __future__ import annotations

import re
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


#: a size suffix written right after the macro, and the unit it makes of the work amount: fio,
#: dd and iperf3 all read a lone k/m/g/t, and the IEC names, as powers of 1024 (``KB`` or ``MB``
#: mean 1000s to some tools and 1024s to others, so they say nothing)
SIZE_SUFFIXES = {"k": "KiB", "m": "MiB", "g": "GiB", "t": "TiB"}
_AFTER_MACRO = re.compile(re.escape(WORK_AMOUNT) + r"([A-Za-z]*)")


def work_unit_of(argv: list[str]) -> str:
    """The unit of the work amount the command itself states (``--size=%WORK_AMOUNT%M``:
    ``MiB``), or ``""`` when it states none or uses the macro with different suffixes."""
    found: set[str] = set()
    for arg in argv:
        for suffix in _AFTER_MACRO.findall(arg):
            low = suffix.lower()
            if low in SIZE_SUFFIXES:
                found.add(SIZE_SUFFIXES[low])
            elif low in ("kib", "mib", "gib", "tib"):
                found.add(SIZE_SUFFIXES[low[0]])
            else:
                found.add("")
    return found.pop() if len(found) == 1 else ""
