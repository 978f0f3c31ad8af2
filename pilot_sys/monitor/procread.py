"""Cheap repeated reads of line-oriented /proc files: the sampler's hot path.

Why hand-written: the cost target is a full-system sample within 1.5x of merely reading the raw
files. psutil re-opens every file and parses every field into Python objects (~4x the floor);
``np.fromstring`` parses ~250 ns per number. What is cheap in CPython is a few C-level calls:
``os.pread`` on a file descriptor opened once, ``bytes.find`` to locate the few lines that hold
the wanted counters, ``bytes.split`` on just those lines and ``operator.itemgetter`` to pick
the tokens. The tokens stay ``bytes``: the sampler joins a whole tick into one record of its
preallocated numpy buffer (``row_dtype``; a fifth of the cost of making numpy parse them into
``int64`` there), and ``parse_rows`` turns the buffer into numbers after the run, vectorised,
like everything else (rates, fractions).

The layout (which token holds which counter) is learnt once from the file's current text and
checked on every read (token count, and the key token of every wanted line); when a device
appears or vanishes the layout is relearnt by name, and a counter that no longer exists reads
as ``MISSING`` (-1; /proc counters are never negative), which becomes NaN in the derived metrics.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path

import numpy as np

MISSING = b"-1"
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


class LineTable:
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
        self._table = bytes.maketrans(separators, b" " * len(separators)) if separators else None
        self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self.relayouts = 0
        self._windows: list[tuple[bytes, bytes, int]] = []
        self._hints: list[int] = []
        self._whole = -1  # token count when the wanted lines are the whole file: split it all
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
            windows.append((self._marker(all_lines, first_n), self._marker(all_lines, last_n), count))
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


def read_text(path: str | os.PathLike[str], default: str | None = None) -> str | None:
    """A small sysfs/proc attribute read once at open time (never on the hot path)."""
    try:
        return Path(path).read_text().strip()
    except (OSError, ValueError):
        return default


TOKEN_DTYPE = np.dtype("S20")  # a 64-bit counter has at most 20 decimal digits
_PARSE_ROWS = 8192  # records split at a time: bounds the temporary Python token list


def row_dtype(columns: int) -> np.dtype:
    """One tick: ``columns`` tokens of at most 20 digits joined by single spaces."""
    return np.dtype(f"S{max(1, 21 * columns)}")


def join_row(tokens: Sequence[bytes]) -> bytes:
    """The tick's record (the hot path calls ``b" ".join`` directly)."""
    return b" ".join(tokens)


def parse_rows(records: np.ndarray, columns: int) -> np.ndarray:
    """Tick records (``row_dtype``) to a float64 matrix (rows x columns), NaN where missing."""
    out = np.full((len(records), columns), np.nan)
    for lo in range(0, len(records), _PARSE_ROWS):
        block = records[lo : lo + _PARSE_ROWS].tolist()
        toks = b" ".join(block).split()
        if len(toks) == len(block) * columns:
            table = np.array(toks, dtype=TOKEN_DTYPE).reshape(len(block), columns)
        else:  # a record with the wrong count (cannot happen with well-behaved readers): per row
            table = np.full((len(block), columns), MISSING, dtype=TOKEN_DTYPE)
            for r, record in enumerate(block):
                row = record.split()
                if len(row) == columns:
                    table[r] = row
        out[lo : lo + len(block)] = parse_tokens(table)
    return out


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
