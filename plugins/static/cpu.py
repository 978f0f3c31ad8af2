"""Static plug-in: the CPU complex. Sockets, cores, SMT, NUMA nodes and frequency limits ->
``cpu:host`` with a ``compute`` limit in cores: the online CPUs this process's affinity lets it
use, its physical limit. A cgroup's CPU quota or cpuset is not folded in: it is a limiter of
its own (``cgroup:<path>/cpu``, the cgroup plug-in), judged on the cgroup's own counters, and
``topology.effective.applied_limit`` says which of the two applies."""

from __future__ import annotations

import os

from pilot_sys.topology.components import Component, ComponentKind, Discovery, Limit, LimitSource
from pilot_sys.topology.cpulist import parse_cpulist
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "cpu"

CPU = "/sys/devices/system/cpu"


def discover(root: SysRoot) -> Discovery:
    online = parse_cpulist(root.read(f"{CPU}/online"))
    if not online:
        online = sorted(
            int(n[3:]) for n in root.listdir(CPU) if n.startswith("cpu") and n[3:].isdigit()
        )
    packages: set[str] = set()
    cores: set[tuple[str, str]] = set()
    max_khz: list[int] = []
    min_khz: list[int] = []
    for cpu in online:
        topo = f"{CPU}/cpu{cpu}/topology"
        package = root.read(f"{topo}/physical_package_id") or "0"
        packages.add(package)
        cores.add((package, root.read(f"{topo}/core_id") or str(cpu)))
        for key, bucket in (("cpuinfo_max_freq", max_khz), ("cpuinfo_min_freq", min_khz)):
            value = root.read_int(f"{CPU}/cpu{cpu}/cpufreq/{key}")
            if value:
                bucket.append(value)
    nodes = {
        name: parse_cpulist(root.read(f"/sys/devices/system/node/{name}/cpulist"))
        for name in root.listdir("/sys/devices/system/node")
        if name.startswith("node") and name[4:].isdigit()
    }
    attrs: dict[str, object] = {
        "online_cpus": len(online),
        "sockets": len(packages),
        "cores": len(cores),
        "threads_per_core": (len(online) // len(cores)) if cores else None,
        "smt": (root.read(f"{CPU}/smt/active") == "1")
        if root.exists(f"{CPU}/smt/active")
        else len(online) > len(cores),
        "numa_nodes": {name: cpus for name, cpus in sorted(nodes.items())},
        "max_freq_hz": max(max_khz) * 1000 if max_khz else None,
        "min_freq_hz": min(min_khz) * 1000 if min_khz else None,
    }
    usable = float(len(online))
    details = [f"{len(online)} online CPUs"]
    if root.live:
        allowed = len(os.sched_getaffinity(0))
        attrs["affinity_cpus"] = allowed
        if allowed < usable:
            usable = float(allowed)
            details.append(f"affinity allows {allowed}")
    compute = (
        Limit(value=usable, unit="cores", source=LimitSource.SYSFS, detail=", ".join(details))
        if online
        else Limit(unit="cores", detail="no online CPU list readable")
    )
    host = Component(
        id="cpu:host",
        kind=ComponentKind.CPU,
        name="CPU complex",
        limits={"compute": compute},
        attrs=attrs,
    )
    return Discovery(plugin=NAME, components=[host])
