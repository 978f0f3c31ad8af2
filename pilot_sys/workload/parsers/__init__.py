"""Output parsers: pure functions from a round's captured output to readings and unit readings.

``PARSERS`` maps the names users give to ``--parser`` to the function; ``none`` has no function
(the round's duration-derived work rate is its only reading, computed by the runner).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from pilot_sys.workload.parsers import dd, fio, iperf3, table
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput, ParsedOutput

Parser = Callable[[CapturedOutput], ParsedOutput]

PARSERS: dict[str, Parser | None] = {
    "fio": fio.parse,
    "iperf3": iperf3.parse,
    "dd": dd.parse,
    "csv": table.parse,
    "lines": partial(table.parse, one_column=True),
    "none": None,
}

__all__ = ["PARSERS", "CapturedOutput", "MalformedOutput", "ParsedOutput", "Parser"]
