"""Numbers a workload prints itself: CSV with a header, or one value per line.

One data row gives one reading per numeric column. Several rows are unit readings in time order,
and the round's reading is their mean of the PI's type (harmonic for rates). A column named
``time``, ``timestamp`` or ``t`` gives the unit readings' timestamps instead of a PI. Without a
header, columns are named ``value`` (one column) or ``col1``, ``col2``...; ``specs`` renames units and
types by PI name.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput, ParsedOutput

TIME_COLUMNS = {"time", "timestamp", "t", "elapsed"}


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def type_mean(values: np.ndarray, pi_type: PIType) -> float:
    """The mean a PI type calls for (harmonic for rates, so the result is total work over total time)."""
    if pi_type is PIType.HARMONIC:
        if np.any(values <= 0):
            return float("nan")
        return float(values.size / np.sum(1.0 / values))
    return float(np.mean(values))


def _rows(captured: CapturedOutput) -> list[tuple[int, list[str]]]:
    """Non-empty, non-comment rows with their 1-based line numbers."""
    rows = []
    for number, line in enumerate(captured.stdout.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            rows.append((number, next(csv.reader(io.StringIO(line), skipinitialspace=True))))
    return rows


def parse(captured: CapturedOutput, *, one_column: bool = False, specs: dict[str, PISpec] | None = None) -> ParsedOutput:
    """Readings (and unit readings if several rows) from a table the workload printed."""
    where = captured.stdout_name
    rows = _rows(captured)
    if not rows:
        raise MalformedOutput(where, "the workload printed no values (expected CSV or one number per line)")
    header_line, first = rows[0]
    has_header = not all(_is_number(c) for c in first if c.strip())
    if has_header:
        names = [c.strip() for c in first]
        rows = rows[1:]
        if not rows:
            raise MalformedOutput(f"{where}:{header_line}", "a header but no data rows")
    else:
        names = ["value"] if len(first) == 1 else [f"col{i}" for i in range(1, len(first) + 1)]
    if one_column and len(names) != 1:
        raise MalformedOutput(f"{where}:{header_line}", f"expected one value per line, found {len(names)} columns")
    for number, row in rows:
        if len(row) != len(names):
            raise MalformedOutput(f"{where}:{number}", f"expected {len(names)} columns, found {len(row)}")
    cells = [row for _, row in rows]
    numeric = [all(_is_number(r[j]) for r in cells) for j in range(len(names))]
    text_only = [not any(_is_number(r[j]) for r in cells) for j in range(len(names))]
    for j, (ok, text) in enumerate(zip(numeric, text_only, strict=True)):
        if not ok and not text:
            number, row = next((n, r) for n, r in rows if not _is_number(r[j]))
            column = sum(len(c) + 1 for c in row[:j]) + 1
            raise MalformedOutput(f"{where}:{number}:{column}", f"column '{names[j]}' expects a number, got {row[j]!r}")
    if not any(numeric):
        raise MalformedOutput(where, "no numeric column in the workload's output")
    values = {names[j]: np.array([float(r[j]) for r in cells]) for j in range(len(names)) if numeric[j]}
    times = next((values.pop(n) for n in list(values) if n.lower() in TIME_COLUMNS), None)
    specs = specs or {}
    out = ParsedOutput()
    for name, column in values.items():
        spec = specs.get(name, PISpec(name=name, unit="", description="printed by the workload"))
        out.add(spec, type_mean(column, spec.pi_type))
        if column.size > 1:
            out.add_units(name, column, times)
    return out
