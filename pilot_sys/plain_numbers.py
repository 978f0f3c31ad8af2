"""One number a line, parsed by numpy's own text reader: a mid-sized file without pandas.

Most such files never get here: short plain decimals are parsed exactly, without a library
reader, by ``pilot_sys.plain_decimal``; this reader takes the rest (longer mantissas such as
``%.17g``, exponents beyond Clinger's fast path). Importing pandas costs ~0.2 s of CPU before it
reads a byte; its C parser then reads a megabyte of plain numbers in ~0.01 s, where
``np.loadtxt`` (with the byte scan before it) takes ~0.03 s. The two cross near 10 MB (a
million readings); below ``NUMPY_BYTES``, under that crossover, numpy's reader is the cheaper
(benchmarks/results/fast1e6-series.md). It parses every cell as Python's ``float`` does
(correctly rounded); anything it refuses, or reads otherwise than one value a line (a blank
line it skips, a second cell), makes the caller fall back to the readers that name the cell,
so it never decides what a file means."""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

NUMPY_BYTES = 8 << 20  # ~800,000 readings of ten characters


def one_number_a_line(handle: BinaryIO, skip: int, lines: int) -> np.ndarray | None:
    """The numbers of ``lines`` lines after the first ``skip`` of ``handle``, one a line, all
    finite; None when numpy reads anything else (the caller's exact readers then decide)."""
    try:
        values = np.loadtxt(
            handle,
            dtype=np.float64,
            comments=None,
            delimiter=None,
            skiprows=skip,
            quotechar=None,
            encoding="utf-8",
            ndmin=1,
        )
    except (ValueError, UnicodeDecodeError):
        return None
    if values.ndim != 1 or values.size != lines or not np.isfinite(values).all():
        return None
    return values
