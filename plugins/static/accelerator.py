"""Static plug-in: GPUs and other accelerators as ``accelerator:<bus id>`` components below their
PCI function, with what limits each and where that came from.

Found in sysfs (a PCI function of class display (0x03) or processing accelerator (0x12) from a
GPU vendor), so a captured tree shows them too; then, on the live machine:

* NVIDIA through NVML (``pilot_sys.topology.nvml``; nvidia-ml-py imported only when an NVIDIA
  function is present or the driver's ``/proc/driver/nvidia`` is): memory capacity, enforced
  power limit, SM clock ceiling, PCIe maximum generation and width (the link's rate where
  sysfs does not show the function, as in containers), NUMA node, NVLink links;
* AMD through amdgpu's sysfs files in the PCI function's directory
  (Documentation/gpu/amdgpu/driver-misc.rst, thermal.rst): ``mem_info_vram_total``,
  ``hwmon/hwmon*/power1_cap`` (microwatts), ``pp_dpm_sclk`` (the highest level is the clock
  ceiling), ``product_name``.

Limits: ``send``/``receive`` (its PCIe link at the link's *maximum* generation and width: a GPU
lowers its link speed when idle, so the rate sysfs shows at discovery is not the one it works
at; the monitor judges traffic against the rate the link runs at in each sample), ``capacity``
(bytes), ``power`` (W), ``clock`` (Hz), ``compute`` and ``memory_bandwidth`` (unknown: neither
sysfs nor NVML states a peak, and a bus width x clock guess depends on the memory's signalling;
the monitor judges both by GPM's activity shares, fractions of the device's own peak), and
``nvlink`` where links are active (unknown rate). Where the link is below its maximum at
discovery, that is an attribute here, not a warning: only a link slow *under load* is a finding
(the GPU plug-in makes it).
"""

from __future__ import annotations

import re
from typing import Any

from pilot_sys.topology import nvml
from pilot_sys.topology.components import (
    Component,
    ComponentKind,
    Discovery,
    Limit,
    LimitSource,
    Link,
)
from pilot_sys.topology.cpulist import parse_cpulist
from pilot_sys.topology.linkspeed import parse_gts, pcie_bandwidth, pcie_encoding
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "accelerator"

GPU_CLASSES = (0x03, 0x12)  # display controller, processing accelerator (PCI code and ID spec)
VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD", "0x8086": "Intel"}
NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS
_MHZ = re.compile(r"(\d+)\s*Mhz", re.IGNORECASE)


def discover(root: SysRoot) -> Discovery:
    gpus = _pci_gpus(root)
    unreadable: list[str] = []
    nvidia = [a for a, info in gpus.items() if info["vendor"] == "NVIDIA"]
    handles: dict[str, Any] = {}
    library = None
    driver = root.live and root.exists("/proc/driver/nvidia/gpus")  # a container hides sysfs
    if nvidia or driver or nvml.replaced_active():
        library, why = nvml.load(root.root)
        if library is None:
            unreadable.append(f"NVIDIA GPU {', '.join(nvidia) or '?'}: {why}")
        else:
            handles = dict(nvml.devices(library))
    components: list[Component] = []
    links: list[Link] = []
    for address in sorted(set(gpus) | set(handles)):
        info = gpus.get(address, {"vendor": "NVIDIA", "in_sysfs": False})
        component = _component(root, address, info)
        if address in handles:
            _from_nvml(library, handles[address], component)
        elif info["vendor"] == "AMD":
            _from_amdgpu(root, address, component)
        components.append(component)
        inside = Limit(detail="its PCIe link: the accelerator's send/receive limits")
        parent = f"pci:{address}" if info.get("in_sysfs", True) else "memory:host"
        links.append(Link(source=parent, target=component.id, direction="down", capacity=inside))
        links.append(Link(source=component.id, target=parent, direction="up", capacity=inside))
    return Discovery(plugin=NAME, components=components, links=links, unreadable=unreadable)


def _pci_gpus(root: SysRoot) -> dict[str, dict[str, Any]]:
    found = {}
    for address, _ in root.class_devices("pci"):
        base = f"/sys/bus/pci/devices/{address}"
        code = root.read_int(f"{base}/class", 16)
        vendor = VENDORS.get((root.read(f"{base}/vendor") or "").lower())
        if code is None or code >> 16 not in GPU_CLASSES or vendor is None:
            continue
        found[address] = {"vendor": vendor, "base": base, "in_sysfs": True}
    return found


def _link(gts: float | None, width: int | None, source: LimitSource, detail: str) -> Limit:
    if not gts or not width:
        return Limit(detail="PCIe link speed or width unreadable")
    _, encoding = pcie_encoding(gts)
    return Limit(
        value=pcie_bandwidth(gts, width),
        source=source,
        detail=f"PCIe {gts:g} GT/s x{width}, {encoding}{detail}",
    )


def _component(root: SysRoot, address: str, info: dict[str, Any]) -> Component:
    base = info.get("base", f"/sys/bus/pci/devices/{address}")
    cur_gts = parse_gts(root.read(f"{base}/current_link_speed"))
    max_gts = parse_gts(root.read(f"{base}/max_link_speed"))
    cur_width = root.read_int(f"{base}/current_link_width")
    max_width = root.read_int(f"{base}/max_link_width")
    numa = root.read_int(f"{base}/numa_node")
    cpulist = root.read(f"{base}/local_cpulist")
    model = _nvidia_model(root, address) if info["vendor"] == "NVIDIA" else None
    if info["vendor"] == "AMD":
        model = root.read(f"{base}/product_name")
    attrs: dict[str, Any] = {
        "vendor": info["vendor"],
        "model": model,
        "driver": root.link_name(f"{base}/driver"),
        "numa_node": numa if numa is not None and numa >= 0 else None,
        "local_cpus": parse_cpulist(cpulist) if cpulist else None,
        "current_link_speed_gts": cur_gts,
        "current_link_width": cur_width,
        "max_link_speed_gts": max_gts,
        "max_link_width": max_width,
        "link_source": "sysfs" if max_gts else None,
    }
    at_discovery = (
        f"; {cur_gts:g} GT/s x{cur_width} at discovery (an idle GPU lowers its link speed)"
        if cur_gts and cur_width and (cur_gts, cur_width) != (max_gts, max_width)
        else ""
    )
    link = _link(max_gts, max_width, LimitSource.SYSFS, f", its maximum{at_discovery}")
    unknown = "no peak is stated; judged by its share of the device's own peak"
    limits = {
        "send": link,
        "receive": link,
        "compute": Limit(unit="", detail=f"{unknown}: GPM SM and tensor activity"),
        "memory_bandwidth": Limit(detail=f"{unknown}: GPM DRAM bandwidth utilization"),
        "capacity": Limit(unit="B", detail="device memory unknown without NVML or amdgpu"),
        "power": Limit(unit="W", detail="power limit unknown without NVML or amdgpu"),
        "clock": Limit(unit="Hz", detail="clock ceiling unknown without NVML or amdgpu"),
    }
    name = (model or f"{info['vendor']} GPU") + f" {address}"
    return Component(
        id=f"accelerator:{address}",
        kind=ComponentKind.ACCELERATOR,
        name=name,
        limits=limits,
        attrs=attrs,
    )


def _nvidia_model(root: SysRoot, address: str) -> str | None:
    """The driver's ``Model:`` line, readable without NVML (and in a captured tree)."""
    text = root.read(f"/proc/driver/nvidia/gpus/{address}/information") or ""
    for line in text.splitlines():
        if line.startswith("Model:"):
            return line.split(":", 1)[1].strip() or None
    return None


def _from_nvml(library: Any, handle: Any, component: Component) -> None:
    """Fill what NVML states; an answer of "Not Supported" leaves the limit unknown."""
    limits, attrs = component.limits, component.attrs
    source = LimitSource.NVML
    name = nvml.text(nvml.call(library, "nvmlDeviceGetName", handle))
    if name:
        attrs["model"] = name
    memory = nvml.call(library, "nvmlDeviceGetMemoryInfo", handle)
    if getattr(memory, "total", None):
        limits["capacity"] = Limit(
            value=float(memory.total), unit="B", source=source, detail="device memory"
        )
    power = nvml.call(library, "nvmlDeviceGetEnforcedPowerLimit", handle)
    if power:
        limits["power"] = Limit(
            value=power / 1000.0, unit="W", source=source, detail="enforced power limit"
        )
    sm_clock = nvml.call(library, "nvmlDeviceGetMaxClockInfo", handle, library.NVML_CLOCK_SM)
    if sm_clock:
        limits["clock"] = Limit(
            value=sm_clock * 1e6, unit="Hz", source=source, detail="maximum SM clock"
        )
    mem_clock = nvml.call(library, "nvmlDeviceGetMaxClockInfo", handle, library.NVML_CLOCK_MEM)
    attrs["max_memory_clock_hz"] = mem_clock * 1e6 if mem_clock else None
    gen = nvml.call(library, "nvmlDeviceGetMaxPcieLinkGeneration", handle)
    width = nvml.call(library, "nvmlDeviceGetMaxPcieLinkWidth", handle)
    gts = nvml.PCIE_GEN_GTS.get(gen) if gen else None
    attrs["nvml_max_link"] = f"PCIe gen {gen} x{width}" if gen and width else None
    if not limits["send"].known and gts and width:  # sysfs does not show it (a container)
        link = _link(gts, width, source, f", its maximum (NVML: generation {gen})")
        limits["send"] = limits["receive"] = link
        attrs["max_link_speed_gts"], attrs["max_link_width"] = gts, width
        attrs["link_source"] = "nvml"
    numa = nvml.call(library, "nvmlDeviceGetNumaNodeId", handle)
    if numa is not None and numa >= 0:
        attrs["numa_node"] = numa
    active = [
        link
        for link in range(NVLINK_MAX_LINKS)
        if nvml.call(library, "nvmlDeviceGetNvLinkState", handle, link)
    ]
    if active:
        attrs["nvlink_active_links"] = len(active)
        limits["nvlink"] = Limit(
            detail=f"{len(active)} active NVLink links; NVML states no rate for them"
        )
    attrs["gpm_supported"] = bool(
        getattr(nvml.call(library, "nvmlGpmQueryDeviceSupport", handle), "isSupportedDevice", 0)
    )


def _from_amdgpu(root: SysRoot, address: str, component: Component) -> None:
    base = f"/sys/bus/pci/devices/{address}"
    limits, source = component.limits, LimitSource.AMDGPU
    vram = root.read_int(f"{base}/mem_info_vram_total")
    if vram:
        limits["capacity"] = Limit(
            value=float(vram), unit="B", source=source, detail="mem_info_vram_total"
        )
    for hwmon in root.listdir(f"{base}/hwmon"):
        cap = root.read_int(f"{base}/hwmon/{hwmon}/power1_cap")
        if cap:
            limits["power"] = Limit(
                value=cap / 1e6, unit="W", source=source, detail=f"{hwmon}/power1_cap"
            )
            break
    levels = [int(m) for m in _MHZ.findall(root.read(f"{base}/pp_dpm_sclk") or "")]
    if levels:
        limits["clock"] = Limit(
            value=max(levels) * 1e6, unit="Hz", source=source, detail="highest pp_dpm_sclk level"
        )
