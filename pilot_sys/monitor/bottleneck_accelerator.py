"""The accelerator's rules of the bottleneck verdict: GPUs (``accelerator:<bus id>``, sampled by
the GPU plug-in) on the data path.

* **Waiting is not CPU-bound.** The CUDA runtime spin-waits in ``synchronize`` while the GPU
  works, so a workload driving a saturated GPU keeps one core at 100 %. In every interval in
  which a GPU the workload has a process on is saturated (any of its judged utilizations above
  the threshold; to within one of the GPU source's intervals, see ``waiting``), the single-core
  signal is not the workload's limit and counts as 0; the
  verdict's notes say how long the core waited, and for which GPU.
* **Which part governed.** A GPU's saturation signals are its PCIe link per direction
  (``util_send`` device to host, ``util_receive`` host to device, against the rate the link
  ran at), its SM activity (``util_compute``), tensor activity (``util_tensor``) and DRAM
  bandwidth (``util_memory_bandwidth``), GPM's shares of the device's own peak. SMs stay
  active while their warps wait on memory or feed the tensor cores, so SM activity is reported,
  not judged, where memory bandwidth or tensor activity is saturated: those name the part. A
  GPU without GPM is judged on ``utilization.gpu`` (the time a kernel ran: one small kernel at
  a time reads 100 %), and the evidence says which signal it was.
* **Platform caps.** A saturated GPU whose SM clock was held by its power or thermal cap
  (clock-event reasons) longer than the tolerated share gets a warning with the clocks seen,
  as a CPU-bound result below the nominal CPU frequency does.
* **Starved.** A single-core bottleneck while the workload's GPU idled: the evidence adds that
  the CPU starves the GPU.
* **Start-up, judged apart.** A workload that opens a GPU spends its first seconds in imports
  and CUDA context creation: one core busy, the GPU idle. That stretch, up to the first
  sample in which the workload is in the GPU's process list and the GPU ran a kernel
  (utilization.gpu above 0), is CPU-bound by nature
  and would be a hidden "single core" bottleneck of every GPU run that lasts under ten times
  its start-up. It is judged apart: named in the notes with its length and its CPU use, and
  left out of the shares the verdict compares, in every launch of the workload (each round of a
  session: ``bottleneck_gpu_startup``). A workload that never opens a GPU has no such phase
  (the whole run is judged).
* **A remote host's GPUs** (``accelerator:NAME/<bus id>``, from dcgm-exporter through
  Prometheus: ``monitor.remote.dcgm``) are judged by the same signals. dcgm-exporter lists no
  processes, so the two rules above that need the workload's process on the GPU read, for such
  a host: its busiest core (``cpu:NAME``, single core) counts as 0 while one of *its* GPUs is
  saturated (a core spin-waiting on a GPU is not the limit, the GPU is; a single-threaded job
  running beside the GPU's at that time is not told apart, though the host's CPU total is still
  judged); the host's CPU and GPU readings come from two exporters scraped at different
  moments, so "while" means within one scrape interval of it. The stretch up to the end of the
  scrape interval in which its GPUs first ran a kernel (when they were idle before) is its
  start-up, left out of the judgement of that host's components only (the other hosts' and
  this machine's are judged over the whole run).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot_sys import units
from pilot_sys.monitor.bottleneck_model import ComponentStats, _pct, _series
from pilot_sys.monitor.trace import MonitorTrace

ACCELERATOR = "accelerator:"
GPU_SIGNALS = ("compute", "tensor", "memory_bandwidth", "send", "receive")
COVERS_COMPUTE = ("memory_bandwidth", "tensor")  # SMs are active while these work
PART = {
    "compute": "its SMs (compute)",
    "tensor": "its tensor cores",
    "memory_bandwidth": "its memory bandwidth",
    "send": "its PCIe link, device to host",
    "receive": "its PCIe link, host to device",
}
STARVED_BELOW = 0.1  # a GPU this little active is idle for the verdict's purpose


def _remote_host(component: str) -> str | None:
    """``NAME`` of a remote host's component (``cpu:NAME``, ``accelerator:NAME/...``); None
    for this machine's and for links between hosts."""
    rest = component.split(":", 1)[1] if ":" in component else ""
    host = rest.split("/", 1)[0]
    return None if not host or host == "host" or "~" in host else host


def remote_gpus(trace: MonitorTrace, component: str) -> list[str]:
    """The GPUs of the remote host ``component`` belongs to (none for this machine's)."""
    host = _remote_host(component)
    if host is None:
        return []
    return [g for g in accelerators(trace) if g.startswith(f"{ACCELERATOR}{host}/")]


def _remote_startup(trace: MonitorTrace, gpus: list[str], size: int) -> int | None:
    """The index of the first scrape in which one of ``gpus`` ran a kernel, when scrapes in
    which none did (known, 0) came before it; None otherwise."""
    first: int | None = None
    idle_before = False
    for gpu in gpus:
        busy = _series(trace, f"{gpu}/busy")
        if busy.size != size:
            continue
        ran = np.flatnonzero(np.nan_to_num(busy, nan=0.0) > 0)
        if ran.size and (first is None or ran[0] < first):
            first = int(ran[0])
            idle_before = bool((busy[: ran[0]] == 0).any())
    return first if first is not None and first > 0 and idle_before else None


def remote_judged(
    trace: MonitorTrace, component: str, direction: str, values: np.ndarray, threshold: float
) -> np.ndarray:
    """A signal of a remote host with GPUs judged as the module docstring says: its start-up
    left out (NaN); its busiest core 0 while one of its GPUs was saturated."""
    gpus = remote_gpus(trace, component)
    out = np.asarray(values, dtype=np.float64)
    if not gpus:
        return out
    if direction == "single core":
        hot = _remote_saturated(trace, gpus, out.size, threshold)
        out = np.where(hot & np.isfinite(out), 0.0, out)
    start = _remote_startup(trace, gpus, out.size)
    t = np.asarray(trace.timestamps, dtype=np.float64)
    if start is not None and t.size == out.size:
        # up to the end of the scrape interval in which the first kernel ran: on a sampler's
        # grid that scrape's value covers the rows of its interval, from the first one on
        end = t[start] + _scrape_interval(trace, gpus[0]) * (1 - 1e-6)
        out = np.where(t < end, np.nan, out)
    return out


def _scrape_interval(trace: MonitorTrace, gpu: str) -> float:
    """How far apart a remote host's readings are: its source's interval (the engine's
    scrape interval), or the trace's own spacing where that is wider (a trace of scrapes)."""
    host = gpu.split(":", 1)[1].split("/", 1)[0]
    source = trace.sources.get(f"remote:{host}")
    steps = np.diff(np.asarray(trace.timestamps, dtype=np.float64))
    return max(
        float(source.interval_s) if source is not None else 0.0,
        float(np.median(steps)) if steps.size else 0.0,
    )


def _remote_saturated(
    trace: MonitorTrace, gpus: list[str], size: int, threshold: float
) -> np.ndarray:
    """Samples of a remote host's CPU within one scrape interval of a saturated GPU of the
    host: node_exporter and dcgm-exporter are two targets that the engine scrapes at different
    moments, so a CPU reading and the GPU reading taken with it are up to one scrape interval
    apart (and DCGM averages over its own period): the GPU's state during the CPU's interval
    is known to within one scrape on either side."""
    hot = np.zeros(size, dtype=bool)
    for gpu in gpus:
        hot |= _saturated(trace, gpu, size, threshold)
    t = np.asarray(trace.timestamps, dtype=np.float64)
    if t.size != size or not hot.any():
        return hot
    return _within(t, hot, _scrape_interval(trace, gpus[0]))


def _within(t: np.ndarray, hot: np.ndarray, seconds: float) -> np.ndarray:
    """Samples within ``seconds`` of a ``hot`` one, in time (``hot`` itself where 0)."""
    if seconds <= 0 or not hot.any():
        return hot
    hot_times = t[hot]
    # the nearest hot sample before and after each sample, in time
    after = np.searchsorted(hot_times, t, side="left")
    before = after - 1
    gap_after = np.where(
        after < hot_times.size, hot_times[np.minimum(after, hot_times.size - 1)] - t, np.inf
    )
    gap_before = np.where(before >= 0, t - hot_times[np.maximum(before, 0)], np.inf)
    return np.minimum(gap_after, gap_before) <= seconds * (1 + 1e-6)


def remote_notes(
    trace: MonitorTrace, weights: np.ndarray, threshold: float, max_hot_fraction: float
) -> list[str]:
    """Per remote host with GPUs: its start-up judged apart, and its busy core that waited."""
    out: list[str] = []
    t = np.asarray(trace.timestamps, dtype=np.float64)
    total = float(weights.sum())
    cpus = sorted({f"cpu:{g.split(':', 1)[1].split('/', 1)[0]}" for g in accelerators(trace)})
    for cpu in cpus:
        gpus = remote_gpus(trace, cpu)
        if not gpus or total <= 0:
            continue
        start = _remote_startup(trace, gpus, t.size)
        if start is not None:
            end = min(t[start] + _scrape_interval(trace, gpus[0]), t[-1])
            out.append(
                f"{cpu[4:]}: start-up judged apart for its components: the first "
                f"{end - t[0]:.1f} s, up to the scrape in which its GPUs ran their first "
                "kernel (dcgm-exporter lists no processes: the host's first kernel marks the end)"
            )
        core = _series(trace, f"{cpu}/busiest_core")
        if core.size != t.size:
            continue
        hot = _remote_saturated(trace, gpus, t.size, threshold)
        busy = hot & (np.nan_to_num(core, nan=0.0) > threshold)
        share = float(weights[busy].sum()) / total
        if share > max_hot_fraction:
            out.append(
                f"{cpu} (single core): its busiest core was busy while its GPU was saturated "
                f"({_pct(share)} of the run): a core spin-waiting on a GPU is not the limit, the "
                "GPU is (dcgm-exporter lists no processes: the core is taken to drive it)"
            )
    return out


def remote_cpu_evidence(
    s: ComponentStats, trace: MonitorTrace, numbers: str, threshold: float
) -> str | None:
    """A remote GPU host's busy core: whether its GPUs idled meanwhile (starved)."""
    gpus = remote_gpus(trace, s.component)
    if s.direction != "single core" or not gpus:
        return None
    text = f"the busiest core was {numbers}"
    core = _series(trace, f"{s.component}/busiest_core")
    hot = np.nan_to_num(core, nan=0.0) > threshold
    for gpu in gpus:
        activity = _masked_mean(trace, f"{gpu}/util_compute", hot)
        if activity is not None and activity < STARVED_BELOW:
            signal = trace.attrs.get(gpu, {}).get("compute_signal", "SM activity")
            text += (
                f"; its GPU {gpu} was idle meanwhile ({signal} mean {_pct(activity)}): "
                "the CPU starves it"
            )
            break
    return text


def accelerators(trace: MonitorTrace) -> list[str]:
    return sorted(
        {k.rsplit("/", 1)[0] for k in trace.series if k.startswith(ACCELERATOR)},
    )


def driven(trace: MonitorTrace) -> list[str]:
    """The GPUs the workload had a process on (NVML's process list, at run time): on its
    data path whatever the CUT."""
    return [
        gpu
        for gpu in accelerators(trace)
        if trace.attrs.get(gpu, {}).get("workload_on_gpu")
        or bool(np.nan_to_num(_series(trace, f"{gpu}/workload_processes")).any())
    ]


def _workload_on(trace: MonitorTrace, gpu: str, size: int) -> np.ndarray:
    own = _series(trace, f"{gpu}/workload_processes")
    return (np.nan_to_num(own, nan=0.0) > 0) if own.size == size else np.zeros(size, bool)


def _saturated(trace: MonitorTrace, gpu: str, size: int, threshold: float) -> np.ndarray:
    hot = np.zeros(size, dtype=bool)
    for signal in GPU_SIGNALS:
        values = _series(trace, f"{gpu}/util_{signal}")
        if values.size == size:
            hot |= np.nan_to_num(values, nan=0.0) > threshold
    return hot


#: the trace's source name of the local GPU plug-in (plugins/dynamic/gpu.py)
GPU_SOURCE = "gpu"


def waiting(trace: MonitorTrace, size: int, threshold: float) -> np.ndarray:
    """Samples in which a GPU the workload has a process on was saturated, to within one of
    the GPU source's intervals: its readings come every ``interval_s`` (0.2 s) and GPM's cover
    the ~0.15 s before each, so a GPU that starts or stops its work inside an interval reads
    part-saturated there while the core spin-waits all of it (on the H200, the samples on
    either side of a matrix-product stretch read 59-76 % of the tensor cores' peak)."""
    out = np.zeros(size, dtype=bool)
    t = np.asarray(trace.timestamps, dtype=np.float64)
    source = trace.sources.get(GPU_SOURCE)
    interval = float(source.interval_s) if source is not None else 0.0
    for gpu in accelerators(trace):
        hot = _saturated(trace, gpu, size, threshold)
        if t.size == size:
            hot = _within(t, hot, interval)
        out |= _workload_on(trace, gpu, size) & hot
    return out


def judged_single_core(trace: MonitorTrace, values: np.ndarray, threshold: float) -> np.ndarray:
    """The single-core signal with the intervals in which the workload waited on a saturated
    GPU counted as 0: its busy core spin-waits, the GPU is the limit."""
    wait = waiting(trace, values.size, threshold)
    return np.where(wait & np.isfinite(values), 0.0, values)


def settle(trace: MonitorTrace, stats: list[ComponentStats], max_hot_fraction: float) -> None:
    """SM activity is reported, not judged, where the GPU's memory bandwidth or tensor cores
    were saturated (the SMs were busy feeding them), and so is ``utilization.gpu`` (a GPU
    without GPM) where its PCIe link was: it counts the time the GPU was busy moving data."""
    by = {(s.component, s.direction): s for s in stats if s.component.startswith(ACCELERATOR)}
    for (gpu, direction), s in by.items():
        if direction != "compute" or not s.judged:
            continue
        covering = COVERS_COMPUTE
        if not trace.attrs.get(gpu, {}).get("gpm", True):
            covering = (*COVERS_COMPUTE, "receive", "send")
        for part in covering:
            other = by.get((gpu, part))
            if other is not None and (other.time_above_fraction or 0.0) > max_hot_fraction:
                s.judged = False
                s.note = f"SMs active while {PART[part][4:]} worked: {PART[part]} governed"
                break


def _masked_mean(trace: MonitorTrace, key: str, mask: np.ndarray) -> float | None:
    values = _series(trace, key)
    if values.size != mask.size:
        return None
    ok = mask & np.isfinite(values)
    return float(values[ok].mean()) if ok.any() else None


def evidence(s: ComponentStats, trace: MonitorTrace, numbers: str, threshold: float) -> str | None:
    """What governed inside a saturated GPU, with the signal it was judged on."""
    if not s.component.startswith(ACCELERATOR):
        return remote_cpu_evidence(s, trace, numbers, threshold)
    gpu, attrs = s.component, trace.attrs.get(s.component, {})
    size = len(trace.timestamps)
    hot = np.nan_to_num(_series(trace, s.metric), nan=0.0) > threshold
    if hot.size != size:
        hot = np.ones(size, dtype=bool)
    if s.direction in ("send", "receive"):
        rate = _masked_mean(trace, f"{gpu}/{s.direction}_bytes_per_s", hot)
        link = _masked_mean(trace, f"{gpu}/link_bytes_per_s", hot)
        text = f"{PART[s.direction][4:]} {numbers}"
        if rate is not None and link is not None:
            text += (
                f": {units.quantity(rate, 'B/s')} of the link's {units.quantity(link, 'B/s')} "
                f"while saturated ({attrs.get('pcie_signal', 'NVML')})"
            )
    elif s.direction == "compute":
        signal = attrs.get("compute_signal", "SM activity")
        text = f"SM activity {numbers}, judged on {signal}"
        occupancy = _masked_mean(trace, f"{gpu}/sm_occupancy", hot)
        if occupancy is not None:
            text += f"; SM occupancy {_pct(occupancy)}"
    elif s.direction == "tensor":
        text = f"tensor cores {numbers} (GPM tensor activity)"
        sm = _masked_mean(trace, f"{gpu}/util_compute", hot)
        if sm is not None:
            text += f"; SM activity {_pct(sm)}"
    elif s.direction == "memory_bandwidth":
        text = f"DRAM bandwidth {numbers} (GPM DRAM_BW_UTIL)"
    else:
        return None
    clock = _masked_mean(trace, f"{gpu}/sm_clock_hz", hot)
    capped = _masked_mean(trace, f"{gpu}/power_capped", hot)
    ceiling = attrs.get("max_sm_clock_hz")
    if clock is not None and ceiling and capped:
        text += (
            f"; SM clock {clock / 1e6:.0f} of {ceiling / 1e6:.0f} MHz, held by the software "
            f"power cap in {_pct(capped)} of those samples"
        )
    others = _masked_mean(trace, f"{gpu}/other_processes", hot)
    if others:
        named = ", ".join(
            f"pid {p['pid']} ({p['command']})" for p in attrs.get("other_processes", [])[:3]
        )
        text += f"; another process shared the GPU: {named or 'not the workload'}"
    return text


def starved_suffix(trace: MonitorTrace, weights: np.ndarray) -> str:
    """For a single-core bottleneck: the workload's GPU idled meanwhile."""
    for gpu in accelerators(trace):
        on = _workload_on(trace, gpu, weights.size) & (weights > 0)
        activity = _masked_mean(trace, f"{gpu}/util_compute", on)
        if activity is not None and activity < STARVED_BELOW:
            signal = trace.attrs.get(gpu, {}).get("compute_signal", "SM activity")
            return (
                f"; the workload's GPU {gpu} was idle meanwhile ({signal} mean "
                f"{_pct(activity)}): the CPU starves it"
            )
    return ""


def notes(
    trace: MonitorTrace, weights: np.ndarray, threshold: float, max_hot_fraction: float
) -> list[str]:
    """Waiting cores, power or thermal caps holding a saturated GPU's clock, a link trained
    below its maximum under load."""
    out: list[str] = []
    size = weights.size
    total = float(weights.sum())
    if total <= 0:
        return out

    def share(mask: np.ndarray) -> float:
        return float(weights[mask].sum()) / total

    for gpu in accelerators(trace):
        attrs = trace.attrs.get(gpu, {})
        hot = _saturated(trace, gpu, size, threshold)
        wait = hot & _workload_on(trace, gpu, size)
        if share(wait) > max_hot_fraction:
            out.append(
                f"cpu:host (single core): the workload's busy core waited for {gpu} while it was "
                f"saturated ({_pct(share(wait))} of the run): a core spin-waiting on a GPU is "
                "not the limit, the GPU is"
            )
        for key, cap in (("power_capped", "software power cap"), ("thermal_capped", "thermal")):
            flag = _series(trace, f"{gpu}/{key}")
            if flag.size != size:
                continue
            held = hot & (np.nan_to_num(flag, nan=0.0) > 0)
            if share(held) <= max_hot_fraction:
                continue
            clock = _masked_mean(trace, f"{gpu}/sm_clock_hz", held)
            power = _masked_mean(trace, f"{gpu}/power_w", held)
            ceiling, limit = attrs.get("max_sm_clock_hz"), attrs.get("power_limit_w")
            text = (
                f"warning: {gpu} ran saturated with its SM clock held by its {cap} for "
                f"{_pct(share(held))} of the run"
            )
            if clock is not None and ceiling:
                text += f": {clock / 1e6:.0f} MHz mean of its {ceiling / 1e6:.0f} MHz maximum"
            if power is not None and limit:
                text += f", drawing {power:.0f} W of its {limit:.0f} W limit"
            out.append(text + " (a platform limit: the result would be higher without it)")
        placement = _off_node(trace, gpu, weights)
        if placement is not None and placement[0] > 0.5:
            out.append(
                f"{gpu}: while the workload used it, its busiest core was outside the GPU's "
                f"local CPUs ({placement[1]}) {_pct(placement[0])} of the time: host-side "
                "copies cross the NUMA interconnect (pin the workload to the GPU's CPUs)"
            )
        below = _series(trace, f"{gpu}/link_below_max")
        traffic = np.zeros(size, dtype=bool)
        for direction in ("send", "receive"):
            util = _series(trace, f"{gpu}/util_{direction}")
            if util.size == size:
                traffic |= np.nan_to_num(util, nan=0.0) > 0.1
        if below.size == size and share(traffic & (np.nan_to_num(below) > 0)) > max_hot_fraction:
            out.append(
                f"{gpu}: its PCIe link ran below its maximum generation or width under load "
                f"({_pct(share(traffic & (below > 0)))} of the run): it trained down, not idle"
            )
    return out + remote_notes(trace, weights, threshold, max_hot_fraction)


def _off_node(trace: MonitorTrace, gpu: str, weights: np.ndarray) -> tuple[float, str] | None:
    """The share of the time the workload had a process on ``gpu`` in which the busiest core
    was not one of the GPU's local CPUs, and those CPUs in words; None where the GPU's local
    CPUs, or per-core series, are unknown, or the GPU is local to every CPU."""
    attrs = trace.attrs.get(gpu, {})
    local = set(attrs.get("local_cpus") or [])
    keys = {
        int(k.split(":", 1)[1].split("/", 1)[0]): k
        for k in trace.series
        if k.startswith("core:") and k.endswith("/util_compute")
    }
    if not local or not keys or set(keys) <= local:
        return None
    cores = sorted(keys)
    stacked = np.vstack([_series(trace, keys[c]) for c in cores])
    if stacked.shape[1] != weights.size:
        return None
    known = np.isfinite(stacked).any(axis=0)
    busiest = np.array(cores)[np.argmax(np.nan_to_num(stacked, nan=-1.0), axis=0)]
    mask = known & (weights > 0) & _workload_on(trace, gpu, weights.size)
    total = float(weights[mask].sum())
    if total <= 0:
        return None
    outside = mask & ~np.isin(busiest, sorted(local))
    node = attrs.get("numa_node")
    where = f"NUMA node {node}, " if node is not None else ""
    lo, hi = min(local), max(local)
    cpus = f"CPUs {lo}-{hi}" if len(local) == hi - lo + 1 else f"CPUs {sorted(local)}"
    return float(weights[outside].sum()) / total, where + cpus


#: the signals ``summary`` reports per GPU: (key in the summary, metric)
SUMMARY = (
    ("sm_activity", "util_compute"),
    ("tensor_activity", "util_tensor"),
    ("dram_bandwidth", "util_memory_bandwidth"),
    ("pcie_host_to_device", "util_receive"),
    ("pcie_device_to_host", "util_send"),
    ("kernel_time", "busy"),
    ("power_w", "power_w"),
    ("sm_clock_hz", "sm_clock_hz"),
)


def summary(trace: MonitorTrace, weights: np.ndarray, threshold: float) -> dict[str, Any]:
    """Per GPU, over the judged part of the run (weights > 0): the time-weighted mean of each
    signal, the share of the run it was saturated, held by its power cap, and which signals
    were used; for result.json and the report's GPU section."""
    out: dict[str, Any] = {}
    total = float(weights.sum())
    for gpu in accelerators(trace):
        attrs = trace.attrs.get(gpu, {})
        entry: dict[str, Any] = {
            "model": attrs.get("model"),
            "compute_signal": attrs.get("compute_signal"),
            "pcie_signal": attrs.get("pcie_signal"),
            "workload_on_gpu": gpu in driven(trace),
            "other_processes": attrs.get("other_processes", []),
        }
        for name, metric in SUMMARY:
            values = _series(trace, f"{gpu}/{metric}")
            ok = (
                np.isfinite(values) & (weights > 0)
                if values.size == weights.size
                else np.zeros(0, bool)
            )
            entry[name] = float(np.average(values[ok], weights=weights[ok])) if ok.any() else None
        if total > 0:
            hot = _saturated(trace, gpu, weights.size, threshold)
            entry["saturated_share"] = float(weights[hot].sum()) / total
            capped = _series(trace, f"{gpu}/power_capped")
            if capped.size == weights.size and np.isfinite(capped).any():
                held = np.nan_to_num(capped, nan=0.0) > 0
                entry["power_capped_share"] = float(weights[held].sum()) / total
        out[gpu] = entry
    return out
