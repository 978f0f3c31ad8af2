"""The size limit of every kind of input pilot-sys reads, checked while reading.

Why: a file can be endless (``/dev/zero``, a FIFO) or far larger than any real one; reading it
whole first and judging after would exhaust memory before the one clear line could be said.
Each kind has a stated limit (docs/limits.md), enforced by reading at most one byte more than
it, and an environment variable raising it for the rare real input that needs more
(``PILOT_SYS_LIMIT_<KIND>``, a byte or item count; ``k``/``M``/``G`` suffixes are binary).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pilot_sys.errors import BadInput

KiB, MiB, GiB = 1024, 1024**2, 1024**3


@dataclass(frozen=True)
class Limit:
    """One stated limit: its default, what it bounds, and the variable overriding it."""

    kind: str
    default: int
    what: str  # "bytes" or the items counted

    @property
    def variable(self) -> str:
        return f"PILOT_SYS_LIMIT_{self.kind.upper()}"

    def value(self) -> int:
        """The limit in force: the environment's override when it is a positive count."""
        raw = os.environ.get(self.variable, "").strip()
        if not raw:
            return self.default
        scale = {"k": KiB, "m": MiB, "g": GiB}.get(raw[-1].lower(), 1)
        digits = raw[:-1] if scale > 1 else raw
        if not digits.isdigit() or int(digits) <= 0:
            raise BadInput(self.variable, f"{raw!r}: expected a positive count such as 4G")
        return int(digits) * scale

    def refuse(self, where: str, seen: str | None = None) -> BadInput:
        """The one line refusing an input over this limit (``seen``: its size when known)."""
        over = f"{seen} is over" if seen else "goes on past"
        return BadInput(
            where,
            f"{over} the limit of {_human(self.value(), self.what)} for {self.doc}; "
            f"set {self.variable} to allow more",
        )

    @property
    def doc(self) -> str:
        return LIMIT_DOCS[self.kind]


def _human(n: int, what: str) -> str:
    if what != "bytes":
        return f"{n:,} {what}"
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n:,} bytes"


LIMIT_DOCS = {
    "data_bytes": "a data file (analyze, steady, changepoints)",
    "data_line": "one line of a data file",
    "json_bytes": "a JSON or GraphML file (result.json, session.json, a graph file)",
    "trace_bytes": "a monitor trace (monitor.json, monitor --json)",
    "journal_bytes": "a session's journal (rounds.jsonl)",
    "units_bytes": "a round's units.npz",
    "graph_nodes": "a component graph",
    "output_bytes": "one stream of a workload's output kept in its round folder",
    "parsed_values": "the readings a parser takes from one round's output",
}
DATA_BYTES = Limit("data_bytes", 1 * GiB, "bytes")
DATA_LINE = Limit("data_line", 1 * MiB, "bytes")
JSON_BYTES = Limit("json_bytes", 256 * MiB, "bytes")
TRACE_BYTES = Limit("trace_bytes", 1 * GiB, "bytes")
JOURNAL_BYTES = Limit("journal_bytes", 1 * GiB, "bytes")
UNITS_BYTES = Limit("units_bytes", 1 * GiB, "bytes")
GRAPH_NODES = Limit("graph_nodes", 200_000, "nodes")
OUTPUT_BYTES = Limit("output_bytes", 256 * MiB, "bytes")
PARSED_VALUES = Limit("parsed_values", 1_000_000, "values")
ALL = (
    DATA_BYTES,
    DATA_LINE,
    JSON_BYTES,
    TRACE_BYTES,
    JOURNAL_BYTES,
    UNITS_BYTES,
    GRAPH_NODES,
    OUTPUT_BYTES,
    PARSED_VALUES,
)

CHUNK = 1 * MiB


def read_bounded(
    path: str | Path,
    limit: Limit,
    *,
    name: str | None = None,
    text: bool = False,
    max_line: Limit | None = None,
) -> bytes:
    """The bytes of ``path``, refused (BadInput) as soon as more than ``limit`` arrive; a
    regular file over the limit is refused from its size, before anything is read. ``text``:
    a NUL byte is refused where it arrives (``/dev/zero`` costs one block, not the limit);
    ``max_line``: so is a line longer than that. Missing files and OS errors are BadInput
    naming the file too."""
    where = name or str(path)
    cap = limit.value()
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > cap:
                raise limit.refuse(where, _human(info.st_size, "bytes"))
            return read_stream_bounded(handle, limit, where, text=text, max_line=max_line)
    except FileNotFoundError:
        raise BadInput(where, "no such file") from None
    except IsADirectoryError:
        raise BadInput(where, "is a directory, expected a file") from None
    except PermissionError:
        raise BadInput(where, "permission denied") from None
    except OSError as exc:
        raise BadInput(where, f"cannot read ({exc.strerror or exc})") from None


def read_stream_bounded(
    handle: object,
    limit: Limit,
    where: str,
    *,
    text: bool = False,
    max_line: Limit | None = None,
) -> bytes:
    """Read a binary stream to its end, refusing it once it passes ``limit`` (and, as for
    :func:`read_bounded`, at a NUL byte with ``text`` or a line over ``max_line``)."""
    cap = limit.value()
    line_cap = max_line.value() if max_line is not None else None
    chunk_size = min(CHUNK, line_cap) if line_cap else CHUNK
    parts: list[bytes] = []
    total = 0
    since_newline = 0
    read = handle.read  # type: ignore[attr-defined]
    while True:
        chunk = read(min(chunk_size, cap + 1 - total))
        if not chunk:
            return b"".join(parts)
        if text:
            nul = chunk.find(b"\x00")
            if nul >= 0:
                raise BadInput(
                    where, f"binary data (a NUL byte at byte {total + nul}), expected text"
                )
        if line_cap is not None and max_line is not None:
            first = chunk.find(b"\n")
            if (first if first >= 0 else len(chunk)) + since_newline > line_cap:
                line = sum(part.count(b"\n") for part in parts) + 1
                raise max_line.refuse(f"{where}:{line}")
            if first >= 0:
                since_newline = len(chunk) - chunk.rfind(b"\n") - 1
            else:
                since_newline += len(chunk)
        parts.append(chunk)
        total += len(chunk)
        if total > cap:
            raise limit.refuse(where)


def decode_utf8(data: bytes, where: str, expected: str) -> str:
    """Strict UTF-8 text, or BadInput saying where the bytes stop being text."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(
            where, f"not UTF-8 text ({exc.reason} at byte {exc.start}); expected {expected}"
        ) from None


def read_text_bounded(path: str | Path, limit: Limit, expected: str) -> str:
    """:func:`read_bounded` then :func:`decode_utf8`."""
    return decode_utf8(read_bounded(path, limit, text=True), str(path), expected)
