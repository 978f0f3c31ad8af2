"""NVIDIA GPUs through NVML (nvidia-ml-py), as a *source*: NVML calls take from microseconds to
~20 ms each (the PCIe throughput query waits for one sampling window per direction), so they
run on the source's own thread, never on the sampler's tick.

Read per GPU (``accelerator:<bus id>``) every ``interval_s``:

* ``nvmlDeviceGetUtilizationRates``: ``gpu`` (% of the last sample period in which a kernel
  ran: one tiny kernel at a time reads 100 %, so it is *not* saturation) and ``memory`` (% of
  time device memory was read or written);
* GPM (Hopper and later; ``nvmlGpmSampleGet`` twice, more than 100 ms apart, then
  ``nvmlGpmMetricsGet``): SM activity, SM occupancy, tensor activity, DRAM bandwidth
  utilization (all % of the device's own peak over the interval), PCIe and NVLink bytes per
  second (MiB/s);
* where GPM is not supported, ``nvmlDeviceGetPcieThroughput`` per direction (KB/s over NVML's
  20 ms window; TX = device to host);
* memory used, power draw (mW), SM clock (MHz), the clock-event-reason bitmask, the PCIe
  generation and width the link runs at now, and the compute processes on the GPU (whether
  each is the workload's: the workload's pid or one of its descendants).

Formulas (``derive``): ``util_compute`` = GPM SM_UTIL / 100 (or, without GPM, utilization.gpu
/ 100, said in ``attrs``); ``util_tensor`` = ANY_TENSOR_UTIL / 100; ``util_memory_bandwidth``
= DRAM_BW_UTIL / 100; ``send_bytes_per_s``/``receive_bytes_per_s`` = GPM PCIE_TX/RX x 2^20 (or
the throughput query x 1000); ``util_send``/``util_receive`` = those / the link's rate at the
generation and width of that sample (GT/s x encoding x lanes / 8); ``busy`` = utilization.gpu
/ 100 (a share of time, reported, not judged); ``util_capacity`` = memory used / total;
``power_fraction`` = power / enforced limit; ``clock_fraction`` = SM clock / maximum;
``power_capped``, ``thermal_capped``, ``hw_slowdown`` = the reason bits (4 software power cap;
32, 64 thermal; 8, 128 hardware slowdown, power brake) as 0/1. A value NVML answers "Not
Supported" for is NaN: unknown, never zero.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.monitor.gpu_clock_reasons import clock_reason_flags
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.rates import levels, ratio
from pilot_sys.monitor.source import Source, SourceReading
from pilot_sys.topology import nvml
from pilot_sys.topology.components import Limit, LimitSource
from pilot_sys.topology.linkspeed import pcie_bandwidth

KIND = "dynamic"
NAME = "gpu"

GPM_MIN_INTERVAL_S = 0.1  # NVML: two GPM samples must be more than 100 ms apart
GPM_GIVE_UP = 3  # GPM requests failing in a row before the PCIe throughput query replaces it
#: GPM metric (pynvml's NVML_GPM_METRIC_<name>) -> raw column
GPM = {
    "SM_UTIL": "gpm_sm",
    "SM_OCCUPANCY": "gpm_occupancy",
    "ANY_TENSOR_UTIL": "gpm_tensor",
    "DRAM_BW_UTIL": "gpm_dram_bw",
    "PCIE_TX_PER_SEC": "gpm_pcie_tx_mib",
    "PCIE_RX_PER_SEC": "gpm_pcie_rx_mib",
    "NVLINK_TOTAL_TX_PER_SEC": "gpm_nvlink_tx_mib",
    "NVLINK_TOTAL_RX_PER_SEC": "gpm_nvlink_rx_mib",
}
COLUMNS = (
    "util_gpu",
    "util_mem",
    "mem_used",
    "power_mw",
    "sm_clock_mhz",
    "clock_reasons",
    "pcie_gen",
    "pcie_width",
    "pcie_tx_kbps",
    "pcie_rx_kbps",
    "processes",
    "workload_processes",
    *GPM.values(),
)
#: metrics that describe the interval ending at their sample (GPM's and NVML's windows)
INTERVAL_METRICS = ("util_", "busy", "memory_busy", "sm_occupancy")


class _Device:
    """What is kept per GPU between calls: its handle, stated limits, GPM samples."""

    def __init__(self, library: Any, address: str, handle: Any) -> None:
        self.address, self.handle = address, handle
        self.id = f"accelerator:{address}"
        call = nvml.call
        self.name = nvml.text(call(library, "nvmlDeviceGetName", handle))
        memory = call(library, "nvmlDeviceGetMemoryInfo", handle)
        self.memory_total = float(getattr(memory, "total", 0) or 0) or None
        power = call(library, "nvmlDeviceGetEnforcedPowerLimit", handle)
        self.power_limit_w = power / 1000.0 if power else None
        clock = call(library, "nvmlDeviceGetMaxClockInfo", handle, library.NVML_CLOCK_SM)
        self.max_sm_clock_hz = clock * 1e6 if clock else None
        self.max_gen = call(library, "nvmlDeviceGetMaxPcieLinkGeneration", handle)
        self.max_width = call(library, "nvmlDeviceGetMaxPcieLinkWidth", handle)
        support = call(library, "nvmlGpmQueryDeviceSupport", handle)
        self.gpm = bool(getattr(support, "isSupportedDevice", 0))
        self.gpm_ids = {
            name: getattr(library, f"NVML_GPM_METRIC_{name}")
            for name in GPM
            if hasattr(library, f"NVML_GPM_METRIC_{name}")
        }
        self.samples: list[Any] = []
        self.gpm_at: float | None = None
        self.gpm_seen = False  # a GPM request answered: its metrics are the signals
        self.gpm_failures = 0  # consecutive failed requests
        if self.gpm:
            self.samples = [call(library, "nvmlGpmSampleAlloc") for _ in range(2)]
            self.gpm = all(s is not None for s in self.samples)
            if self.gpm and call(library, "nvmlGpmSampleGet", handle, self.samples[0]) is not None:
                self.gpm_at = time.monotonic()


class GpuSource(Source):
    """One source for every GPU NVML sees (``context.wants`` filters them)."""

    name = NAME
    interval_s = 0.2  # GPM needs > 100 ms between its samples; 5 Hz resolves a 10 % share

    def __init__(
        self,
        library: Any,
        found: list[tuple[str, Any]],
        is_workload: Callable[[int], bool],
        clock: Callable[[], float] = time.monotonic,
        command: Callable[[int], str] | None = None,
        placement: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        self.library, self.is_workload, self.clock = library, is_workload, clock
        self.command = command or _command
        self.placement = placement or {}  # per GPU: NUMA node and local CPUs, from the graph
        self.devices = [_Device(library, address, handle) for address, handle in found]
        for device in self.devices:
            if device.gpm_at is not None:
                device.gpm_at = clock()
        self.columns = tuple(f"{d.id}/{c}" for d in self.devices for c in COLUMNS)
        self.others: dict[str, dict[int, str]] = {d.id: {} for d in self.devices}
        self.workload_seen: dict[str, bool] = {d.id: False for d in self.devices}
        self._workload: dict[int, bool] = {}
        for d in self.devices:
            self.limits.update(self._limits(d))

    def _limits(self, d: _Device) -> dict[str, Limit]:
        source = LimitSource.NVML
        share = "a share of the device's own peak over each interval"
        out = {
            f"{d.id}/compute": Limit(
                value=1.0,
                unit="",
                source=source,
                detail=f"every SM active (GPM SM_UTIL, {share})"
                if d.gpm
                else "a kernel running all the time (utilization.gpu: not saturation)",
            ),
            f"{d.id}/tensor": Limit(
                value=1.0, unit="", source=source, detail=f"tensor cores (GPM, {share})"
            ),
            f"{d.id}/memory_bandwidth": Limit(
                value=1.0, unit="", source=source, detail=f"DRAM bandwidth (GPM, {share})"
            ),
        }
        if d.max_gen in nvml.PCIE_GEN_GTS and d.max_width:
            gts = nvml.PCIE_GEN_GTS[d.max_gen]
            link = Limit(
                value=pcie_bandwidth(gts, d.max_width),
                source=source,
                detail=f"PCIe {gts:g} GT/s x{d.max_width} maximum; judged against the rate the "
                "link ran at in each sample",
            )
            out[f"{d.id}/send"] = out[f"{d.id}/receive"] = link
        if d.memory_total:
            out[f"{d.id}/capacity"] = Limit(
                value=d.memory_total, unit="B", source=source, detail="device memory"
            )
        return out

    # -- the call on the source's thread -------------------------------------------------
    def sample(self) -> SourceReading:
        values: list[float] = []
        for d in self.devices:
            values += self._read(d)
        return SourceReading(values)

    def _read(self, d: _Device) -> list[float]:
        lib, h, call = self.library, d.handle, nvml.call
        row = dict.fromkeys(COLUMNS, math.nan)
        rates = call(lib, "nvmlDeviceGetUtilizationRates", h)
        if rates is not None:
            row["util_gpu"], row["util_mem"] = float(rates.gpu), float(rates.memory)
        memory = call(lib, "nvmlDeviceGetMemoryInfo", h)
        row["mem_used"] = _number(getattr(memory, "used", None))
        row["power_mw"] = _number(call(lib, "nvmlDeviceGetPowerUsage", h))
        row["sm_clock_mhz"] = _number(call(lib, "nvmlDeviceGetClockInfo", h, lib.NVML_CLOCK_SM))
        reasons = call(lib, "nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is None:  # the name before driver 535
            reasons = call(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", h)
        row["clock_reasons"] = _number(reasons)
        row["pcie_gen"] = _number(call(lib, "nvmlDeviceGetCurrPcieLinkGeneration", h))
        row["pcie_width"] = _number(call(lib, "nvmlDeviceGetCurrPcieLinkWidth", h))
        processes = call(lib, "nvmlDeviceGetComputeRunningProcesses", h)
        if processes is not None:
            pids = [int(p.pid) for p in processes]
            own = [pid for pid in pids if self._is_workload(pid)]
            row["processes"], row["workload_processes"] = float(len(pids)), float(len(own))
            self.workload_seen[d.id] |= bool(own)
            for pid in pids:
                if pid not in own and pid not in self.others[d.id]:
                    self.others[d.id][pid] = self.command(pid)
        if d.gpm:
            row.update(self._gpm(d))
        else:  # blocks ~20 ms per direction: that is why this is a source
            row["pcie_tx_kbps"] = _number(
                call(lib, "nvmlDeviceGetPcieThroughput", h, lib.NVML_PCIE_UTIL_TX_BYTES)
            )
            row["pcie_rx_kbps"] = _number(
                call(lib, "nvmlDeviceGetPcieThroughput", h, lib.NVML_PCIE_UTIL_RX_BYTES)
            )
        return [row[c] for c in COLUMNS]

    def _gpm(self, d: _Device) -> dict[str, float]:
        """The GPM metrics since the previous GPM sample, when it is more than 100 ms old;
        nothing (NaN) otherwise: a shorter interval gives NVML no valid metrics."""
        now = self.clock()
        if d.gpm_at is None or now - d.gpm_at <= GPM_MIN_INTERVAL_S:
            if d.gpm_at is None and nvml.call(
                self.library, "nvmlGpmSampleGet", d.handle, d.samples[0]
            ):
                d.gpm_at = now
            return {}
        lib = self.library
        if nvml.call(lib, "nvmlGpmSampleGet", d.handle, d.samples[1]) is None:
            return {}
        request = lib.c_nvmlGpmMetricsGet_t()
        request.version = lib.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(d.gpm_ids)
        request.sample1, request.sample2 = d.samples[0], d.samples[1]
        names = list(d.gpm_ids)
        for i, name in enumerate(names):
            request.metrics[i].metricId = d.gpm_ids[name]
        d.samples.reverse()  # the newer sample starts the next interval
        d.gpm_at = now
        if nvml.call(lib, "nvmlGpmMetricsGet", request) is None:
            d.gpm_failures += 1
            if d.gpm_failures >= GPM_GIVE_UP and not d.gpm_seen:
                d.gpm = False  # never answered (no permission, say): the throughput query
            return {}
        d.gpm_seen, d.gpm_failures = True, 0
        return {
            GPM[name]: float(request.metrics[i].value)
            if request.metrics[i].nvmlReturn == 0
            else math.nan
            for i, name in enumerate(names)
        }

    def _is_workload(self, pid: int) -> bool:
        """Cached once known to be the workload's; asked again otherwise (the workload's pid
        may not be known yet when a process first appears)."""
        if not self._workload.get(pid):
            self._workload[pid] = self.is_workload(pid)
        return self._workload[pid]

    # -- after the run -------------------------------------------------------------------
    def derive(self, raw: np.ndarray, t: np.ndarray, metrics: dict) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for d in self.devices:
            c = d.id

            def col(name: str, c: str = c) -> np.ndarray:
                return levels(self.col(raw, f"{c}/{name}"))

            gpm = bool(np.isfinite(col("gpm_sm")).any())
            out[f"{c}/busy"] = col("util_gpu") / 100.0
            out[f"{c}/memory_busy"] = col("util_mem") / 100.0
            out[f"{c}/util_compute"] = (col("gpm_sm") if gpm else col("util_gpu")) / 100.0
            if gpm:
                out[f"{c}/util_tensor"] = col("gpm_tensor") / 100.0
                out[f"{c}/sm_occupancy"] = col("gpm_occupancy") / 100.0
                out[f"{c}/util_memory_bandwidth"] = col("gpm_dram_bw") / 100.0
                send = col("gpm_pcie_tx_mib") * 2**20
                receive = col("gpm_pcie_rx_mib") * 2**20
                out[f"{c}/nvlink_send_bytes_per_s"] = col("gpm_nvlink_tx_mib") * 2**20
                out[f"{c}/nvlink_receive_bytes_per_s"] = col("gpm_nvlink_rx_mib") * 2**20
            else:
                send, receive = col("pcie_tx_kbps") * 1e3, col("pcie_rx_kbps") * 1e3
            out[f"{c}/send_bytes_per_s"], out[f"{c}/receive_bytes_per_s"] = send, receive
            rate = _link_rate(col("pcie_gen"), col("pcie_width"))
            if np.isfinite(rate).any():
                out[f"{c}/link_bytes_per_s"] = rate
                out[f"{c}/util_send"] = ratio(send, rate)
                out[f"{c}/util_receive"] = ratio(receive, rate)
                if d.max_gen in nvml.PCIE_GEN_GTS and d.max_width:
                    best = pcie_bandwidth(nvml.PCIE_GEN_GTS[d.max_gen], d.max_width)
                    out[f"{c}/link_below_max"] = np.where(
                        np.isfinite(rate), (rate < best * 0.999).astype(np.float64), np.nan
                    )
            used = col("mem_used")
            out[f"{c}/memory_used_bytes"] = used
            if d.memory_total:
                out[f"{c}/util_capacity"] = used / d.memory_total
            out[f"{c}/power_w"] = col("power_mw") / 1000.0
            if d.power_limit_w:
                out[f"{c}/power_fraction"] = out[f"{c}/power_w"] / d.power_limit_w
            out[f"{c}/sm_clock_hz"] = col("sm_clock_mhz") * 1e6
            if d.max_sm_clock_hz:
                out[f"{c}/clock_fraction"] = out[f"{c}/sm_clock_hz"] / d.max_sm_clock_hz
            reasons = col("clock_reasons")
            for name, flag in clock_reason_flags(reasons).items():
                out[f"{c}/{name}"] = flag
            out[f"{c}/processes"] = col("processes")
            out[f"{c}/workload_processes"] = col("workload_processes")
            out[f"{c}/other_processes"] = col("processes") - col("workload_processes")
        return out

    def interval_metric(self, key: str) -> bool:
        return key.rsplit("/", 1)[-1].startswith(INTERVAL_METRICS) or super().interval_metric(key)

    def attrs(self) -> dict[str, dict[str, Any]]:
        return {
            d.id: {
                "model": d.name,
                "compute_signal": "GPM SM activity"
                if d.gpm_seen
                else "utilization.gpu (time a kernel ran: not saturation)",
                "gpm": d.gpm_seen,
                "pcie_signal": "GPM PCIE_TX/RX_PER_SEC"
                if d.gpm_seen
                else "nvmlDeviceGetPcieThroughput",
                "max_link_generation": d.max_gen,
                "max_link_width": d.max_width,
                "power_limit_w": d.power_limit_w,
                "max_sm_clock_hz": d.max_sm_clock_hz,
                "workload_on_gpu": self.workload_seen[d.id],
                "other_processes": [
                    {"pid": pid, "command": command}
                    for pid, command in sorted(self.others[d.id].items())
                ],
                "numa_node": self.placement.get(d.id, {}).get("numa_node"),
                "local_cpus": self.placement.get(d.id, {}).get("local_cpus"),
            }
            for d in self.devices
        }

    def close(self) -> None:
        for d in self.devices:
            for s in d.samples:
                nvml.call(self.library, "nvmlGpmSampleFree", s)
        nvml.call(self.library, "nvmlShutdown")


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _link_rate(gen: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Bytes/s per direction at each sample's generation and width (NaN where unknown)."""
    gts = np.full(gen.shape, np.nan)
    for g, rate in nvml.PCIE_GEN_GTS.items():
        gts[gen == g] = rate
    rate = np.full(gen.shape, np.nan)
    ok = np.isfinite(gts) & np.isfinite(width)
    rate[ok] = [pcie_bandwidth(float(x), int(w)) for x, w in zip(gts[ok], width[ok], strict=True)]
    return rate


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def workload_test(context: ProbeContext) -> Callable[[int], bool]:
    """Whether a pid is the workload's: one of its roots (``context.workload_pids()``, read at
    each call: the workload may start after the plug-ins open, and a session starts it anew
    every round) or one of their descendants."""

    def test(candidate: int) -> bool:
        roots = set(context.workload_pids())
        if not roots:
            return False
        if candidate in roots:
            return True
        try:
            import psutil

            return any(p.pid in roots for p in psutil.Process(candidate).parents())
        except Exception:  # gone, or not ours to see
            return False

    return test


def open_probe(context: ProbeContext) -> GpuSource | None:
    live = context.root == Path("/")
    if live and not Path("/proc/driver/nvidia").exists() and not nvml.replaced_active():
        return None  # no NVIDIA driver: nothing to ask, nothing imported
    library, why = nvml.load(context.root)
    if library is None:
        if live:
            context.notes.append(f"GPUs not sampled: {why}")
        return None
    found = [(a, h) for a, h in nvml.devices(library) if context.wants(f"accelerator:{a}")]
    if not found:
        return None
    placement = {}
    for address, _ in found:
        gid = f"accelerator:{address}"
        if context.graph is not None and gid in context.graph:
            attrs = context.graph.component(gid).attrs
            placement[gid] = {k: attrs.get(k) for k in ("numa_node", "local_cpus")}
    return GpuSource(library, found, workload_test(context), placement=placement)
