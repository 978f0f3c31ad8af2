"""Counters to rates, fractions and utilizations, vectorised over the sample buffer.

Pure functions on numpy arrays (no I/O). Convention: a value derived from an interval belongs
to the sample that *ends* the interval, so row 0 of every rate is NaN. A counter that went
backwards (a device was removed and re-added, a process exited) gives NaN for that interval,
never a negative or a wrapped rate.
"""

from __future__ import annotations

import numpy as np

from pilot_sys.topology.components import Limit


def deltas(raw: np.ndarray) -> np.ndarray:
    """Per-interval increase of monotonic counters (rows: samples); NaN where it went backwards."""
    raw = np.asarray(raw, dtype=np.float64)
    out = np.full(raw.shape, np.nan)
    if raw.shape[0] > 1:
        d = np.diff(raw, axis=0)
        d[d < 0] = np.nan
        out[1:] = d
    return out


def intervals(t: np.ndarray) -> np.ndarray:
    """Seconds between consecutive samples; NaN for row 0 and for non-increasing times."""
    t = np.asarray(t, dtype=np.float64)
    dt = np.full(t.shape, np.nan)
    if t.size > 1:
        d = np.diff(t)
        d[d <= 0] = np.nan
        dt[1:] = d
    return dt


def per_second(raw: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Counter rate per second; works on one column or a 2-D block of columns."""
    d = deltas(raw)
    dt = intervals(t)
    return d / (dt[:, None] if d.ndim == 2 else dt)


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is zero or NaN (e.g. no I/O done in
    an interval has no average latency)."""
    num = np.asarray(numerator, dtype=np.float64)
    den = np.asarray(denominator, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=np.isfinite(den) & (den != 0))
    return out


def utilization(rate: np.ndarray, limit: Limit) -> np.ndarray | None:
    """``rate`` as a fraction of a stated limit; None when the limit is unknown (never invented)."""
    if not limit.known or not limit.value:
        return None
    return np.asarray(rate, dtype=np.float64) / float(limit.value)


def levels(raw: np.ndarray) -> np.ndarray:
    """A gauge (e.g. in-flight requests, MemAvailable) as float, unchanged."""
    return np.asarray(raw, dtype=np.float64)


def spread_reads(values: np.ndarray, rows: np.ndarray, n: int, *, interval: bool) -> np.ndarray:
    """Values derived at the real-read rows ``rows`` (ascending) spread over all ``n`` grid rows.

    An interval value (a rate, a share of time) computed at read k covers the interval from
    read k-1 to read k, so every grid row inside it, up to and including read k, gets it:
    the next read's value (rows after the last read: NaN, the interval is not closed). A level
    holds from its read until the next one: the last read's value (rows before the first
    read: NaN)."""
    values = np.asarray(values, dtype=np.float64)
    grid = np.arange(n)
    out = np.full(n, np.nan)
    if not len(rows):
        return out
    if interval:
        idx = np.searchsorted(rows, grid, side="left")
        ok = idx < len(rows)
    else:
        idx = np.searchsorted(rows, grid, side="right") - 1
        ok = idx >= 0
    out[ok] = values[idx[ok]]
    return out
