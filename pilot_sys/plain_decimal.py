"""Plain decimal numbers, one a line, parsed exactly by vectorised integer arithmetic.

The library readers are the slow part of reading a million readings: numpy's text reader spends
~0.25 s of CPU on a million lines (``pilot_sys.plain_numbers``), and pandas costs ~0.2 s to
import before its parser starts. Most number files hold short decimals as printf writes them
(``99.7279``, ``-1.5e-07``), and those have an exact answer that needs no library: Clinger's
fast path. When the digits without the point form an integer M <= 2**53 (exact in float64) and
the decimal exponent E (the written one less the digits after the point) has |E| <= 22 (10**|E|
is exact in float64), M * 10**E or M / 10**-E is one IEEE operation, hence correctly rounded:
bit for bit what Python's ``float`` returns, and numpy's reader. pandas' C parser, which read
files above ``NUMPY_BYTES`` before, gives ``float``'s value for these cells too (checked in
tests/test_plain_decimal.py), so no value read at any size changes.

Every line must be ``[blanks][+|-]digits[.digits][(e|E)[+|-]digits][blanks][CR]LF`` (blanks:
spaces and tabs) inside those bounds, with at most 24 digits (leading zeros included) in the
mantissa and in the exponent. Anything else anywhere (a blank line, a second cell, ``nan``,
``1_000``, hex, a longer mantissa, a larger exponent, any other byte) returns None and the
caller's readers decide, so this module never decides what a file means. It parses
``_BLOCK_BYTES`` of whole lines at a time, so its temporaries stay a few MiB whatever the
number of lines.
"""

from __future__ import annotations

import io
import re
from typing import BinaryIO

import numpy as np

from pilot_sys.line_blocks import LineTooLong, whole_lines

# This is the hand-written hot path: every pass below is one numpy call over a block's bytes,
# its tokens (the bytes that are not digits) or its lines, never a Python loop over lines.

# Above this size pandas' C parser, cheaper per line, repays its import (~0.2 s of CPU): the
# two cross near 6 million readings of 8 bytes (benchmarks/results/load22b-reader.md).
DECIMAL_BYTES = 32 << 20
_BLOCK_BYTES = 1 << 18  # bytes parsed at a time (whole lines): bounds the temporaries
_LONGEST_LINE = 1 << 16  # longer lines (blanks around a number) are left to the other readers
_MAX_DIGITS = 24  # digits of a run, leading zeros included: three 8-byte words
_EXACT_INTEGER = 1 << 53  # every integer up to 2**53 is exact in float64
_EXACT_POWER = 22  # 10**22 is the largest power of ten exact in float64

# Tokens are the bytes that are not digits. In grammar order a line holds: its start (the LF
# before it), a leading sign, the point, the exponent mark, the exponent's sign. A sign is
# leading after a LF, the exponent's after an e; any other byte, or a sign elsewhere, is bad.
_START, _SIGN, _DOT, _MARK, _EXP_SIGN, _BAD = range(6)
_KIND_OF_BYTE = np.full(256, _BAD, dtype=np.uint8)
_KIND_OF_BYTE[[ord("\n"), ord("."), ord("e"), ord("E")]] = [_START, _DOT, _MARK, _MARK]
_PLUS, _MINUS, _LF = ord("+"), ord("-"), ord("\n")
_ZERO, _NINE = np.uint8(ord("0")), np.uint8(9)
# _FOLLOWS[(a << 4) | (b << 1) | digits]: may token b follow token a with (1) or without (0)
# digits between them
_FOLLOWS = np.zeros(128, dtype=bool)
for _a, _b, _runs_allowed in (
    (_START, _SIGN, (0,)),
    (_START, _DOT, (0, 1)),  # integer digits, or none (".5"): the mantissa is checked per line
    (_START, _MARK, (1,)),
    (_START, _START, (1,)),  # a plain integer; an empty line is no number
    (_SIGN, _DOT, (0, 1)),
    (_SIGN, _MARK, (1,)),
    (_SIGN, _START, (1,)),
    (_DOT, _MARK, (0, 1)),  # "5.e3" is a number for float()
    (_DOT, _START, (0, 1)),
    (_MARK, _EXP_SIGN, (0,)),
    (_MARK, _START, (1,)),
    (_EXP_SIGN, _START, (1,)),
):
    for _digits in _runs_allowed:
        _FOLLOWS[(_a << 4) | (_b << 1) | _digits] = True

_BLANK_END = re.compile(rb"\n[ \t\r]*\n[ \t\r\n]*\Z")  # a blank line, then only blank lines
_ALL = (1 << 64) - 1
# keep the last n bytes of a little-endian word (the last n characters), as digit values 0..9
_KEEP_LAST = np.array(
    [(_ALL << (8 * (8 - n))) & _ALL & 0x0F0F0F0F0F0F0F0F for n in range(9)], dtype=np.uint64
)
_POWERS = 10.0 ** np.arange(_EXACT_POWER + 1)  # each exact in float64
_FRONT = b"0" * 15 + b"\n"  # room for the words before the first line, and the LF opening it
_BACK = b"0" * 8  # room for the word that ends at the last LF
_U = np.uint64


def _eight_digits(words: np.ndarray) -> np.ndarray:
    """The numbers written by 8 digit values (0..9) per word, the first character in the lowest
    byte: pairs, then quadruples, then the whole, by multiplications that never carry across."""
    pairs = words * _U(10) + (words >> _U(8))
    low = pairs & _U(0x000000FF000000FF)
    high = (pairs >> _U(16)) & _U(0x000000FF000000FF)
    return (low * _U(100 + (1000000 << 32)) + high * _U(1 + (10000 << 32))) >> _U(32)


def _runs(words: np.ndarray, ends: np.ndarray, lengths: np.ndarray) -> np.ndarray | None:
    """The integers written by the digit runs of ``lengths`` <= 24 digits that end (exclusive)
    at byte ``ends``, eight digits at a time from the last (``words[i]`` holds bytes i..i+7);
    None when a digit before the last 16 is not 0 (the integer could exceed 2**53)."""
    value = _eight_digits(words[ends - 8] & _KEEP_LAST[np.minimum(lengths, 8)])
    if (lengths > 8).any():
        part = words[ends - 16] & _KEEP_LAST[np.clip(lengths - 8, 0, 8)]
        value += _eight_digits(part) * _U(10**8)
    if (lengths > 16).any() and (words[ends - 24] & _KEEP_LAST[np.clip(lengths - 16, 0, 8)]).any():
        return None
    return value


def _spaces_only_around(a: np.ndarray) -> bool:
    """Whether every run of spaces, tabs and CRs (the bytes ``a``) starts or ends a line: one
    between two other bytes of a line splits it into two cells."""
    blank = (a == ord(" ")) | (a == ord("\t")) | (a == ord("\r"))
    edges = np.diff(np.concatenate(([False], blank, [False])).view(np.int8))
    first, after = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return not ((a[first - 1] != _LF) & (a[after] != _LF)).any()  # _FRONT ends in a LF


def _block(data: bytes) -> np.ndarray | None:
    """The values of a block of whole lines, each ending in LF; None if any line is not a plain
    decimal number inside Clinger's fast path."""
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None
    buf = _FRONT + data + _BACK
    if b" " in data or b"\t" in data or b"\r" in data:
        if not _spaces_only_around(np.frombuffer(buf, dtype=np.uint8)):
            return None
        buf = buf.translate(None, b" \t\r")  # then parsed as if written without them
    # the grammar holds if every pair of neighbouring tokens may follow each other with (or
    # without) the digits between them; a token of any other byte is _BAD and follows nothing
    a = np.frombuffer(buf, dtype=np.uint8)
    at = np.flatnonzero((a - _ZERO) > _NINE)
    token = a[at]
    kind = _KIND_OF_BYTE[token]
    signs = b"-" in data or b"+" in data
    if signs:
        sign = (token == _PLUS) | (token == _MINUS)
        kind[1:][sign[1:] & (kind[:-1] == _MARK)] = _EXP_SIGN
        kind[1:][sign[1:] & (kind[:-1] == _START)] = _SIGN
    pairs = (kind[:-1] << 4) | (kind[1:] << 1) | (np.diff(at) > 1).view(np.uint8)
    if not _FOLLOWS[pairs].all():
        return None
    # per line, from the LF that ends the line before it: its leading sign, its point, the
    # byte after its mantissa (its e, or its LF)
    starts = np.flatnonzero(kind == _START)
    lf = at[starts]
    first = starts[:-1] + 1  # the line's first token
    opening, negative = lf[:-1], None  # the byte before the mantissa
    if signs:
        signed = kind[first] == _SIGN
        negative = signed & (token[first] == _MINUS)
        opening = np.where(signed, at[first], opening)
        first = first + signed
    dotted, after = None, first  # after: the token after the mantissa
    if b"." in data:
        dotted = kind[first] == _DOT
        after = first + dotted
    marks = b"e" in data or b"E" in data
    end = at[after] if marks else lf[1:]
    written = end - opening - 1
    fraction = None
    if dotted is not None:
        written -= dotted
        fraction = end - at[first] - dotted  # without a point at[first] is end: 0
        if not written.all():
            return None  # "." or "-.e5": a point without digits
        # without its points the mantissa is one run: every line before has one point or none
        buf = buf.translate(None, b".")
        moved = np.cumsum(dotted)
        end = end - moved  # a new array: end may be a view of lf
    if written.max(initial=0) > _MAX_DIGITS:
        return None
    words = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
    mantissa = _runs(words, end, written)
    if mantissa is None or mantissa.max(initial=0) > _EXACT_INTEGER:
        return None
    values = mantissa.astype(np.float64)
    if marks:
        power = _exponents(words, kind, token, at, after, lf, None if dotted is None else moved)
        if power is None:
            return None
        if fraction is not None:
            power -= fraction
        if power.max(initial=0) > _EXACT_POWER or power.min(initial=0) < -_EXACT_POWER:
            return None
        up = power > 0
        np.multiply(values, _POWERS[np.maximum(power, 0)], out=values, where=up)
        np.divide(values, _POWERS[np.maximum(-power, 0)], out=values, where=~up)
    elif fraction is not None:
        if fraction.max(initial=0) > _EXACT_POWER:
            return None
        values /= _POWERS[fraction]  # dividing by 10**0 = 1 is exact
    if negative is not None:
        np.negative(values, out=values, where=negative)  # after rounding: "-0" is -0.0
    return values


def _exponents(
    words: np.ndarray,
    kind: np.ndarray,
    token: np.ndarray,
    at: np.ndarray,
    after: np.ndarray,
    lf: np.ndarray,
    moved: np.ndarray | None,
) -> np.ndarray | None:
    """The written exponent of each line (0 without one); None beyond 24 digits or 10**16."""
    marked = kind[after] == _MARK
    last = at[np.minimum(after + 1, at.size - 1)]  # the exponent's sign, or its LF
    signed = marked & (token[np.minimum(after + 1, at.size - 1)] != _LF)
    start = np.where(signed, last, at[after])  # the byte before the exponent's digits
    digits = np.where(marked, lf[1:] - start - 1, 0)
    if digits.max(initial=0) > _MAX_DIGITS:
        return None
    written = _runs(words, lf[1:] if moved is None else lf[1:] - moved, digits)
    if written is None:
        return None
    power = written.astype(np.int64)  # < 10**16
    power[signed & (token[np.minimum(after + 1, at.size - 1)] == _MINUS)] *= -1
    return power


def _blank_at_the_end(handle: BinaryIO) -> bool:
    """Whether the last line is blank (a newline too many: common, and fatal to this parser)."""
    start = handle.seek(0, io.SEEK_CUR)
    end = handle.seek(0, io.SEEK_END)
    handle.seek(max(start, end - 64))
    tail = handle.read()
    handle.seek(start)
    if end - 64 > start:  # read from the middle of a line: only from its end on
        newline = tail.find(b"\n")
        tail = tail[newline:] if newline >= 0 else b""
    else:
        tail = b"\n" + tail  # the first line starts there
    return _BLANK_END.search(tail) is not None


def decimal_lines(handle: BinaryIO, skip: int) -> np.ndarray | None:
    """The numbers of the lines after the first ``skip`` of ``handle``, one plain decimal a line,
    each the value ``float`` gives; None when any line is anything else."""
    for _ in range(skip):
        line = handle.readline()
        if line.count(b"\r") != line.count(b"\r\n"):
            return None  # a lone CR ends a line for the exact reader, not for readline
    if _blank_at_the_end(handle):
        return None  # found before parsing the lines above it, in vain
    parts: list[np.ndarray] = []
    try:
        for data in whole_lines(handle, _BLOCK_BYTES, _LONGEST_LINE):
            values = _block(data if data.endswith(b"\n") else data + b"\n")
            if values is None:
                return None
            parts.append(values)
    except LineTooLong:
        return None
    return np.concatenate(parts) if parts else None
