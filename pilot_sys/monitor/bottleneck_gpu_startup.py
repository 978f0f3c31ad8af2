"""A GPU workload's start-up, judged apart: once per launch of the workload.

``monitor`` launches the workload once. A session launches it once per round, and the verdict
over the included rounds reads their traces end to end (``session.summary.combined_trace``):
each round's process spends its first seconds in imports, the GPU context and allocations
before its first kernel, one core busy and the GPU idle. Judging apart only the first of those
stretches would leave every later round's start-up in the judged part, and a GPU-bound session
of short rounds would read as limited by one core. So the trace says where each launch begins
(``LAUNCHES`` in its attrs; a trace without it is one launch), and each launch's stretch up to
the first sample in which the workload is in the GPU's process list and the GPU ran a kernel
(``busy``, utilization.gpu, above 0) is judged apart. A launch that never ran a kernel, or ran
one from its first sample, has no start-up (it is judged whole).

The other end of a launch is its shut-down: after its last kernel the process frees device
memory, destroys the GPU context and exits, one core busy again (0.3-0.8 s on the H200 runs). In
a 10 s run that is within the share the verdict tolerates; in a session of 3 s rounds it is
15 % of what is judged, and every round read as limited by one core. So the stretch after a
launch's last kernel is judged apart too, but only when it is no longer than that launch's own
start-up: context teardown costs less than context creation, and a workload that computes on
the CPU for longer after its last kernel (a post-processing phase) keeps that phase judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pilot_sys.monitor.bottleneck_accelerator import _workload_on, accelerators
from pilot_sys.monitor.bottleneck_model import _pct, _series
from pilot_sys.monitor.trace import MonitorTrace

#: the trace's attrs key of the samples at which a launch of the workload begins
LAUNCHES = "launches"


def launch_attrs(first_samples: list[int]) -> dict[str, list[int]]:
    """The attrs entry that marks where each launch's samples begin (``LAUNCHES``)."""
    return {"first_samples": [int(i) for i in first_samples]}


@dataclass
class Startup:
    """The samples judged apart, and per launch that had a start-up: (first time, time of its
    first kernel, the GPU it ran on)."""

    apart: np.ndarray
    stretches: list[tuple[float, float, str]] = field(default_factory=list)
    launches: int = 1
    shutdowns: list[float] = field(default_factory=list)  # seconds after each last kernel


def _launch_bounds(trace: MonitorTrace, size: int) -> list[int]:
    info = trace.attrs.get(LAUNCHES)
    firsts = info.get("first_samples", []) if isinstance(info, dict) else []
    starts = sorted({0, *(int(i) for i in firsts if 0 < int(i) < size)})
    return [*starts, size]


def startup(trace: MonitorTrace) -> Startup | None:
    """The start-ups of the workload's launches on its GPUs (None: no launch had one)."""
    t = np.asarray(trace.timestamps, dtype=np.float64)
    kernels = []  # per GPU: samples in which the workload was on it and it ran a kernel
    for gpu in accelerators(trace):
        kernel = np.nan_to_num(_series(trace, f"{gpu}/busy"), nan=0.0) > 0
        if kernel.size == t.size:
            kernels.append((gpu, kernel & _workload_on(trace, gpu, t.size)))
    if not kernels:
        return None
    bounds = _launch_bounds(trace, t.size)
    apart = np.zeros(t.size, dtype=bool)
    stretches: list[tuple[float, float, str]] = []
    shutdowns: list[float] = []
    for begin, end in zip(bounds, bounds[1:], strict=False):
        found: tuple[int, str] | None = None
        last = -1  # the launch's last sample with a kernel of the workload, on any GPU
        for gpu, on in kernels:
            hits = np.flatnonzero(on[begin:end])
            if hits.size:
                last = max(last, int(hits[-1]) + begin)
            if hits.size and hits[0] > 0 and (found is None or hits[0] + begin < found[0]):
                found = (int(hits[0]) + begin, gpu)
        if found is None:
            continue
        apart[begin : found[0] + 1] = True  # up to and with the first kernel's sample
        stretches.append((float(t[begin]), float(t[found[0]]), found[1]))
        tail = float(t[end - 1] - t[last])
        if last < end - 1 and tail <= t[found[0]] - t[begin]:  # no longer than its start-up
            apart[last + 1 : end] = True
            shutdowns.append(tail)
    if not stretches:
        return None
    return Startup(apart=apart, stretches=stretches, launches=len(bounds) - 1, shutdowns=shutdowns)


def startup_note(trace: MonitorTrace, found: Startup) -> str:
    """The start-up in words: its length (per launch when there were several), the GPU, the
    busiest core's mean over it, and how much of the run the verdict is for."""
    t = np.asarray(trace.timestamps, dtype=np.float64)
    core = _series(trace, "cpu:host/busiest_core")
    # the start-ups' own samples, less each launch's first (a rate there covers no interval)
    inside = np.zeros(t.size, dtype=bool)
    for begin, end, _ in found.stretches:
        inside |= (t > begin) & (t <= end)
    busy = (
        f"; the busiest core averaged {_pct(float(np.nanmean(core[inside])))}"
        if core.size == t.size and inside.any() and np.isfinite(core[inside]).any()
        else ""
    )
    gpus = ", ".join(dict.fromkeys(gpu for _, _, gpu in found.stretches))
    lengths = [end - begin for begin, end, _ in found.stretches]
    judged = float(np.diff(t)[~found.apart[1:]].sum()) if t.size > 1 else 0.0
    ends = _shutdown_words(found)
    if found.launches == 1:
        return (
            f"start-up judged apart: the first {lengths[0]:.1f} s, before the workload's first "
            f"kernel on {gpus} (imports, GPU context, allocations){busy}{ends}; the verdict is "
            f"for the {judged:.1f} s between them"
        )
    return (
        f"start-up judged apart in {len(lengths)} of {found.launches} rounds: the first "
        f"{_span(lengths)} s of each ({sum(lengths):.1f} s in all), before "
        f"that round's first kernel on {gpus} (imports, GPU context, allocations){busy}{ends}; "
        f"the verdict is for the {judged:.1f} s of rounds between them"
    )


def _shutdown_words(found: Startup) -> str:
    if not found.shutdowns:
        return ""
    span = (
        f"the last {found.shutdowns[0]:.1f} s"
        if len(found.shutdowns) == 1
        else f"the last {_span(found.shutdowns)} s of {len(found.shutdowns)} rounds"
    )
    return (
        f"; and the shut-down, {span} after the last kernel (freeing memory, closing the GPU "
        "context, exiting; no longer than the start-up)"
    )


def _span(seconds: list[float]) -> str:
    """``3.3-3.9``, or one figure where both ends round alike."""
    low, high = f"{min(seconds):.1f}", f"{max(seconds):.1f}"
    return low if low == high else f"{low}-{high}"
