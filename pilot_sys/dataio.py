"""Reading one column of numbers from a user's file (or stdin) for the analysis commands.

Users hand pilot-sys whatever their benchmark printed: CSV with a header, whitespace-separated
text, a bare list of numbers, with ``#`` comments sprinkled in. Every problem is reported as
one ``BadInput("FILE:LINE:COL", ...)`` naming the exact cell, so a bad cell in a million-line
file can be found without guessing. Line and column numbers are 1-based character positions,
as compilers and editors print them.

The exact reader splits each line in Python and knows where every cell starts: it defines
what a file means and names bad cells, but costs a microsecond or more a line. A file of one
short plain decimal a line (up to ``DECIMAL_BYTES``) is parsed exactly by vectorised integer
arithmetic (``pilot_sys.plain_decimal``), with no library reader at all; any other file of one
plain number a line under ``NUMPY_BYTES`` goes to numpy's text reader, whose import costs less
than pandas' (``pilot_sys.plain_numbers``). Other large files go to pandas' C parser, in one
of two ways that give the exact reader's answer:

- in one call, when whole-buffer searches show plain text (UTF-8, no NUL, no lone CR; in CSV
  every row with the header's cell count) and pandas returns one finite value per line;
- else chunk by chunk, after a vectorised pass over each chunk's bytes has found the lines
  pandas might read otherwise (blank, ``#``, quotes, a cell too many or too few): those lines
  go through the exact reader, whose values win. A chunk pandas refuses, or that holds a NaN,
  is re-read exactly to name the cell.
"""

from __future__ import annotations

import codecs
import functools
import io
import itertools
import math
import os
import re
import stat
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from pilot_sys.errors import BadInput
from pilot_sys.limits import DATA_BYTES, DATA_LINE, read_stream_bounded
from pilot_sys.line_blocks import LineTooLong, whole_lines
from pilot_sys.plain_decimal import DECIMAL_BYTES, decimal_lines
from pilot_sys.plain_numbers import NUMPY_BYTES, one_number_a_line
from pilot_sys.quantity import Quantity, conversion_factor, parse_unit

STDIN = "-"
STDIN_NAME = "<stdin>"
_BOM = "\ufeff"
DECIMALS = (".", ",")

# "throughput (MiB/s)", "latency [ms]" -> the unit in brackets
_UNIT_IN_HEADER = re.compile(r"[\(\[]\s*([^\)\]]+?)\s*[\)\]]\s*$")
_COMMA_DECIMAL = re.compile(r"^[-+]?[0-9]+,[0-9]+$")
_INTEGER = re.compile(r"^[-+]?[0-9]+$")
_UNIT_SEPARATOR = "\x1f"  # ASCII US: a separator no number file holds
_SNIFF_ROWS = 1000  # data rows read exactly before the fast reader starts (decimal-comma check)
_EXACT_BYTES = 1 << 16  # inputs below this are read by the exact reader alone (no pandas import)
_CHUNK_BYTES = 1 << 22  # bytes pandas reads at a time: a chunk it refuses is re-read exactly


class LineMap:
    """The 1-based line of each value: the first data line plus the lines skipped before it.

    Kept as the sorted skipped lines (blank, comment-only) rather than one line per value, so a
    file of ten million numbers costs nothing here unless it is full of comments.
    """

    def __init__(self, first: int, skipped: np.ndarray, count: int) -> None:
        self.first = first
        self.count = count
        self._skipped = np.asarray(skipped, dtype=np.int64) - first  # offsets from the first line
        self._before = self._skipped - np.arange(self._skipped.size)  # data lines before each

    def line(self, sample: int) -> int | None:
        """The line of the value at 0-based position ``sample``, None when out of range."""
        if not 0 <= sample < self.count:
            return None
        return self.first + sample + int(np.searchsorted(self._before, sample, side="right"))


@dataclass(frozen=True)
class Column:
    """One column of numbers with where it came from."""

    values: np.ndarray  # float64, in file order
    source: str  # the file name as the user gave it, or "<stdin>"
    name: str | None  # header name, if the file has a header
    index: int  # 0-based column index
    line_map: LineMap | None = field(default=None, repr=False, compare=False)

    def where(self, sample: int) -> str:
        """``FILE:LINE`` of the value at 0-based position ``sample`` (just FILE when unknown)."""
        line = self.line_map.line(sample) if self.line_map is not None else None
        return f"{self.source}:{line}" if line is not None else self.source

    @property
    def unit(self) -> str | None:
        """The unit written in the header, e.g. ``MiB/s`` from ``throughput (MiB/s)``."""
        if self.name is None:
            return None
        match = _UNIT_IN_HEADER.search(self.name)
        return match.group(1) if match else None

    @property
    def quantity(self) -> Quantity | None:
        """What the header's unit measures and its scale; None without a unit we understand."""
        return parse_unit(self.unit)

    @property
    def label(self) -> str:
        """How messages name the column: its header name, or its index."""
        return repr(self.name) if self.name is not None else str(self.index)


@dataclass(frozen=True)
class _Row:
    line: int  # 1-based line number
    cells: list[str]
    starts: list[int]  # 1-based character column where each cell starts


@dataclass(frozen=True)
class _Layout:
    """What the first lines say about the whole file."""

    name: str
    delimiter: str  # ",", ";", "\t" or " " (any run of whitespace)
    decimal: str
    header: list[str] | None
    data_line: int  # line of the first data row: lines before it hold the header, comments, blanks
    width: int  # cells of the header (or of the first row)
    index: int  # the chosen column
    named: int  # cells the header names: a trailing "," there adds an empty name, not a column

    @property
    def label(self) -> str:
        return repr(self.header[self.index]) if self.header is not None else str(self.index)

    @property
    def ragged_check(self) -> bool:
        # In CSV a row with a cell too many or too few may have its cells shifted: reading the
        # wrong column silently is worse than stopping. Whitespace text is often ragged on purpose.
        return self.width > 1 and self.delimiter in (",", ";")


# --- getting the bytes ----------------------------------------------------------------------


@dataclass
class _Source:
    """A file on disk, or stdin's bytes held in memory (a pipe can be read only once)."""

    name: str
    path: Path | None = None
    data: bytes | None = None

    def open(self) -> BinaryIO:
        if self.path is not None:
            return self.path.open("rb")
        assert self.data is not None
        return io.BytesIO(self.data)


def _open_source(source: str) -> _Source:
    """The source as bytes on demand, with every OS problem a BadInput naming it."""
    # every source is bounded while it is read (pilot_sys.limits): its size, its lines' length
    bounds: dict[str, Any] = {"text": True, "max_line": DATA_LINE}
    if source == STDIN:
        # bytes, not sys.stdin's text layer: its locale and error handler would let binary through
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # stdin replaced by a text-only object (tests, embedding)
            stream = io.BytesIO(sys.stdin.read().encode("utf-8"))
        return _Source(
            STDIN_NAME, data=read_stream_bounded(stream, DATA_BYTES, STDIN_NAME, **bounds)
        )
    path = Path(source)
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                # a pipe such as bash's <(command) can be read only once: hold it like stdin
                return _Source(
                    source, data=read_stream_bounded(handle, DATA_BYTES, source, **bounds)
                )
            if info.st_size > DATA_BYTES.value():
                raise DATA_BYTES.refuse(source, f"{info.st_size / 2**30:.3g} GiB")
    except FileNotFoundError:
        raise BadInput(source, "no such file") from None
    except IsADirectoryError:
        raise BadInput(source, "is a directory, expected a data file") from None
    except PermissionError:
        raise BadInput(source, "permission denied") from None
    except OSError as exc:
        raise BadInput(source, exc.strerror or str(exc)) from None
    return _Source(source, path=path)


def _decode(name: str, data: bytes, offset: int) -> str:
    """Strict UTF-8 of bytes starting at byte ``offset`` of the input; binary data named as such."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise BadInput(
            name, f"binary data (a NUL byte at byte {offset + nul}), expected text with numbers"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(
            name, f"not UTF-8 text ({exc.reason} at byte {offset + exc.start})"
        ) from None


def _lines(src: _Source, start: int = 1, stop: int | None = None) -> Iterator[tuple[int, str]]:
    """(line number, text) of lines ``start`` .. ``stop`` (inclusive), strict UTF-8, BOM dropped.

    Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (old Mac files), as for ``str.splitlines``.
    """
    number, offset = 0, 0
    longest = DATA_LINE.value()
    with src.open() as handle:
        while raw := handle.readline(longest + 1):
            if len(raw) > longest and not raw.endswith(b"\n"):
                if b"\r" not in raw:  # lone CRs end lines too (old Mac files): read those whole
                    raise DATA_LINE.refuse(f"{src.name}:{number + 1}")
                raw += handle.readline()
            text = _decode(src.name, raw, offset)
            if offset == 0:
                text = text.removeprefix(_BOM)
            offset += len(raw)
            for part in text.removesuffix("\n").removesuffix("\r").split("\r"):
                number += 1
                if stop is not None and number > stop:
                    return
                if number >= start:
                    yield number, part


# --- the exact reader -----------------------------------------------------------------------


def _strip_comment(line: str) -> str:
    cut = line.find("#")
    return line if cut < 0 else line[:cut]


def _split_whitespace(text: str) -> tuple[list[str], list[int]]:
    cells, starts = [], []
    for match in re.finditer(r"\S+", text):
        cells.append(match.group(0))
        starts.append(match.start() + 1)
    return cells, starts


def _split_csv(text: str, delimiter: str = ",") -> tuple[list[str], list[int]]:
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
            comma = text.find(delimiter, i)
            cells.append("".join(buf) + (text[i:comma] if comma >= 0 else text[i:]).strip())
        else:
            comma = text.find(delimiter, i)
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


def _delimiter(line: str, decimal: str) -> str:
    """Decided on the first line: CSV if it has a comma (a semicolon with decimal commas); TSV
    if it has a tab and a cell with a space ("latency ms<TAB>rate MiB/s"), where splitting at
    every space would shift the header names against the columns; else any whitespace."""
    separator = "," if decimal == "." else ";"
    if separator in line:
        return separator
    tab_cells = _split_tabs(line)[0] if "\t" in line else []
    return "\t" if any(" " in c for c in tab_cells) else " "


def _row(number: int, raw: str, delimiter: str) -> _Row | None:
    """The cells of one line, or None for a blank or comment-only line."""
    line = _strip_comment(raw).rstrip()
    if not line.strip():
        return None
    if delimiter in (",", ";"):
        cells, starts = _split_csv(line, delimiter)
    elif delimiter == "\t":
        cells, starts = _split_tabs(line)
    else:
        cells, starts = _split_whitespace(line)
    return _Row(number, cells, starts)


def _parse_number(cell: str, decimal: str = ".") -> float | None:
    if decimal == ",":
        if "." in cell:
            return None
        cell = cell.replace(",", ".")
    try:
        return float(cell)
    except ValueError:
        return None


_SHOWN_CHARACTERS = 40  # of a bad cell in an error: the line and column say where the rest is


def _shown(cell: str) -> str:
    """A cell as an error line quotes it: whole when short, else its start and its length (a
    cell of thousands of digits would make the one line a screenful)."""
    if len(cell) <= _SHOWN_CHARACTERS:
        return repr(cell)
    return f"{cell[:_SHOWN_CHARACTERS]!r}... ({len(cell)} characters)"


def _value(row: _Row, lay: _Layout) -> float:
    """The chosen cell of a data row as a finite number, or a BadInput naming the cell."""
    index, width, named = lay.index, lay.width, lay.named
    if index >= len(row.cells):
        raise BadInput(
            f"{lay.name}:{row.line}:{row.starts[-1] if row.starts else 1}",
            f"only {len(row.cells)} cell(s) on this line, column {lay.label} is missing",
        )
    if lay.ragged_check and (
        len(row.cells) < named or any(row.cells[width:])
    ):  # a trailing "," is harmless
        extra = len(row.cells) > width
        first = "header" if lay.header is not None else "first line"
        raise BadInput(
            f"{lay.name}:{row.line}:{row.starts[width if extra else -1]}",
            f"{len(row.cells)} cell(s) on this line, but the {first} has {named}: a cell is "
            f"{'extra' if extra else 'missing'}, so column {lay.label} may be shifted",
        )
    cell = row.cells[index]
    value = _parse_number(cell, lay.decimal)
    where = f"{lay.name}:{row.line}:{row.starts[index]}"
    if value is None:
        hint = ""
        if lay.decimal == "." and _COMMA_DECIMAL.match(cell):
            hint = " (a decimal comma? read the file with --decimal ,)"
        elif lay.decimal == "," and "." in cell:
            hint = " (the file is read with decimal commas)"
        raise BadInput(where, f"{_shown(cell)} in column {lay.label} is not a number{hint}")
    if not math.isfinite(value):
        raise BadInput(
            where,
            f"{_shown(cell)} in column {lay.label} is not a finite number (NaN and infinities "
            "cannot be averaged; remove the line or fix the program that wrote it)",
        )
    return value


def _exact(src: _Source, lay: _Layout, start: int, stop: int | None = None) -> tuple[array, array]:
    """Values and lines of the data rows on lines ``start`` .. ``stop``, read exactly."""
    values, lines = array("d"), array("q")
    for number, raw in _lines(src, start, stop):
        row = _row(number, raw, lay.delimiter)
        if row is not None:
            values.append(_value(row, lay))
            lines.append(number)
    return values, lines


# --- layout: delimiter, header, column ------------------------------------------------------


def _resolve_column(
    name: str, header: list[str] | None, column: str | int | None, n_cells: int
) -> int:
    if column is None:
        if n_cells == 1:
            return 0
        names = (
            ", ".join(f"{i}={h!r}" for i, h in enumerate(header)) if header else f"0..{n_cells - 1}"
        )
        raise BadInput(
            name, f"has {n_cells} columns ({names}); choose one with --column NAME or INDEX"
        )
    if isinstance(column, str) and column.strip().lstrip("-").isdigit():
        column = int(column.strip())
    if isinstance(column, int):
        if column < 0 or column >= n_cells:
            raise BadInput(
                name, f"no column {column}: the first line has {n_cells} column(s), indexed from 0"
            )
        return column
    if header is None:
        raise BadInput(name, f"no column named {column!r}: the file has no header line")
    matches = [i for i, h in enumerate(header) if h == column]
    if not matches:
        matches = [i for i, h in enumerate(header) if h.casefold() == column.casefold()]
    if len(matches) > 1:  # taking the first silently could analyse the wrong numbers
        raise BadInput(
            name,
            f"column name {column!r} appears {len(matches)} times in the header "
            f"(columns {', '.join(map(str, matches))}); choose one by its index",
        )
    if matches:
        return matches[0]
    raise BadInput(
        name, f"no column named {column!r}; the header has {', '.join(repr(h) for h in header)}"
    )


def _refuse_comma_decimals(name: str, rows: list[_Row]) -> None:
    """Stop on ``1,65``-style rows without a header: decimal commas read as two columns would
    silently average integer parts. Two integer columns counting up by one (``0,17``, ``1,20``)
    are an index and a value, not decimals, and pass."""
    if not rows or any(
        len(r.cells) != 2 or not _INTEGER.match(r.cells[0]) or not r.cells[1].isdigit()
        for r in rows
    ):
        return
    firsts = [int(r.cells[0]) for r in rows]
    if len(firsts) >= 3 and all(b - a == 1 for a, b in itertools.pairwise(firsts)):
        return
    row = rows[0]
    raise BadInput(
        f"{name}:{row.line}:1",
        f"{','.join(row.cells)!r} is one number with a decimal comma or two integer columns; "
        "say which with --decimal , (decimal commas) or --decimal . (comma-separated columns)",
    )


def _layout(
    src: _Source, column: str | int | None, decimal: str | None
) -> tuple[_Layout, list[_Row]]:
    """Delimiter, header and column from the first lines, and the first data rows (read exactly)."""
    delimiter: str | None = None
    rows: list[_Row] = []
    for number, raw in _lines(src):
        if delimiter is None:
            if not _strip_comment(raw).strip():
                continue
            delimiter = _delimiter(_strip_comment(raw).rstrip(), decimal or ".")
        row = _row(number, raw, delimiter)
        if row is not None:
            rows.append(row)
            if len(rows) > _SNIFF_ROWS:
                break
    name = src.name
    if not rows or delimiter is None:
        raise BadInput(name, "no data: the file is empty or holds only comments and blank lines")
    header: list[str] | None = None
    if all(_parse_number(cell, decimal or ".") is None for cell in rows[0].cells):
        header = rows[0].cells
        rows = rows[1:]
        if not rows:
            raise BadInput(name, "no data: only a header line")
        if len(rows[0].cells) == 1 and len(header) > 1 and delimiter == " ":
            # whitespace text with one column: "latency (ms)" is one name, not two
            header = [" ".join(header)]
    width = len(header) if header is not None else len(rows[0].cells)
    ambiguous = header is None and decimal is None and delimiter == ","
    if ambiguous and column is None:  # "choose a column" would mislead if the commas are decimals
        _refuse_comma_decimals(name, rows)
    index = _resolve_column(name, header, column, width)
    if ambiguous:
        _refuse_comma_decimals(name, rows)
    named = width
    while header is not None and named > index + 1 and not header[named - 1].strip():
        named -= 1
    lay = _Layout(
        name=name,
        delimiter=delimiter,
        decimal=decimal or ".",
        header=header,
        data_line=rows[0].line,
        width=width,
        index=index,
        named=named,
    )
    return lay, rows


# --- the fast reader ------------------------------------------------------------------------

_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True


def _chunks(src: _Source, lay: _Layout) -> Iterator[tuple[int, int, bytes]]:
    """(first line's number, byte offset, bytes) of runs of whole lines from the first data row."""
    with src.open() as handle:
        line, offset = 1, 0
        while line < lay.data_line:
            offset += len(handle.readline())
            line += 1
        try:
            for chunk in whole_lines(handle, _CHUNK_BYTES, DATA_LINE.value()):
                yield line, offset, chunk
                line += chunk.count(b"\n") + (not chunk.endswith(b"\n"))
                offset += len(chunk)
        except LineTooLong:
            raise DATA_LINE.refuse(f"{src.name}:{line}") from None


def _line_starts(chunk: bytes) -> np.ndarray:
    a = np.frombuffer(chunk, dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(a == 10) + 1))
    return starts[:-1] if starts[-1] == a.size else starts  # a final newline starts no line


@functools.cache
def _not_events(delimiter: str) -> bytes:
    """Every byte but the delimiter and the newline, for ``bytes.translate`` to delete."""
    return bytes(b for b in range(256) if b not in (ord(delimiter), 10))


def _regular_rows(chunk: bytes, lay: _Layout) -> bool:
    """Whether every line of ``chunk`` has exactly ``width - 1`` separators: with all other
    bytes deleted, the chunk must be that many separators and a newline, repeated."""
    events = chunk.translate(None, _not_events(lay.delimiter))
    if not chunk.endswith(b"\n"):
        events += b"\n"
    row = lay.delimiter.encode() * (lay.width - 1) + b"\n"
    return events.count(row) * len(row) == len(events)


def _irregular_lines(chunk: bytes, lay: _Layout) -> np.ndarray:
    """Indices of the lines of ``chunk`` that pandas might read otherwise than the exact reader:
    possibly blank, with a ``#`` or a quote, or (CSV, TSV) another number of separators than the
    header. Found with memchr-fast searches first, so a clean chunk costs next to nothing."""
    counted = (lay.ragged_check or lay.delimiter == "\t") and not _regular_rows(chunk, lay)
    marks = [mark for mark in (b"#", b'"') if mark in chunk]
    a = np.frombuffer(chunk, dtype=np.uint8)
    starts = _line_starts(chunk)
    maybe_blank = bool(_SPACE[a[starts]].any())  # a blank line starts with whitespace
    if not (counted or maybe_blank or marks):
        return np.zeros(0, dtype=np.int64)
    ends = np.append(starts[1:], a.size)  # exclusive, newline included
    found = [
        np.searchsorted(starts, np.flatnonzero(a == mark[0]), side="right") - 1 for mark in marks
    ]
    if maybe_blank:  # blank only if the first and the last byte are whitespace
        last = ends - 1
        last -= a[last] == 10
        last -= (last >= starts) & (a[np.maximum(last, 0)] == 13)
        found.append(
            np.flatnonzero((last < starts) | (_SPACE[a[starts]] & _SPACE[a[np.maximum(last, 0)]]))
        )
    if counted:
        counts = np.add.reduceat(a == ord(lay.delimiter), starts, dtype=np.int64)
        found.append(np.flatnonzero(counts != lay.width - 1))
    return np.unique(np.concatenate(found))


def _exact_chunk(text: str, line: int, lay: _Layout) -> tuple[np.ndarray, list[int]]:
    """The chunk's data rows read exactly (raising on a bad cell), and its skipped lines."""
    values, skipped = array("d"), []
    for number, raw in enumerate(text.split("\n"), start=line):
        row = _row(number, raw.rstrip("\r"), lay.delimiter)
        if row is None:
            skipped.append(number)
        else:
            values.append(_value(row, lay))
    if text.endswith("\n"):
        skipped.pop()  # the empty text after the last newline is no line
    return np.frombuffer(values, dtype=np.float64), skipped


@dataclass
class _Irregular:
    """A chunk's irregular lines, read exactly."""

    lines: int  # lines of the chunk to read: all, or those before ``error``
    skipped: list[int] = field(default_factory=list)  # blank and comment-only lines
    pandas_skips: list[int] = field(default_factory=list)  # 0-based: skipped lines pandas reads
    fix_rows: list[int] = field(default_factory=list)  # data rows whose exact value wins...
    fix_values: list[float] = field(default_factory=list)  # ...and those values
    error: BadInput | None = None  # a bad cell: raised once the rows before it are checked


def _irregular(chunk: bytes, line: int, lay: _Layout) -> _Irregular:
    out = _Irregular(lines=chunk.count(b"\n") + (not chunk.endswith(b"\n")))
    found = _irregular_lines(chunk, lay).tolist()
    starts = _line_starts(chunk) if found else np.zeros(0, dtype=np.int64)
    for i in found:
        end = starts[i + 1] if i + 1 < starts.size else len(chunk)
        raw = chunk[starts[i] : end].decode("utf-8")
        row = _row(line + i, raw.rstrip("\r\n"), lay.delimiter)
        if row is None:
            out.skipped.append(line + i)
            if raw[:1] not in ("", "\n", "#"):  # pandas skips only empty and "#..." lines itself
                out.pandas_skips.append(i)
            continue
        try:
            value = _value(row, lay)
        except BadInput as exc:
            out.error, out.lines = exc, i
            return out
        out.fix_rows.append(i - len(out.skipped))
        out.fix_values.append(value)
    return out


def _pandas(pd: Any, chunk: bytes, lay: _Layout, odd: _Irregular, rows: int) -> np.ndarray | None:
    """The chosen column of ``rows`` data rows by pandas' C parser; None when it refuses a cell."""
    try:
        frame = pd.read_csv(
            io.BytesIO(chunk),
            sep=r"\s+" if lay.delimiter == " " else lay.delimiter,
            header=None,
            usecols=[lay.index],
            dtype=np.float64,
            skiprows=odd.pandas_skips or None,
            comment="#" if b"#" in chunk else None,
            quoting=3,  # QUOTE_NONE: lines with quotes are the exact reader's
            decimal=lay.decimal,
            na_filter=False,
            skip_blank_lines=True,
            engine="c",
            nrows=rows,
        )
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    values = frame.iloc[:, 0].to_numpy()
    return values if values.flags.writeable else values.copy()


def _read_chunk(
    pd: Any, chunk: bytes, line: int, offset: int, lay: _Layout
) -> tuple[np.ndarray, list[int]]:
    """One chunk's values and skipped lines; raises BadInput naming the first bad cell."""
    if not chunk.isascii() or b"\x00" in chunk:
        _decode(lay.name, chunk, offset)  # raises on binary data and bad UTF-8
    if line == 1 and chunk.startswith(_BOM.encode()):
        chunk = chunk[len(_BOM.encode()) :]
    odd = _irregular(chunk, line, lay)
    rows = odd.lines - len(odd.skipped)
    values = _pandas(pd, chunk, lay, odd, rows) if rows else np.zeros(0)
    if values is not None and values.size == rows:
        values[odd.fix_rows] = odd.fix_values
        bad = np.flatnonzero(~np.isfinite(values))
        if not bad.size:
            if odd.error is not None:
                raise odd.error
            return values, odd.skipped
        # "nan", "inf", a missing cell: the exact reader names it
        number = LineMap(line, np.array(odd.skipped), rows).line(int(bad[0])) or line
        raw = chunk.split(b"\n", number - line + 1)[number - line].decode("utf-8")
        if (row := _row(number, raw.rstrip("\r"), lay.delimiter)) is not None:
            _value(row, lay)
    # pandas refused a cell, or read the chunk otherwise: the exact reader decides
    text = chunk.decode("utf-8")
    if odd.error is not None:
        text = "\n".join(text.split("\n")[: odd.lines])
    exact, skipped = _exact_chunk(text, line, lay)
    if odd.error is not None:
        raise odd.error
    return exact, skipped


def _chunked(pd: Any, src: _Source, lay: _Layout) -> tuple[np.ndarray, LineMap] | None:
    """The column read chunk by chunk, each checked by the byte scan; None when the input has
    lone carriage returns (old Mac line ends), which only the exact reader splits."""
    parts: list[np.ndarray] = []
    skipped: list[int] = []
    for line, offset, chunk in _chunks(src, lay):
        if b"\r" in chunk and chunk.count(b"\r") != chunk.count(b"\r\n"):
            return None
        values, gaps = _read_chunk(pd, chunk, line, offset, lay)
        parts.append(values)
        skipped.extend(gaps)
    values = np.concatenate(parts) if parts else np.zeros(0)
    return values, LineMap(lay.data_line, np.array(skipped, dtype=np.int64), values.size)


@dataclass
class _Plain:
    """What whole-buffer searches found in the bytes from the first data row on."""

    lines: int = 0
    comments: bool = False  # a "#" somewhere
    quotes: bool = False  # a '"' somewhere
    unit_separator: bool = False  # an ASCII unit separator (0x1f) somewhere


def _plain(src: _Source, lay: _Layout) -> _Plain | None:
    """Line count and marks, if every byte is plain text: valid UTF-8 without NUL bytes or lone
    carriage returns, and in CSV every row with the header's cells; else None.
    Whole-buffer searches and ``bytes.translate`` over raw blocks: no per-line work, no copies."""
    out = _Plain()
    decoder = codecs.getincrementaldecoder("utf-8")()
    row = lay.delimiter.encode() * (lay.width - 1) + b"\n"
    events = b""  # separators and newlines of the CSV row under way
    cr = crlf = 0
    last = b""
    with src.open() as handle:
        for _ in range(lay.data_line - 1):
            handle.readline()
        while block := handle.read(_CHUNK_BYTES):
            if b"\x00" in block:
                return None
            if not block.isascii():
                try:
                    decoder.decode(block)
                except UnicodeDecodeError:
                    return None
            if b"\r" in block or last == b"\r":
                cr += block.count(b"\r")
                crlf += block.count(b"\r\n") + (last == b"\r" and block[:1] == b"\n")
            out.lines += block.count(b"\n")
            out.comments = out.comments or b"#" in block
            out.quotes = out.quotes or b'"' in block
            out.unit_separator = out.unit_separator or _UNIT_SEPARATOR.encode() in block
            if lay.ragged_check:
                events += block.translate(None, _not_events(lay.delimiter))
                cut = events.rfind(b"\n") + 1
                if events.count(row, 0, cut) * len(row) != cut:
                    return None
                events = events[cut:]
            last = block[-1:]
    try:
        decoder.decode(b"", final=True)  # a character cut off at the end
    except UnicodeDecodeError:
        return None
    if cr != crlf:  # lone carriage returns end lines for the exact reader
        return None
    if last not in (b"", b"\n"):  # a last line without a newline
        out.lines += 1
        if lay.ragged_check and events + b"\n" != row:
            return None
    return out


def _whole(pd: Any, src: _Source, lay: _Layout) -> tuple[np.ndarray, LineMap] | None:
    """The column in one call of pandas' C parser, when that is provably what the exact reader
    would read: every line after the header gave one finite value (so no line was blank, a
    comment or refused) and, in CSV, had the header's cells. None otherwise, and the chunked
    reader decides."""
    if lay.delimiter == "\t":  # a run of tabs is one separator: pandas would see empty cells
        return None
    plain = _plain(src, lay)
    if plain is None or plain.lines == 0:
        return None
    # Options only where the bytes need them: each costs pandas time on every cell.
    options: dict[str, Any] = {"comment": "#"} if plain.comments else {}
    if plain.quotes:
        options["quoting"] = 3  # QUOTE_NONE, as the exact reader outside CSV
    if lay.header is not None and lay.data_line == 2:  # pandas takes the header as its own: fastest
        options.update(header=0, names=None)
    else:
        options.update(header=None, skiprows=lay.data_line - 1)
    sep = r"\s+" if lay.delimiter == " " else lay.delimiter
    if sep == r"\s+" and lay.width == 1 and not plain.unit_separator:
        # one number a line: a separator that never occurs spares pandas' slower whitespace
        # splitting; a line with a second cell then fails to convert, and the chunked reader
        # (whitespace splitting, like the exact reader) takes over
        sep = _UNIT_SEPARATOR
    with src.open() as handle:
        try:
            frame = pd.read_csv(
                handle,
                sep=sep,
                usecols=[lay.index],
                dtype=np.float64,
                decimal=lay.decimal,
                na_filter=False,
                encoding="utf-8-sig",
                engine="c",
                **options,
            )
        except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
            return None
    values = frame.iloc[:, 0].to_numpy()
    if values.size != plain.lines or not np.isfinite(values).all():
        return None
    return values, LineMap(lay.data_line, np.zeros(0, dtype=np.int64), values.size)


def _one_number_a_line(src: _Source, lay: _Layout) -> tuple[np.ndarray, LineMap] | None:
    """The column by numpy's text reader (``pilot_sys.plain_numbers``) when the file holds one
    plain number a line: one whitespace-separated column with decimal points, no comment,
    quote or unit separator anywhere; None otherwise, or when numpy reads it otherwise."""
    if lay.width != 1 or lay.delimiter != " " or lay.decimal != ".":
        return None
    plain = _plain(src, lay)
    if plain is None or plain.lines == 0 or plain.comments or plain.quotes:
        return None
    if plain.unit_separator:
        return None
    with src.open() as handle:
        values = one_number_a_line(handle, lay.data_line - 1, plain.lines)
    if values is None:
        return None
    return values, LineMap(lay.data_line, np.zeros(0, dtype=np.int64), values.size)


def _plain_decimals(src: _Source, lay: _Layout) -> tuple[np.ndarray, LineMap] | None:
    """The column by the exact vectorised parser (``pilot_sys.plain_decimal``) when every line
    after the header is one short plain decimal; None otherwise. Its values are the ones
    ``float`` gives, and so the ones numpy's or pandas' reader gave before it."""
    if lay.width != 1 or lay.delimiter != " " or lay.decimal != ".":
        return None
    with src.open() as handle:
        values = decimal_lines(handle, lay.data_line - 1)
    if values is None:
        return None
    return values, LineMap(lay.data_line, np.zeros(0, dtype=np.int64), values.size)


def _lone_cr_above_data(src: _Source, lay: _Layout) -> bool:
    """Whether the lines above the data hold a lone CR. It ends a line for the exact reader
    (``_lines``), which counted ``lay.data_line`` so, but not for ``readline``, with which the
    fast readers skip those lines: they would skip a data line too and misnumber the rest."""
    with src.open() as handle:
        for _ in range(lay.data_line - 1):
            line = handle.readline()
            if line.count(b"\r") != line.count(b"\r\n"):
                return True
    return False


def _fast(src: _Source, lay: _Layout) -> tuple[np.ndarray, LineMap] | None:
    """The column read by the plain-decimal parser (one short number a line), numpy's text
    reader (a mid-sized file of one number a line) or pandas' C parser: in one call when the
    bytes allow, else chunk by chunk with the irregular lines read exactly; None when only the
    exact reader can split the lines, or when the input is small enough that importing pandas
    would cost more than the exact reader."""
    size = len(src.data) if src.data is not None else src.path.stat().st_size if src.path else 0
    if size < _EXACT_BYTES or _lone_cr_above_data(src, lay):
        return None
    if size < DECIMAL_BYTES and (read := _plain_decimals(src, lay)) is not None:
        return read
    if size < NUMPY_BYTES and (read := _one_number_a_line(src, lay)) is not None:
        return read
    import pandas as pd

    return _whole(pd, src, lay) or _chunked(pd, src, lay)


def _all_exact(src: _Source, lay: _Layout) -> tuple[np.ndarray, LineMap]:
    values, numbers = _exact(src, lay, lay.data_line)
    read = np.frombuffer(numbers, dtype=np.int64)
    span = np.arange(lay.data_line, int(read[-1]) + 1 if read.size else lay.data_line)
    return np.frombuffer(values, dtype=np.float64).copy(), LineMap(
        lay.data_line, np.setdiff1d(span, read), read.size
    )


def read_table_column(
    source: str, column: str | int | None = None, *, decimal: str | None = None
) -> Column:
    """Read one column of finite numbers from ``source`` (a path or ``-`` for stdin).

    ``column`` is a 0-based index or a header name (case-insensitive when unambiguous); it may
    be omitted when the data has a single column. ``decimal`` is the decimal mark: ``","``
    reads ``1,65`` as 1.65 (columns are then separated by ``;``, tabs or spaces); ``"."`` says
    commas separate columns; None (the default) refuses headerless data that could be either.
    """
    if decimal is not None and decimal not in DECIMALS:
        raise BadInput("--decimal", f"{decimal!r}: the decimal mark is '.' or ','")
    src = _open_source(source)
    lay, _ = _layout(src, column, decimal)
    fast = _fast(src, lay)
    values, lines = fast if fast is not None else _all_exact(src, lay)
    return Column(
        values=values,
        source=src.name,
        name=lay.header[lay.index] if lay.header is not None else None,
        index=lay.index,
        line_map=lines,
    )


def read_column(
    source: str, column: str | int | None = None, *, decimal: str | None = None
) -> np.ndarray:
    """The numbers of one column of ``source`` (path or ``-``) as a float64 array.

    See ``read_table_column``."""
    return read_table_column(source, column, decimal=decimal).values


# --- units ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reconciled:
    """Two columns in one unit, ready to be compared."""

    values_a: np.ndarray
    values_b: np.ndarray
    unit: str | None  # the unit both are in now (A's), None when neither header names one
    note: str | None = None  # what was converted or assumed, for the user


def reconcile_units(a: Column, b: Column) -> Reconciled:
    """Express B in A's unit (``latency (us)`` against ``latency (ms)``: B's values / 1000), or
    refuse columns that measure different things (time against throughput) with a BadInput.

    A unit written on one side only is assumed on the other, and the note says so. Two units
    this module does not understand must be written the same to be compared.
    """
    unit_a, unit_b = a.unit, b.unit
    if unit_a is None or unit_b is None:
        unit = unit_a or unit_b
        note = None
        if unit is not None:
            bare = b if unit_a is not None else a
            note = f"{bare.source} names no unit for column {bare.label}; assumed {unit}"
        return Reconciled(a.values, b.values, unit, note)
    qa, qb = parse_unit(unit_a), parse_unit(unit_b)
    if qa is None or qb is None:
        if unit_a == unit_b:
            return Reconciled(a.values, b.values, unit_a)
        unknown = unit_a if qa is None else unit_b
        raise BadInput(
            b.source,
            f"cannot tell whether {unit_b!r} and A's {unit_a!r} are the same unit "
            f"({unknown!r} is not a unit pilot-sys knows); write both headers alike",
        )
    factor = conversion_factor(qb, qa)
    if factor is None:
        raise BadInput(
            b.source,
            f"column {b.label} is in {qb.describe()} but A's column {a.label} is in "
            f"{qa.describe()}: they measure different things and cannot be compared",
        )
    if factor == 1.0:
        return Reconciled(a.values, b.values, unit_a)
    return Reconciled(
        a.values,
        b.values * factor,
        unit_a,
        f"{b.source}: converted from {unit_b} to {unit_a} (x {factor:g})",
    )
