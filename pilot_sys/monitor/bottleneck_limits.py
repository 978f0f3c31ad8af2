"""The kernel limiters' rules of the bottleneck verdict (``monitor.limiters``): a cgroup's CPU
quota, cpuset, memory limit or I/O throttle, a NIC's shaping qdisc.

Each is judged on its own counters against its own limit; one that bound long enough speaks for
what it limits (``_cover_by_limiters``); the CUT is judged against the tighter of its physical
and effective limits (``_effective_for_cut``, ``_mark_applied``); the evidence names the limiter
and the counters that show it bound (``_limiter_evidence``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot_sys import units
from pilot_sys.monitor.bottleneck_cpu import _workload_cores
from pilot_sys.monitor.bottleneck_model import (
    ComponentStats,
    _describe_limit,
    _is_cut,
    _pct,
    _series,
    _time_mean,
    _total,
    _weights,
)
from pilot_sys.monitor.trace import MonitorTrace

THROTTLED = "throttled periods"  # a CPU quota's signal: share of CFS periods it ran out in
MEMORY_EVIDENCE = ("limit_hits_per_s", "psi_some")  # the kernel reclaimed for / stalled on it
QUOTA_NOTE = "a CPU quota is judged by its throttled periods"
BOUND_FIRST = "bound first"


def _judged_by(trace: MonitorTrace, component: str) -> str | None:
    return trace.attrs.get(component, {}).get("judged_by")


def _limiters(trace: MonitorTrace) -> dict[str, list[str]]:
    """What each limited component's limiters are (from the limiters' ``attrs``)."""
    found: dict[str, list[str]] = {}
    for component, attrs in sorted(trace.attrs.items()):
        target = attrs.get("limits") if attrs.get("limiter") else None
        if target:
            found.setdefault(str(target), []).append(component)
    return found


def _effective_for_cut(
    trace: MonitorTrace, cut: str | None, limiters: dict[str, list[str]]
) -> list[ComponentStats]:
    """The CUT's utilization against its effective limit, per limited key where a limiter's is
    tighter than the CUT's physical limit (or the physical one is unknown): the tightest
    limiter's own utilization series (the workload's traffic against the throttle, the sent
    bytes against the shaper's rate, the cgroup's cores against its quota)."""
    if cut is None:
        return []
    best: dict[str, tuple[float, str, dict[str, Any]]] = {}
    for limiter in limiters.get(cut, []):
        for key in list(trace.limits):
            owner, _, direction = key.rpartition("/")
            limit = trace.limits[key]
            if owner != limiter or f"{limiter}/util_{direction}" not in trace.series:
                continue
            value = limit.get("value")
            if value is None:
                continue
            if direction not in best or value < best[direction][0]:
                best[direction] = (float(value), limiter, limit)
    found = []
    for direction, (value, limiter, limit) in sorted(best.items()):
        physical = trace.limits.get(f"{cut}/{direction}")
        if physical and physical.get("value") is not None and physical["value"] <= value:
            continue  # the hardware binds first: the physical limit applies
        found.append(
            ComponentStats(
                component=cut,
                direction=direction,
                metric=f"{limiter}/util_{direction}",
                kind="utilization",
                limit=limit,
                applied="effective",
                imposed_by=limiter,
                physical_limit=physical,
                note=f"against its effective limit, {limiter}'s, on that limiter's own counters",
            )
        )
    return found


def _mark_applied(
    trace: MonitorTrace, stats: list[ComponentStats], limiters: dict[str, list[str]]
) -> None:
    """Say which limit each limited component's utilization is a fraction of: its physical
    one, noting a tighter limiter (judged on its own counters); the CUT's physical entry is
    only reported where its effective one applied."""
    effective = {(s.component, s.direction): s for s in stats if s.applied == "effective"}
    for s in stats:
        if s.applied is not None or s.kind != "utilization" or s.component not in limiters:
            continue
        s.applied = "physical"
        if (s.component, s.direction) in effective:
            chosen = effective[(s.component, s.direction)]
            s.judged = False
            s.note = (
                f"its physical limit; the tighter effective limit of {chosen.imposed_by} applied"
            )
            continue
        tighter = [
            lim
            for lim in limiters[s.component]
            if (v := (trace.limits.get(f"{lim}/{s.direction}") or {}).get("value")) is not None
            and (s.limit is None or s.limit.get("value") is None or v < s.limit["value"])
        ]
        if tighter and not s.note:
            s.note = (
                f"{', '.join(tighter)} limits it more tightly; judged on "
                f"{'its' if len(tighter) == 1 else 'their'} own counters"
            )


def _cover_by_limiters(
    stats: list[ComponentStats],
    cut: str | None,
    limiters: dict[str, list[str]],
    max_hot_fraction: float,
) -> None:
    """A limiter that bound long enough speaks for what it limits: that component (unless it
    is the CUT) is reported, not blamed as well."""
    limiter_ids = {lim for found in limiters.values() for lim in found}
    hot = {
        s.component: s
        for s in stats
        if s.judged
        and s.component in limiter_ids
        and (s.time_above_fraction or 0.0) > max_hot_fraction
    }
    for s in stats:
        if not s.judged or _is_cut(s.component, cut):
            continue
        binding = [hot[lim] for lim in limiters.get(s.component, []) if lim in hot]
        if binding:
            s.judged = False
            s.note = (
                f"{BOUND_FIRST}: {binding[0].component} ({binding[0].direction} above the "
                f"threshold for {_pct(binding[0].time_above_fraction)} of the run): "
                "the workload could not use more of it, whatever its load"
            )


def _applied_notes(stats: list[ComponentStats]) -> list[str]:
    """Which limit the CUT was judged against where a limiter's was the tighter, and where
    both came from."""
    out = []
    for s in stats:
        if s.applied != "effective":
            continue
        physical = (
            f"its physical {_describe_limit(s.physical_limit, s.component)[4:]}"
            if s.physical_limit and s.physical_limit.get("value") is not None
            else "its physical limit (unknown)"
        )
        out.append(
            f"{s.component} ({s.direction}) judged against its effective limit: "
            f"{s.imposed_by}'s, {_describe_limit(s.limit, s.component)[4:]}, tighter than "
            f"{physical}"
        )
    return out


ACTIVE_GAP = 2  # idle intervals inside a stretch of I/O: a throttle dispatches in slices


def _active_mean(trace: MonitorTrace, key: str) -> float | None:
    """The time-weighted mean of a rate over the stretches in which it was active: intervals
    with a rate above 0, and runs of at most ``ACTIVE_GAP`` idle intervals between two of them
    (a throttle releases I/O in slices, so a sampled rate alternates between 0 and twice the
    limit). What a workload was held at while it did I/O, not diluted by its start-up or by
    the gaps between rounds."""
    values, w = _series(trace, key), _weights(trace)
    if values.size != w.size or not values.size:
        return None
    known = np.isfinite(values)
    busy = known & (values > 0)
    at = np.flatnonzero(busy)
    short = (np.diff(at) - 1 > 0) & (np.diff(at) - 1 <= ACTIVE_GAP)  # gaps to bridge
    edges = np.zeros(values.size + 1, dtype=np.int64)
    np.add.at(edges, at[:-1][short] + 1, 1)
    np.add.at(edges, at[1:][short], -1)
    active = busy | ((np.cumsum(edges)[:-1] > 0) & known)
    ok = active & (w > 0)
    return float(np.average(values[ok], weights=w[ok])) if ok.any() else None


def _limiter_evidence(s: ComponentStats, trace: MonitorTrace, numbers: str) -> str:
    """A limiter names itself, its limit, and the counters that show it bound."""
    attrs = trace.attrs.get(s.component, {})
    kind = attrs.get("limiter")
    limit = (s.limit or {}).get("value") if s.direction != THROTTLED else None
    if limit is None:
        limit = (trace.limits.get(f"{s.component}/compute") or {}).get("value")
    cgroup = attrs.get("cgroup", "")
    c = s.component
    if kind == "CPU quota":
        text = f"cgroup {cgroup} CPU quota {units.quantity(limit, 'cores')}"
        share = _ratio_of_totals(trace, f"{c}/throttled_periods_per_s", f"{c}/periods_per_s")
        text += f": throttled in {_pct(share)} of periods" if share is not None else f": {numbers}"
        used = _time_mean(trace, f"{c}/cores_used")
        if used is None:
            used = _workload_cores(trace)
        if used is not None:
            text += f"; the workload used {used:.2f} cores"
        return text
    if kind == "cpuset":
        cpus = attrs.get("cpus") or []
        return (
            f"cgroup {cgroup} cpuset of {len(cpus) or units.quantity(limit, 'cores')} CPUs"
            f"{' (' + ','.join(map(str, cpus)) + ')' if cpus else ''}: {numbers}"
        )
    if kind == "I/O throttle":
        disk = attrs.get("disk") or attrs.get("device", "?")
        what = {"read": "reads", "write": "writes", "iops_read": "reads", "iops_write": "writes"}
        rate_key = {
            "read": "read_bytes_per_s",
            "write": "write_bytes_per_s",
            "iops_read": "read_iops",
            "iops_write": "write_iops",
        }.get(s.direction)
        unit = (s.limit or {}).get("unit", "B/s")
        text = (
            f"cgroup {cgroup} io throttle on {disk} {s.direction.replace('_', ' ')} "
            f"{units.quantity(limit, unit)}"
        )
        held = _active_mean(trace, f"{c}/{rate_key}") if rate_key else None
        if held is None:
            return f"{text}: {numbers}"
        text += f": {what.get(s.direction, 'I/O')} held at {units.quantity(held, unit)}"
        busy = _time_mean(trace, f"block:{disk}/busy")
        if busy is not None:
            text += f" while {disk} was {_pct(busy)} busy"
        return text
    if kind == "traffic shaping":
        nic = attrs.get("interface", c.split(":", 1)[-1])
        text = f"qdisc {attrs.get('qdisc', '?')} on {nic} rate {units.bit_rate(limit)}"
        over = _time_mean(trace, f"{c}/over_rate")
        drops = _total(trace, f"{c}/drops_per_s")
        parts = []
        if over is not None:
            parts.append(f"over its rate in {_pct(over)} of samples")
        if drops is not None:
            parts.append(f"{units.count(round(drops))} drops")
        sent = _time_mean(trace, f"{c}/sent_bytes_per_s")
        if sent is not None:
            parts.append(f"sent {units.bit_rate(sent)} on average")
        return text + ": " + (", ".join(parts) if parts else numbers)
    if kind == "memory limit":
        text = f"cgroup {cgroup} memory limit {units.size(limit)}: usage {numbers}"
        hits = _total(trace, f"{c}/limit_hits_per_s")
        if hits:
            source = "memory.failcnt" if attrs.get("version") == 1 else "memory.events max/high"
            text += (
                f"; the kernel reclaimed to stay under it {units.count(round(hits))} times "
                f"({source})"
            )
        refaults = _total(trace, f"{c}/refaults_per_s")
        if refaults:
            text += (
                f"; {units.count(round(refaults))} evicted file pages were read again "
                "(workingset refaults: the page cache could not hold the data)"
            )
        stall = _time_mean(trace, f"{c}/psi_some")
        if stall:
            text += f"; its tasks stalled on memory {_pct(stall)} of the time (PSI)"
        return text
    return f"{kind} {s.direction} {numbers}"


def _ratio_of_totals(trace: MonitorTrace, numerator: str, denominator: str) -> float | None:
    top, bottom = _total(trace, numerator), _total(trace, denominator)
    return top / bottom if top is not None and bottom else None
