"""Numbers a workload prints itself: CSV with a header, or one value per line.

One data row gives one reading per numeric column. Several rows are unit readings in time order,
and the round's reading is their mean of the PI's type (harmonic for rates). A column named
``time``, ``timestamp`` or ``t`` gives the unit readings' timestamps instead of a PI. Without a
header, columns are named ``value`` (one column) or ``col1``, ``col2``...; ``specs`` renames
units and types by PI name.
"""

from __future__ import annotations

import csv
import io
import math
from array import array
from dataclasses import dataclass, field

import numpy as np

from pilot_sys.limits import PARSED_VALUES
from pilot_sys.stats.pi import MEASURABLE_MAX, MEASURABLE_MIN, PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.parsers.result import (
    CapturedOutput,
    MalformedOutput,
    NonFinite,
    ParsedOutput,
)

TIME_COLUMNS = {"time", "timestamp", "t", "elapsed"}


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def type_mean(values: np.ndarray, pi_type: PIType) -> float:
    """The mean a PI type calls for (harmonic for rates, so the result is total work over total
    time)."""
    if pi_type is PIType.HARMONIC:
        if np.any(values <= 0):
            return float("nan")
        return float(values.size / np.sum(1.0 / values))
    return float(np.mean(values))


def _cells(line: str) -> list[str]:
    """One CSV line's cells; the csv module only when the line has quotes (it is slower)."""
    if '"' in line:
        return next(csv.reader(io.StringIO(line), skipinitialspace=True))
    return [cell.lstrip(" ") for cell in line.split(",")]


@dataclass
class _Column:
    """One column as it streams by: its numbers, and the first cells that break its kind."""

    name: str
    values: array = field(default_factory=lambda: array("d"))
    texts: int = 0
    first_text: tuple[int, int, str] | None = None  # line, column, cell
    non_finite: int = 0
    first_non_finite: tuple[int, int, str] | None = None

    def add(self, cell: str, line: int, column: int) -> None:
        try:
            value = float(cell)
        except ValueError:
            self.texts += 1
            if self.first_text is None:
                self.first_text = (line, column, cell)
            return
        if not math.isfinite(value) or (
            value != 0 and not MEASURABLE_MIN <= abs(value) <= MEASURABLE_MAX
        ):
            self.non_finite += 1
            if self.first_non_finite is None:
                self.first_non_finite = (line, column, cell.strip())
        self.values.append(value)


def parse(
    captured: CapturedOutput, *, one_column: bool = False, specs: dict[str, PISpec] | None = None
) -> ParsedOutput:
    """Readings (and unit readings if several rows) from a table the workload printed.

    The output is read line by line: only the numbers are kept, so a workload that prints a
    large table costs its numbers' size, not its text's.
    """
    where = captured.stdout_name
    columns: list[_Column] | None = None
    header_line = 0
    rows = 0
    most = PARSED_VALUES.value()  # checked as the lines arrive: parsing is bounded too
    for number, line in enumerate(captured.lines("stdout"), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = _cells(line)
        if columns is None:
            header_line = number
            header = not all(_is_number(c) for c in cells if c.strip())
            if header:
                names = [c.strip() for c in cells]
            else:
                names = [f"col{i}" for i in range(1, len(cells) + 1)]
                names = names if len(names) > 1 else ["value"]
            columns = [_Column(name) for name in names]
            if one_column and len(columns) != 1:
                raise MalformedOutput(
                    f"{where}:{header_line}",
                    f"expected one value per line, found {len(columns)} columns",
                )
            if header:
                continue
        if len(cells) != len(columns):
            raise MalformedOutput(
                f"{where}:{number}", f"expected {len(columns)} columns, found {len(cells)}"
            )
        position = 1
        for column, cell in zip(columns, cells, strict=True):
            column.add(cell, number, position)
            position += len(cell) + 1
        rows += 1
        if rows * len(columns) > most:
            raise MalformedOutput(f"{where}:{number}", PARSED_VALUES.refuse("", None).problem)
    if columns is None:
        raise MalformedOutput(
            where, "the workload printed no values (expected CSV or one number per line)"
        )
    if rows == 0:
        raise MalformedOutput(f"{where}:{header_line}", "a header but no data rows")
    for column in columns:
        if column.texts and column.values:
            line, position, cell = column.first_text  # type: ignore[misc]
            raise MalformedOutput(
                f"{where}:{line}:{position}",
                f"column '{column.name}' expects a number, got {cell!r}",
            )
    numeric = [c for c in columns if not c.texts]
    if not numeric:
        raise MalformedOutput(where, "no numeric column in the workload's output")
    out = ParsedOutput()
    for column in numeric:
        if column.non_finite:
            line, position, cell = column.first_non_finite  # type: ignore[misc]
            out.non_finite.append(
                NonFinite(
                    pi=column.name,
                    count=column.non_finite,
                    total=len(column.values),
                    first=cell,
                    where=f"{where}:{line}:{position}",
                    line=line,
                )
            )
    bad = {c.name for c in numeric if c.non_finite}
    values = {c.name: np.frombuffer(c.values) for c in numeric if c.name not in bad}
    times = next((values.pop(n) for n in list(values) if n.lower() in TIME_COLUMNS), None)
    if any(n.lower() in TIME_COLUMNS for n in bad):
        times = None
    specs = specs or {}
    for name, column in values.items():
        spec = specs.get(name, PISpec(name=name, unit="", description="printed by the workload"))
        if spec.pi_type is PIType.HARMONIC and np.any(column <= 0):
            raise MalformedOutput(
                where,
                f"column '{name}' is averaged as a rate (harmonic mean), "
                f"which needs positive values; {int(np.sum(column <= 0))} "
                "are <= 0",
            )
        out.add(spec, type_mean(column, spec.pi_type))
        if column.size > 1:
            out.add_units(name, column, times)
    return out
