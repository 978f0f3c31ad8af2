"""Monitor traces as input to the phase detector: which series, and the trace -> matrix step.

``pilot_sys.stats.phases`` works on metric matrices and knows nothing of traces or series
names; the monitor knows both. This module picks the series a phase check uses by default and
turns each trace into a matrix with ``trace_io.metric_matrix`` (one set of rules for every
consumer), then calls the detector. A metric matrix passes through unchanged.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.monitor.trace_io import metric_matrix
from pilot_sys.stats import phases
from pilot_sys.stats.phases import PhaseParams, RoundPhaseCheck

#: Series a phase check uses by default when a trace has them: the workload's own processes.
#: On a shared host other tenants move every host-wide series, which made genuine rounds look
#: inconsistent far more often than the workload's own series did
#: (benchmarks/results/phases.md).
WORKLOAD_SERIES = (
    "process:*/busy", "process:*/util*", "process:*/cpu_cores", "process:*/read_bytes_per_s",
    "process:*/write_bytes_per_s",
)  # fmt: skip


def is_trace(run: object) -> bool:
    """Whether ``run`` is a monitor trace (anything with series and timestamps), not a matrix."""
    return hasattr(run, "series") and hasattr(run, "timestamps")


def phase_matrix(
    run: MonitorTrace | ArrayLike, metrics: Sequence[str] | None = None
) -> NDArray[np.float64]:
    """Metric matrix of a trace, or an array as it is.

    Series of a trace: the ``metrics`` globs; by default the workload's own (CPU and I/O of
    ``process:*``) when the trace has them, else the utilization series ``metric_matrix`` picks.
    """
    if not is_trace(run):
        return np.asarray(run, dtype=float)
    trace: MonitorTrace = run  # type: ignore[assignment]
    if metrics is None and any(
        fnmatch.fnmatchcase(k, g) for k in trace.series for g in WORKLOAD_SERIES
    ):
        metrics = WORKLOAD_SERIES
    return metric_matrix(trace, metrics).values


def consistent_rounds(
    rounds: Sequence[MonitorTrace | ArrayLike],
    params: PhaseParams | None = None,
    metrics: Sequence[str] | None = None,
) -> list[RoundPhaseCheck]:
    """``stats.phases.consistent_rounds`` of traces (or matrices), series as in
    :func:`phase_matrix`."""
    return phases.consistent_rounds([phase_matrix(r, metrics) for r in rounds], params)


def compare_phase_behaviour(
    runs_a: Sequence[MonitorTrace | ArrayLike],
    runs_b: Sequence[MonitorTrace | ArrayLike],
    params: PhaseParams | None = None,
    metrics: Sequence[str] | None = None,
) -> str | None:
    """``stats.phases.compare_phase_behaviour`` of traces (or matrices), series as in
    :func:`phase_matrix`."""
    return phases.compare_phase_behaviour(
        [phase_matrix(r, metrics) for r in runs_a],
        [phase_matrix(r, metrics) for r in runs_b],
        params,
    )
