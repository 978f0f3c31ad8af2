"""The shared vocabulary of the component data-link graph.

Static plug-ins produce these models, the graph stores them as node and edge attributes,
dynamic plug-ins and the bottleneck detector refer to components by ``Component.id``.

Component ids are ``<kind>:<name>``, e.g. ``cpu:host``, ``core:0``, ``memory:node0``,
``pci:0000:00:04.0``, ``block:vda``, ``block:vda1``, ``block:dm-0``, ``mount:/``,
``nic:eth0``, ``network:eth0``, ``remote:10.0.0.5``.
Units are SI base units: bytes/second for bandwidth, operations/second for IOPS, Hz.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ComponentKind(StrEnum):
    HOST = "host"
    CPU = "cpu"  # a package/socket or the whole CPU complex
    CORE = "core"
    NUMA = "numa"
    MEMORY = "memory"
    PCI = "pci"  # a PCI(e) device or bridge with its upstream link
    CONTROLLER = "controller"  # storage controller, NVMe controller, SCSI host
    BLOCK = "block"  # disk, partition, dm, md, loop, zram
    MOUNT = "mount"  # a mounted file system
    NIC = "nic"
    NETWORK = "network"  # the wire/fabric beyond a NIC
    REMOTE = "remote"  # a remote host (NFS server, iperf3 peer)
    OTHER = "other"


class LimitSource(StrEnum):
    """Where a theoretical limit came from; every number shown to a user names its source."""

    SYSFS = "sysfs"  # e.g. PCIe current_link_speed x width, NIC speed
    DMI = "dmi"
    PROBE = "probe"  # measured by a short probe on this machine
    USER = "user"  # a user-designated graph
    DERIVED = "derived"  # computed from other limits (e.g. the sum of members)
    NODE_EXPORTER = "node_exporter"  # a remote host's inventory as its node_exporter reports it
    PCP = "pcp"  # a remote host's inventory through PCP's pmproxy
    UNKNOWN = "unknown"


class Limit(BaseModel):
    """A theoretical capacity. ``value`` is None when unknown: never invent a number."""

    model_config = ConfigDict(frozen=True)

    value: float | None = None
    unit: str = "B/s"
    source: LimitSource = LimitSource.UNKNOWN
    detail: str = ""  # e.g. "8.0 GT/s x4, 128b/130b" or "speed reads -1"

    @property
    def known(self) -> bool:
        return self.value is not None and self.source != LimitSource.UNKNOWN


UNKNOWN_LIMIT = Limit()


class Component(BaseModel):
    """A node of the graph. ``limits`` keys name directions or resources:
    ``read``/``write`` (storage), ``send``/``receive`` (network, PCIe upstream/downstream),
    ``iops_read``/``iops_write``, ``compute`` (CPU, in cores), ``capacity`` (bytes)."""

    id: str
    kind: ComponentKind
    name: str
    limits: dict[str, Limit] = Field(default_factory=dict)
    attrs: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class Link(BaseModel):
    """One *directed* data link. Every physical link appears as two Link objects, one per
    direction, each with its own capacity (e.g. host->disk is 'write', disk->host is 'read')."""

    source: str
    target: str
    direction: str  # "read", "write", "send", "receive", "up", "down", "contains"
    capacity: Limit = UNKNOWN_LIMIT
    attrs: dict[str, Any] = Field(default_factory=dict)


class Discovery(BaseModel):
    """What one static plug-in found, and what it could not read (no root, missing files)."""

    plugin: str
    components: list[Component] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    unreadable: list[str] = Field(default_factory=list)
