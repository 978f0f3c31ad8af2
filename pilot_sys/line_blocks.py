"""Whole lines read a block at a time: the unit the vectorised readers parse.

A reader that parses many lines per numpy call needs its input cut at line ends, never inside a
line, and needs a bound on how far it reads looking for the next end. Both the pandas-backed
chunk reader (``dataio``) and the plain-decimal parser (``plain_decimal``) read this way; they
differ only in what a line longer than their bound means (a refusal that names the line, or a
file left to the other readers), so that decision is the caller's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO


class LineTooLong(Exception):
    """More bytes than the caller's bound were read without reaching the end of a line."""


def whole_lines(handle: BinaryIO, block_bytes: int, longest: int) -> Iterator[bytes]:
    """Runs of whole lines from ``handle``'s position, read ``block_bytes`` at a time, each
    ending in a LF except the last one of a file without a final newline. Raises
    ``LineTooLong`` when more than ``longest`` bytes pass without a LF."""
    carry = b""
    while True:
        block = handle.read(block_bytes)
        data = carry + block
        if not data:
            return
        cut = data.rfind(b"\n") + 1 if block else len(data)
        if cut == 0:  # no newline yet in a very long line: read on
            if len(data) > longest:
                raise LineTooLong
            carry = data
            continue
        carry = data[cut:]
        yield data[:cut]
