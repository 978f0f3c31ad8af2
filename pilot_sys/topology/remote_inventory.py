"""A remote host's hardware as its monitoring engine reports it, and the components it becomes.

A backend client (node_exporter, PCP) fills a ``RemoteInventory``; ``inventory_discovery``
turns it into the same ``Discovery`` a local static plug-in returns, with ids ``KIND:HOST`` and
``KIND:HOST/NAME`` (``cpu:nas1``, ``memory:nas1``, ``nic:nas1/eth0``, ``block:nas1/vdb``,
``mount:nas1/srv``) and every limit naming its source, or unknown with the reason. The link
between this machine and the host is a component of its own (``network:host~nas1``): its
capacity is the slower of the two NICs when both are known.

Inside one host the picture is the local one in small: the CPU writes to memory, memory sends
to the NICs and writes to the disks, a mounted file system hangs off its disk (or off memory
for tmpfs). Loopback interfaces are left out: they never carry traffic between hosts.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pilot_sys.topology.components import (
    Component,
    ComponentKind,
    Discovery,
    Limit,
    LimitSource,
    Link,
)
from pilot_sys.topology.mountinfo import MEMORY_FS
from pilot_sys.topology.remote_gpus import RemoteGpu, gpu_parts
from pilot_sys.topology.remote_hosts import LOCAL_HOST


class RemoteNic(BaseModel):
    name: str
    speed: float | None = None  # bytes/s per direction; None when the backend reports none
    speed_note: str = ""  # why the speed is unknown, or what it is
    up: bool | None = None
    mtu: int | None = None
    duplex: str | None = None
    addresses: list[str] = Field(default_factory=list)  # IP addresses, where the backend has them
    loopback: bool = False


class RemoteDisk(BaseModel):
    name: str
    capacity: float | None = None  # bytes


class RemoteFilesystem(BaseModel):
    mountpoint: str
    device: str
    fstype: str | None = None
    size: float | None = None  # bytes


class RemoteInventory(BaseModel):
    """What one backend knows about one host; ``notes`` say what it could not tell."""

    host: str
    source: LimitSource
    cpus: int | None = None
    memory: float | None = None  # bytes (MemTotal)
    nics: list[RemoteNic] = Field(default_factory=list)
    disks: list[RemoteDisk] = Field(default_factory=list)
    filesystems: list[RemoteFilesystem] = Field(default_factory=list)
    gpus: list[RemoteGpu] = Field(default_factory=list)  # dcgm-exporter's, below its memory
    notes: list[str] = Field(default_factory=list)


def cpu_id(host: str) -> str:
    return f"cpu:{host}"


def memory_id(host: str) -> str:
    return f"memory:{host}"


def nic_id(host: str, name: str) -> str:
    return f"nic:{host}/{name}"


def block_id(host: str, name: str) -> str:
    return f"block:{host}/{name}"


def mount_id(host: str, mountpoint: str) -> str:
    return f"mount:{host}{mountpoint}"


def link_id(a: str, b: str) -> str:
    """The path between two hosts, the same whichever end names it."""
    first, second = sorted((a, b), key=lambda name: (name != LOCAL_HOST, name))
    return f"network:{first}~{second}"


def _pair(parent: str, child: str, outward: str) -> list[Link]:
    back = {"write": "read", "send": "receive"}[outward]
    return [
        Link(source=parent, target=child, direction=outward),
        Link(source=child, target=parent, direction=back),
    ]


def _unknown(inv: RemoteInventory, what: str) -> Limit:
    return Limit(detail=f"{inv.source.value} reports no {what}: add it with --load")


def inventory_discovery(inv: RemoteInventory) -> Discovery:
    """The host's components and the links between them."""
    host, source = inv.host, inv.source
    cpu, memory = cpu_id(host), memory_id(host)
    compute = (
        Limit(value=float(inv.cpus), unit="cores", source=source, detail=f"{inv.cpus} CPUs")
        if inv.cpus
        else Limit(unit="cores", detail=f"{source.value} reports no CPU count")
    )
    memory_limits = {
        "read": _unknown(inv, "memory bandwidth"),
        "write": _unknown(inv, "memory bandwidth"),
    }
    if inv.memory is not None:
        memory_limits["capacity"] = Limit(
            value=inv.memory, unit="B", source=source, detail="MemTotal"
        )
    components = [
        Component(
            id=cpu,
            kind=ComponentKind.CPU,
            name=f"{host} CPUs",
            limits={"compute": compute},
            attrs={"host": host, "cpus": inv.cpus},
        ),
        Component(
            id=memory,
            kind=ComponentKind.MEMORY,
            name=f"{host} memory",
            limits=memory_limits,
            attrs={"host": host},
        ),
    ]
    links = [Link(source=cpu, target=memory, direction="write")]
    for nic in inv.nics:
        if nic.loopback:
            continue
        limit = nic_limit(inv, nic)
        warnings = (
            ["half duplex: send and receive share one medium"] if nic.duplex == "half" else []
        )
        components.append(
            Component(
                id=nic_id(host, nic.name),
                kind=ComponentKind.NIC,
                name=f"{host} {nic.name}",
                limits={"send": limit, "receive": limit},
                warnings=warnings,
                attrs={
                    "host": host,
                    "up": nic.up,
                    "mtu": nic.mtu,
                    "duplex": nic.duplex,
                    "addresses": nic.addresses,
                },
            )
        )
        links += _pair(memory, nic_id(host, nic.name), "send")
    disks = {d.name for d in inv.disks}
    for disk in inv.disks:
        limits = {"read": _unknown(inv, "disk bandwidth"), "write": _unknown(inv, "disk bandwidth")}
        if disk.capacity is not None:
            limits["capacity"] = Limit(
                value=disk.capacity, unit="B", source=source, detail="disk size"
            )
        components.append(
            Component(
                id=block_id(host, disk.name),
                kind=ComponentKind.BLOCK,
                name=f"{host} {disk.name}",
                limits=limits,
                attrs={"host": host},
            )
        )
        links += _pair(memory, block_id(host, disk.name), "write")
    for fs in inv.filesystems:
        mid = mount_id(host, fs.mountpoint)
        limits = {}
        if fs.size is not None:
            limits["capacity"] = Limit(
                value=fs.size, unit="B", source=source, detail="file system size"
            )
        device = fs.device.removeprefix("/dev/")
        warnings = []
        if device in disks:
            links += _pair(block_id(host, device), mid, "write")
        elif fs.fstype in MEMORY_FS:
            links += _pair(memory, mid, "write")
        else:
            warnings.append(
                f"{fs.device}: not among the disks {source.value} reports (a partition or a "
                "volume): the data path below it is unknown"
            )
        components.append(
            Component(
                id=mid,
                kind=ComponentKind.MOUNT,
                name=fs.mountpoint,
                limits=limits,
                warnings=warnings,
                attrs={"host": host, "device": fs.device, "fstype": fs.fstype},
            )
        )
    gpus, gpu_links = gpu_parts(host, inv.gpus, memory, LimitSource.DCGM)
    components += gpus
    links += gpu_links
    return Discovery(
        plugin=f"remote:{host}", components=components, links=links, unreadable=list(inv.notes)
    )


def nic_limit(inv: RemoteInventory, nic: RemoteNic) -> Limit:
    if nic.speed is None or nic.speed <= 0:
        return Limit(detail=nic.speed_note or f"{inv.source.value} reports no speed for {nic.name}")
    return Limit(
        value=nic.speed, source=inv.source, detail=nic.speed_note or f"{nic.speed * 8 / 1e6:g} Mb/s"
    )


def nic_on_path(inv: RemoteInventory, address: str | None) -> tuple[RemoteNic | None, str]:
    """The host's NIC that traffic to ``address`` (the address we reach it at) arrives on: the
    one holding the address where the backend tells addresses, else the only NIC that is up.
    Returns the NIC, or None, and how it was chosen (or why it could not be)."""
    candidates = [n for n in inv.nics if not n.loopback]
    if address:
        for nic in candidates:
            if address in nic.addresses:
                return nic, f"holds {address}"
    up = [n for n in candidates if n.up is not False]
    if len(up) == 1:
        return up[0], "the only interface that is up"
    if not up:
        return None, "no interface is up"
    addresses = (
        ""
        if any(n.addresses for n in candidates)
        else f" ({inv.source.value} reports no addresses)"
    )
    return (
        None,
        f"{len(up)} interfaces are up, none known to hold {address or 'the address'}{addresses}",
    )


def host_link(
    local: Component | None, remote: Component | None, host: str, why: str = ""
) -> Discovery:
    """``network:host~HOST`` between this machine's NIC and the remote host's NIC, with a
    capacity per direction: the slower NIC's when both are known, else unknown with the reason.
    ``local`` or ``remote`` may be None when it could not be told which NIC carries the traffic
    (``why``); the link component is then attached to whichever end is known."""
    lid = link_id(LOCAL_HOST, host)
    limits: dict[str, Limit] = {}
    # Directions are this machine's: "send" leaves its NIC and arrives at the host's.
    for direction, remote_direction in (("send", "receive"), ("receive", "send")):
        ends = [
            (c, d) for c, d in ((local, direction), (remote, remote_direction)) if c is not None
        ]
        if len(ends) < 2:
            limits[direction] = Limit(
                detail=f"which NIC carries the traffic is unknown: {why}"
                if why
                else "one end of the link is unknown"
            )
            continue
        known = [(c.limits.get(d, Limit()), c.id) for c, d in ends]
        missing = [cid for limit, cid in known if not limit.known]
        if missing:
            limits[direction] = Limit(detail=f"speed of {', '.join(missing)} unknown")
            continue
        slower, slower_id = min(known, key=lambda pair: pair[0].value or 0.0)
        limits[direction] = Limit(
            value=slower.value,
            source=LimitSource.DERIVED,
            detail=f"the slower NIC: {slower_id} ({slower.detail}); a user graph may say more",
        )
    component = Component(
        id=lid,
        kind=ComponentKind.NETWORK,
        name=f"path to {host}",
        limits=limits,
        attrs={"hosts": [LOCAL_HOST, host], "nics": [c.id if c else None for c in (local, remote)]},
    )
    links: list[Link] = []
    if local is not None:
        links += [
            Link(
                source=local.id,
                target=lid,
                direction="send",
                capacity=local.limits.get("send", Limit()),
            ),
            Link(
                source=lid,
                target=local.id,
                direction="receive",
                capacity=local.limits.get("receive", Limit()),
            ),
        ]
    if remote is not None:
        links += [
            Link(
                source=lid,
                target=remote.id,
                direction="send",
                capacity=remote.limits.get("receive", Limit()),
            ),
            Link(
                source=remote.id,
                target=lid,
                direction="receive",
                capacity=remote.limits.get("send", Limit()),
            ),
        ]
    return Discovery(plugin=f"remote:{host}", components=[component], links=links)
