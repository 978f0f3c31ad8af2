"""The recorded monitor trace: what `pilot-sys monitor --json` writes and result directories keep.

A trace is a time series of metric vectors: ``timestamps`` (seconds since the start) and one
column per ``<component id>/<metric>`` key, e.g. ``block:vda/util_write`` (fraction of the
stated limit), ``cpu:host/busy`` (fraction of all cores), ``nic:eth0/rx_bytes_per_s``.
Utilization metrics start with ``util`` and are fractions of a limit; everything else is a rate
or a level in SI units. ``None`` marks a sample that could not be read.

Every series is on the sampler's grid (``timestamps``), whatever produced it. A *source* (a
reader with its own schedule, e.g. a remote host's exporter) also keeps its own record in
``sources``: when each of its samples was taken, on the same clock, its metrics at those times,
its call latencies, the stretches it did not answer and what it cost.
"""

from __future__ import annotations

import statistics
from typing import Any

from pydantic import BaseModel, Field

TRACE_SCHEMA_VERSION = 1


class SourceCost(BaseModel):
    """What a source cost: on this host (its thread's CPU time) and, when its backend reports
    its own CPU time, on the far side."""

    cpu_seconds: float  # the source's thread on this host, calls and waits included
    calls: int  # calls made (answered or failed)
    failed_calls: int
    missed_calls: int  # calls not made because an earlier one overran its interval
    latency_s_median: float | None = None  # of the answered calls
    latency_s_max: float | None = None
    remote_cpu_seconds: float | None = None  # the backend's own CPU time over the recording


class SourceTrace(BaseModel):
    """One source's own record (its series on the grid are in ``MonitorTrace.series``)."""

    interval_s: float  # how often it was asked
    stale_after_s: float  # no value is carried further than this
    times: list[float]  # when each sample was taken, seconds on the clock of ``timestamps``
    latency_s: list[float]  # per sample: from the call to the answer
    series: dict[str, list[float | None]]  # its metrics at ``times``
    # where ``times`` come from: "call midpoint" (the middle of each call, uncertain by half its
    # latency) or "backend time" (the backend's own time of the sample, less ``clock_offset_s``)
    clock: str = "call midpoint"
    clock_offset_s: float | None = None  # the backend's clock minus this host's wall clock
    clock_offset_uncertainty_s: float | None = None
    gaps: list[tuple[float, float]] = Field(default_factory=list)  # seconds without a fresh sample
    errors: list[str] = Field(default_factory=list)  # what failed calls said (distinct, first few)
    cost: SourceCost


class MonitorTrace(BaseModel):
    schema_version: int = TRACE_SCHEMA_VERSION
    rate_hz: float
    start_time: float  # Unix time of the first sample
    timestamps: list[float]
    series: dict[str, list[float | None]]
    command: list[str] = Field(default_factory=list)
    component_under_test: str | None = None
    data_path: list[str] = Field(default_factory=list)  # component ids of the workload's data path
    verdict: dict[str, Any] | None = None  # filled by the bottleneck detector
    monitor_cost: dict[str, float] | None = None  # the sampler's own CPU time, wake-ups, memory
    # what each ``util_<direction>`` is a fraction of: "<component id>/<direction>" -> Limit
    limits: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # facts about measured components the verdict needs,
    # e.g. {"block:vda": {"serves_in_parallel": false}}
    attrs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)  # what could not be measured, and why
    sources: dict[str, SourceTrace] = Field(default_factory=dict)  # by source name


def joined_source(parts: list[tuple[float, SourceTrace]]) -> SourceTrace:
    """One source's records of several recordings laid end to end (each ``(offset, record)``:
    the seconds its recording's clock starts after the first's), as the verdict over a
    session's rounds reads their traces: its interval and staleness are the source's own (what
    the verdict's "within one interval" rules need), its samples, gaps and costs add up."""
    first = parts[0][1]
    latencies = [x for _, p in parts for x in p.latency_s]
    keys = list(dict.fromkeys(k for _, p in parts for k in p.series))
    remote = [p.cost.remote_cpu_seconds for _, p in parts]
    return first.model_copy(
        update={
            "times": [t + offset for offset, p in parts for t in p.times],
            "latency_s": latencies,
            "series": {
                k: [v for _, p in parts for v in p.series.get(k, [None] * len(p.times))]
                for k in keys
            },
            "gaps": [(a + offset, b + offset) for offset, p in parts for a, b in p.gaps],
            "errors": list(dict.fromkeys(e for _, p in parts for e in p.errors)),
            "cost": SourceCost(
                cpu_seconds=sum(p.cost.cpu_seconds for _, p in parts),
                calls=sum(p.cost.calls for _, p in parts),
                failed_calls=sum(p.cost.failed_calls for _, p in parts),
                missed_calls=sum(p.cost.missed_calls for _, p in parts),
                latency_s_median=statistics.median(latencies) if latencies else None,
                latency_s_max=max(latencies) if latencies else None,
                remote_cpu_seconds=(
                    sum(r for r in remote if r is not None)
                    if all(r is not None for r in remote)
                    else None
                ),
            ),
        }
    )
