"""A remote host's GPUs as its engine reports them (NVIDIA's dcgm-exporter, seen through
Prometheus), and the ``accelerator:HOST/<bus id>`` components they become: the local
accelerator's id with the host part in front, hung below the host's memory as a local GPU hangs
below its PCI function (its PCIe link is the way in and out).

Limits are those the exporter states and nothing more: the PCIe link at its maximum generation
and width (``DCGM_FI_DEV_PCIE_MAX_LINK_GEN``/``_WIDTH``; else the generation and width it ran at
when asked, said so; else unknown), device memory (used + free + reserved framebuffer), the
power limit (``DCGM_FI_DEV_POWER_MGMT_LIMIT`` or the enforced one) and the SM clock ceiling
(``DCGM_FI_DEV_MAX_SM_CLOCK``) where exported; ``compute``, ``tensor`` and ``memory_bandwidth``
are shares of the device's own peak (DCGM's profiling ratios), as for a local GPU with GPM.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource, Link
from pilot_sys.topology.linkspeed import pcie_bandwidth

#: PCIe generation -> GT/s (PCI-SIG base specifications 1.0 to 6.0)
PCIE_GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


class RemoteGpu(BaseModel):
    """One GPU of a remote host; ``None``: the exporter does not say."""

    address: str  # the PCI bus id as sysfs writes it (0000:00:06.0)
    model: str | None = None
    uuid: str | None = None
    index: str | None = None  # dcgm-exporter's ``gpu`` label
    memory_total: float | None = None  # bytes
    power_limit_w: float | None = None
    power_limit_field: str | None = None
    max_sm_clock_hz: float | None = None
    max_link_gen: int | None = None
    max_link_width: int | None = None
    link_gen: int | None = None  # the generation and width it ran at when asked
    link_width: int | None = None
    profiling: bool = False  # DCGM's profiling (DCP) ratios exported: SM, tensor, DRAM activity
    compute_signal: str = "DCGM_FI_DEV_GPU_UTIL (time a kernel ran: not saturation)"
    pcie_signal: str | None = None  # the family the PCIe throughput is read from, or None
    unknown: list[str] = Field(default_factory=list)  # what the exporter does not report


def gpu_id(host: str, address: str) -> str:
    return f"accelerator:{host}/{address}"


def pcie_rate(gen: int | None, width: int | None) -> float | None:
    """Bytes/s per direction of a PCIe link (None where either is unknown)."""
    gts = PCIE_GEN_GTS.get(int(gen)) if gen else None
    return pcie_bandwidth(gts, int(width)) if gts and width else None


def _link(gpu: RemoteGpu, source: LimitSource) -> Limit:
    rate = pcie_rate(gpu.max_link_gen, gpu.max_link_width)
    if rate is not None:
        return Limit(
            value=rate,
            source=source,
            detail=f"PCIe gen {gpu.max_link_gen} x{gpu.max_link_width}, its maximum "
            "(DCGM_FI_DEV_PCIE_MAX_LINK_GEN/WIDTH); judged against the rate it ran at",
        )
    rate = pcie_rate(gpu.link_gen, gpu.link_width)
    if rate is not None:
        return Limit(
            value=rate,
            source=source,
            detail=f"PCIe gen {gpu.link_gen} x{gpu.link_width} as it ran when asked "
            "(DCGM_FI_DEV_PCIE_LINK_GEN/WIDTH; its maximum is not exported)",
        )
    return Limit(
        detail="the exporter reports no PCIe link generation or width "
        "(DCGM_FI_DEV_PCIE_LINK_GEN/WIDTH): the link's rate is unknown"
    )


def gpu_component(host: str, gpu: RemoteGpu, source: LimitSource) -> Component:
    share = "a share of the device's own peak (DCGM profiling ratio)"
    no_profiling = "DCGM's profiling metrics are not exported: unknown"
    limits = {
        "send": _link(gpu, source),
        "receive": _link(gpu, source),
        "compute": Limit(
            value=1.0,
            unit="",
            source=source,
            detail=f"every SM active (DCGM_FI_PROF_SM_ACTIVE, {share})"
            if gpu.profiling
            else "a kernel running all the time (DCGM_FI_DEV_GPU_UTIL: not saturation)",
        ),
        "tensor": Limit(value=1.0, unit="", source=source, detail=f"tensor pipes, {share}")
        if gpu.profiling
        else Limit(unit="", detail=no_profiling),
        "memory_bandwidth": Limit(value=1.0, unit="", source=source, detail=f"DRAM, {share}")
        if gpu.profiling
        else Limit(unit="", detail=no_profiling),
        "capacity": Limit(
            value=gpu.memory_total, unit="B", source=source, detail="framebuffer used + free"
        )
        if gpu.memory_total
        else Limit(unit="B", detail="DCGM_FI_DEV_FB_USED/FREE not exported"),
        "power": Limit(
            value=gpu.power_limit_w, unit="W", source=source, detail=str(gpu.power_limit_field)
        )
        if gpu.power_limit_w
        else Limit(
            unit="W",
            detail="no power limit exported (DCGM_FI_DEV_POWER_MGMT_LIMIT or "
            "DCGM_FI_DEV_ENFORCED_POWER_LIMIT): unknown",
        ),
        "clock": Limit(
            value=gpu.max_sm_clock_hz, unit="Hz", source=source, detail="DCGM_FI_DEV_MAX_SM_CLOCK"
        )
        if gpu.max_sm_clock_hz
        else Limit(unit="Hz", detail="DCGM_FI_DEV_MAX_SM_CLOCK not exported: unknown"),
    }
    attrs: dict[str, Any] = {
        "host": host,
        "vendor": "NVIDIA",
        "model": gpu.model,
        "uuid": gpu.uuid,
        "gpu_index": gpu.index,
        "gpm": gpu.profiling,  # the verdict's name for "activity shares of the device's peak"
        "compute_signal": gpu.compute_signal,
        "pcie_signal": gpu.pcie_signal,
        "power_limit_w": gpu.power_limit_w,
        "max_sm_clock_hz": gpu.max_sm_clock_hz,
        "max_link_generation": gpu.max_link_gen,
        "max_link_width": gpu.max_link_width,
        "unknown": list(gpu.unknown),
    }
    return Component(
        id=gpu_id(host, gpu.address),
        kind=ComponentKind.ACCELERATOR,
        name=f"{host} {gpu.model or 'NVIDIA GPU'} {gpu.address}",
        limits=limits,
        attrs=attrs,
    )


def gpu_parts(
    host: str, gpus: list[RemoteGpu], memory: str, source: LimitSource
) -> tuple[list[Component], list[Link]]:
    """The GPUs' components and their links to the host's ``memory`` (down: host to device)."""
    components, links = [], []
    for gpu in gpus:
        component = gpu_component(host, gpu, source)
        components.append(component)
        link = component.limits["receive"]
        links.append(Link(source=memory, target=component.id, direction="down", capacity=link))
        links.append(Link(source=component.id, target=memory, direction="up", capacity=link))
    return components, links
