"""Static plug-in: the CPU complex. Sockets, cores, SMT, NUMA nodes, frequency limits and the
cgroup CPU quota -> ``cpu:host`` with a ``compute`` limit in cores (the CPUs this process may
actually use, which is what a benchmark can saturate)."""

from __future__ import annotations

import os

from pilot_sys.topology.components import Component, ComponentKind, Discovery, Limit, LimitSource
from pilot_sys.topology.cpulist import parse_cpulist
from pilot_sys.topology.mountinfo import parse_mountinfo
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "cpu"

CPU = "/sys/devices/system/cpu"


def _cgroup_quota(root: SysRoot) -> tuple[float | None, str]:
    """The tightest CPU quota (in cores) on this process's cgroup path, v2 ``cpu.max`` or v1
    ``cpu.cfs_quota_us / cpu.cfs_period_us``, checking every ancestor (a parent's quota binds)."""
    membership = root.read("/proc/self/cgroup") or ""
    mounts = parse_mountinfo(root.read("/proc/self/mountinfo") or "")
    best: tuple[float | None, str] = (None, "")
    for line in membership.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, cgpath = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            bases = [m for m in mounts if m.fstype == "cgroup2"]
            files = ("cpu.max",)
        elif "cpu" in controllers.split(","):
            bases = [m for m in mounts if m.fstype == "cgroup" and "cpu" in m.super_options.split(",")]
            files = ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        for base in bases:
            rel = cgpath[len(base.root):] if cgpath.startswith(base.root) and base.root != "/" else cgpath
            parts = [p for p in rel.split("/") if p]
            for depth in range(len(parts), -1, -1):
                directory = "/".join([base.mountpoint.rstrip("/"), *parts[:depth]])
                cores = _read_quota(root, directory, files)
                if cores is not None and (best[0] is None or cores < best[0]):
                    best = (cores, f"{directory}/{files[0]}")
    return best


def _read_quota(root: SysRoot, directory: str, files: tuple[str, ...]) -> float | None:
    if files == ("cpu.max",):
        text = root.read(f"{directory}/cpu.max")
        if not text:
            return None
        quota, _, period = text.partition(" ")
        if quota == "max":
            return None
        return int(quota) / int(period or 100000)
    quota = root.read_int(f"{directory}/cpu.cfs_quota_us")
    period = root.read_int(f"{directory}/cpu.cfs_period_us")
    if quota is None or quota <= 0 or not period:
        return None
    return quota / period


def discover(root: SysRoot) -> Discovery:
    online = parse_cpulist(root.read(f"{CPU}/online"))
    if not online:
        online = sorted(int(n[3:]) for n in root.listdir(CPU) if n.startswith("cpu") and n[3:].isdigit())
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
        "smt": (root.read(f"{CPU}/smt/active") == "1") if root.exists(f"{CPU}/smt/active") else len(online) > len(cores),
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
    quota, where = _cgroup_quota(root)
    attrs["cgroup_quota_cores"] = quota
    if quota is not None and quota < usable:
        usable = quota
        details.append(f"cgroup quota {quota:g} cores ({where})")
    compute = Limit(value=usable, unit="cores", source=LimitSource.SYSFS, detail=", ".join(details)) if online else Limit(
        unit="cores", detail="no online CPU list readable"
    )
    warnings = []
    if quota is not None and quota < len(online):
        warnings.append(f"CPU limited by cgroup quota to {quota:g} of {len(online)} CPUs")
    host = Component(
        id="cpu:host",
        kind=ComponentKind.CPU,
        name="CPU complex",
        limits={"compute": compute},
        attrs=attrs,
        warnings=warnings,
    )
    return Discovery(plugin=NAME, components=[host])
