"""Kernel-imposed limits as components of the graph: cgroup limits of a set of processes, NIC
traffic shaping and CPU frequency caps, each a limiter joined by a ``limits`` link to what it
limits (``topology/effective.py``).

- ``cgroup:<path>/cpu`` (CPU quota and cpuset, ``compute`` in cores) limits ``cpu:host``;
  ``cgroup:<path>/memory`` (``capacity`` in bytes) limits ``memory:host``;
  ``cgroup:<path>/io:<disk>`` (``read``/``write`` B/s, ``iops_read``/``iops_write``) limits
  ``block:<disk>``. ``<path>`` is the cgroup that sets the limit, which may be an ancestor of the
  process's own (``attrs["members"]``).
- ``qdisc:<nic>`` (``send`` B/s) limits ``nic:<nic>``: qdiscs shape egress only.
- ``cpufreq:host`` (``frequency`` Hz) limits ``cpu:host`` when every policy is capped below its
  hardware maximum; ``cpu:host`` itself carries the hardware maximum as its physical
  ``frequency`` limit and the policies in ``attrs["cpufreq"]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pilot_sys.topology.cgroups import CgroupLimit, process_cgroups
from pilot_sys.topology.components import (
    Component,
    ComponentKind,
    Discovery,
    Limit,
    LimitSource,
    Link,
)
from pilot_sys.topology.cpufreq import read_cpufreq
from pilot_sys.topology.effective import limits_link
from pilot_sys.topology.netlink_tc import interface_names, read_tc
from pilot_sys.topology.shaping import egress_shaping
from pilot_sys.topology.sysroot import SysRoot

TARGETS = {"cpu": "cpu:host", "cpuset": "cpu:host", "memory": "memory:host"}
GROUPS = {"cpu": "cpu", "cpuset": "cpu", "memory": "memory"}


def block_name(sysroot: SysRoot, devnum: str) -> str | None:
    """The block device of ``MAJ:MIN`` (``/sys/dev/block/MAJ:MIN`` links to its sysfs node)."""
    if not sysroot.exists(f"/sys/dev/block/{devnum}"):
        return None
    return sysroot.realpath(f"/sys/dev/block/{devnum}").rsplit("/", 1)[-1]


def cgroup_id(limit: CgroupLimit, device_name: str | None) -> str:
    base = limit.cgroup.rstrip("/")
    if limit.resource == "io":
        return f"cgroup:{base}/io:{device_name or limit.device}"
    return f"cgroup:{base}/{GROUPS[limit.resource]}"


def cgroup_discovery(
    sysroot: SysRoot,
    pids: Sequence[str | int] = ("self",),
    *,
    plugin: str = "cgroup",
    memberships: Sequence[str] = (),
) -> Discovery:
    """The cgroup limits binding ``pids`` (the workload's processes, or this one) and the
    processes whose ``/proc/PID/cgroup`` texts are ``memberships``. Each component's attrs name
    the cgroup, the files its limits were read from (``files``), the counter files that show
    them binding (``counters``, see ``topology.cgroups``), the resources it limits
    (``resources``), a cpuset's CPUs (``cpus``) and an I/O throttle's device."""
    found = process_cgroups(sysroot, list(pids), list(memberships))
    components: dict[str, Component] = {}
    links: list[Link] = []
    for limit in found.limits:
        device = block_name(sysroot, limit.device) if limit.device else None
        cid = cgroup_id(limit, device)
        target = (
            f"block:{device or limit.device}" if limit.resource == "io" else TARGETS[limit.resource]
        )
        value = Limit(
            value=limit.value,
            unit=limit.unit,
            source=LimitSource.CGROUP,
            detail=f"{limit.detail} ({limit.file})",
        )
        component = components.get(cid) or Component(
            id=cid,
            kind=ComponentKind.CGROUP,
            name=f"{limit.cgroup} {GROUPS.get(limit.resource, 'io')}",
            attrs={
                "cgroup": limit.cgroup,
                "version": limit.version,
                "directory": limit.directory,
                "members": [],
                "pids": found.pids,
                "limits": target,
                "files": {},
                "counters": {},
                "resources": [],
            },
        )
        current = component.limits.get(limit.key)
        if current is None or (current.value or 0.0) > limit.value:
            component.limits[limit.key] = value
        component.attrs["files"][f"{limit.resource}:{limit.key}"] = limit.file
        component.attrs["counters"].update(limit.counters)
        if limit.resource not in component.attrs["resources"]:
            component.attrs["resources"].append(limit.resource)
        if limit.cpus:
            component.attrs["cpus"] = limit.cpus
        if limit.member not in component.attrs["members"]:
            component.attrs["members"].append(limit.member)
        if limit.device:
            component.attrs["device"] = limit.device
        if cid not in components:
            components[cid] = component
            links.append(limits_link(cid, target))
    return Discovery(
        plugin=plugin, components=list(components.values()), links=links, unreadable=found.notes
    )


def qdisc_discovery(sysroot: SysRoot, *, plugin: str = "qdisc") -> Discovery:
    """One ``qdisc:<nic>`` per NIC whose root qdisc shapes its egress."""
    objects, notes = read_tc(sysroot)
    components, links = [], []
    for interface, shaping in sorted(egress_shaping(objects, interface_names(sysroot)).items()):
        rate = (
            Limit(value=shaping.rate, unit="B/s", source=LimitSource.QDISC, detail=shaping.detail)
            if shaping.rate is not None
            else Limit(detail=shaping.detail)
        )
        cid = f"qdisc:{interface}"
        components.append(
            Component(
                id=cid,
                kind=ComponentKind.QDISC,
                name=f"{interface} {shaping.kind}",
                limits={"send": rate},
                attrs={
                    "qdisc": shaping.kind,
                    "handle": shaping.handle,
                    "interface": interface,
                    "limits": f"nic:{interface}",
                    **shaping.attrs,
                },
            )
        )
        links.append(limits_link(cid, f"nic:{interface}"))
    return Discovery(plugin=plugin, components=components, links=links, unreadable=notes)


def cpufreq_discovery(sysroot: SysRoot, *, plugin: str = "cpufreq") -> Discovery:
    """``cpu:host``'s hardware frequency limit and policies, and ``cpufreq:host`` when capped."""
    freq = read_cpufreq(sysroot)
    hardware = freq.hardware_max_hz
    physical = (
        Limit(value=hardware, unit="Hz", source=LimitSource.CPUFREQ, detail="cpuinfo_max_freq")
        if hardware
        else Limit(unit="Hz", detail=freq.note or "cpuinfo_max_freq unreadable")
    )
    warnings = [
        f"cpufreq {p.policy} (CPUs {','.join(map(str, p.cpus))}) capped: scaling_max_freq "
        f"{(p.scaling_max_hz or 0) / 1e6:g} MHz of {(p.hardware_max_hz or 0) / 1e6:g} MHz"
        for p in freq.policies
        if p.capped
    ]
    attrs = {
        "cpufreq": {
            "policies": [p.model_dump() for p in freq.policies],
            "boost": freq.boost,
            "note": freq.note,
        }
    }
    host = Component(
        id="cpu:host",
        kind=ComponentKind.CPU,
        name="CPU complex",
        limits={"frequency": physical},
        attrs=attrs,
        warnings=warnings,
    )
    components, links = [host], []
    allowed = freq.allowed_max_hz
    if hardware and allowed and allowed < hardware:
        governors = sorted({p.governor for p in freq.policies if p.governor})
        components.append(
            Component(
                id="cpufreq:host",
                kind=ComponentKind.CPUFREQ,
                name="CPU frequency cap",
                limits={
                    "frequency": Limit(
                        value=allowed,
                        unit="Hz",
                        source=LimitSource.CPUFREQ,
                        detail=f"scaling_max_freq {allowed / 1e6:g} MHz on every policy, "
                        f"hardware {hardware / 1e6:g} MHz",
                    )
                },
                attrs={"governors": governors, "limits": "cpu:host"},
            )
        )
        links.append(limits_link("cpufreq:host", "cpu:host"))
    return Discovery(plugin=plugin, components=components, links=links)
