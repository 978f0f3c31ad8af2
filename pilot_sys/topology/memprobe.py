"""A short measured memory-bandwidth probe, used only when asked (``--probe``) and when DMI is
not readable: the best of a few numpy copies of a buffer far larger than the last-level cache."""

from __future__ import annotations

import time

import numpy as np

from pilot_sys.topology.components import Limit, LimitSource


def probe_copy_bandwidth(buffer_bytes: int = 64 * 1024**2, repeats: int = 4) -> Limit:
    """Bytes/second moved by ``np.copyto`` (each copy reads and writes ``buffer_bytes``).

    The best of ``repeats`` is the closest a single thread gets to the bus limit; a single-thread
    copy under-reads multi-channel machines, which the detail says.
    """
    src = np.ones(buffer_bytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault the pages in before timing
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    moved = 2 * src.nbytes
    return Limit(
        value=moved / best,
        source=LimitSource.PROBE,
        detail=f"single-thread numpy copy of {buffer_bytes // 1024**2} MiB, "
        f"best of {repeats} (read+write)",
    )
