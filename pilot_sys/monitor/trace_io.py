"""Reading recorded monitor traces and turning them into metric matrices.

Why a layer of its own: `pilot-sys phases` (and later `compare` and sessions) read traces that
`pilot-sys monitor --json` wrote or that a session kept in its result directory; every bad file
must become one clear line naming the file, and every consumer must see the same matrix for the
same trace (same columns, same gap filling, same time grid).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.limits import TRACE_BYTES, decode_utf8, read_bounded
from pilot_sys.monitor.trace import MonitorTrace

#: Where a result directory keeps its monitor samples, in the order they are looked for.
TRACE_FILE = "monitor.json"
TRACE_DIR = "monitor"
#: A trace shorter than this has no transitions to speak of.
MIN_SAMPLES = 3
#: Resampling a trace to more points than this (a --rate typo like 1e9) would exhaust memory.
MAX_GRID_SAMPLES = 10_000_000


def grid_samples(trace: MonitorTrace, rate_hz: float | None = None) -> int:
    """Samples the trace has once put on the analysis grid at ``rate_hz`` (its own rate by
    default): what MIN_SAMPLES is checked against, so a caller leaving short traces out
    judges them as the analysis will."""
    if not trace.timestamps:
        return 0
    rate = float(rate_hz or trace.rate_hz)
    span = float(trace.timestamps[-1]) - float(trace.timestamps[0])
    return int(np.floor(span * rate + 1e-9)) + 1


@dataclass(frozen=True)
class LoadedTrace:
    trace: MonitorTrace
    path: Path  # the JSON file actually read
    origin: str  # how it was found, shown to the user (e.g. "DIR/monitor.json")


def _read_trace_file(path: Path) -> MonitorTrace:
    if path.is_dir():
        raise BadInput(str(path), "is a directory without monitor.json or monitor/*.json")
    data = read_bounded(path, TRACE_BYTES, text=True)  # bounded: /dev/zero is one line
    text = decode_utf8(data, str(path), "a monitor trace (JSON)")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(
            f"{path}:{exc.lineno}:{exc.colno}", f"not JSON ({exc.msg}); expected a monitor trace"
        ) from None
    if not isinstance(raw, dict) or "series" not in raw or "timestamps" not in raw:
        raise BadInput(
            str(path),
            "not a monitor trace (no 'timestamps' and 'series'); "
            "write one with `pilot-sys monitor --json FILE -- CMD`",
        )
    try:
        trace = MonitorTrace.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(part) for part in err["loc"])
        raise BadInput(str(path), f"not a valid monitor trace: {loc}: {err['msg']}") from None
    _check_shape(trace, path)
    return trace


def _check_shape(trace: MonitorTrace, path: Path) -> None:
    n = len(trace.timestamps)
    if n == 0 or not trace.series:
        raise InsufficientData(str(path), "the trace holds no samples")
    for key, values in trace.series.items():
        if len(values) != n:
            raise BadInput(
                str(path), f"series {key!r} has {len(values)} samples but there are {n} timestamps"
            )
    if n > 1 and np.any(np.diff(np.asarray(trace.timestamps, dtype=float)) <= 0):
        raise BadInput(str(path), "timestamps are not strictly increasing")
    if trace.rate_hz <= 0:
        raise BadInput(str(path), f"rate_hz must be positive, got {trace.rate_hz}")


def load_traces(path: str | Path) -> list[LoadedTrace]:
    """The traces a user named: a trace JSON file, or a directory holding ``monitor.json`` or
    ``monitor/*.json`` (a session's result directory; one trace per round, in name order)."""
    p = Path(path)
    if p.is_dir():
        single = p / TRACE_FILE
        if single.is_file():
            return [LoadedTrace(_read_trace_file(single), single, f"{single}")]
        files = sorted((p / TRACE_DIR).glob("*.json")) if (p / TRACE_DIR).is_dir() else []
        if not files:
            raise BadInput(str(p), f"no {TRACE_FILE} or {TRACE_DIR}/*.json in this directory")
        return [
            LoadedTrace(_read_trace_file(f), f, f"{f} ({i + 1} of {len(files)} in {p / TRACE_DIR})")
            for i, f in enumerate(files)
        ]
    if not p.exists():
        raise BadInput(str(p), "no such file or directory")
    return [LoadedTrace(_read_trace_file(p), p, str(p))]


# ---------------------------------------------------------------------------------------------
# Trace -> metric matrix
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricMatrix:
    """Samples x metrics on a uniform time grid, ready for the phase detector."""

    values: NDArray[np.float64]  # (n_samples, n_metrics)
    columns: list[str]
    rate_hz: float
    start: float  # seconds since the trace's start of the first grid point
    filled: int = 0  # missing readings filled from their neighbours
    dropped: list[str] = field(default_factory=list)  # chosen series with no reading at all
    scaled: list[str] = field(default_factory=list)  # non-fraction series divided by their maximum

    def time_of(self, sample: int | NDArray[np.intp]) -> float | NDArray[np.float64]:
        return self.start + np.asarray(sample) / self.rate_hz


#: Metric names that say "rate, amount or time": never a fraction, even if every reading is in
#: [0, 1].
_NOT_FRACTION = ("_per_s", "bytes", "count", "packets", "_s")


def is_named_utilization(key: str) -> bool:
    """The trace convention: ``util*`` is a fraction of a stated limit, ``busy`` of wall time."""
    metric = key.rsplit("/", 1)[-1]
    return metric.startswith("util") or metric == "busy"


def is_fraction(key: str, values: NDArray[np.float64]) -> bool:
    """Named as a utilization, or (unless named as a rate, amount or time) every reading in
    [0, 1]."""
    if is_named_utilization(key):
        return True
    metric = key.rsplit("/", 1)[-1]
    if any(metric.endswith(part) or part + "_" in metric for part in _NOT_FRACTION):
        return False
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all((finite >= 0.0) & (finite <= 1.0)))


def _as_float(values: Sequence[float | None]) -> NDArray[np.float64]:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def select_series(
    trace: MonitorTrace, metrics: Sequence[str] | None = None, where: str = ""
) -> list[str]:
    """Keys of the series to use: those matching the ``metrics`` globs; by default the ones named as
    utilizations (``util*``, ``busy``), or, in a trace without such names, every fraction in
    [0, 1]."""
    keys = list(trace.series)
    if metrics:
        chosen = [k for k in keys if any(fnmatch.fnmatchcase(k, pat) for pat in metrics)]
        if not chosen:
            raise BadInput(
                where or "--metrics",
                f"no series matches {', '.join(metrics)}; "
                f"the trace has: {', '.join(keys[:12])}{' ...' if len(keys) > 12 else ''}",
            )
        return chosen
    chosen = [k for k in keys if is_named_utilization(k)]
    if not chosen:
        chosen = [k for k in keys if is_fraction(k, _as_float(trace.series[k]))]
    if not chosen:
        raise BadInput(
            where or "trace",
            "no utilization-like series (fractions in [0, 1]); choose series with --metrics, "
            "e.g. --metrics 'nic:*/rx_bytes_per_s'",
        )
    return chosen


def _fill_gaps(column: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """Missing readings take the last known value (the first ones the first known value).

    Holding the value, rather than interpolating or zeroing, adds no change of its own, so a
    dropped reading can never show up as a phase transition.
    """
    missing = ~np.isfinite(column)
    if not missing.any():
        return column, 0
    idx = np.where(missing, 0, np.arange(column.size))
    np.maximum.accumulate(idx, out=idx)
    filled = column[idx]
    first = int(np.flatnonzero(~missing)[0])
    filled[:first] = column[first]
    return filled, int(missing.sum())


def metric_matrix(
    trace: MonitorTrace,
    metrics: Sequence[str] | None = None,
    rate_hz: float | None = None,
    where: str = "",
) -> MetricMatrix:
    """The trace's chosen series as a matrix on a uniform grid at ``rate_hz`` (default: the
    trace's).

    The grid matters because signatures are compared sample by sample: a sampler that fell behind
    leaves uneven timestamps, and runs recorded at different rates must be put on one rate. Each
    grid point takes the nearest recorded sample (sample-and-hold keeps steps sharp; interpolation
    would smear every step into a gradient). Chosen series that are not fractions (rates, levels)
    are divided by their maximum in this trace so that no unit dominates the L1 distances.
    """
    keys = select_series(trace, metrics, where)
    columns: list[NDArray[np.float64]] = []
    names: list[str] = []
    dropped: list[str] = []
    scaled: list[str] = []
    filled = 0
    for key in keys:
        col = _as_float(trace.series[key])
        if not np.isfinite(col).any():
            dropped.append(key)
            continue
        col, n_filled = _fill_gaps(col)
        filled += n_filled
        if not is_fraction(key, col):
            peak = float(np.max(np.abs(col)))
            col = col / peak if peak > 0 else col
            scaled.append(key)
        columns.append(col)
        names.append(key)
    if not columns:
        raise InsufficientData(
            where or "trace", f"every chosen series is empty: {', '.join(dropped)}"
        )
    values = np.column_stack(columns)

    rate = float(rate_hz or trace.rate_hz)
    t = np.asarray(trace.timestamps, dtype=float)
    span = t[-1] - t[0]
    count = grid_samples(trace, rate)
    if count > MAX_GRID_SAMPLES:  # a mistyped --rate must not exhaust memory
        raise BadInput(
            "--rate",
            f"{rate:g} Hz puts {span:.4g} s of {where or 'the trace'} on {count:.3g} samples; "
            f"at most {MAX_GRID_SAMPLES:.0e} are analysed, use a lower rate",
        )
    grid = t[0] + np.arange(count) / rate
    # nearest recorded sample for each grid point: compare with the midpoints between samples
    idx = np.searchsorted((t[1:] + t[:-1]) / 2.0, grid, side="right")
    values = values[idx]
    if values.shape[0] < MIN_SAMPLES:
        raise InsufficientData(
            where or "trace",
            f"{values.shape[0]} samples at {rate:g} Hz; at least {MIN_SAMPLES} are needed",
        )
    return MetricMatrix(values, names, rate, float(t[0]), filled, dropped, scaled)
