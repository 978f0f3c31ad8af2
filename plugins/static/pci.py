"""Static plug-in: PCI(e) devices and their upstream links. A link's per-direction bandwidth is
GT/s x encoding efficiency x width / 8 at the *current* (trained) speed and width; a link trained
below its maximum is a component warning, since it silently caps every device behind it."""

from __future__ import annotations

import os

from pilot_sys.topology.components import Component, ComponentKind, Discovery, Limit, Link
from pilot_sys.topology.humanize import format_value
from pilot_sys.topology.linkspeed import parse_gts, pcie_limit
from pilot_sys.topology.sysfs_paths import PCI_ADDRESS
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "pci"

BASE_CLASSES = {
    0x00: "unclassified",
    0x01: "storage",
    0x02: "network",
    0x03: "display",
    0x04: "multimedia",
    0x05: "memory",
    0x06: "bridge",
    0x07: "communication",
    0x08: "system",
    0x0C: "serial bus",
    0x0D: "wireless",
    0x11: "signal processing",
    0x12: "accelerator",
    0xFF: "unassigned",
}


#: classes whose links drop speed when idle (GPUs): trained below the maximum at discovery is
#: no finding for them
IDLE_DOWNTRAINING = ("display", "accelerator")


def discover(root: SysRoot) -> Discovery:
    components: list[Component] = []
    links: list[Link] = []
    for address, sys_path in root.class_devices("pci"):
        base = f"/sys/bus/pci/devices/{address}"
        class_code = root.read_int(f"{base}/class", 16)
        class_name = (
            BASE_CLASSES.get((class_code or 0) >> 16, "other")
            if class_code is not None
            else "unknown"
        )
        cur_gts = parse_gts(root.read(f"{base}/current_link_speed"))
        max_gts = parse_gts(root.read(f"{base}/max_link_speed"))
        cur_width = root.read_int(f"{base}/current_link_width")
        max_width = root.read_int(f"{base}/max_link_width")
        attrs: dict[str, object] = {
            "class": f"0x{class_code:06x}" if class_code is not None else None,
            "class_name": class_name,
            "vendor": root.read(f"{base}/vendor"),
            "device": root.read(f"{base}/device"),
            "driver": root.link_name(f"{base}/driver"),
            "numa_node": root.read_int(f"{base}/numa_node"),
            "current_link_speed_gts": cur_gts,
            "current_link_width": cur_width,
            "max_link_speed_gts": max_gts,
            "max_link_width": max_width,
            "sys_path": sys_path,
        }
        warnings: list[str] = []
        limits = {}
        is_pcie = cur_gts is not None or root.exists(f"{base}/current_link_speed")
        attrs["pcie"] = is_pcie
        if is_pcie:
            current = pcie_limit(cur_gts, cur_width)
            limits = {"send": current, "receive": current}
            below = bool(
                cur_gts
                and max_gts
                and cur_width
                and max_width
                and (cur_gts < max_gts or cur_width < max_width)
            )
            if below and class_name in IDLE_DOWNTRAINING:
                # a GPU lowers its link speed when idle: only a link slow under load is a
                # finding (the GPU plug-in makes it); here it is an attribute
                attrs["link_below_max_at_discovery"] = True
            elif below:
                best = pcie_limit(max_gts, max_width)
                warnings.append(
                    f"PCIe link trained below its maximum: {cur_gts:g} GT/s x{cur_width} of "
                    f"{max_gts:g} GT/s x{max_width} "
                    f"({format_value(current.value or 0.0, 'B/s')} of "
                    f"{format_value(best.value or 0.0, 'B/s')} per direction)"
                )
        else:
            unknown = Limit(
                detail="no PCIe link speed in sysfs: conventional PCI or an emulated device"
            )
            limits = {"send": unknown, "receive": unknown}
        components.append(
            Component(
                id=f"pci:{address}",
                kind=ComponentKind.PCI,
                name=address,
                limits=limits,
                attrs=attrs,
                warnings=warnings,
            )
        )
        parent_name = os.path.basename(os.path.dirname(sys_path))
        parent = f"pci:{parent_name}" if PCI_ADDRESS.match(parent_name) else "memory:host"
        links.append(
            Link(
                source=parent, target=f"pci:{address}", direction="down", capacity=limits["receive"]
            )
        )
        links.append(
            Link(source=f"pci:{address}", target=parent, direction="up", capacity=limits["send"])
        )
    return Discovery(plugin=NAME, components=components, links=links)
