"""Reading one column of numbers from a user's file (or stdin) for the analysis commands.

Users hand pilot-sys whatever their benchmark printed: CSV with a header, whitespace-separated
text, a bare list of numbers, with ``#`` comments sprinkled in. Every problem is reported as
one ``BadInput("FILE:LINE:COL", ...)`` naming the exact cell, so a bad cell in a million-line
file can be found without guessing. Line and column numbers are 1-based character positions,
as compilers and editors print them.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pilot_sys.errors import BadInput

STDIN = "-"
STDIN_NAME = "<stdin>"
_BOM = "\ufeff"

# "throughput (MiB/s)", "latency [ms]" -> the unit in brackets
_UNIT_IN_HEADER = re.compile(r"[\(\[]\s*([^\)\]]+?)\s*[\)\]]\s*$")


@dataclass(frozen=True)
class Column:
    """One column of numbers with where it came from."""

    values: np.ndarray  # float64, in file order
    source: str  # the file name as the user gave it, or "<stdin>"
    name: str | None  # header name, if the file has a header
    index: int  # 0-based column index
    lines: tuple[int, ...] = ()  # 1-based line of each value, so later checks can name FILE:LINE

    def where(self, sample: int) -> str:
        """``FILE:LINE`` of the value at 0-based position ``sample`` (just FILE when unknown)."""
        return f"{self.source}:{self.lines[sample]}" if 0 <= sample < len(self.lines) else self.source

    @property
    def unit(self) -> str | None:
        """The unit written in the header, e.g. ``MiB/s`` from ``throughput (MiB/s)``."""
        if self.name is None:
            return None
        match = _UNIT_IN_HEADER.search(self.name)
        return match.group(1) if match else None


@dataclass(frozen=True)
class _Row:
    line: int  # 1-based line number
    cells: list[str]
    starts: list[int]  # 1-based character column where each cell starts


def _decode(name: str, data: bytes) -> str:
    """Strict UTF-8 (a leading BOM dropped: spreadsheets write one); binary data named as such."""
    nul = data.find(b"\x00", 0, 65536)
    if nul >= 0:
        raise BadInput(name, f"binary data (a NUL byte at byte {nul}), expected text with numbers")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(name, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _read_text(source: str) -> tuple[str, str]:
    """Return (display name, text) of a file or stdin, as BadInput on any OS problem."""
    if source == STDIN:
        # bytes, not sys.stdin's text layer: its locale and error handler would let binary through
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # stdin replaced by a text-only object (tests, embedding)
            return STDIN_NAME, sys.stdin.read().removeprefix(_BOM)
        return STDIN_NAME, _decode(STDIN_NAME, stream.read())
    path = Path(source)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(source, "no such file") from None
    except IsADirectoryError:
        raise BadInput(source, "is a directory, expected a data file") from None
    except PermissionError:
        raise BadInput(source, "permission denied") from None
    except OSError as exc:
        raise BadInput(source, exc.strerror or str(exc)) from None
    return source, _decode(source, data)


def _strip_comment(line: str) -> str:
    cut = line.find("#")
    return line if cut < 0 else line[:cut]


def _split_whitespace(text: str) -> tuple[list[str], list[int]]:
    cells, starts = [], []
    for match in re.finditer(r"\S+", text):
        cells.append(match.group(0))
        starts.append(match.start() + 1)
    return cells, starts


def _split_csv(text: str) -> tuple[list[str], list[int]]:
    """Split one CSV line (RFC 4180 quoting), keeping the character column where each cell starts.

    Hand-written rather than the csv module because the csv module does not say where a cell
    starts, and the error messages must point at the cell.
    """
    cells: list[str] = []
    starts: list[int] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        starts.append(i + 1)
        if i < n and text[i] == '"':
            i += 1
            buf: list[str] = []
            while i < n:
                if text[i] == '"':
                    if i + 1 < n and text[i + 1] == '"':
                        buf.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(text[i])
                i += 1
            comma = text.find(",", i)
            cells.append("".join(buf) + (text[i:comma] if comma >= 0 else text[i:]).strip())
        else:
            comma = text.find(",", i)
            cells.append((text[i:comma] if comma >= 0 else text[i:]).strip())
        if comma < 0:
            return cells, starts
        i = comma + 1


def _split_tabs(text: str) -> tuple[list[str], list[int]]:
    """Tab-separated cells (a run of tabs is one separator, spaces inside a cell are kept)."""
    cells, starts = [], []
    for match in re.finditer(r"[^\t]+", text):
        cell = match.group(0)
        if cell.strip():
            cells.append(cell.strip())
            starts.append(match.start() + len(cell) - len(cell.lstrip()) + 1)
    return cells, starts


def _rows(text: str) -> tuple[list[_Row], str | None]:
    """The non-blank rows and the delimiter (",", "\\t" or " " for any whitespace)."""
    rows: list[_Row] = []
    delimiter: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not line.strip():
            continue
        if delimiter is None:
            # decided on the first line: CSV if it has a comma; TSV if it has a tab and a cell
            # with a space ("latency ms<TAB>rate MiB/s"), where splitting at every space would
            # shift the header names against the columns; otherwise any whitespace separates
            tab_cells = _split_tabs(line)[0] if "\t" in line else []
            delimiter = "," if "," in line else "\t" if any(" " in c for c in tab_cells) else " "
        if delimiter == ",":
            cells, starts = _split_csv(line)
        elif delimiter == "\t":
            cells, starts = _split_tabs(line)
        else:
            cells, starts = _split_whitespace(line)
        rows.append(_Row(number, cells, starts))
    return rows, delimiter


def _parse_number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _is_header(row: _Row) -> bool:
    """A first line is a header when none of its cells is a number."""
    return all(_parse_number(cell) is None for cell in row.cells)


def _resolve_column(name: str, header: list[str] | None, column: str | int | None, n_cells: int) -> int:
    if column is None:
        if n_cells == 1:
            return 0
        names = ", ".join(f"{i}={h!r}" for i, h in enumerate(header)) if header else f"0..{n_cells - 1}"
        raise BadInput(name, f"has {n_cells} columns ({names}); choose one with --column NAME or INDEX")
    if isinstance(column, str) and column.strip().lstrip("-").isdigit():
        column = int(column.strip())
    if isinstance(column, int):
        if column < 0 or column >= n_cells:
            raise BadInput(name, f"no column {column}: the first line has {n_cells} column(s), indexed from 0")
        return column
    if header is None:
        raise BadInput(name, f"no column named {column!r}: the file has no header line")
    matches = [i for i, h in enumerate(header) if h == column]
    if not matches:
        matches = [i for i, h in enumerate(header) if h.casefold() == column.casefold()]
    if len(matches) > 1:  # taking the first silently could analyse the wrong numbers
        raise BadInput(name, f"column name {column!r} appears {len(matches)} times in the header "
                             f"(columns {', '.join(map(str, matches))}); choose one by its index")
    if matches:
        return matches[0]
    raise BadInput(name, f"no column named {column!r}; the header has {', '.join(repr(h) for h in header)}")


def read_table_column(source: str, column: str | int | None = None) -> Column:
    """Read one column of finite numbers from ``source`` (a path or ``-`` for stdin).

    ``column`` is a 0-based index or a header name (case-insensitive when unambiguous); it may
    be omitted when the data has a single column.
    """
    name, text = _read_text(source)
    rows, delimiter = _rows(text)
    if not rows:
        raise BadInput(name, "no data: the file is empty or holds only comments and blank lines")
    header: list[str] | None = None
    if _is_header(rows[0]):
        header = rows[0].cells
        rows = rows[1:]
        if not rows:
            raise BadInput(name, "no data: only a header line")
        if len(rows[0].cells) == 1 and len(header) > 1 and "," not in text.splitlines()[rows[0].line - 1]:
            # whitespace text with one column: "latency (ms)" is one name, not two
            header = [" ".join(header)]
    width = len(header) if header is not None else len(rows[0].cells)
    index = _resolve_column(name, header, column, width)
    label = repr(header[index]) if header is not None else str(index)
    # In CSV a row with a cell too many or too few may have its cells shifted: reading the
    # wrong column silently is worse than stopping. Whitespace text is commonly ragged on purpose.
    ragged_check = width > 1 and delimiter == ","
    named = width  # cells the header names: a trailing "," there adds an empty name, not a column
    while header is not None and named > index + 1 and not header[named - 1].strip():
        named -= 1
    values = np.empty(len(rows), dtype=np.float64)
    for i, row in enumerate(rows):
        if index >= len(row.cells):
            raise BadInput(
                f"{name}:{row.line}:{row.starts[-1] if row.starts else 1}",
                f"only {len(row.cells)} cell(s) on this line, column {label} is missing",
            )
        if ragged_check and (len(row.cells) < named or any(row.cells[width:])):  # a trailing "," is harmless
            extra = len(row.cells) > width
            raise BadInput(
                f"{name}:{row.line}:{row.starts[width if extra else -1]}",
                f"{len(row.cells)} cell(s) on this line, but the {'header' if header is not None else 'first line'} "
                f"has {named}: a cell is {'extra' if extra else 'missing'}, so column {label} may be shifted",
            )
        value = _parse_number(row.cells[index])
        where = f"{name}:{row.line}:{row.starts[index]}"
        if value is None:
            raise BadInput(where, f"{row.cells[index]!r} in column {label} is not a number")
        if not math.isfinite(value):
            raise BadInput(where, f"{row.cells[index]!r} in column {label} is not a finite number")
        values[i] = value
    return Column(values=values, source=name, name=header[index] if header is not None else None, index=index,
                  lines=tuple(row.line for row in rows))


def read_column(source: str, column: str | int | None = None) -> np.ndarray:
    """The numbers of one column of ``source`` (path or ``-``) as a float64 array; see read_table_column."""
    return read_table_column(source, column).values
