"""Cheap repeated reads of line-oriented /proc files: the sampler's hot path.

Why hand-written: the cost target is a full-system sample within 1.5x of merely reading the raw
files. psutil re-opens every file and parses every field into Python objects
(``benchmarks/sampler_cost.py`` compares it with the floor), and ``np.fromstring`` is slow per
number. What is cheap in CPython is a few C-level calls:
``os.pread`` on a file descriptor opened once, ``bytes.find`` to locate the few lines that hold
the wanted counters, ``bytes.split`` on just those lines and ``operator.itemgetter`` to pick
the tokens (``LineTable.read``, ``FieldFile.read``: the counters as ``bytes`` tokens, the
plug-ins' reader contract; ``parse_tokens`` turns tokens into numbers, vectorised).

The sampler's tick goes one step further (both classes are ``probe.TextReader``s: their
``tick_reader``, then ``parse_segments`` after the run): it stores the text holding the wanted
lines as read (the whole file when it is small, a C-level ``os.pread`` with no Python frame at
all; else the windows of wanted lines, found with ``bytes.find``) and splits it after the run,
vectorised over all ticks: no token objects are made on the tick. In a thread woken 100 times a
second with caches made cold by other work, every Python frame and object costs several times
its inline price (benchmarks/results/monitor.md has the figures), so this is what brings the
sampler's thread close to a thread that only preads the files.

The layout (which token holds which counter) is learnt once from the file's current text and
checked on every read (token count, and the key token of every wanted line); when a device
appears or vanishes the counters are found again by line key, and a counter that no longer
exists reads as ``MISSING`` (-1; /proc counters are never negative), which becomes NaN in the
derived metrics.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path

import numpy as np

from pilot_sys.monitor.probe import TextReader

MISSING = b"-1"
SEGMENT = b"\x01"  # separates the readers' texts in a tick record (never in /proc or /sys text)
# room in a record for a reader's text to grow: a digit more per token (each counter 10x), plus
# about a line; a text that outgrows it is cut, and the counters cut off read MISSING (NaN)
TEXT_GROWTH_PER_TOKEN = 1
TEXT_GROWTH_BYTES = 128
# a file this small is stored whole on the tick (one C-level pread, no Python frame at all)
# rather than as windows of wanted lines
WHOLE_TEXT_BYTES = 2048
# Wanted lines separated by at most this many unwanted tokens are read in one window: splitting
# a few extra tokens is cheaper than the three ``find`` calls a separate window costs (but the
# 500-token ``intr`` line of /proc/stat is not).
MAX_SKIP_TOKENS = 32
# A window's marker is searched from where it was last found, less this slack (counters before
# it can lose digits only when levels fall); not found there, from the previous window's end.
HINT_SLACK = 256


class Wanted:
    """One counter: the line whose key token is ``key`` and the ``field``-th token of that line."""

    __slots__ = ("key", "field")

    def __init__(self, key: str, field: int) -> None:
        self.key = key
        self.field = field

    def __repr__(self) -> str:
        return f"Wanted({self.key!r}, {self.field})"


def _getter(indices: Sequence[int]) -> Callable[[Sequence[bytes]], Sequence[bytes]]:
    if len(indices) == 1:
        only = indices[0]
        return lambda toks: (toks[only],)
    return itemgetter(*indices)


class LineTable(TextReader):
    """A /proc file whose lines are keyed by one token (``key_token`` is its index in the line),
    e.g. ``/proc/vmstat`` (``pgpgin 123``, key token 0) or ``/proc/diskstats``
    (``254 0 vda 123 ...``, key token 2).

    ``separators`` are turned into spaces before splitting (``:`` in /proc/net/dev, where a long
    byte count touches the interface name; ``=`` in /proc/pressure/*).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        wanted: Sequence[Wanted],
        *,
        key_token: int = 0,
        separators: bytes = b"",
        skip_lines: int = 0,
        bufsize: int = 1 << 16,
    ) -> None:
        self.path = Path(path)
        self.wanted = list(wanted)
        self.key_token = key_token
        self.skip_lines = skip_lines
        self.bufsize = bufsize
        self._separators = separators
        self._table = bytes.maketrans(separators, b" " * len(separators)) if separators else None
        self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self.relayouts = 0
        self._windows: list[tuple[bytes, bytes, int]] = []
        self._hints: list[int] = []
        self._whole = -1  # token count when the wanted lines are the whole file: split it all
        self._pick: list[int] = []  # token indices of the wanted counters (as ``_get``)
        self._check_at: list[int] = []  # token indices of the wanted lines' keys (as ``_check``)
        # the same in the whole file's tokens, and its token count (for texts stored whole)
        self._whole_pick: list[int] = []
        self._whole_check: list[int] = []
        self._whole_count = -1
        self._text_whole = False
        self._get: Callable[[Sequence[bytes]], Sequence[bytes]] = _getter([0])
        self._check: Callable[[Sequence[bytes]], Sequence[bytes]] = _getter([0])
        self._keys: tuple[bytes, ...] = ()
        self._fast = self._layout(self._raw())

    # -- the hot path ----------------------------------------------------------------------
    def _raw(self) -> bytes:
        """The file as the layout sees it (separators already spaces); not used by ``read``,
        which inlines it."""
        data = os.pread(self.fd, self.bufsize, 0)
        return data.translate(self._table) if self._table is not None else data

    def read(self) -> Sequence[bytes]:
        """The wanted counters as ``bytes`` tokens, in ``wanted`` order."""
        data = os.pread(self.fd, self.bufsize, 0)
        if self._table is not None:
            data = data.translate(self._table)
        if self._whole >= 0:
            toks = data.split()
            if len(toks) == self._whole and self._check(toks) == self._keys:
                return self._get(toks)
        elif self._fast:
            toks = []
            pos = 0
            hints = self._hints
            for k, (first, last, count) in enumerate(self._windows):
                start = data.find(first, hints[k])
                if start < 0:
                    start = data.find(first, pos)
                    if start < 0:
                        break
                hints[k] = start - HINT_SLACK if start > HINT_SLACK else 0
                last_at = data.find(last, start)
                if last_at < 0:
                    break
                end = data.find(b"\n", last_at + 1)
                pos = end if end >= 0 else len(data)
                part = data[start:pos].split()
                if len(part) != count:
                    break
                toks += part
            else:
                if self._check(toks) == self._keys:
                    return self._get(toks)
        # the layout changed (a device appeared or vanished): learn it again by name; while a
        # wanted line is absent, keep trying, so the fast path returns when the device does
        self.relayouts += 1
        self._fast = self._layout(data)
        return self._get(data.split()) if self._whole >= 0 and self._fast else self._by_name(data)

    __call__ = read

    def read_text(self) -> bytes:
        """The tick's read: the text holding the wanted lines, unsplit (``parse_segments`` finds
        the counters in it after the run). The whole file when the layout splits it whole (or
        a wanted line was missing at open), else the windows of wanted lines, concatenated (each
        window starts with its line's newline, so lines stay apart); the whole file again when
        a window is not found (a device vanished: parsed by name, missing counters read MISSING)."""
        data = os.pread(self.fd, self.bufsize, 0)
        if self._text_whole or not self._fast:
            return data
        parts = []
        pos = 0
        hints = self._hints
        for k, (first, last, _count) in enumerate(self._windows):
            start = data.find(first, hints[k])
            if start < 0:
                start = data.find(first, pos)
                if start < 0:
                    return data
            hints[k] = start - HINT_SLACK if start > HINT_SLACK else 0
            last_at = data.find(last, start)
            if last_at < 0:
                return data
            end = data.find(b"\n", last_at + 1)
            pos = end if end >= 0 else len(data)
            parts.append(data[start:pos])
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def tick_reader(self) -> Callable[[], bytes]:
        """What the sampler calls on each tick: ``read_text``, or for a text stored whole the
        ``os.pread`` itself (a C call: no Python frame to run with cold caches)."""
        if self._text_whole or not self._fast:
            return functools.partial(os.pread, self.fd, self.bufsize, 0)
        return self.read_text

    def layout(self) -> dict[str, object]:
        """How ``parse_segments`` finds the counters in ``read_text``'s texts (JSON-ready, so
        that a spill directory can be parsed without the files)."""
        whole = self._text_whole
        count = self._whole_count if whole else sum(c for _, _, c in self._windows)
        return {
            "kind": "lines",
            "wanted": [[w.key, w.field] for w in self.wanted],
            "key_token": self.key_token,
            "separators": self._separators.decode("latin-1"),
            "skip_lines": self.skip_lines,
            "count": count if self._fast else -1,
            "pick": list(self._whole_pick if whole else self._pick),
            "check": list(self._whole_check if whole else self._check_at),
            "keys": [k.decode("latin-1") for k in self._keys],
        }

    def text_bound(self) -> int:
        """Bytes a record reserves for this reader's text."""
        text = self.read_text()
        return len(text) + TEXT_GROWTH_PER_TOKEN * len(text.split()) + TEXT_GROWTH_BYTES

    # -- layout ----------------------------------------------------------------------------
    def _lines(self, data: bytes) -> list[bytes]:
        return data.split(b"\n")[self.skip_lines :]

    def _key_of(self, line: bytes) -> bytes | None:
        toks = line.split()
        return toks[self.key_token] if len(toks) > self.key_token else None

    def _layout(self, data: bytes) -> bool:
        """Build the windows and token indices from ``data``; False if a wanted line is missing."""
        self._whole = -1
        self._windows = []
        all_lines = data.split(b"\n")
        lines = all_lines[self.skip_lines :]
        line_no: dict[bytes, int] = {}
        for n, line in enumerate(lines):
            key = self._key_of(line)
            if key is not None and key not in line_no:
                line_no[key] = n + self.skip_lines
        try:
            wanted_lines = sorted({line_no[w.key.encode()] for w in self.wanted})
        except KeyError:
            return False
        ntok = [len(line.split()) for line in all_lines]
        groups: list[list[int]] = []
        for n in wanted_lines:
            if groups and sum(ntok[groups[-1][-1] + 1 : n]) <= MAX_SKIP_TOKENS:
                groups[-1].append(n)
            else:
                groups.append([n])
        windows: list[tuple[bytes, bytes, int]] = []
        offset_of: dict[int, int] = {}  # line number -> index of its first token in the tokens
        total = 0
        for group in groups:
            first_n, last_n = group[0], group[-1]
            for n in range(first_n, last_n + 1):
                offset_of[n] = total
                total += ntok[n]
            count = sum(ntok[first_n : last_n + 1])
            windows.append(
                (self._marker(all_lines, first_n), self._marker(all_lines, last_n), count)
            )
        # one window and little else in the file: split the whole file, no ``find`` at all
        before = sum(ntok[: groups[0][0]])
        whole = len(windows) == 1 and sum(ntok) - total <= MAX_SKIP_TOKENS
        shift = before if whole else 0
        indices = [offset_of[line_no[w.key.encode()]] + w.field + shift for w in self.wanted]
        # every wanted line's key is checked on each read (one C-level compare): a device
        # replaced by another with as many counters must not pass for it
        keys = sorted({w.key.encode() for w in self.wanted}, key=lambda k: line_no[k])
        self._check = _getter([offset_of[line_no[k]] + self.key_token + shift for k in keys])
        self._keys = tuple(keys)
        self._windows = windows
        self._hints = [0] * len(windows)
        self._whole = sum(ntok) if whole else -1
        self._get = _getter(indices)
        self._pick = indices
        self._check_at = [offset_of[line_no[k]] + self.key_token + shift for k in keys]
        line_start = [sum(ntok[:n]) for n in range(len(ntok))]
        self._whole_pick = [line_start[line_no[w.key.encode()]] + w.field for w in self.wanted]
        self._whole_check = [line_start[line_no[k]] + self.key_token for k in keys]
        self._whole_count = sum(ntok)
        self._text_whole = whole or len(data) <= WHOLE_TEXT_BYTES
        return True

    def _marker(self, all_lines: list[bytes], n: int) -> bytes:
        """The bytes that start line ``n`` up to its key token and the next character: unique
        (the key is unique) and stable while the counters change (they come after it)."""
        if n == 0:
            return b""
        line = all_lines[n]
        toks = line.split()
        key = toks[self.key_token]
        at = 0
        for tok in toks[: self.key_token + 1]:
            at = line.index(tok, at) + len(tok)
        stop = min(at + 1, len(line))
        assert line[at - len(key) : at] == key
        return b"\n" + line[:stop]

    def _by_name(self, data: bytes) -> Sequence[bytes]:
        """The slow path: find every wanted counter by its line key; MISSING where absent."""
        by_key: dict[bytes, list[bytes]] = {}
        for line in self._lines(data):
            toks = line.split()
            if len(toks) > self.key_token:
                by_key.setdefault(toks[self.key_token], toks)
        out: list[bytes] = []
        for w in self.wanted:
            toks = by_key.get(w.key.encode())
            out.append(toks[w.field] if toks is not None and len(toks) > w.field else MISSING)
        return tuple(out)

    def keys(self) -> list[str]:
        """Every line key present now (to decide what to monitor)."""
        keys = [self._key_of(line) for line in self._lines(self._raw())]
        return [k.decode() for k in keys if k is not None]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class FieldFile(TextReader):
    """A one-line file of whitespace-separated counters (``/sys/class/block/<dev>/stat``): the
    ``fields`` (0-based token indices) of the line, as ``bytes`` tokens. A line with fewer
    tokens than the highest wanted index is an error (the sampler records those counters as
    missing for that tick), never a shifted read."""

    def __init__(
        self, path: str | os.PathLike[str], fields: Sequence[int], *, bufsize: int = 4096
    ) -> None:
        self.path = Path(path)
        self.bufsize = bufsize
        self._need = max(fields) + 1
        self._fields = list(fields)
        self._get = _getter(list(fields))
        self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self.read()  # fail at open time, not on the first tick
        self._count = len(os.pread(self.fd, self.bufsize, 0).split())

    def read(self) -> Sequence[bytes]:
        toks = os.pread(self.fd, self.bufsize, 0).split()
        if len(toks) < self._need:
            raise ValueError(f"{self.path}: {len(toks)} fields, expected at least {self._need}")
        return self._get(toks)

    __call__ = read

    def read_text(self) -> bytes:
        """The tick's read: the line as it is (``parse_segments`` splits it after the run)."""
        return os.pread(self.fd, self.bufsize, 0)

    def tick_reader(self) -> Callable[[], bytes]:
        return functools.partial(os.pread, self.fd, self.bufsize, 0)

    def layout(self) -> dict[str, object]:
        return {"kind": "fields", "pick": list(self._fields), "count": self._count}

    def text_bound(self) -> int:
        text = self.read_text()
        return len(text) + TEXT_GROWTH_PER_TOKEN * len(text.split()) + TEXT_GROWTH_BYTES

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def read_text(path: str | os.PathLike[str], default: str | None = None) -> str | None:
    """A small sysfs/proc attribute read once at open time (never on the hot path)."""
    try:
        return Path(path).read_text().strip()
    except (OSError, ValueError):
        return default


TOKEN_DTYPE = np.dtype("S20")  # a 64-bit counter has at most 20 decimal digits


def parse_tokens(tokens: np.ndarray) -> np.ndarray:
    """Decimal counter tokens (an ``S20`` array, as the sampler stores them) to float64,
    vectorised: the tick stores the bytes as read and parsing happens after the run.

    ``MISSING`` (b"-1"), empty and malformed tokens become NaN. numpy's own
    ``astype(int64)`` on bytes parses one element at a time through Python (~270 ns each);
    Horner's rule over the 20 byte columns of the buffer's ``uint8`` view is several times faster.
    """
    tokens = np.ascontiguousarray(tokens, dtype=TOKEN_DTYPE)
    width = TOKEN_DTYPE.itemsize
    b = tokens.view(np.uint8).reshape(*tokens.shape, width)
    value = np.zeros(tokens.shape, dtype=np.uint64)
    bad = b[..., 0] == 0  # empty
    ten = np.uint64(10)
    for j in range(width):  # tokens are left-aligned and NUL-padded
        column = b[..., j]
        present = column != 0
        if not present.any():
            break
        digit = column.astype(np.uint64) - np.uint64(48)
        bad |= present & (digit > 9)
        np.copyto(value, value * ten + digit, where=present)
    out = value.astype(np.float64)
    out[bad] = np.nan
    return out


def tokens_layout(width: int) -> dict[str, object]:
    """The layout of a reader without ``read_text``: its tokens, joined by spaces on the tick."""
    return {"kind": "tokens", "count": width}


def parse_segments(segments: Sequence[bytes], layout: dict[str, object]) -> np.ndarray:
    """The wanted counters (``TOKEN_DTYPE``, rows x wanted, MISSING where absent) from one
    reader's tick texts, as ``read_text`` stored them.

    Vectorised: all texts are joined and split at once; when every text has the layout's token
    count (the usual case: no device came or went) the counters are picked by index and each
    row's line keys are compared with the expected ones. Rows that fail (another token count,
    another key: a device appeared or vanished, or the text was cut) are parsed one by one by
    line key, so no counter is ever taken from the wrong line."""
    kind = layout["kind"]
    n = len(segments)
    if kind == "tokens":
        width = int(layout["count"])  # type: ignore[arg-type]
        pick: list[int] = list(range(width))
    else:
        pick = list(layout["pick"])  # type: ignore[arg-type]
        width = len(layout["wanted"]) if kind == "lines" else len(pick)  # type: ignore[arg-type]
    out = np.full((n, width), MISSING, dtype=TOKEN_DTYPE)
    if n == 0 or width == 0:
        return out
    seps = str(layout.get("separators", "")).encode("latin-1")
    table = bytes.maketrans(seps, b" " * len(seps)) if seps else None
    count = int(layout.get("count", -1))  # type: ignore[arg-type]
    ok = np.zeros(n, dtype=bool)
    if count > 0 and (kind != "lines" or len(pick) == width):
        blob = b" ".join(segments)
        toks = (blob.translate(table) if table is not None else blob).split()
        if len(toks) == n * count:
            grid = np.array(toks, dtype=object).reshape(n, count)
            ok[:] = True
            if kind == "lines":
                keys = np.array([k.encode("latin-1") for k in layout["keys"]], dtype=object)  # type: ignore[union-attr]
                ok = (grid[:, list(layout["check"])] == keys).all(axis=1)  # type: ignore[arg-type]
            out[ok] = grid[ok][:, pick].astype(TOKEN_DTYPE)
    for r in np.flatnonzero(~ok):
        out[r] = _parse_one(segments[r], layout, table, pick, width, count)
    return out


def _parse_one(
    text: bytes,
    layout: dict[str, object],
    table: bytes | None,
    pick: list[int],
    width: int,
    count: int,
) -> list[bytes]:
    """One tick's text, the slow way: by token count for one-line files, by line key otherwise."""
    if table is not None:
        text = text.translate(table)
    kind = layout["kind"]
    if kind != "lines":
        toks = text.split()
        if (kind == "tokens" and len(toks) == width) or (
            kind == "fields" and toks and len(toks) > max(pick)
        ):
            return [toks[i] for i in pick]
        return [MISSING] * width
    key_token = int(layout["key_token"])  # type: ignore[arg-type]
    lines = text.split(b"\n")
    if not text.startswith(b"\n"):  # the whole file (a window always starts with its newline)
        lines = lines[int(layout["skip_lines"]) :]  # type: ignore[arg-type]
    by_key: dict[bytes, list[bytes]] = {}
    for line in lines:
        toks = line.split()
        if len(toks) > key_token:
            by_key.setdefault(toks[key_token], toks)
    values: list[bytes] = []
    for key, field in layout["wanted"]:  # type: ignore[union-attr]
        toks = by_key.get(str(key).encode("latin-1"))
        values.append(toks[int(field)] if toks is not None and len(toks) > int(field) else MISSING)
    return values
