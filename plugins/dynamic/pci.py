"""PCIe links: the sum of the traffic of the devices below a link against its capacity.

Counters: none of its own. A PCIe link carries whatever its child devices move, so this plug-in
reads nothing on the tick and derives from the block and net plug-ins' metrics. Which devices
sit below which PCI function comes from sysfs, once: the resolved path of
``/sys/class/block/<dev>`` or ``/sys/class/net/<if>`` names every PCI address from the root
port down (``/sys/devices/pci0000:00/0000:00:1c.0/0000:02:00.0/nvme/nvme0/nvme0n1``), and each of
those links carries the device's traffic.

Formulas, per PCI function (``pci:<address>``), direction as the static PCI plug-in states it
(``send`` = device to host, ``receive`` = host to device):

* ``send_bytes_per_s`` = sum over child disks of ``read_bytes_per_s`` + over child NICs of
  ``rx_bytes_per_s``; ``receive_bytes_per_s`` = disks' ``write_bytes_per_s`` + NICs'
  ``tx_bytes_per_s``.
* ``util_send`` / ``util_receive`` = those / the link's stated ``send``/``receive`` limit
  (PCIe current link speed x width, from the graph); absent when unknown (emulated devices).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.rates import utilization
from pilot_sys.topology.sysfs_paths import pci_ancestors

KIND = "dynamic"
NAME = "pci"


class PciProbe(Probe):
    name = NAME
    derives_from_metrics = True  # sorted after the block and net plug-ins

    def __init__(self, context: ProbeContext, children: dict[str, list[str]]) -> None:
        super().__init__()
        self.children = children  # "pci:<addr>" -> ["block:vda", "nic:eth0", ...]
        self.unmeasured: dict[str, list[str]] = {}  # children no other plug-in sampled
        self.columns = ()
        self.readers = []
        for pci in children:
            for direction in ("send", "receive"):
                self.limits[f"{pci}/{direction}"] = context.limit(pci, direction)

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        self.unmeasured = {}
        for pci, kids in self.children.items():
            send, receive = np.zeros(len(t)), np.zeros(len(t))
            for kid in kids:
                up, down = (
                    ("read_bytes_per_s", "write_bytes_per_s")
                    if kid.startswith("block:")
                    else ("rx_bytes_per_s", "tx_bytes_per_s")
                )
                if f"{kid}/{up}" not in metrics:
                    # not sampled (filtered out): the sum is a lower bound, and says so in attrs
                    self.unmeasured.setdefault(pci, []).append(kid)
                    continue
                send = send + metrics[f"{kid}/{up}"]
                receive = receive + metrics[f"{kid}/{down}"]
            out[f"{pci}/send_bytes_per_s"] = send
            out[f"{pci}/receive_bytes_per_s"] = receive
            for direction, rate in (("send", send), ("receive", receive)):
                util = utilization(rate, self.limits[f"{pci}/{direction}"])
                if util is not None:
                    out[f"{pci}/util_{direction}"] = util
        return out

    def attrs(self) -> dict[str, dict[str, object]]:
        return {
            pci: {"children": kids, "unmeasured_children": self.unmeasured.get(pci, [])}
            for pci, kids in self.children.items()
        }


def open_probe(context: ProbeContext) -> PciProbe | None:
    children: dict[str, list[str]] = {}
    devices: list[tuple[str, Path]] = []
    block_dir = context.path("sys", "class", "block")
    net_dir = context.path("sys", "class", "net")
    for kind, folder in (("block", block_dir), ("nic", net_dir)):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        devices += [(f"{kind}:{e.name}", e) for e in entries]
    for component, path in devices:
        if (path / "partition").exists():
            continue  # a partition's traffic is already its disk's
        for address in pci_ancestors(path):
            pci = f"pci:{address}"
            if context.wants(pci) or (
                context.components is not None and component in context.components
            ):
                children.setdefault(pci, []).append(component)
    return PciProbe(context, children) if children else None
