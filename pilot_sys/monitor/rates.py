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


def place_on_grid(
    values: np.ndarray, times: np.ndarray, grid: np.ndarray, *, interval: bool, stale_after: float
) -> np.ndarray:
    """Values taken at their own ``times`` (a source's samples) placed on the sampler's tick
    times ``grid`` (both ascending, on one clock), by ``spread_reads``'s rule: an interval value
    belongs to every tick inside the interval that ends at its sample (each tick gets the first
    sample at or after it), a level to every tick from its sample until the next (each tick gets
    the last sample at or before it).

    Nothing is carried further than ``stale_after`` seconds: a level older than that on a tick,
    an interval longer than that (samples were missing in it) and a tick further than that
    before the sample whose interval it falls in are NaN."""
    values = np.asarray(values, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    n = len(grid)
    if interval:
        fresh = np.ones(len(times), dtype=bool)
        fresh[1:] = np.diff(times) <= stale_after
        rows = np.searchsorted(grid, times, side="right") - 1  # last tick at or before a sample
        out = spread_reads(np.where(fresh, values, np.nan), rows, n, interval=True)
        taken = spread_reads(times, rows, n, interval=True)  # the sample each tick's value is from
        out[~(taken - grid <= stale_after)] = np.nan
        return out
    rows = np.searchsorted(grid, times, side="left")  # the first tick at or after each sample
    out = spread_reads(values, rows, n, interval=False)
    taken = spread_reads(times, rows, n, interval=False)
    out[~(grid - taken <= stale_after)] = np.nan  # NaN ``taken``: before the first sample
    return out
