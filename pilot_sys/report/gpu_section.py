"""report.md's GPU section: per accelerator the workload used or that was sampled, its signals
over the judged part of the run (``bottleneck.detail["accelerators"]``, from
``monitor.bottleneck_accelerator.summary``) and which NVML signal each came from."""

from __future__ import annotations

from typing import Any

from pilot_sys import units
from pilot_sys.session.result import SessionResult

ROWS = (
    ("SM activity", "sm_activity", "share"),
    ("tensor activity", "tensor_activity", "share"),
    ("DRAM bandwidth", "dram_bandwidth", "share"),
    ("PCIe host to device", "pcie_host_to_device", "share"),
    ("PCIe device to host", "pcie_device_to_host", "share"),
    ("time a kernel ran (utilization.gpu)", "kernel_time", "share"),
    ("power", "power_w", "W"),
    ("SM clock", "sm_clock_hz", "Hz"),
    ("saturated", "saturated_share", "share"),
    ("clock held by the power cap", "power_capped_share", "share"),
)


def gpu_lines(result: SessionResult) -> list[str]:
    found: dict[str, Any] = result.bottleneck.detail.get("accelerators") or {}
    if not found:
        return []
    lines = ["## GPUs", ""]
    for gpu, entry in found.items():
        used = ("" if entry.get("workload_on_gpu") else "not ") + "used by the workload"
        lines += [f"### `{gpu}` ({entry.get('model') or 'GPU'}, {used})", ""]
        lines.append(
            f"Compute judged on {entry.get('compute_signal') or 'unknown'}; PCIe traffic from "
            f"{entry.get('pcie_signal') or 'unknown'}. Means over the judged part of the run "
            "(a start-up before the first kernel is judged apart):"
        )
        lines += ["", "| signal | mean |", "|---|---|"]
        for label, key, unit in ROWS:
            value = entry.get(key)
            if value is None:
                continue
            shown = units.percent(value) if unit == "share" else units.quantity(value, unit)
            lines.append(f"| {label} | {shown} |")
        others = entry.get("other_processes") or []
        if others:
            named = ", ".join(f"pid {p['pid']} ({p['command']})" for p in others)
            lines += ["", f"Other processes on this GPU: {named}."]
        lines.append("")
    return lines
