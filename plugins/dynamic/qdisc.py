"""Traffic shaping on the data path's NICs: bytes sent through the root qdisc against its rate,
packets held back over the rate, drops and the queue.

Which NICs: those with a shaping root qdisc in the graph (``qdisc:<nic>``, found by the static
qdisc plug-in over rtnetlink); a NIC whose root qdisc does not shape imposes no rate, and is
not read. One rtnetlink *get* of the NIC's root qdisc per tick on a kept-open socket
(``topology.netlink_tc.RootQdiscGetter``: only the watched NICs are asked, never a dump of every
qdisc of the host).

Counters (``TCA_STATS2`` of the root qdisc, as ``tc -s qdisc`` prints them; include/uapi/linux/
gen_stats.h): ``TCA_STATS_BASIC`` bytes and packets sent (cumulative), ``TCA_STATS_QUEUE``
drops and overlimits (cumulative: packets dropped; times a packet found the shaper out of
tokens and had to wait), backlog (bytes queued now) and qlen (packets queued now). An mq root
reports the sum of its queues' qdiscs.

Formulas (``monitor.throttling``), per limiter ``L`` = ``qdisc:<nic>``:

* ``L/sent_bytes_per_s`` = d(bytes) / dt; ``L/util_send`` = that / the qdisc's rate (tbf rate,
  htb default class's ceil, sum over an mq's queues): the NIC's egress against its effective
  limit (every byte the NIC sends passes its root qdisc);
* ``L/overlimits_per_s``, ``L/drops_per_s`` = d(overlimits), d(drops) / dt;
  ``L/over_rate`` = 1 where the interval saw an overlimit, else 0 ("over its rate");
* ``L/backlog_bytes``, ``L/qlen`` = levels.

The tick stores the six counters as text ("bytes packets drops overlimits backlog qlen"), read
at offsets learnt from the first answer (checked by the answer's length; another length is
parsed in full and the offsets learnt again).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.monitor.limiters import limiter_attrs, qdisc_limiters
from pilot_sys.monitor.probe import Probe, ProbeContext, TextReader
from pilot_sys.monitor.procread import MISSING, tokens_layout
from pilot_sys.monitor.rates import deltas, levels, per_second, utilization
from pilot_sys.topology.components import Component
from pilot_sys.topology.netlink_tc import RootQdiscGetter, parse_dump, stats_offsets

KIND = "dynamic"
NAME = "qdisc"

COUNTERS = ("bytes", "packets", "drops", "overlimits", "backlog", "qlen")
_BASIC = struct.Struct("=QI")  # bytes, packets
_QUEUE = struct.Struct("=5I")  # qlen, backlog, drops, requeues, overlimits
_MISSING_ROW = b" ".join([MISSING] * len(COUNTERS))


class RootQdiscCounters(TextReader):
    """The tick reader of one NIC's root qdisc counters."""

    def __init__(self, ifindex: int, interface: str) -> None:
        self.path = Path(f"rtnetlink:RTM_GETQDISC/{interface}")  # named in the schedule
        self.interface = interface
        self._getter = RootQdiscGetter(ifindex)
        self._length = -1
        self._basic = self._queue = 0
        if self._slow(self._getter.query()) == _MISSING_ROW:
            self._getter.close()
            raise OSError(f"no root qdisc counters for {interface}")

    def _slow(self, data: bytes) -> bytes:
        """Parse the answer in full; learn where its counters are for the next ticks."""
        try:
            found = [o for o in parse_dump(data) if o.object == "qdisc" and o.root]
        except OSError:  # an NLMSG_ERROR: the NIC is gone
            return _MISSING_ROW
        offsets = stats_offsets(data) if found else None
        if not found or found[0].stats is None or offsets is None:
            return _MISSING_ROW
        self._length = len(data)
        self._basic, self._queue = offsets
        s = found[0].stats
        return b"%d %d %d %d %d %d" % (s.bytes, s.packets, s.drops, s.overlimits, s.backlog, s.qlen)

    def read_text(self) -> bytes:
        data = self._getter.query()
        if len(data) != self._length:
            return self._slow(data)
        sent, packets = _BASIC.unpack_from(data, self._basic)
        qlen, backlog, drops, _requeues, overlimits = _QUEUE.unpack_from(data, self._queue)
        return b"%d %d %d %d %d %d" % (sent, packets, drops, overlimits, backlog, qlen)

    def __call__(self) -> Sequence[bytes]:
        return self.read_text().split()

    def tick_reader(self) -> Callable[[], bytes]:
        return self.read_text

    def layout(self) -> dict[str, object]:
        return tokens_layout(len(COUNTERS))

    def text_bound(self) -> int:
        return 21 * len(COUNTERS)

    def close(self) -> None:
        self._getter.close()


class QdiscProbe(Probe):
    name = NAME

    def __init__(self, context: ProbeContext, limiters: list[tuple[Component, int]]) -> None:
        super().__init__()
        self.readers: list[Any] = []
        self.ids: list[str] = []
        self._attrs: dict[str, dict[str, Any]] = {}
        columns: list[str] = []
        for component, ifindex in limiters:
            interface = str(component.attrs.get("interface", component.id.split(":", 1)[1]))
            try:
                reader = RootQdiscCounters(ifindex, interface)
            except OSError as exc:
                context.notes.append(f"{component.id}: qdisc counters not sampled ({exc})")
                continue
            self.readers.append(reader)
            self.ids.append(component.id)
            columns += [f"{component.id}/{c}" for c in COUNTERS]
            if "send" in component.limits:
                self.limits[f"{component.id}/send"] = component.limits["send"]
            self._attrs[component.id] = limiter_attrs(
                component,
                "traffic shaping",
                qdisc=component.attrs.get("qdisc"),
                interface=interface,
                judged_by="util_send",
            )
        self.columns = tuple(columns)

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for cid in self.ids:
            sent = per_second(self.col(raw, f"{cid}/bytes"), t)
            out[f"{cid}/sent_bytes_per_s"] = sent
            limit = self.limits.get(f"{cid}/send")
            util = utilization(sent, limit) if limit is not None else None
            if util is not None:
                out[f"{cid}/util_send"] = util
            out[f"{cid}/packets_per_s"] = per_second(self.col(raw, f"{cid}/packets"), t)
            overlimits = self.col(raw, f"{cid}/overlimits")
            out[f"{cid}/overlimits_per_s"] = per_second(overlimits, t)
            out[f"{cid}/drops_per_s"] = per_second(self.col(raw, f"{cid}/drops"), t)
            held = deltas(overlimits)
            out[f"{cid}/over_rate"] = np.where(np.isfinite(held), (held > 0).astype(float), np.nan)
            out[f"{cid}/backlog_bytes"] = levels(self.col(raw, f"{cid}/backlog"))
            out[f"{cid}/qlen"] = levels(self.col(raw, f"{cid}/qlen"))
        return out

    def interval_metric(self, key: str) -> bool:
        name = key.rsplit("/", 1)[-1]
        return super().interval_metric(key) or name in ("util_send", "over_rate")

    def attrs(self) -> dict[str, dict[str, Any]]:
        return self._attrs

    def close(self) -> None:
        for reader in self.readers:
            reader.close()


def _ifindex(context: ProbeContext, interface: str) -> int | None:
    try:
        return int(context.path("sys", "class", "net", interface, "ifindex").read_text())
    except (OSError, ValueError):
        return None


def open_probe(context: ProbeContext) -> QdiscProbe | None:
    if context.root != Path("/"):
        return None  # a captured tree has no kernel to ask
    found = []
    for component in qdisc_limiters(context):
        interface = str(component.attrs.get("interface", component.id.split(":", 1)[1]))
        index = _ifindex(context, interface)
        if index is None:
            context.notes.append(f"{component.id}: {interface} has no ifindex now; not sampled")
            continue
        found.append((component, index))
    if not found:
        return None
    probe = QdiscProbe(context, found)
    return probe if probe.ids else None
