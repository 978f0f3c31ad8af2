"""The CPU's rules of the bottleneck verdict: the workload's own cores (its processes', or the
round's thread's), the single-core signal judged against them, and the CPU's evidence.

A saturated core holds back a single-threaded workload only while the workload itself runs on
it; ``bottleneck.assess`` judges ``cpu:host/busiest_core`` through ``_workload_single_core``.
"""

from __future__ import annotations

import numpy as np

from pilot_sys.monitor.bottleneck_model import (
    SINGLE_CORE,
    ComponentStats,
    _describe_limit,
    _mean_of,
    _pct,
    _series,
)
from pilot_sys.monitor.trace import MonitorTrace

#: series of the workload's own CPU use: its processes', or the round's thread's (in-process)
WORKLOAD_CPU = ("process:", "thread:")


def _workload_cores(trace: MonitorTrace) -> float | None:
    keys = [k for k in trace.series if k.startswith(WORKLOAD_CPU) and k.endswith("/cpu_cores")]
    means = [m for m in (_mean_of(trace, k) for k in keys) if m is not None]
    return sum(means) if means else None


def _workload_cores_series(trace: MonitorTrace, size: int) -> np.ndarray | None:
    """The workload's processes' CPU use per sample, in cores (None: not recorded)."""
    keys = [k for k in trace.series if k.startswith(WORKLOAD_CPU) and k.endswith("/cpu_cores")]
    parts = [p for p in (_series(trace, k) for k in keys) if p.size == size]
    if not parts:
        return None
    stacked = np.vstack(parts)
    known = np.isfinite(stacked).any(axis=0)
    return np.where(known, np.nansum(stacked, axis=0), np.nan)


def _workload_single_core(trace: MonitorTrace, busiest: np.ndarray) -> np.ndarray:
    """The single-core signal judged against the workload: a saturated core holds back a
    single-threaded workload only while the workload itself runs on it, so the busiest core
    counts up to the workload's own CPU use. A core that another process keeps busy (a second
    core's worth of background work) leaves the workload the other cores: not its limit. Without
    the workload's processes in the trace, the busiest core is judged as it is."""
    own = _workload_cores_series(trace, busiest.size)
    if own is None:
        return busiest
    return np.where(np.isfinite(own), np.minimum(busiest, own), busiest)


def _cpu_evidence(s: ComponentStats, trace: MonitorTrace, numbers: str) -> str | None:
    """The host CPU's evidence: a single core (the workload's own, where its processes were
    recorded) or all cores, with who used them; None for any other component."""
    if s.component == "cpu:host" and s.direction == SINGLE_CORE:
        total = _mean_of(trace, "cpu:host/busy")
        own_known = _workload_cores(trace) is not None
        text = (
            f"the workload's own processes kept a core busy {numbers}"
            if own_known
            else f"the busiest core was {numbers}"
        )
        if total is not None:
            text += (
                f" while all cores together averaged {_pct(total)}: "
                "a single thread is limited by one core"
            )
        own = _workload_cores(trace)
        if own is not None:
            text += f"; the workload's processes used {own:.2f} cores on average"
        return text
    if s.component == "cpu:host":
        text = f"CPU busy {numbers} of {_describe_limit(s.limit, s.component)}"
        own = _workload_cores(trace)
        busy = _mean_of(trace, "cpu:host/busy_cores")
        if own is not None and busy is not None:
            text += (
                f"; the workload's processes used {own:.2f} cores, "
                f"other processes {max(busy - own, 0.0):.2f}"
            )
        psi = _mean_of(trace, "cpu:host/psi_some")
        if psi is not None:
            text += f"; runnable tasks waited for a CPU {_pct(psi)} of the time (PSI)"
        return text
    return None
