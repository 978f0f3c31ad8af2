"""A stand-in for ``pynvml`` (nvidia-ml-py) that replays a recording of a real GPU by time.

The recordings (``tests/fixtures/gpu-h200/traces/rec_<case>.jsonl.gz``, copied from
``shared/data/gpu-h200/traces``) hold what NVML answered at 20 Hz on an H200 while a workload
ran: one ``static`` line, then samples at ``t`` seconds since the workload started. The
stand-in answers every call with the latest sample at or before its clock (``now``, set by the
test, or the monotonic clock since ``start()``), through the same names, arguments and result
objects as the real binding (as ``recorder/rec.py`` called them). What the recording lacks
(a call it did not make, a value it recorded as an error or null) answers
``NVMLError`` "Not Supported", as NVML does on a GPU without that feature.
"""

from __future__ import annotations

import bisect
import gzip
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "gpu-h200"
CASES = ("h2d_pinned", "matmul", "membw", "starved", "cpu_only")
NOT_SUPPORTED = 3
INVALID_ARGUMENT = 2
GPM_MIN_INTERVAL_S = 0.1
_MESSAGES = {NOT_SUPPORTED: "Not Supported", INVALID_ARGUMENT: "Invalid Argument"}


class NVMLError(Exception):
    """As pynvml's: ``value`` is NVML's return code, ``str()`` its message."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML error {self.value}")


def load_recording(case: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """``(static, samples, end)`` of a shared recording."""
    with gzip.open(FIXTURES / "traces" / f"rec_{case}.jsonl.gz", "rt") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return lines[0]["static"], lines[1:-1], lines[-1]


def _known(value: Any) -> Any:
    if value is None or isinstance(value, dict):  # null, or {"error": ...} as recorded
        raise NVMLError(NOT_SUPPORTED)
    return value


GPM_NAMES = (
    "GRAPHICS_UTIL",
    "SM_UTIL",
    "SM_OCCUPANCY",
    "INTEGER_UTIL",
    "ANY_TENSOR_UTIL",
    "HMMA_TENSOR_UTIL",
    "DRAM_BW_UTIL",
    "FP32_UTIL",
    "FP16_UTIL",
    "PCIE_TX_PER_SEC",
    "PCIE_RX_PER_SEC",
    "NVLINK_TOTAL_RX_PER_SEC",
    "NVLINK_TOTAL_TX_PER_SEC",
)


class ReplayNVML:
    """Module-like: pass it to ``pilot_sys.topology.nvml.replaced``."""

    NVMLError = NVMLError
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_PCIE_UTIL_TX_BYTES = 0
    NVML_PCIE_UTIL_RX_BYTES = 1
    NVML_TEMPERATURE_GPU = 0
    NVML_GPM_METRICS_GET_VERSION = 1

    def __init__(self, case: str, *, gpm: bool = True, calls: list[str] | None = None) -> None:
        self.static, self.samples, self.end = load_recording(case)
        self.times = [s["t"] for s in self.samples]
        self.gpm_enabled = gpm and bool(self.static.get("gpm_supported"))
        self.now = 0.0
        self._started: float | None = None
        self.calls = calls  # every call's name, when a list is given (the cost benchmark)
        for i, name in enumerate(GPM_NAMES):
            setattr(self, f"NVML_GPM_METRIC_{name}", 100 + i)
        self._gpm_by_id = {100 + i: name for i, name in enumerate(GPM_NAMES)}

    # -- the clock -----------------------------------------------------------------------
    def start(self, at: float = 0.0) -> None:
        """Replay in real time from now on, from ``at`` seconds into the recording (``now``
        follows the monotonic clock)."""
        self._started = time.monotonic() - at

    def clock(self) -> float:
        return time.monotonic() - self._started if self._started is not None else self.now

    def row(self) -> dict[str, Any]:
        i = bisect.bisect_right(self.times, self.clock()) - 1
        return self.samples[max(i, 0)]

    def _note(self, name: str) -> None:
        if self.calls is not None:
            self.calls.append(name)

    # -- what a recording lacks ------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("nvml"):

            def not_supported(*_args: Any) -> Any:
                raise NVMLError(NOT_SUPPORTED)

            return not_supported
        raise AttributeError(name)

    # -- static ----------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._note("nvmlInit")

    def nvmlShutdown(self) -> None:
        self._note("nvmlShutdown")

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        if index != 0:
            raise NVMLError(INVALID_ARGUMENT)
        return "gpu0"

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:
        return SimpleNamespace(busId=self.static["pci"].encode())

    def nvmlDeviceGetName(self, handle: Any) -> str:
        return _known(self.static.get("name"))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        return _known(self.static.get("max_pcie_gen"))

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        return _known(self.static.get("max_pcie_width"))

    def nvmlDeviceGetNumaNodeId(self, handle: Any) -> int:
        return _known(self.static.get("numa"))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        return _known(self.static.get("power_limit_mW"))

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> int:
        key = {self.NVML_CLOCK_SM: "max_sm_clock", self.NVML_CLOCK_MEM: "max_mem_clock"}
        return _known(self.static.get(key.get(clock, "")))

    # -- per sample ------------------------------------------------------------------------
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        self._note("nvmlDeviceGetMemoryInfo")
        used = _known(self.row().get("mem_used"))
        total = _known(self.static.get("mem_total"))
        return SimpleNamespace(total=total, used=used, free=total - used)

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any:
        self._note("nvmlDeviceGetUtilizationRates")
        row = self.row()
        return SimpleNamespace(gpu=_known(row.get("util_gpu")), memory=_known(row.get("util_mem")))

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: int) -> int:
        self._note("nvmlDeviceGetPcieThroughput")
        key = "pcie_tx_kBps" if counter == self.NVML_PCIE_UTIL_TX_BYTES else "pcie_rx_kBps"
        return _known(self.row().get(key))

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        self._note("nvmlDeviceGetPowerUsage")
        return _known(self.row().get("power_mW"))

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int:
        self._note("nvmlDeviceGetClockInfo")
        if clock != self.NVML_CLOCK_SM:
            raise NVMLError(NOT_SUPPORTED)
        return _known(self.row().get("sm_clock"))

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        return _known(self.row().get("temp"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        self._note("nvmlDeviceGetCurrentClocksEventReasons")
        return _known(self.row().get("clk_reasons"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        self._note("nvmlDeviceGetCurrPcieLinkGeneration")
        return _known(self.row().get("pcie_gen"))

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        self._note("nvmlDeviceGetCurrPcieLinkWidth")
        return _known(self.row().get("pcie_width"))

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        self._note("nvmlDeviceGetComputeRunningProcesses")
        pids = _known(self.row().get("gpu_pids"))
        return [SimpleNamespace(pid=pid, usedGpuMemory=None) for pid in pids]

    # -- GPM: two samples more than 100 ms apart give the metrics between them --------------
    def nvmlGpmQueryDeviceSupport(self, handle: Any) -> Any:
        return SimpleNamespace(isSupportedDevice=int(self.gpm_enabled))

    def nvmlGpmSampleAlloc(self) -> Any:
        if not self.gpm_enabled:
            raise NVMLError(NOT_SUPPORTED)
        return SimpleNamespace(t=None)

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        return None

    def nvmlGpmSampleGet(self, handle: Any, sample: Any) -> Any:
        self._note("nvmlGpmSampleGet")
        if not self.gpm_enabled:
            raise NVMLError(NOT_SUPPORTED)
        sample.t = self.clock()
        return sample

    def c_nvmlGpmMetricsGet_t(self) -> Any:
        metrics = [SimpleNamespace(metricId=0, value=0.0, nvmlReturn=0) for _ in range(98)]
        return SimpleNamespace(version=0, numMetrics=0, sample1=None, sample2=None, metrics=metrics)

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        """The recording's GPM metrics (taken over ~150 ms) nearest before ``sample2``'s time:
        the recording has them every third sample only."""
        self._note("nvmlGpmMetricsGet")
        first, second = request.sample1.t, request.sample2.t
        if first is None or second is None or second - first <= GPM_MIN_INTERVAL_S:
            raise NVMLError(INVALID_ARGUMENT)  # what a too-short interval gets here
        i = bisect.bisect_right(self.times, second) - 1
        found = next((s["gpm"] for s in reversed(self.samples[: i + 1]) if s.get("gpm")), None)
        for m in request.metrics[: request.numMetrics]:
            value = None if found is None else found.get(self._gpm_by_id.get(m.metricId, ""))
            m.value = 0.0 if value is None else float(value)
            m.nvmlReturn = NOT_SUPPORTED if value is None else 0
        return request
