"""The CPU frequency warning of the bottleneck verdict: a CPU-bound result measured while a
cpufreq policy ran below its nominal frequency (it would be faster at the CPU's rated speed)."""

from __future__ import annotations

import numpy as np

from pilot_sys.monitor.bottleneck_model import (
    ComponentStats,
    _limiter_kind,
    _pct,
    _series,
)
from pilot_sys.monitor.trace import MonitorTrace

CPU_BOUND_COMPONENTS = ("cpu:host", "core:")


def _frequency_warning(
    trace: MonitorTrace,
    weights: np.ndarray,
    cut: str | None,
    hot: list[ComponentStats],
    max_hot_fraction: float,
) -> str | None:
    """A CPU-bound result (the CUT is the CPU, or the CPU or a CPU quota bound) measured while
    a cpufreq policy ran below its nominal frequency for longer than ``max_hot_fraction`` of
    the run: the frequencies seen, per policy."""
    policies = {c: a for c, a in trace.attrs.items() if c.startswith("cpufreq:policy")}
    cpu_bound = (cut is not None and cut.startswith(CPU_BOUND_COMPONENTS)) or any(
        h.component.startswith(CPU_BOUND_COMPONENTS)
        or _limiter_kind(trace, h.component) in ("CPU quota", "cpuset")
        for h in hot
    )
    if not policies or not cpu_bound:
        return None
    seen = []
    for policy, attrs in sorted(policies.items()):
        below = _series(trace, f"{policy}/below_nominal")
        hz = _series(trace, f"{policy}/frequency_hz")
        nominal = attrs.get("nominal_hz")
        if not nominal or below.size != weights.size or hz.size != weights.size:
            continue
        ok = np.isfinite(below)
        total = float(weights[ok].sum())
        share = float(weights[ok][below[ok] > 0].sum()) / total if total > 0 else 0.0
        if share <= max_hot_fraction:
            continue
        low = hz[np.isfinite(hz) & (below > 0)]
        cpus = ",".join(map(str, attrs.get("cpus") or [])) or "?"
        seen_at = (
            _ghz(low.min())
            if _ghz(low.min()) == _ghz(low.max())
            else f"{_ghz(low.min())}-{_ghz(low.max())} (mean {_ghz(low.mean())})"
        )
        text = (
            f"{policy.split(':', 1)[1]} (CPUs {cpus}) at {seen_at} below its nominal "
            f"{_ghz(nominal)} for {_pct(share)} of the run"
        )
        cap, hardware = attrs.get("scaling_max_hz"), attrs.get("hardware_max_hz")
        if cap and hardware and cap < hardware:
            text += f", capped at {_ghz(cap)} (scaling_max_freq)"
        if attrs.get("governor"):
            text += f", governor {attrs['governor']}"
        seen.append(text)
    if not seen:
        return None
    return (
        "warning: a CPU-bound result measured below the nominal CPU frequency (it would be "
        "faster at the CPU's rated speed): " + "; ".join(seen)
    )


def _ghz(hz: float) -> str:
    return f"{hz / 1e9:.2f} GHz"
