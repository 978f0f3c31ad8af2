"""AMD GPUs through the amdgpu driver's sysfs files, read on the sampler's tick.

Counters, in the GPU's PCI function directory (``/sys/bus/pci/devices/<bus id>/``;
Documentation/gpu/amdgpu/driver-misc.rst and thermal.rst):

* ``gpu_busy_percent``: how busy the GPU is, % (the firmware's average: like NVIDIA's
  utilization.gpu, the time it was busy, not how much of it was used);
* ``mem_busy_percent``: how busy the memory controller is, %;
* ``mem_info_vram_used``: device memory in use, bytes;
* ``hwmon/hwmon*/power1_average``: power draw, microwatts (absent on some boards).

Formulas, per ``accelerator:<bus id>``: ``busy`` = ``util_compute`` = gpu_busy_percent / 100
(``attrs`` say that the signal is busy time, not saturation); ``memory_busy`` =
mem_busy_percent / 100; ``memory_used_bytes``; ``util_capacity`` = used / the graph's
capacity (``mem_info_vram_total``); ``power_w`` = power1_average / 1e6. A file that is missing
is not sampled; a read that fails is NaN. Which processes use the GPU is not read (no process
list in sysfs), so the verdict's rule for a core waiting on a GPU does not apply to AMD GPUs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import FieldFile
from pilot_sys.monitor.rates import utilization

KIND = "dynamic"
NAME = "amdgpu"
AMD = "0x1002"
FILES = (
    ("gpu_busy_percent", "gpu_busy"),
    ("mem_busy_percent", "mem_busy"),
    ("mem_info_vram_used", "vram_used"),
)


class AmdGpuProbe(Probe):
    name = NAME
    # the driver asks the GPU's firmware on each read of gpu_busy_percent (its value is the
    # firmware's running average): 10 reads a second follow it without loading the firmware
    max_rate_hz = 10.0
    rate_reason = "gpu_busy_percent is the firmware's averaged activity, read from it each time"

    def __init__(self, context: ProbeContext, gpus: dict[str, str]) -> None:
        super().__init__()
        self.gpus: list[str] = []
        self.sampled: dict[str, list[str]] = {}
        columns: list[str] = []
        for address, base in gpus.items():
            gid = f"accelerator:{address}"
            names = []
            files = list(FILES)
            hwmon = sorted((context.root / base.lstrip("/") / "hwmon").glob("hwmon*"))
            if hwmon:
                files.append((f"hwmon/{hwmon[0].name}/power1_average", "power_uw"))
            for file, column in files:
                try:
                    reader = FieldFile(context.path(base.lstrip("/"), file), [0])
                except (OSError, ValueError):
                    continue
                self.readers.append(reader)
                columns.append(f"{gid}/{column}")
                names.append(column)
            if names:
                self.gpus.append(gid)
                self.sampled[gid] = names
                self.limits[f"{gid}/capacity"] = context.limit(gid, "capacity")
        self.columns = tuple(columns)

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for gid in self.gpus:
            have = self.sampled[gid]
            if "gpu_busy" in have:
                busy = self.col(raw, f"{gid}/gpu_busy") / 100.0
                out[f"{gid}/busy"] = out[f"{gid}/util_compute"] = busy
            if "mem_busy" in have:
                out[f"{gid}/memory_busy"] = self.col(raw, f"{gid}/mem_busy") / 100.0
            if "vram_used" in have:
                used = self.col(raw, f"{gid}/vram_used")
                out[f"{gid}/memory_used_bytes"] = used
                util = utilization(used, self.limits[f"{gid}/capacity"])
                if util is not None:
                    out[f"{gid}/util_capacity"] = util
            if "power_uw" in have:
                out[f"{gid}/power_w"] = self.col(raw, f"{gid}/power_uw") / 1e6
        return out

    def interval_metric(self, key: str) -> bool:
        name = key.rsplit("/", 1)[-1]
        return name in ("busy", "util_compute", "memory_busy") or super().interval_metric(key)

    def attrs(self) -> dict[str, dict[str, Any]]:
        return {
            gid: {
                "vendor": "AMD",
                "compute_signal": "gpu_busy_percent (time the GPU was busy: not saturation)",
                "gpm": False,
            }
            for gid in self.gpus
        }

    def close(self) -> None:
        for reader in self.readers:
            reader.close()  # type: ignore[union-attr]


def open_probe(context: ProbeContext) -> AmdGpuProbe | None:
    devices = context.path("sys", "bus", "pci", "devices")
    gpus: dict[str, str] = {}
    try:
        entries = sorted(devices.iterdir())
    except OSError:
        return None
    for entry in entries:
        gid = f"accelerator:{entry.name}"
        try:
            vendor = (entry / "vendor").read_text().strip()
        except OSError:
            continue
        if vendor == AMD and (entry / "gpu_busy_percent").exists() and context.wants(gid):
            gpus[entry.name] = f"/sys/bus/pci/devices/{entry.name}"
    if not gpus:
        return None
    probe = AmdGpuProbe(context, gpus)
    return probe if probe.gpus else None
