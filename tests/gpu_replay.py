"""A monitor trace of a shared H200 recording, replayed: the GPU plug-in's source asked through
the ``pynvml`` stand-in at its own interval, the CPU series computed from the recording's
/proc/stat lines and the workload's CPU ticks at the same times.

The CPU formulas are the CPU and process plug-ins' (``plugins/dynamic/cpu.py``,
``monitor/processes.py``), written out again here as an independent reference: a core's busy
share = delta(user + nice + system + irq + softirq) / delta(total - steal); the host's =
sum of busy / sum of total; the workload's cores = delta(utime + stime) / USER_HZ / delta t.

The workload: the recorder's only child (``work2.py``), which is also the only process the
recordings ever show on the GPU; its pid is that one (the ``cpu_only`` case never opens the
GPU, so no pid is needed there).
"""

from __future__ import annotations

import importlib

import numpy as np

from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.topology import nvml
from tests.nvml_standin import ReplayNVML

gpu_plugin = importlib.import_module("pilot_sys.plugins.dynamic.gpu")

BUSY = (0, 1, 2, 5, 6)  # user nice system irq softirq, of the fields after the "cpu" label
STEAL = 7
INTERVAL_S = gpu_plugin.GpuSource.interval_s


def workload_pids(standin: ReplayNVML) -> set[int]:
    """The recorder's child: the only process a recording shows on the GPU."""
    return {pid for row in standin.samples for pid in (row.get("gpu_pids") or [])}


def open_source(standin: ReplayNVML, workload: set[int] | None = None) -> gpu_plugin.GpuSource:
    pids = workload_pids(standin) if workload is None else workload
    with nvml.replaced(standin):
        library, why = nvml.load("/")
        assert library is not None, why
        return gpu_plugin.GpuSource(
            library,
            nvml.devices(library),
            lambda pid: pid in pids,
            clock=standin.clock,
            command=lambda pid: f"job{pid}",
        )


def replay_trace(
    case: str,
    *,
    gpm: bool = True,
    interval_s: float = INTERVAL_S,
    standin: ReplayNVML | None = None,
    workload: set[int] | None = None,
) -> MonitorTrace:
    standin = standin or ReplayNVML(case, gpm=gpm)
    source = open_source(standin, workload)
    t = np.arange(0.0, standin.times[-1] + 1e-9, interval_s)
    raw, rows = [], []
    for now in t:
        standin.now = float(now)
        raw.append(source.sample().values)
        rows.append(standin.row())
    metrics = source.derive(np.array(raw, dtype=np.float64), t, {})
    series: dict[str, list[float | None]] = {
        key: [None if not np.isfinite(v) else float(v) for v in values]
        for key, values in metrics.items()
    }
    series.update(_cpu_series(rows, t, standin.static))
    limits = {key: limit.model_dump(mode="json") for key, limit in source.limits.items()}
    limits["cpu:host/compute"] = {"value": float(standin.static["ncpu"]), "unit": "cores"}
    return MonitorTrace(
        rate_hz=1.0 / interval_s,
        start_time=0.0,
        timestamps=[float(x) for x in t],
        series=series,
        limits=limits,
        attrs=source.attrs(),
        command=["work2.py", case],
    )


def _cpu_series(rows: list[dict], t: np.ndarray, static: dict) -> dict[str, list[float | None]]:
    stat = np.array([[[float(x) for x in line[1:9]] for line in row["cpu"]] for row in rows])
    d = np.diff(stat, axis=0)  # samples-1 x (1 + cores) x 8
    busy = d[:, :, BUSY].sum(axis=2)
    total = d.sum(axis=2) - d[:, :, STEAL]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, busy / total, np.nan)
    host, cores = share[:, 0], share[:, 1:]
    n = cores.shape[1]
    ticks = np.array([row.get("child_cpu_ticks") or np.nan for row in rows], dtype=np.float64)
    own = np.diff(ticks) / float(static["clk_tck"]) / np.diff(t)

    def column(values: np.ndarray) -> list[float | None]:
        return [None] + [None if not np.isfinite(v) else float(v) for v in values]

    return {
        "cpu:host/busy": column(host),
        "cpu:host/busy_cores": column(host * n),
        "cpu:host/util_compute": column(host),
        "cpu:host/busiest_core": column(np.nanmax(cores, axis=1)),
        "process:workload/cpu_cores": column(own),
        **{f"core:{j}/util_compute": column(cores[:, j]) for j in range(n)},
    }
