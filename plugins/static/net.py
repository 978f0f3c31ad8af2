"""Static plug-in: network interfaces. Physical NICs hang off their PCI device; virtual ones
(bond, bridge, vlan, macvlan, veth, team, lo) off their lower devices (``lower_*`` links,
``bonding/slaves``, ``brif/``) or, with none, off memory. Every top-level interface except
``lo`` leads to ``network:<ifname>``, the wire beyond it, where remote hosts attach.

Speed -1 (virtio, no link) or an unreadable speed stays unknown with the reason; never guessed.
"""

from __future__ import annotations

from pilot_sys.topology.components import (
    Component,
    ComponentKind,
    Discovery,
    Limit,
    LimitSource,
    Link,
)
from pilot_sys.topology.linkspeed import nic_limit
from pilot_sys.topology.routes import read_routes
from pilot_sys.topology.sysfs_paths import pci_parent
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "net"

ARPHRD_LOOPBACK = 772


def _pair(
    parent: str, child: str, capacity_out: Limit | None = None, capacity_in: Limit | None = None
) -> list[Link]:
    out = {"capacity": capacity_out} if capacity_out is not None else {}
    back = {"capacity": capacity_in} if capacity_in is not None else {}
    return [
        Link(source=parent, target=child, direction="send", **out),
        Link(source=child, target=parent, direction="receive", **back),
    ]


def _nic_type(
    root: SysRoot, base: str, uevent: dict[str, str], virtual: bool, if_type: int | None
) -> str:
    if if_type == ARPHRD_LOOPBACK:
        return "loopback"
    if root.isdir(f"{base}/bonding"):
        return "bond"
    if root.isdir(f"{base}/bridge"):
        return "bridge"
    if "DEVTYPE" in uevent:
        return uevent["DEVTYPE"]
    if root.exists(f"{base}/tun_flags"):
        return "tun"
    return "virtual" if virtual else "ethernet"


def _derived_aggregate(kind: str, mode: str | None, lowers: list[Limit]) -> Limit | None:
    """A bond's limit from its slaves when its own speed is unknown: active-backup carries one
    slave's speed, the other modes spread flows over all slaves (one flow still gets one slave)."""
    if kind != "bond" or not lowers or not all(lim.known for lim in lowers):
        return None
    values = [lim.value or 0.0 for lim in lowers]
    if mode and mode.startswith("active-backup"):
        return Limit(
            value=max(values),
            source=LimitSource.DERIVED,
            detail="active-backup: one slave at a time",
        )
    return Limit(
        value=sum(values),
        source=LimitSource.DERIVED,
        detail=f"{mode or 'bond'}: sum of {len(values)} slaves (a single flow uses one)",
    )


def discover(root: SysRoot) -> Discovery:
    components: dict[str, Component] = {}
    links: list[Link] = []
    lowers_of: dict[str, list[str]] = {}
    has_upper: set[str] = set()
    for name, sys_path in root.class_devices("net"):
        base = f"/sys/class/net/{name}"
        virtual = "/devices/virtual/" in sys_path
        uevent = dict(
            line.split("=", 1)
            for line in (root.read(f"{base}/uevent") or "").splitlines()
            if "=" in line
        )
        if_type = root.read_int(f"{base}/type")
        kind = _nic_type(root, base, uevent, virtual, if_type)
        speed, speed_errno = root.read_status(f"{base}/speed")
        duplex = root.read(f"{base}/duplex")
        limit = nic_limit(speed, speed_errno, duplex)
        if kind == "loopback":
            limit = Limit(detail="loopback: limited by memory and CPU")
        lowers = (
            set((root.read(f"{base}/bonding/slaves") or "").split()) if kind == "bond" else set()
        )
        lowers |= {n.removeprefix("lower_") for n in root.listdir(base) if n.startswith("lower_")}
        if kind == "bridge":
            lowers |= set(root.listdir(f"{base}/brif"))
        lowers_of[name] = sorted(lowers)
        if any(n.startswith("upper_") for n in root.listdir(base)) or root.exists(f"{base}/master"):
            has_upper.add(name)
        attrs: dict[str, object] = {
            "type": kind,
            "virtual": virtual,
            "mtu": root.read_int(f"{base}/mtu"),
            "operstate": root.read(f"{base}/operstate"),
            "duplex": duplex,
            "speed_mbps": int(speed) if speed and speed.lstrip("-").isdigit() else None,
            "address": root.read(f"{base}/address"),
            "driver": root.link_name(f"{base}/device/driver"),
            "lower": sorted(lowers),
            "sys_path": sys_path,
        }
        if kind == "bond":
            attrs["bond_mode"] = root.read(f"{base}/bonding/mode")
        warnings: list[str] = []
        if duplex == "half":
            warnings.append("half duplex: send and receive share one medium")
        components[name] = Component(
            id=f"nic:{name}",
            kind=ComponentKind.NIC,
            name=name,
            limits={"send": limit, "receive": limit},
            attrs=attrs,
            warnings=warnings,
        )
        if lowers:
            continue
        pci = None if virtual else pci_parent(sys_path)
        links += _pair(f"pci:{pci}" if pci else "memory:host", f"nic:{name}")
    for name, lowers in lowers_of.items():
        nic = components[name]
        for lower in lowers:
            if lower in components:
                has_upper.add(lower)
                links += _pair(
                    f"nic:{lower}",
                    nic.id,
                    components[lower].limits["send"],
                    components[lower].limits["receive"],
                )
        if not nic.limits["send"].known:
            derived = _derived_aggregate(
                str(nic.attrs["type"]),
                nic.attrs.get("bond_mode"),  # type: ignore[arg-type]
                [components[lower].limits["send"] for lower in lowers if lower in components],
            )
            if derived is not None:
                components[name] = nic.model_copy(
                    update={"limits": {"send": derived, "receive": derived}}
                )
    routed = {route.interface for route in read_routes(root)}
    for name, nic in list(components.items()):
        if name in has_upper or nic.attrs["type"] == "loopback":
            continue
        if nic.attrs["virtual"] and not lowers_of[name] and name not in routed:
            # an unrouted virtual interface (ifb, dummy, a veth end) leads nowhere we can see
            continue
        net_id = f"network:{name}"
        components[net_id] = Component(
            id=net_id,
            kind=ComponentKind.NETWORK,
            name=f"network via {name}",
            limits={
                "send": Limit(detail="the network beyond the NIC: add its rating with --load"),
                "receive": Limit(detail="the network beyond the NIC: add its rating with --load"),
            },
        )
        links += _pair(nic.id, net_id, nic.limits["send"], nic.limits["receive"])
    return Discovery(plugin=NAME, components=list(components.values()), links=links)
