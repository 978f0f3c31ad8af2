"""The recorded monitor trace: what `pilot-sys monitor --json` writes and result directories keep.

A trace is a time series of metric vectors: ``timestamps`` (seconds since the start) and one
column per ``<component id>/<metric>`` key, e.g. ``block:vda/util_write`` (fraction of the
stated limit), ``cpu:host/busy`` (fraction of all cores), ``nic:eth0/rx_bytes_per_s``.
Utilization metrics start with ``util`` and are fractions of a limit; everything else is a rate
or a level in SI units. ``None`` marks a sample that could not be read.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

TRACE_SCHEMA_VERSION = 1


class MonitorTrace(BaseModel):
    schema_version: int = TRACE_SCHEMA_VERSION
    rate_hz: float
    start_time: float  # Unix time of the first sample
    timestamps: list[float]
    series: dict[str, list[float | None]]
    command: list[str] = Field(default_factory=list)
    component_under_test: str | None = None
    verdict: dict[str, Any] | None = None  # filled by the bottleneck detector
    monitor_cost: dict[str, float] | None = None  # the sampler's own CPU time, wake-ups, memory
    # what each ``util_<direction>`` is a fraction of: "<component id>/<direction>" -> Limit
    limits: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # facts about measured components the verdict needs, e.g. {"block:vda": {"serves_in_parallel": false}}
    attrs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)  # what could not be measured, and why
