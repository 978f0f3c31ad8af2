"""The loopback rule of the bottleneck verdict: a transfer to a local address has the host's CPU
and memory as its data path.

``iperf3 -c 127.0.0.1`` moves no byte over a wire: the kernel copies it from one socket buffer
to another, on the CPUs, through memory. The loopback interface has no throughput of its own
(its limit is "limited by memory and CPU"), so when it is the component under test, the CPU and
memory *are* what is measured: they are judged as the CUT, not as hidden bottlenecks that would
exclude every round. The verdict says so (``loopback_note``), with the CPU's load and who caused
it, so that nobody reads a loopback number as a NIC's.

A kernel limit on the workload (a cgroup CPU quota, a cpuset) is still a limiter of its own and
judged as one: it is not the host's CPU.
"""

from __future__ import annotations

from typing import Any

from pilot_sys.monitor.bottleneck_cpu import _workload_cores
from pilot_sys.monitor.bottleneck_model import ComponentStats, _mean_of, _pct
from pilot_sys.monitor.trace import MonitorTrace

#: the components a loopback transfer's data passes through, besides the loopback interface
LOOPBACK_PATH = frozenset({"cpu:host", "memory:host"})
LOOPBACK_TYPE = "loopback"  # a NIC's ``type`` attribute in the component graph
#: how every output words a loopback CUT beside its name
LOOPBACK_WORDS = "loopback: the number measures this host's CPU and memory, not a network"


def is_loopback(cut: str | None, trace: MonitorTrace, graph: Any = None) -> bool:
    """Whether the CUT is a loopback interface: from the graph's NIC type, else from what the
    trace recorded (the NIC probe's ``loopback`` attribute, or the graph's words for its limit,
    "loopback: limited by memory and CPU")."""
    if not cut or not cut.startswith("nic:"):
        return False
    if graph is not None and cut in graph:
        return graph.component(cut).attrs.get("type") == LOOPBACK_TYPE
    if (trace.attrs.get(cut) or {}).get("loopback"):
        return True
    for direction in ("send", "receive"):
        detail = str((trace.limits.get(f"{cut}/{direction}") or {}).get("detail") or "")
        if detail.startswith(LOOPBACK_TYPE):
            return True
    return False


def covered_by_loopback(s: ComponentStats) -> bool:
    """A component a loopback CUT's data passes through: the host's CPU (its cores and busiest
    core too) and memory."""
    return s.component in LOOPBACK_PATH or s.component.startswith("core:")


def loopback_note(cut: str, stats: list[ComponentStats], trace: MonitorTrace) -> str:
    """What a loopback number measures, with the CPU's load and who caused it."""
    text = (
        f"the CUT {cut} is loopback: its data moves through this host's CPU and memory, so the "
        "number measures them, not a network"
    )
    cpu = next((s for s in stats if s.component == "cpu:host" and s.direction == "compute"), None)
    if cpu is not None and cpu.mean is not None:
        text += (
            f" (CPU busy mean {_pct(cpu.mean)}, above the threshold "
            f"{_pct(cpu.time_above_fraction)} of the run"
        )
        own = _workload_cores(trace)
        busy = _mean_of(trace, "cpu:host/busy_cores")
        if own is not None and busy is not None:
            others = max(busy - own, 0.0)
            text += (
                f"; the workload's processes, local servers included, used {own:.2f} cores, "
                f"other processes {others:.2f}"
            )
            if others > own:
                text += ": the number is what the other processes left to the workload"
        text += ")"
    return text
