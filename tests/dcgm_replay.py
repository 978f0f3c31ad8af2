"""A GPU host as Prometheus sees it, built from a shared H200 recording
(``tests/fixtures/gpu-h200/traces``): what dcgm-exporter and node_exporter would have served at
second ``t`` of the recording, as exposition text.

The recording's NVML and GPM readings map onto dcgm-exporter's families as DCGM fills them
(its profiling fields are GPM's metrics as ratios; its PCIe byte rates GPM's MiB/s as bytes/s;
clocks in MHz, power in W, framebuffer in MiB, the clock-event reasons the same NVML bitmask),
with dcgm-exporter's labels (``gpu``, ``UUID``, ``device``, ``modelName``, ``pci_bus_id``,
``Hostname``); the recording's /proc/stat lines become node_exporter's
``node_cpu_seconds_total`` (ticks / USER_HZ, one series per CPU and mode). What the recording
lacks is not served. ``profiling=False`` serves dcgm-exporter's defaults without the profiling
(DCP) fields: GPU utilization and NVML's PCIe throughput instead.
"""

from __future__ import annotations

import bisect
from typing import Any

from tests.nvml_standin import load_recording

MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
LABELS = (
    'gpu="0",UUID="GPU-5e0f3a7c-h200-replay",device="nvidia0",modelName="NVIDIA H200",'
    'pci_bus_id="00000000:00:06.0",Hostname="{host}"'
)
MIB = 2**20


class GpuHostReplay:
    """One recording, served by time."""

    def __init__(self, case: str, host: str = "gpu1", profiling: bool = True) -> None:
        self.case, self.host, self.profiling = case, host, profiling
        self.static, self.samples, self.end = load_recording(case)
        self.times = [float(s["t"]) for s in self.samples]
        self.duration = self.times[-1]

    def row(self, t: float) -> dict[str, Any]:
        return self.samples[max(bisect.bisect_right(self.times, t) - 1, 0)]

    def gpm(self, t: float) -> dict[str, float] | None:
        """GPM's metrics as of ``t``: the latest sample that carried them."""
        i = max(bisect.bisect_right(self.times, t) - 1, 0)
        while i >= 0 and not self.samples[i].get("gpm"):
            i -= 1
        return self.samples[i]["gpm"] if i >= 0 else None

    def dcgm_values(self, t: float) -> dict[str, float]:
        row, static = self.row(t), self.static
        values: dict[str, float] = {
            "DCGM_FI_DEV_GPU_UTIL": row["util_gpu"],
            "DCGM_FI_DEV_MEM_COPY_UTIL": row["util_mem"],
            "DCGM_FI_DEV_FB_USED": row["mem_used"] / MIB,
            "DCGM_FI_DEV_FB_FREE": (static["mem_total"] - row["mem_used"]) / MIB,
            "DCGM_FI_DEV_POWER_USAGE": row["power_mW"] / 1000.0,
            "DCGM_FI_DEV_POWER_MGMT_LIMIT": static["power_limit_mW"] / 1000.0,
            "DCGM_FI_DEV_SM_CLOCK": row["sm_clock"],
            "DCGM_FI_DEV_MAX_SM_CLOCK": static["max_sm_clock"],
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": row["clk_reasons"],
            "DCGM_FI_DEV_PCIE_LINK_GEN": row["pcie_gen"],
            "DCGM_FI_DEV_PCIE_LINK_WIDTH": row["pcie_width"],
            "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": static["max_pcie_gen"],
            "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": static["max_pcie_width"],
        }
        gpm = self.gpm(t)
        if self.profiling and gpm is not None:
            values.update(
                {
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": gpm["GRAPHICS_UTIL"] / 100.0,
                    "DCGM_FI_PROF_SM_ACTIVE": gpm["SM_UTIL"] / 100.0,
                    "DCGM_FI_PROF_SM_OCCUPANCY": gpm["SM_OCCUPANCY"] / 100.0,
                    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": gpm["ANY_TENSOR_UTIL"] / 100.0,
                    "DCGM_FI_PROF_DRAM_ACTIVE": gpm["DRAM_BW_UTIL"] / 100.0,
                    "DCGM_FI_PROF_PCIE_TX_BYTES": gpm["PCIE_TX_PER_SEC"] * MIB,
                    "DCGM_FI_PROF_PCIE_RX_BYTES": gpm["PCIE_RX_PER_SEC"] * MIB,
                }
            )
        elif not self.profiling:
            values["DCGM_FI_DEV_PCIE_TX_THROUGHPUT"] = row["pcie_tx_kBps"]
            values["DCGM_FI_DEV_PCIE_RX_THROUGHPUT"] = row["pcie_rx_kBps"]
        return {k: float(v) for k, v in values.items() if v is not None}

    def dcgm_text(self, t: float) -> str:
        labels = "{" + LABELS.format(host=self.host) + "}"
        lines = []
        for name, value in self.dcgm_values(t).items():
            lines += [f"# TYPE {name} gauge", f"{name}{labels} {value!r}"]
        return "\n".join(lines) + "\n"

    def node_text(self, t: float) -> str:
        tck = float(self.static["clk_tck"])
        lines = ["# TYPE node_cpu_seconds_total counter"]
        for line in self.row(t)["cpu"]:
            if line[0] == "cpu":
                continue
            cpu = line[0][3:]
            for mode, ticks in zip(MODES, line[1:9], strict=True):
                lines.append(
                    f'node_cpu_seconds_total{{cpu="{cpu}",mode="{mode}"}} {int(ticks) / tck!r}'
                )
        return "\n".join(lines) + "\n"
