"""The shared plumbing of the bottleneck verdict: its models (one component's statistics, a
hidden bottleneck, the verdict) and the helpers every kind of rule reads a trace with.

The rules themselves live by kind beside it (``bottleneck_cpu``, ``bottleneck_limits``,
``bottleneck_frequency``); ``bottleneck.assess`` combines them. Pure functions of a
``MonitorTrace`` (no I/O).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from pilot_sys import units
from pilot_sys.monitor.trace import MonitorTrace

DEFAULT_THRESHOLD = 0.8
DEFAULT_MAX_HOT_FRACTION = 0.10
MIN_INTERVALS = 3  # fewer than this and p95 or a time share mean nothing
OVER_LIMIT = 1.05  # a utilization above this says more about the stated limit than the device
ALWAYS_ON_PATH = ("cpu:host", "memory:host")  # every workload's data passes the CPU and memory
BUSIEST_CORE = "busiest_core"
SINGLE_CORE = "single core"


class ComponentStats(BaseModel):
    """One component and direction over the run."""

    component: str
    direction: (
        str  # read, write, send, receive, compute, capacity, iops_read, ..., busy, single core
    )
    metric: str  # the trace key
    kind: Literal["utilization", "busy"]  # a fraction of a stated limit, or of wall time
    limit: dict[str, Any] | None = None  # the Limit a utilization is a fraction of
    mean: float | None = None
    p95: float | None = None
    peak: float | None = None
    time_above_fraction: float | None = None
    samples: int = 0
    judged: bool = True  # counts toward the verdict (False: reported only, see ``note``)
    note: str = ""
    # which limit the utilization is a fraction of: "physical" (the component's own: sysfs, DMI,
    # user), "effective" (a limiter's, tighter: ``imposed_by``), or None (not a limited
    # component); ``physical_limit`` is the component's own when the effective one applied
    applied: Literal["physical", "effective"] | None = None
    imposed_by: str | None = None
    physical_limit: dict[str, Any] | None = None


class HiddenBottleneck(BaseModel):
    component: str
    direction: str
    metric: str
    mean: float
    p95: float
    peak: float
    time_above_fraction: float
    evidence: str


class Verdict(BaseModel):
    valid: bool  # no hidden bottleneck seen (read with ``enough_samples``: see ``judged_invalid``)
    threshold: float
    max_hot_fraction: float
    cut: str | None
    cut_saturated: bool
    cut_limit_unknown: bool
    nothing_saturated: bool
    hidden_bottlenecks: list[HiddenBottleneck] = Field(default_factory=list)
    per_component: list[ComponentStats] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    intervals: int = 0  # sampled intervals the shares are over
    # intervals >= min_intervals(max_hot_fraction): the run can be judged
    enough_samples: bool = True
    # whose limit the result reflects: a hidden bottleneck, else a saturated CUT
    governing: str | None = None

    @property
    def judged_invalid(self) -> bool:
        """A hidden bottleneck over enough samples to call the run invalid."""
        return not self.valid and self.enough_samples


# -- reading a trace -------------------------------------------------------------------------
def _series(trace: MonitorTrace, key: str) -> np.ndarray:
    return np.array(
        [np.nan if v is None else v for v in trace.series.get(key, [])], dtype=np.float64
    )


def _weights(trace: MonitorTrace) -> np.ndarray:
    t = np.asarray(trace.timestamps, dtype=np.float64)
    w = np.zeros_like(t)
    w[1:] = np.diff(t) if t.size > 1 else w[1:]
    return w


def _mean_of(trace: MonitorTrace, key: str) -> float | None:
    values = _series(trace, key)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def _time_mean(trace: MonitorTrace, key: str) -> float | None:
    """The time-weighted mean of an interval series over the intervals where it is known."""
    values, w = _series(trace, key), _weights(trace)
    ok = np.isfinite(values) & (w > 0) if values.size == w.size else np.zeros(0, dtype=bool)
    return float(np.average(values[ok], weights=w[ok])) if ok.any() else None


def _total(trace: MonitorTrace, key: str) -> float | None:
    """Events over the run from a per-second series: the sum of rate x interval."""
    values, w = _series(trace, key), _weights(trace)
    ok = np.isfinite(values) if values.size == w.size else np.zeros(0, dtype=bool)
    return float(np.sum(values[ok] * w[ok])) if ok.any() else None


def _limiter_kind(trace: MonitorTrace, component: str) -> str | None:
    return trace.attrs.get(component, {}).get("limiter")


def _is_cut(component: str, cut: str | None) -> bool:
    return cut is not None and component == cut


# -- words -----------------------------------------------------------------------------------
def _pct(fraction: float | None) -> str:
    return units.percent(fraction, 0)


def _describe_limit(limit: dict[str, Any] | None, component: str) -> str:
    if not limit or limit.get("value") is None:
        return "an unknown limit"
    network = units.network_component(component)
    shown = units.quantity(float(limit["value"]), limit.get("unit", ""), network)
    source = limit.get("source", "")
    return f"its limit of {shown} ({source}{': ' + limit['detail'] if limit.get('detail') else ''})"
