"""Network interfaces: receive/send throughput against the link speed per direction, packets,
drops and errors.

Counters (``/proc/net/dev``, cumulative; fields after the interface name): 1 rx bytes,
2 rx packets, 3 rx errs, 4 rx drop, 9 tx bytes, 10 tx packets, 11 tx errs, 12 tx drop.

Limits: the graph's ``nic:<if>`` ``receive``/``send`` limits; without a graph,
``/sys/class/net/<if>/speed`` (Mb/s, read once; -1 or unreadable on virtual NICs: unknown).
``/sys/class/net/<if>/duplex``: on a full-duplex link each direction has the whole speed; on a
half-duplex link both directions share it.

Formulas:

* ``rx_bytes_per_s`` = delta(field 1) / delta t; ``tx_bytes_per_s`` from field 9; packets,
  drops and errors per second likewise.
* full duplex: ``util_receive`` = rx B/s / receive limit, ``util_send`` = tx B/s / send limit;
  half duplex: both = (rx + tx) B/s / the shared limit.
* a virtual NIC (VLAN, macvlan, bond member view) with a lower device (``lower_*`` links in
  sysfs): its frames also cross the lower device, so its utilization is taken against the lower
  device's limit and the attribution is recorded in the trace (``attrs``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import LineTable, Wanted, read_text
from pilot_sys.monitor.rates import per_second, utilization
from pilot_sys.topology.components import UNKNOWN_LIMIT, Limit, LimitSource

KIND = "dynamic"
NAME = "net"

FIELDS = {
    "rx_bytes": 1,
    "rx_packets": 2,
    "rx_errors": 3,
    "rx_drops": 4,
    "tx_bytes": 9,
    "tx_packets": 10,
    "tx_errors": 11,
    "tx_drops": 12,
}
HEADER_LINES = 2


def sysfs_speed(root: Path, ifname: str) -> Limit:
    """The link speed sysfs states, in B/s; unknown when it reads -1 or cannot be read."""
    text = read_text(root / "sys" / "class" / "net" / ifname / "speed")
    try:
        mbit = int(text) if text is not None else -1
    except ValueError:
        mbit = -1
    if mbit <= 0:
        detail = f"speed reads {text}" if text is not None else "speed unreadable"
        return Limit(source=LimitSource.UNKNOWN, detail=detail)
    return Limit(value=mbit * 1e6 / 8, unit="B/s", source=LimitSource.SYSFS, detail=f"{mbit} Mb/s")


ARPHRD_LOOPBACK = "772"  # /sys/class/net/IF/type of a loopback interface (linux/if_arp.h)


def lower_devices(root: Path, ifname: str) -> list[str]:
    try:
        return sorted(
            p.name[len("lower_") :]
            for p in (root / "sys" / "class" / "net" / ifname).glob("lower_*")
        )
    except OSError:
        return []


class NetProbe(Probe):
    name = NAME

    def __init__(self, context: ProbeContext, interfaces: list[str]) -> None:
        super().__init__()
        self.interfaces = interfaces
        self._dev = LineTable(
            context.path("proc", "net", "dev"),
            [Wanted(i, n) for i in interfaces for n in FIELDS.values()],
            separators=b":|",
            skip_lines=HEADER_LINES,
        )
        self.readers = [self._dev]
        self.columns = tuple(f"nic:{i}/{f}" for i in interfaces for f in FIELDS)
        self.duplex = {
            i: read_text(context.path("sys", "class", "net", i, "duplex")) for i in interfaces
        }
        self.lower = {i: lower_devices(context.root, i) for i in interfaces}
        # the link type (ARPHRD_*): a loopback moves its data through the CPU and memory only
        self.loopback = {
            i: read_text(context.path("sys", "class", "net", i, "type")) == ARPHRD_LOOPBACK
            for i in interfaces
        }
        for i in interfaces:
            for direction in ("receive", "send"):
                self.limits[f"nic:{i}/{direction}"] = self._limit(context, i, direction)

    def _limit(self, context: ProbeContext, ifname: str, direction: str) -> Limit:
        """The graph's limit, else sysfs; for a virtual NIC without one, its lower device's."""
        own = context.limit(f"nic:{ifname}", direction)
        own = own if own.known else sysfs_speed(context.root, ifname)
        if own.known:
            return own
        for lower in self.lower.get(ifname, []):
            limit = context.limit(f"nic:{lower}", direction)
            limit = limit if limit.known else sysfs_speed(context.root, lower)
            if limit.known:
                return limit.model_copy(
                    update={"detail": f"{limit.detail}, of lower device {lower}"}
                )
        return own

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i in self.interfaces:
            cid = f"nic:{i}"
            rates = {f: per_second(self.col(raw, f"{cid}/{f}"), t) for f in FIELDS}
            for f, r in rates.items():
                out[f"{cid}/{f}_per_s"] = r
            rx, tx = rates["rx_bytes"], rates["tx_bytes"]
            half = self.duplex.get(i) == "half"
            for direction, own in (("receive", rx), ("send", tx)):
                util = utilization(
                    rx + tx if half else own, self.limits.get(f"{cid}/{direction}", UNKNOWN_LIMIT)
                )
                if util is not None:
                    out[f"{cid}/util_{direction}"] = util
        return out

    def attrs(self) -> dict[str, dict[str, object]]:
        return {
            f"nic:{i}": {
                "duplex": self.duplex[i],
                "lower_devices": self.lower[i],
                "loopback": self.loopback[i],
            }
            for i in self.interfaces
        }

    def close(self) -> None:
        self._dev.close()


def open_probe(context: ProbeContext) -> NetProbe | None:
    path = context.path("proc", "net", "dev")
    if not path.exists():
        return None
    lines = (read_text(path, "") or "").replace("|", " ").splitlines()[HEADER_LINES:]
    present = [line.split(":", 1)[0].strip() for line in lines if ":" in line]
    chosen = [i for i in present if context.wants(f"nic:{i}")]
    return NetProbe(context, chosen) if chosen else None
