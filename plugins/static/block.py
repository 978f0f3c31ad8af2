"""Static plug-in: block devices. Disks, partitions, device-mapper/LVM, md RAID, loop, zram and
NVMe namespaces, with their controllers (NVMe, SATA link, SAS port) and queue limits.

Links point away from memory: PCI device -> controller -> disk -> partition -> dm/md. Loop
devices are linked from the mount holding their backing file by the mounts plug-in. sysfs gives
no throughput rating for a disk, so disk limits stay unknown unless a user graph adds one; link
rates (SATA, SAS, PCIe) are known and sit on the controller.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pilot_sys.topology.components import (
    Component,
    ComponentKind,
    Discovery,
    Limit,
    LimitSource,
    Link,
)
from pilot_sys.topology.linkspeed import sas_limit, sata_limit
from pilot_sys.topology.routes import lookup, read_routes
from pilot_sys.topology.sysfs_paths import pci_parent
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "block"

QUEUE_ATTRS = (
    "rotational",
    "max_sectors_kb",
    "max_hw_sectors_kb",
    "nr_requests",
    "logical_block_size",
    "physical_block_size",
    "scheduler",
    "write_cache",
)
_ATA = re.compile(r"^ata(\d+)$")
_NVME_CTRL = re.compile(r"^nvme\d+$")
_ADDR_FIELD = re.compile(r"traddr=([^,\s]+)")


def _link_pair(parent: str, child: str, capacity: Limit | None = None) -> list[Link]:
    extra = {"capacity": capacity} if capacity is not None else {}
    return [
        Link(source=parent, target=child, direction="write", **extra),
        Link(source=child, target=parent, direction="read", **extra),
    ]


def _unknown_rw(detail: str) -> dict[str, Limit]:
    return {"read": Limit(detail=detail), "write": Limit(detail=detail)}


@dataclass
class _Device:
    """What the role handlers fill in for one block device."""

    name: str
    base: str
    sys_path: str
    entries: set[str]
    slaves: list[str]
    attrs: dict[str, object]
    limits: dict[str, Limit]
    warnings: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"block:{self.name}"


class _BlockScan:
    """One pass over /sys/class/block; controllers are shared between namespaces/disks."""

    def __init__(self, root: SysRoot) -> None:
        self.root = root
        self.components: dict[str, Component] = {}
        self.links: list[Link] = []
        self._routes = None

    def add(self, component: Component) -> None:
        self.components.setdefault(component.id, component)

    def nvme_controller(self, ctrl: str, parent_sys_path: str) -> str:
        root = self.root
        base = f"/sys/class/nvme/{ctrl}"
        transport = root.read(f"{base}/transport")
        address = root.read(f"{base}/address")
        cid = f"controller:{ctrl}"
        if cid in self.components:
            return cid
        attrs = {
            "type": "nvme",
            "transport": transport,
            "fabrics": transport not in (None, "pcie"),
            "address": address,
            "model": root.read(f"{base}/model"),
            "firmware": root.read(f"{base}/firmware_rev"),
            "state": root.read(f"{base}/state"),
        }
        limits = _unknown_rw(
            "NVMe controllers report no throughput rating; "
            + (
                "the PCIe link bounds it"
                if transport in (None, "pcie")
                else "the network path bounds it"
            )
        )
        self.add(
            Component(id=cid, kind=ComponentKind.CONTROLLER, name=ctrl, limits=limits, attrs=attrs)
        )
        if transport == "pcie" or transport is None:
            pci = pci_parent(root.realpath(f"{base}") if root.exists(base) else parent_sys_path)
            upstream = f"pci:{pci}" if pci else "memory:host"
            self.links += [
                Link(source=upstream, target=cid, direction="down"),
                Link(source=cid, target=upstream, direction="up"),
            ]
        else:
            self._fabrics_upstream(cid, transport, address)
        return cid

    def _fabrics_upstream(self, cid: str, transport: str, address: str | None) -> None:
        """NVMe over TCP/RDMA: the controller sits behind the network, reached via the routing
        NIC."""
        match = _ADDR_FIELD.search(address or "")
        if match is None:
            self.links += _link_pair("memory:host", cid)
            return
        target = match.group(1)
        if self._routes is None:
            self._routes = read_routes(self.root)
        route = lookup(self._routes, target)
        remote = f"remote:{target}"
        self.add(
            Component(
                id=remote,
                kind=ComponentKind.REMOTE,
                name=target,
                limits=_unknown_rw("remote host: add its rating with --load"),
                attrs={"role": f"nvme-{transport} target"},
            )
        )
        upstream = (
            "memory:host"
            if route is None
            else ("nic:lo" if route.interface == "lo" else f"network:{route.interface}")
        )
        self.links += [
            Link(source=upstream, target=remote, direction="send"),
            Link(source=remote, target=upstream, direction="receive"),
        ]
        self.links += _link_pair(remote, cid)

    def storage_controller(self, sys_path: str) -> str | None:
        """SATA port (``ataN``) or SAS port (``port-H:N``) above a disk, with its link rate."""
        root = self.root
        parts = sys_path.split("/")
        for index, part in enumerate(parts):
            ata = _ATA.match(part)
            if ata:
                cid = f"controller:{part}"
                if cid not in self.components:
                    rate = sata_limit(root.read(f"/sys/class/ata_link/link{ata.group(1)}/sata_spd"))
                    self.add(
                        Component(
                            id=cid,
                            kind=ComponentKind.CONTROLLER,
                            name=part,
                            limits={"read": rate, "write": rate},
                            attrs={"type": "sata"},
                        )
                    )
                    self._upstream(cid, "/".join(parts[:index]))
                return cid
            if part.startswith("port-") and ":" in part:
                cid = f"controller:sas-{part}"
                if cid not in self.components:
                    port_dir = "/".join(parts[: index + 1])
                    phys = [n for n in root.listdir(port_dir) if n.startswith("phy-")]
                    rates = [
                        sas_limit(root.read(f"/sys/class/sas_phy/{phy}/negotiated_linkrate"))
                        for phy in phys
                    ]
                    if rates and all(r.known for r in rates):
                        total = Limit(
                            value=sum(r.value or 0.0 for r in rates),
                            source=LimitSource.SYSFS,
                            detail=f"{len(rates)} phy(s): {rates[0].detail}",
                        )
                    else:
                        total = Limit(detail="SAS phy link rate unreadable")
                    self.add(
                        Component(
                            id=cid,
                            kind=ComponentKind.CONTROLLER,
                            name=part,
                            limits={"read": total, "write": total},
                            attrs={"type": "sas", "phys": phys},
                        )
                    )
                    self._upstream(cid, "/".join(parts[:index]))
                return cid
        return None

    def _upstream(self, cid: str, sys_path: str) -> None:
        pci = pci_parent(sys_path)
        upstream = f"pci:{pci}" if pci else "memory:host"
        self.links += [
            Link(source=upstream, target=cid, direction="down"),
            Link(source=cid, target=upstream, direction="up"),
        ]

    def device(self, name: str, sys_path: str) -> None:
        """One entry of /sys/class/block: common attributes, then the handler for its role."""
        root = self.root
        base = f"/sys/class/block/{name}"
        sectors = root.read_int(f"{base}/size")
        if not sectors:
            return  # unused loop/zram/nbd, empty card reader: nothing can flow through it
        entries = set(root.listdir(base))  # one listdir instead of a stat per role test
        dev = _Device(
            name=name,
            base=base,
            sys_path=sys_path,
            entries=entries,
            slaves=root.listdir(f"{base}/slaves") if "slaves" in entries else [],
            attrs={
                "devnum": root.read(f"{base}/dev"),
                "size_bytes": sectors * 512,  # sysfs "size" is always in 512-byte sectors
                "read_only": root.read(f"{base}/ro") == "1",
                "removable": root.read(f"{base}/removable") == "1",
                "sys_path": sys_path,
            },
            limits={
                "capacity": Limit(
                    value=float(sectors * 512),
                    unit="B",
                    source=LimitSource.SYSFS,
                    detail="size x 512",
                ),
                **_unknown_rw("sysfs gives no throughput rating for a disk; add one with --load"),
            },
        )
        if "partition" in entries:
            self._partition(dev)
        else:
            self._queue(dev)
            handler = next((h for key, h in self._roles() if key in entries), None)
            if handler is not None:
                handler(dev)
            elif "/nvme-subsystem/" in sys_path or "/nvme/" in sys_path:
                self._nvme_namespace(dev)
            else:
                self._disk(dev)
        self.add(
            Component(
                id=dev.id,
                kind=ComponentKind.BLOCK,
                name=name,
                limits=dev.limits,
                attrs=dev.attrs,
                warnings=dev.warnings,
            )
        )

    def _roles(self) -> list[tuple[str, Callable[[_Device], None]]]:
        """Which sysfs entry marks which kind of virtual block device."""
        return [
            ("dm", self._dm),
            ("md", self._md),
            ("loop", self._loop),
            ("comp_algorithm", self._zram),
        ]

    def _partition(self, dev: _Device) -> None:
        # partitions sit inside their disk's directory
        disk = dev.sys_path.rstrip("/").split("/")[-2]
        dev.attrs.update(
            role="partition", disk=disk, partition=self.root.read_int(f"{dev.base}/partition")
        )
        dev.limits.update(_unknown_rw(f"a partition carries what its disk {disk} carries"))
        self.links += _link_pair(f"block:{disk}", dev.id)

    def _queue(self, dev: _Device) -> None:
        """Request-queue limits and the model: whole devices only (partitions share the disk's)."""
        for key in QUEUE_ATTRS:
            text = self.root.read(f"{dev.base}/queue/{key}")
            if text is not None:
                dev.attrs[key] = int(text) if text.isdigit() else text
        scheduler = dev.attrs.get("scheduler")
        if (
            isinstance(scheduler, str) and "[" in scheduler
        ):  # "none [mq-deadline] kyber": the active one
            dev.attrs["scheduler"] = scheduler.split("[", 1)[1].split("]", 1)[0]
        if "rotational" in dev.attrs:
            dev.attrs["rotational"] = dev.attrs["rotational"] == 1
        model = self.root.read(f"{dev.base}/device/model") if "device" in dev.entries else None
        if model:
            dev.attrs["model"] = model

    def _dm(self, dev: _Device) -> None:
        uuid = self.root.read(f"{dev.base}/dm/uuid") or ""
        # "LVM-...", "CRYPT-LUKS2-..."
        target = uuid.split("-", 1)[0].lower() if "-" in uuid else "dm"
        dev.attrs.update(
            role="dm",
            dm_name=self.root.read(f"{dev.base}/dm/name"),
            dm_uuid=uuid,
            dm_target={"lvm": "lvm", "crypt": "crypt", "mpath": "multipath"}.get(target, target),
            slaves=dev.slaves,
        )
        dev.limits.update(
            _unknown_rw("device-mapper: limited by its slaves " + ", ".join(dev.slaves))
        )
        for slave in dev.slaves:
            self.links += _link_pair(f"block:{slave}", dev.id)

    def _md(self, dev: _Device) -> None:
        md = f"{dev.base}/md"
        members = dev.slaves or sorted(n[4:] for n in self.root.listdir(md) if n.startswith("dev-"))
        dev.attrs.update(
            role="md",
            level=self.root.read(f"{md}/level"),
            raid_disks=self.root.read_int(f"{md}/raid_disks"),
            chunk_size=self.root.read_int(f"{md}/chunk_size"),
            array_state=self.root.read(f"{md}/array_state"),
            degraded=self.root.read_int(f"{md}/degraded"),
            members=members,
        )
        dev.limits.update(
            _unknown_rw(f"md {dev.attrs['level']}: limited by its members " + ", ".join(members))
        )
        if dev.attrs["degraded"]:
            dev.warnings.append(f"md array degraded: {dev.attrs['degraded']} member(s) missing")
        for member in members:
            self.links += _link_pair(f"block:{member}", dev.id)

    def _loop(self, dev: _Device) -> None:
        """The backing file's mount links to the loop device (mounts plug-in), not done here."""
        backing = (self.root.read(f"{dev.base}/loop/backing_file") or "").removesuffix(" (deleted)")
        dev.attrs.update(
            role="loop",
            backing_file=backing or None,
            offset=self.root.read_int(f"{dev.base}/loop/offset"),
        )
        dev.limits.update(_unknown_rw("loop: limited by the device holding its backing file"))

    def _zram(self, dev: _Device) -> None:
        dev.attrs.update(
            role="zram",
            comp_algorithm=self.root.read(f"{dev.base}/comp_algorithm"),
            memory_backed=True,
        )
        dev.limits.update(
            _unknown_rw("zram: memory-backed, limited by memory and CPU (compression)")
        )
        self.links += _link_pair("memory:host", dev.id)

    def _nvme_namespace(self, dev: _Device) -> None:
        ctrls = self._nvme_controllers(dev.sys_path)
        dev.attrs.update(role="disk", nvme=True, controllers=ctrls)
        for ctrl in ctrls:
            self.links += _link_pair(self.nvme_controller(ctrl, dev.sys_path), dev.id)
        if not ctrls:
            self.links += _link_pair("memory:host", dev.id)

    def _disk(self, dev: _Device) -> None:
        """A disk behind a SATA/SAS port, another PCI device (virtio, USB), or none (ram, nbd)."""
        dev.attrs["role"] = "disk"
        controller = self.storage_controller(dev.sys_path)
        pci = pci_parent(dev.sys_path)
        if controller is not None:
            self.links += _link_pair(
                controller, dev.id, self.components[controller].limits["write"]
            )
        elif pci is not None:
            self.links += _link_pair(f"pci:{pci}", dev.id)
        else:
            dev.attrs["memory_backed"] = dev.name.startswith("ram")
            self.links += _link_pair("memory:host", dev.id)

    def _nvme_controllers(self, sys_path: str) -> list[str]:
        parts = sys_path.split("/")
        if "nvme-subsystem" in parts:  # native multipath: every controller of the subsystem
            subsystem = parts[parts.index("nvme-subsystem") + 1]
            return [
                n
                for n in self.root.listdir(f"/sys/class/nvme-subsystem/{subsystem}")
                if _NVME_CTRL.match(n)
            ]
        return [parts[parts.index("nvme") + 1]] if "nvme" in parts else []


def discover(root: SysRoot) -> Discovery:
    scan = _BlockScan(root)
    for name, sys_path in root.class_devices("block"):
        scan.device(name, sys_path)
    return Discovery(plugin=NAME, components=list(scan.components.values()), links=scan.links)
