"""The cgroups a process belongs to and the limits they impose on it, v1 and v2.

``/proc/PID/cgroup`` names one cgroup per hierarchy (``4:memory:/bench`` for v1,
``0::/bench`` for v2), relative to the reader's cgroup namespace; ``/proc/self/mountinfo`` says
where each hierarchy is mounted (the mount's *root* field is the cgroup shown at the mount point,
which is not ``/`` inside a container or for a bind mount). The limit files read:

- CPU: v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1 = none), v2 ``cpu.max``
  (``"QUOTA PERIOD"`` or ``"max PERIOD"``), in cores = quota / period. cpuset: v1
  ``cpuset.effective_cpus``, v2 ``cpuset.cpus.effective`` (already narrowed by the ancestors).
- Memory: v1 ``memory.limit_in_bytes`` (unlimited prints as PAGE_COUNTER_MAX in bytes,
  about 2^63), v2 ``memory.max`` and ``memory.high`` (``max`` = none; above ``high`` the kernel
  throttles allocations and reclaims, so it binds like a limit).
- I/O: v1 ``blkio.throttle.{read,write}_{bps,iops}_device`` (``MAJ:MIN VALUE`` lines), v2
  ``io.max`` (``MAJ:MIN rbps=N wbps=N riops=N wiops=max``).

Beside each limit, the counter files that show it binding (``CgroupLimit.counters``, sampled by
the dynamic plug-ins), read where the kernel counts for that limit:

- CPU quota: ``cpu.stat`` of the cgroup that *sets* the quota (CFS counts nr_periods,
  nr_throttled and the throttled time there, not in the children), and the cores it used: v2
  ``cpu.stat`` ``usage_usec`` (same file), v1 ``cpuacct.usage`` of the same cgroup path in the
  cpuacct hierarchy (the same directory where ``cpu,cpuacct`` are mounted together), only when
  the process's cpuacct cgroup lies at or under that path (else that usage has another scope).
- Memory: v1 ``memory.usage_in_bytes``, ``memory.failcnt`` (times the limit was hit),
  ``memory.stat``; v2 ``memory.current``, ``memory.events``, ``memory.stat``, ``memory.pressure``.
- I/O: v1 ``blkio.throttle.io_service_bytes`` / ``io_serviced`` of the throttling cgroup (its
  own tasks' I/O, the scope of a v1 throttle); v2 ``io.stat`` (hierarchical, like ``io.max``).

Effective limits walk up the hierarchy: a parent's tighter CPU quota, memory limit or v2
``io.max`` binds its children. v1 ``blkio.throttle.*`` is flat: a parent's throttle does not
apply to processes in a child cgroup (the kernel's v1 blkio documentation, "Hierarchical
Cgroups"), so only the process's own cgroup counts there.
"""

from __future__ import annotations

import errno
from typing import Literal

from pydantic import BaseModel, Field

from pilot_sys.topology.cpulist import parse_cpulist
from pilot_sys.topology.mountinfo import MountEntry, parse_mountinfo
from pilot_sys.topology.sysroot import SysRoot

# memory.limit_in_bytes prints PAGE_COUNTER_MAX x PAGE_SIZE when unlimited (9223372036854771712
# with 4 KiB pages); anything this large is no limit.
V1_UNLIMITED = 2**62
Resource = Literal["cpu", "cpuset", "memory", "io"]

V1_IO_FILES = {
    "blkio.throttle.read_bps_device": "read",
    "blkio.throttle.write_bps_device": "write",
    "blkio.throttle.read_iops_device": "iops_read",
    "blkio.throttle.write_iops_device": "iops_write",
}
V2_IO_KEYS = {"rbps": "read", "wbps": "write", "riops": "iops_read", "wiops": "iops_write"}
IO_UNITS = {"read": "B/s", "write": "B/s", "iops_read": "IO/s", "iops_write": "IO/s"}


class CgroupPlacement(BaseModel):
    """One hierarchy's cgroup of a process, located in this mount namespace."""

    version: Literal[1, 2]
    controllers: list[str]  # v1: the hierarchy's controllers; v2: empty (read per directory)
    path: str  # as /proc/PID/cgroup prints it
    mountpoint: str | None = None
    directory: str | None = None  # None when no mount shows this cgroup


class CgroupLimit(BaseModel):
    """One limit found on a process's cgroup path: where it is set, the file and its value."""

    resource: Resource
    key: str  # the limited component's limit key: compute, capacity, read, write, iops_*
    value: float
    unit: str
    cgroup: str  # the cgroup that sets it (an ancestor when the limit is inherited)
    member: str  # the process's own cgroup in that hierarchy
    version: Literal[1, 2]
    file: str  # the file read, inside the machine
    directory: str  # the cgroup's directory, inside the machine
    device: str | None = None  # MAJ:MIN of an I/O throttle
    detail: str = ""
    # the files whose counters show this limit binding: role -> file inside the machine (only
    # files that exist); roles: cpu.stat, usage (v1 cpuacct.usage, ns), usage_usec (v2 cpu.stat),
    # memory usage, failcnt, events, stat, pressure, io bytes, ios, io.stat
    counters: dict[str, str] = Field(default_factory=dict)
    cpus: list[int] = Field(default_factory=list)  # a cpuset's CPUs


class ProcessCgroups(BaseModel):
    """What the cgroups of a set of processes impose, and what could not be read."""

    pids: list[str]
    placements: list[CgroupPlacement] = Field(default_factory=list)
    limits: list[CgroupLimit] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def parse_membership(text: str) -> list[tuple[int, list[str], str]]:
    """``(hierarchy id, controllers, path)`` per line of ``/proc/PID/cgroup``; v2 is id 0 with
    no controllers. Named v1 hierarchies (``name=systemd``) keep their name as the controller."""
    found = []
    for line in text.splitlines():
        hierarchy, sep, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not sep or not sep2 or not hierarchy.isdigit():
            continue
        found.append((int(hierarchy), [c for c in controllers.split(",") if c], path))
    return found


def _mount_for(
    entries: list[MountEntry], version: int, controllers: list[str], path: str
) -> MountEntry | None:
    """The mount showing ``path`` of this hierarchy: the one whose root is the longest prefix."""
    best: MountEntry | None = None
    for entry in entries:
        if version == 2 and entry.fstype != "cgroup2":
            continue
        if version == 1:
            options = set(entry.super_options.split(","))
            if entry.fstype != "cgroup" or not set(controllers) <= options:
                continue
        root = entry.root.rstrip("/")
        if path != entry.root and not path.startswith(root + "/") and root:
            continue
        if best is None or len(entry.root) > len(best.root):
            best = entry
    return best


def place(sysroot: SysRoot, pid: str | int) -> tuple[list[CgroupPlacement], list[str]]:
    """The cgroups of ``pid`` (``"self"`` or a number) and notes on what was missing."""
    text, code = sysroot.read_status(f"/proc/{pid}/cgroup")
    if text is None:
        why = (
            "permission denied"
            if code in (errno.EPERM, errno.EACCES)
            else "missing (no such process, or no cgroups)"
        )
        return [], [f"/proc/{pid}/cgroup: {why}; cgroup limits unknown"]
    return place_membership(sysroot, text)


def place_membership(sysroot: SysRoot, text: str) -> tuple[list[CgroupPlacement], list[str]]:
    """The cgroups named by a ``/proc/PID/cgroup`` text, located in this mount namespace."""
    mounts = parse_mountinfo(sysroot.read("/proc/self/mountinfo") or "")
    placements: list[CgroupPlacement] = []
    notes: list[str] = []
    for hierarchy, controllers, path in parse_membership(text):
        version: Literal[1, 2] = 2 if hierarchy == 0 and not controllers else 1
        entry = _mount_for(mounts, version, controllers, path)
        placement = CgroupPlacement(version=version, controllers=controllers, path=path)
        if entry is None:
            if version == 2 or any(c in ("cpu", "cpuset", "memory", "blkio") for c in controllers):
                notes.append(
                    f"cgroup v{version} {','.join(controllers) or 'unified'} {path}: "
                    "hierarchy not mounted here; its limits unknown"
                )
        else:
            root = entry.root.rstrip("/")
            relative = path[len(root) :] if root else path
            placement.mountpoint = entry.mountpoint
            placement.directory = entry.mountpoint.rstrip("/") + (
                relative if relative != "/" else ""
            )
        placements.append(placement)
    return placements, notes


def joined_membership(sysroot: SysRoot, text: str, directories: list[str]) -> str:
    """The ``/proc/PID/cgroup`` text of a process that had membership ``text`` and then joined
    the cgroup ``directories`` (each a cgroup's directory in one mounted hierarchy): the lines
    of those hierarchies name the joined cgroups, the others are kept."""
    mounts = [
        m
        for m in parse_mountinfo(sysroot.read("/proc/self/mountinfo") or "")
        if m.fstype in ("cgroup", "cgroup2")
    ]
    lines = []
    for line in text.splitlines():
        parsed = parse_membership(line)
        if not parsed:
            continue
        hierarchy, controllers, path = parsed[0]
        version = 2 if hierarchy == 0 and not controllers else 1
        for directory in directories:
            for m in mounts:
                mountpoint = m.mountpoint.rstrip("/")
                inside = directory == mountpoint or directory.startswith(mountpoint + "/")
                same = (
                    (m.fstype == "cgroup2")
                    if version == 2
                    else (
                        m.fstype == "cgroup" and set(controllers) <= set(m.super_options.split(","))
                    )
                )
                if inside and same:
                    path = (m.root.rstrip("/") + directory[len(mountpoint) :]) or "/"
        lines.append(f"{hierarchy}:{','.join(controllers)}:{path}")
    return "\n".join(lines) + "\n"


def _levels(placement: CgroupPlacement) -> list[tuple[str, str]]:
    """``(cgroup path, directory)`` from the process's cgroup up to the mount's root."""
    assert placement.directory is not None and placement.mountpoint is not None
    levels = []
    path, directory = placement.path, placement.directory
    mountpoint = placement.mountpoint.rstrip("/") or "/"
    while True:
        levels.append((path or "/", directory))
        if directory.rstrip("/") == mountpoint.rstrip("/") or path in ("", "/"):
            return levels
        path = path.rsplit("/", 1)[0] or "/"
        directory = directory.rsplit("/", 1)[0] or "/"


def _cpu_quota(
    sysroot: SysRoot, placement: CgroupPlacement, path: str, directory: str
) -> CgroupLimit | None:
    if placement.version == 2:
        text = sysroot.read(f"{directory}/cpu.max")
        if not text:
            return None
        quota_text, _, period_text = text.partition(" ")
        if quota_text == "max" or not quota_text.isdigit():
            return None
        quota, period = int(quota_text), int(period_text or 100000)
        file = f"{directory}/cpu.max"
    else:
        quota_read = sysroot.read_int(f"{directory}/cpu.cfs_quota_us")
        period_read = sysroot.read_int(f"{directory}/cpu.cfs_period_us")
        if quota_read is None or quota_read <= 0 or not period_read:
            return None
        quota, period = quota_read, period_read
        file = f"{directory}/cpu.cfs_quota_us"
    return CgroupLimit(
        resource="cpu",
        key="compute",
        value=quota / period,
        unit="cores",
        cgroup=path,
        member=placement.path,
        version=placement.version,
        file=file,
        directory=directory,
        detail=f"quota {quota} us per {period} us period",
    )


def _cpuset(sysroot: SysRoot, placement: CgroupPlacement, online: int) -> CgroupLimit | None:
    """The process's own cpuset, whose effective list already includes every ancestor's."""
    directory = placement.directory
    name = "cpuset.cpus.effective" if placement.version == 2 else "cpuset.effective_cpus"
    text = sysroot.read(f"{directory}/{name}")
    cpus = parse_cpulist(text)
    if not cpus or not online or len(cpus) >= online:
        return None
    return CgroupLimit(
        resource="cpuset",
        key="compute",
        value=float(len(cpus)),
        unit="cores",
        cgroup=placement.path,
        member=placement.path,
        version=placement.version,
        file=f"{directory}/{name}",
        directory=str(directory),
        detail=f"cpuset {text}: {len(cpus)} of {online} online CPUs",
        cpus=cpus,
    )


def _memory(
    sysroot: SysRoot, placement: CgroupPlacement, path: str, directory: str
) -> list[CgroupLimit]:
    found = []
    names = ("memory.max", "memory.high") if placement.version == 2 else ("memory.limit_in_bytes",)
    for name in names:
        text = sysroot.read(f"{directory}/{name}")
        if not text or not text.isdigit() or int(text) >= V1_UNLIMITED:
            continue
        found.append(
            CgroupLimit(
                resource="memory",
                key="capacity",
                value=float(text),
                unit="B",
                cgroup=path,
                member=placement.path,
                version=placement.version,
                file=f"{directory}/{name}",
                directory=directory,
                detail=f"{name} {text}",
            )
        )
    return found


def _io(
    sysroot: SysRoot, placement: CgroupPlacement, path: str, directory: str
) -> list[CgroupLimit]:
    def limit(key: str, value: str, file: str, device: str, detail: str) -> CgroupLimit:
        return CgroupLimit(
            resource="io",
            key=key,
            value=float(value),
            unit=IO_UNITS[key],
            cgroup=path,
            member=placement.path,
            version=placement.version,
            file=f"{directory}/{file}",
            directory=directory,
            device=device,
            detail=detail,
        )

    found = []
    if placement.version == 1:
        for name, key in V1_IO_FILES.items():
            for line in (sysroot.read(f"{directory}/{name}") or "").splitlines():
                device, _, value = line.partition(" ")
                if value.strip().isdigit():
                    found.append(limit(key, value, name, device, f"{name} {line.strip()}"))
        return found
    for line in (sysroot.read(f"{directory}/io.max") or "").splitlines():
        device, *pairs = line.split()
        for pair in pairs:
            name, _, value = pair.partition("=")
            if name in V2_IO_KEYS and value.isdigit():
                found.append(
                    limit(V2_IO_KEYS[name], value, "io.max", device, f"io.max {device} {pair}")
                )
    return found


# the counter files of each kind of limit, in the directory of the cgroup that sets it
COUNTER_FILES: dict[tuple[str, int], dict[str, str]] = {
    ("cpu", 1): {"cpu.stat": "cpu.stat"},
    ("cpu", 2): {"cpu.stat": "cpu.stat", "usage_usec": "cpu.stat"},
    ("cpuset", 1): {},
    ("cpuset", 2): {"usage_usec": "cpu.stat"},
    ("memory", 1): {
        "usage": "memory.usage_in_bytes",
        "failcnt": "memory.failcnt",
        "stat": "memory.stat",
    },
    ("memory", 2): {
        "usage": "memory.current",
        "events": "memory.events",
        "stat": "memory.stat",
        "pressure": "memory.pressure",
    },
    ("io", 1): {"bytes": "blkio.throttle.io_service_bytes", "ios": "blkio.throttle.io_serviced"},
    ("io", 2): {"io.stat": "io.stat"},
}


def _cpuacct_usage(sysroot: SysRoot, placements: list[CgroupPlacement], path: str) -> str | None:
    """v1 ``cpuacct.usage`` of cgroup ``path``, when the process's cpuacct cgroup is ``path`` or
    below it (then that usage counts the same tasks as the quota or cpuset set at ``path``)."""
    for placement in placements:
        if placement.version != 1 or "cpuacct" not in placement.controllers:
            continue
        if placement.directory is None:
            return None
        for level, directory in _levels(placement):
            if level == path and sysroot.exists(f"{directory}/cpuacct.usage"):
                return f"{directory}/cpuacct.usage"
    return None


def _with_counters(
    sysroot: SysRoot, limit: CgroupLimit, placements: list[CgroupPlacement]
) -> CgroupLimit:
    """``limit`` with the counter files that exist for it."""
    counters = {
        role: f"{limit.directory}/{name}"
        for role, name in COUNTER_FILES[(limit.resource, limit.version)].items()
        if sysroot.exists(f"{limit.directory}/{name}")
    }
    if limit.version == 1 and limit.resource in ("cpu", "cpuset"):
        usage = _cpuacct_usage(sysroot, placements, limit.cgroup)
        if usage is not None:
            counters["usage"] = usage
    return limit.model_copy(update={"counters": counters})


def _tightest(limits: list[CgroupLimit]) -> list[CgroupLimit]:
    """The tightest limit per (resource, key, device); on a tie the deepest cgroup (found first)."""
    best: dict[tuple[str, str, str | None], CgroupLimit] = {}
    for limit in limits:
        slot = (limit.resource, limit.key, limit.device)
        if slot not in best or limit.value < best[slot].value:
            best[slot] = limit
    return list(best.values())


def _has(placement: CgroupPlacement, controller: str) -> bool:
    """v1: the hierarchy carries the controller. v2: every level is read, since an ancestor's
    limit binds even where the controller is not enabled further down (its files are absent)."""
    return placement.version == 2 or controller in placement.controllers


def limits_of(sysroot: SysRoot, placements: list[CgroupPlacement]) -> list[CgroupLimit]:
    """Every binding limit on these placements (one process's cgroups), tightest per resource."""
    online = len(parse_cpulist(sysroot.read("/sys/devices/system/cpu/online")))
    found: list[CgroupLimit] = []
    for placement in placements:
        if placement.directory is None or not sysroot.isdir(placement.directory):
            continue
        levels = _levels(placement)
        if _has(placement, "cpu"):
            found += [
                q
                for path, d in levels
                if (q := _cpu_quota(sysroot, placement, path, d)) is not None
            ]
        if _has(placement, "cpuset"):
            cpuset = _cpuset(sysroot, placement, online)
            found += [cpuset] if cpuset is not None else []
        if _has(placement, "memory"):
            for path, directory in levels:
                found += _memory(sysroot, placement, path, directory)
                if (
                    placement.version == 1
                    and sysroot.read(f"{directory}/memory.use_hierarchy") == "0"
                ):
                    break  # a v1 parent with use_hierarchy=0 does not charge its children
        if _has(placement, "blkio"):
            io_levels = levels[:1] if placement.version == 1 else levels  # v1 throttles are flat
            for path, directory in io_levels:
                found += _io(sysroot, placement, path, directory)
    return [_with_counters(sysroot, limit, placements) for limit in _tightest(found)]


def process_cgroups(
    sysroot: SysRoot, pids: list[str | int], memberships: list[str] | None = None
) -> ProcessCgroups:
    """The cgroup limits binding each of ``pids``, and each process whose ``/proc/PID/cgroup``
    text is in ``memberships`` (one about to be started in a chosen cgroup, or one seen
    earlier); a limit found for several is listed once."""
    result = ProcessCgroups(pids=[str(p) for p in pids])
    seen: set[tuple[str, str, str, str | None]] = set()
    found = [place(sysroot, pid) for pid in pids]
    found += [place_membership(sysroot, text) for text in memberships or []]
    for placements, notes in found:
        result.notes += [n for n in notes if n not in result.notes]
        result.placements += [p for p in placements if p not in result.placements]
        for limit in limits_of(sysroot, placements):
            slot = (limit.resource, limit.key, limit.cgroup, limit.device)
            if slot not in seen:
                seen.add(slot)
                result.limits.append(limit)
    result.notes += [u for u in sysroot.unreadable if u not in result.notes]
    return result
