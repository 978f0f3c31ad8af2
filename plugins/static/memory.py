"""Static plug-in: memory. ``memory:host`` (total size; bandwidth from DMI when readable, else a
short measured probe only when asked) and one ``memory:nodeN`` per NUMA node with its size."""

from __future__ import annotations

from pilot_sys.topology.components import (
    Component,
    ComponentKind,
    Discovery,
    Limit,
    LimitSource,
    Link,
)
from pilot_sys.topology.dmi import parse_type17
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "memory"

DMI = "/sys/firmware/dmi/entries"
NODES = "/sys/devices/system/node"


def _meminfo_total(text: str | None, key: str = "MemTotal:") -> int | None:
    for line in (text or "").splitlines():
        fields = line.split()
        # /proc/meminfo: "MemTotal: N kB"; node meminfo: "Node 0 MemTotal: N kB"
        if key in fields:
            return int(fields[fields.index(key) + 1]) * 1024
    return None


def _dmi_bandwidth(root: SysRoot) -> tuple[Limit, list[dict[str, object]]]:
    entries = [name for name in root.listdir(DMI) if name.startswith("17-")]
    if not entries:
        why = (
            "DMI memory entries not present"
            if not root.exists(DMI)
            else "no SMBIOS type 17 entries"
        )
        return Limit(detail=why), []
    dimms = []
    unreadable = 0
    for name in entries:
        raw = root.read_bytes(f"{DMI}/{name}/raw")
        if raw is None:
            unreadable += 1
            continue
        device = parse_type17(raw)
        if device is not None and device.size_bytes:
            dimms.append(device)
    if unreadable and not dimms:
        return Limit(detail="DMI memory entries unreadable (needs root)"), []
    rates = [d.bandwidth for d in dimms if d.bandwidth]
    info = [d.model_dump() for d in dimms]
    if not rates:
        return Limit(detail="DMI reports no speed or width for the installed DIMMs"), info
    speeds = sorted({d.configured_speed_mts or d.speed_mts for d in dimms if d.bandwidth})
    widths = sorted({d.data_width_bits for d in dimms if d.bandwidth})
    detail = (
        f"DMI: {len(rates)} DIMMs x {'/'.join(map(str, speeds))} MT/s x "
        f"{'/'.join(map(str, widths))}-bit "
        "(sum over DIMMs; DIMMs sharing a channel do not add)"
    )
    return Limit(value=float(sum(rates)), source=LimitSource.DMI, detail=detail), info


def _probe_buffer_bytes(root: SysRoot) -> int:
    """Twice the last-level cache (source and destination: a working set of 4x the LLC), so the
    copy streams from memory; 32 MiB to 512 MiB."""
    largest = 0
    cache = "/sys/devices/system/cpu/cpu0/cache"
    for index in root.listdir(cache):
        text = root.read(f"{cache}/{index}/size") or ""
        units = {"K": 1024, "M": 1024**2, "G": 1024**3}
        if text[:-1].isdigit() and text[-1] in units:
            largest = max(largest, int(text[:-1]) * units[text[-1]])
    return min(max(2 * largest, 32 * 1024**2), 512 * 1024**2)


def discover(root: SysRoot) -> Discovery:
    total = _meminfo_total(root.read("/proc/meminfo"))
    bandwidth, dimms = _dmi_bandwidth(root)
    if not bandwidth.known and root.probe_memory:
        from pilot_sys.topology.memprobe import probe_copy_bandwidth

        bandwidth = probe_copy_bandwidth(_probe_buffer_bytes(root))
    elif not bandwidth.known:
        bandwidth = bandwidth.model_copy(
            update={"detail": bandwidth.detail + "; `--probe` measures it"}
        )
    limits = {"read": bandwidth, "write": bandwidth}
    if total is not None:
        limits["capacity"] = Limit(
            value=float(total), unit="B", source=LimitSource.SYSFS, detail="/proc/meminfo MemTotal"
        )
    host = Component(
        id="memory:host",
        kind=ComponentKind.MEMORY,
        name="memory",
        limits=limits,
        attrs={"dimms": dimms, "bandwidth_shared_by_read_and_write": True},
    )
    components = [host]
    links = []
    for name in root.listdir(NODES):
        if not (name.startswith("node") and name[4:].isdigit()):
            continue
        size = _meminfo_total(root.read(f"{NODES}/{name}/meminfo"))
        node_limits = {}
        if size is not None:
            node_limits["capacity"] = Limit(
                value=float(size), unit="B", source=LimitSource.SYSFS, detail=f"{name}/meminfo"
            )
        components.append(
            Component(
                id=f"memory:{name}",
                kind=ComponentKind.MEMORY,
                name=f"NUMA {name}",
                limits=node_limits,
                attrs={"numa_node": int(name[4:])},
            )
        )
        links.append(Link(source="memory:host", target=f"memory:{name}", direction="contains"))
    return Discovery(plugin=NAME, components=components, links=links)
