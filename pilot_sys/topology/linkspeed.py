"""Theoretical bandwidth of serial links from what sysfs prints, as pure functions.

Each formula names its encoding so a reviewer can audit it: PCIe 1.x/2.x use 8b/10b,
PCIe 3.0-5.0 use 128b/130b, PCIe 6.0+ uses 242B/256B FLIT mode; SATA and SAS up to 6 Gb/s use
8b/10b, SAS-4 (22.5 Gb/s line rate, "24G") uses 128b/150b.
"""

from __future__ import annotations

import re

from pilot_sys.topology.components import Limit, LimitSource

_NUMBER = re.compile(r"([0-9]+(?:\.[0-9]+)?)")


def pcie_encoding(gts: float) -> tuple[float, str]:
    """Encoding efficiency and its name for a PCIe transfer rate in GT/s."""
    if gts <= 5.0:
        return 8 / 10, "8b/10b"
    if gts <= 32.0:
        return 128 / 130, "128b/130b"
    return 242 / 256, "242B/256B FLIT"


def pcie_bandwidth(gts: float, width: int) -> float:
    """Bytes/second per direction: GT/s x encoding efficiency x lanes / 8 bits."""
    efficiency, _ = pcie_encoding(gts)
    return gts * 1e9 * efficiency * width / 8


def parse_gts(text: str | None) -> float | None:
    """``"8.0 GT/s PCIe"`` -> 8.0; ``"2.5 GT/s"`` -> 2.5; ``"Unknown"`` or None -> None."""
    if not text or "GT/s" not in text:
        return None
    match = _NUMBER.search(text)
    return float(match.group(1)) if match else None


def pcie_limit(gts: float | None, width: int | None) -> Limit:
    if not gts or not width:
        return Limit(detail="PCIe link speed or width unreadable")
    _, name = pcie_encoding(gts)
    return Limit(
        value=pcie_bandwidth(gts, width),
        source=LimitSource.SYSFS,
        detail=f"PCIe {gts:g} GT/s x{width}, {name}",
    )


def sata_limit(text: str | None) -> Limit:
    """SATA link (``/sys/class/ata_link/*/sata_spd``: ``"6.0 Gbps"``); 8b/10b line coding."""
    match = _NUMBER.search(text or "")
    if not text or match is None or "<unknown>" in text:
        return Limit(
            detail=f"SATA link speed reads {text!r}" if text else "SATA link speed unreadable"
        )
    gbps = float(match.group(1))
    return Limit(
        value=gbps * 1e9 * 8 / 10 / 8,
        source=LimitSource.SYSFS,
        detail=f"SATA {gbps:g} Gb/s, 8b/10b",
    )


def sas_limit(text: str | None) -> Limit:
    """SAS phy (``/sys/class/sas_phy/*/negotiated_linkrate``: ``"12.0 Gbit"``)."""
    match = _NUMBER.search(text or "")
    if not text or match is None:
        return Limit(detail=f"SAS link rate reads {text!r}" if text else "SAS link rate unreadable")
    gbps = float(match.group(1))
    if gbps > 12.0:  # SAS-4: 22.5 Gb/s line rate with 128b/150b coding
        return Limit(
            value=22.5e9 * 128 / 150 / 8,
            source=LimitSource.SYSFS,
            detail="SAS-4 22.5 Gb/s, 128b/150b",
        )
    return Limit(
        value=gbps * 1e9 * 8 / 10 / 8, source=LimitSource.SYSFS, detail=f"SAS {gbps:g} Gb/s, 8b/10b"
    )


def nic_limit(speed_text: str | None, speed_errno: int | None, duplex: str | None) -> Limit:
    """A NIC's per-direction limit from ``speed`` (Mb/s). -1, 0 or unreadable stays unknown."""
    if speed_text is None:
        why = (
            "speed unreadable: no link, or the driver does not report it"
            if speed_errno
            else "no speed file"
        )
        return Limit(detail=why)
    try:
        mbps = int(speed_text)
    except ValueError:
        return Limit(detail=f"speed reads {speed_text!r}")
    if mbps <= 0 or mbps == 0xFFFFFFFF:
        return Limit(detail=f"speed reads {mbps}")
    detail = f"{mbps} Mb/s, {duplex or 'unknown'} duplex"
    if duplex == "half":
        detail += " (send and receive share the medium)"
    return Limit(value=mbps * 1e6 / 8, source=LimitSource.SYSFS, detail=detail)
