"""The shared vocabulary of the component data-link graph.

Static plug-ins produce these models, the graph stores them as node and edge attributes,
dynamic plug-ins and the bottleneck detector refer to components by ``Component.id``.

Component ids are ``<kind>:<name>``, e.g. ``cpu:host``, ``core:0``, ``memory:node0``,
``pci:0000:00:04.0``, ``block:vda``, ``block:vda1``, ``block:dm-0``, ``mount:/``,
``nic:eth0``, ``network:eth0``, ``remote:10.0.0.5``, ``accelerator:0000:3b:00.0``; limits the
kernel imposes on a workload are components too (``cgroup:/bench/cpu``, ``cgroup:/bench/io:vda``,
``qdisc:eth0``, ``cpufreq:host``), linked to what they limit by a ``limits`` link (see
``topology/effective.py``). A kind is one line of ``ComponentKind``; everything that shows kinds
(the picture's colours, the terminal tree's styles) has a default for a kind it does not list.
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
    ACCELERATOR = "accelerator"  # a GPU or another compute accelerator with its own memory
    CGROUP = "cgroup"  # a cgroup's CPU quota or cpuset, memory limit, or I/O throttle on one device
    QDISC = "qdisc"  # the egress traffic shaping of one NIC (tbf, htb, cake, netem rate)
    CPUFREQ = "cpufreq"  # a CPU frequency cap below the hardware maximum
    OTHER = "other"


class LimitSource(StrEnum):
    """Where a theoretical limit came from; every number shown to a user names its source."""

    SYSFS = "sysfs"  # e.g. PCIe current_link_speed x width, NIC speed
    DMI = "dmi"
    PROBE = "probe"  # measured by a short probe on this machine
    USER = "user"  # a user-designated graph
    DERIVED = "derived"  # computed from other limits (e.g. the sum of members)
    CGROUP = "cgroup"  # a cgroup limit file (cpu.max, io.max, memory.max and their v1 names)
    QDISC = "qdisc"  # a traffic-shaping queueing discipline's rate, read over netlink
    CPUFREQ = "cpufreq"  # cpufreq sysfs (cpuinfo_max_freq, scaling_max_freq)
    NODE_EXPORTER = "node_exporter"  # a remote host's inventory as its node_exporter reports it
    PCP = "pcp"  # a remote host's inventory through PCP's pmproxy
    NVML = "nvml"  # NVIDIA's management library (nvidia-ml-py), asked on the live machine
    AMDGPU = "amdgpu"  # the amdgpu driver's sysfs files (mem_info_vram_total, power1_cap)
    DCGM = "dcgm"  # a remote host's GPUs as NVIDIA's dcgm-exporter reports them
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
