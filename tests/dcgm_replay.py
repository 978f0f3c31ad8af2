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

import numpy as np

from pilot_sys.monitor.remote import dcgm
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import Response
from pilot_sys.monitor.remote.node_exporter import counters_from_samples, parse
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.topology.components import LimitSource
from pilot_sys.topology.remote_inventory import RemoteInventory, inventory_discovery
from tests.nvml_standin import load_recording

Series = dcgm.Series

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


def series_of(text: str, t: float = 0.0) -> list[Series]:
    """An exposition text as the engine's answer holds it: one series per sample, at ``t``."""
    return [
        ({**labels, "__name__": name}, [(t, value)])
        for name, items in parse(text).items()
        for labels, value in items
    ]


def engine_trace(
    case: str, *, profiling: bool = True, scrape_s: float = 0.5, offset: float = 0.13
) -> MonitorTrace:
    """What the Prometheus backend makes of the recording's host scraped every ``scrape_s``
    (dcgm-exporter, another target, a third of an interval before node_exporter): the
    backend's own functions from the answers on (``dcgm.with_gpus_over``, the inventory,
    ``utilizations``), as ``Fleet.window`` and a session's judgement use them."""
    replay = GpuHostReplay(case, host="gpu1", profiling=profiling)
    readings: list[RemoteCounters] = []
    window: dict[tuple[tuple[str, str], ...], Series] = {}  # the engine's window of them
    for t in np.arange(offset, replay.duration, scrape_s):
        node = counters_from_samples("gpu1", parse(replay.node_text(t)), Response("", b"", t, t))
        readings.append(node.model_copy(update={"remote_time": float(t)}))
        for labels, points in series_of(replay.dcgm_text(t), float(t) - scrape_s / 3):
            window.setdefault(tuple(sorted(labels.items())), (labels, []))[1].extend(points)
    dcgm.with_gpus_over(readings, list(window.values()))
    gpus = dcgm.gpus_from_series(series_of(replay.dcgm_text(replay.duration)))
    inventory = RemoteInventory(
        host="gpu1", source=LimitSource.NODE_EXPORTER, cpus=replay.static["ncpu"], gpus=gpus
    )
    components = inventory_discovery(inventory).components
    limits = {f"{c.id}/{d}": limit for c in components for d, limit in c.limits.items()}
    series = CounterSeries.from_readings(readings)
    metrics = utilizations(series, limits)
    t = series.remote_time - series.remote_time[0]
    return MonitorTrace(
        rate_hz=1.0 / scrape_s,
        start_time=float(series.remote_time[0]),
        timestamps=[float(x) for x in t],
        series={k: [float(x) if np.isfinite(x) else None for x in v] for k, v in metrics.items()},
        limits={k: v.model_dump(mode="json") for k, v in limits.items()},
        attrs={c.id: dict(c.attrs) for c in components},
    )
