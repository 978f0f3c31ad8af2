"""What a sysfs device path says about where a device sits: the PCI functions above it.

A device's directory under ``/sys/devices`` is nested below every bus device on its way to the
CPU, e.g. ``/sys/devices/pci0000:00/0000:00:1c.0/0000:02:00.0/nvme/nvme0/nvme0n1``: the root
port ``0000:00:1c.0``, then the NVMe function ``0000:02:00.0``. Static plug-ins (where a disk or
a NIC hangs in the graph) and dynamic ones (which PCIe link carries which device's traffic)
read the same names, so the rule lives here, once.
"""

from __future__ import annotations

import re
from pathlib import Path

# domain:bus:device.function (Documentation/PCI/sysfs-pci.rst); the domain has more than four
# hex digits behind a VMD controller (``10000:00:00.0``)
PCI_ADDRESS = re.compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def pci_parent(sys_path: str) -> str | None:
    """The nearest PCI device above a resolved sysfs device path (``/sys/devices/pci0000:00/
    0000:00:02.0/virtio1/block/vda`` -> ``0000:00:02.0``), or None for virtual devices."""
    for part in reversed(sys_path.split("/")):
        if PCI_ADDRESS.match(part):
            return part
    return None


def pci_ancestors(sys_path: Path) -> list[str]:
    """Every PCI address on a sysfs device path (resolved here), root port first; empty when
    the path cannot be resolved or the device is virtual."""
    try:
        parts = sys_path.resolve().parts
    except OSError:
        return []
    return [p for p in parts if PCI_ADDRESS.match(p)]
