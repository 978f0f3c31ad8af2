"""Queueing disciplines and classes read from the kernel over rtnetlink (``RTM_GETQDISC`` and
``RTM_GETTCLASS`` dumps), with their shaping rates and counters.

Hand-written over ``socket`` and ``struct`` rather than through pyroute2 or ``tc -j``: the
counters are read on every sampler tick, where pyroute2 costs many times the bare dump per read
(and its import more than a whole host discovery), ``tc`` costs a fork and exec per
read, and ``tc -j class show`` prints plain text for htb classes in iproute2 6.1 (measurements in
benchmarks/results/kernel_limits.md). The layouts below are the kernel's uapi structs, which
never change (new fields come as new attributes, such as the 64-bit rates).

Layouts (include/uapi/linux/rtnetlink.h, pkt_sched.h, gen_stats.h):
- ``struct nlmsghdr`` u32 len, u16 type, u16 flags, u32 seq, u32 pid; ``struct tcmsg`` u8 family,
  3 pad bytes, s32 ifindex, u32 handle, u32 parent, u32 info; then ``rtattr``s (u16 len, u16 type),
  4-byte aligned.
- ``TCA_KIND`` (1) the name; ``TCA_OPTIONS`` (2) per kind; ``TCA_STATS2`` (7) nests
  ``TCA_STATS_BASIC`` (1: u64 bytes, u32 packets), ``TCA_STATS_QUEUE`` (3: u32 qlen, backlog,
  drops, requeues, overlimits) and ``TCA_STATS_PKT64`` (8: u64 packets).
- ``struct tc_ratespec`` u8 cell_log, u8 linklayer, u16 overhead, s16 cell_align, u16 mpu,
  u32 rate (bytes/s; a rate above 2^32-1 B/s comes as a separate 64-bit attribute).
- tbf: ``TCA_TBF_PARMS`` (1) = ratespec rate, ratespec peakrate, u32 limit, buffer, mtu;
  ``TCA_TBF_RATE64`` (4), ``TCA_TBF_PRATE64`` (5).
- htb qdisc: ``TCA_HTB_INIT`` (2) = u32 version, rate2quantum, defcls, debug, direct_pkts.
  htb class: ``TCA_HTB_PARMS`` (1) = ratespec rate, ratespec ceil, u32 buffer, cbuffer, quantum,
  level, prio; ``TCA_HTB_RATE64`` (6), ``TCA_HTB_CEIL64`` (7).

The sampler reads one NIC's root qdisc counters per tick with a *get* request
(``RootQdiscGetter``: ``RTM_GETQDISC`` for ``ifindex``, parent ``TC_H_ROOT``, ``NLM_F_ECHO``; the
kernel's ``tc_get_qdisc`` answers the requester only when asked to echo, and also sends the
answer to listeners of the ``RTNLGRP_TC`` group, so ``tc monitor`` shows each read). It costs
about half a dump of every qdisc of the host and grows with the NICs watched, not with the
host's qdiscs. The answer is built in the sending thread, so it is queued before ``send``
returns and is read without waiting (``MSG_DONTWAIT``): a kernel that did not answer leaves the
counters missing for that tick, never a blocked sampler.

Only the options of tbf and htb are read: they are the shapers checked against the kernel's own
bytes (tests/fixtures/limits/tc-veth). Other kinds keep their name and counters.
"""

from __future__ import annotations

import errno
import socket
import struct
from typing import Literal

from pydantic import BaseModel

from pilot_sys.topology.sysroot import SysRoot

RTM_GETQDISC = 38
RTM_GETTCLASS = 42
NLM_F_REQUEST = 0x1
NLM_F_ECHO = 0x8
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
TC_H_ROOT = 0xFFFFFFFF
TC_H_INGRESS = 0xFFFFFFF1

_NLMSGHDR = struct.Struct("=IHHII")
_TCMSG = struct.Struct("=BxxxiIII")
_RTATTR = struct.Struct("=HH")
_RECV_BYTES = 1 << 16


class TcStats(BaseModel):
    """A qdisc's or class's counters since it was created (``TCA_STATS2``)."""

    bytes: int = 0
    packets: int = 0
    qlen: int = 0
    backlog: int = 0  # bytes queued now
    drops: int = 0
    requeues: int = 0
    overlimits: int = 0  # packets that found the shaper over its rate


class TcObject(BaseModel):
    """One qdisc or class. Rates are bytes/s, None when the kind has none."""

    object: Literal["qdisc", "class"]
    ifindex: int
    kind: str
    handle: str  # "1:" for a qdisc, "1:10" for a class, as tc prints them
    parent: str  # "root", "ingress" or a handle
    rate: float | None = None  # tbf rate, htb class rate
    ceil: float | None = None  # htb class ceil
    peak: float | None = None  # tbf peakrate
    default_class: str | None = None  # htb's default class for unclassified traffic
    stats: TcStats | None = None

    @property
    def root(self) -> bool:
        return self.parent == "root"


def handle_text(value: int, *, qdisc: bool = False) -> str:
    """tc's spelling of a handle: ``major:minor`` in hex, ``1:`` for a qdisc's minor 0."""
    if value == TC_H_ROOT:
        return "root"
    if value == TC_H_INGRESS:
        return "ingress"
    major, minor = value >> 16, value & 0xFFFF
    return f"{major:x}:" if qdisc and minor == 0 else f"{major:x}:{minor:x}"


def _attrs(data: bytes, offset: int = 0) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    while offset + 4 <= len(data):
        length, kind = _RTATTR.unpack_from(data, offset)
        if length < 4:
            break
        found[kind & 0x3FFF] = data[offset + 4 : offset + length]  # 0x3fff drops NLA_F_NESTED
        offset += (length + 3) & ~3
    return found


def _u32(data: bytes | None, offset: int = 0) -> int | None:
    return (
        struct.unpack_from("=I", data, offset)[0]
        if data is not None and len(data) >= offset + 4
        else None
    )


def _u64(data: bytes | None) -> int | None:
    return struct.unpack_from("=Q", data)[0] if data is not None and len(data) >= 8 else None


def _rate(rate64: bytes | None, parms: bytes | None, offset: int) -> float | None:
    """A 64-bit rate attribute when present, else the ratespec's u32 at ``offset``."""
    value = _u64(rate64)
    if value is None:
        value = _u32(parms, offset)
    return float(value) if value else None


def _stats(data: bytes | None) -> TcStats | None:
    if data is None:
        return None
    nested = _attrs(data)
    stats = TcStats()
    basic = nested.get(1)
    if basic is not None and len(basic) >= 12:
        stats.bytes, stats.packets = struct.unpack_from("=QI", basic)
    packets64 = _u64(nested.get(8))
    if packets64 is not None:
        stats.packets = packets64
    queue = nested.get(3)
    if queue is not None and len(queue) >= 20:
        stats.qlen, stats.backlog, stats.drops, stats.requeues, stats.overlimits = (
            struct.unpack_from("=5I", queue)
        )
    return stats


def _options(obj: TcObject, data: bytes | None) -> None:
    """Fill the rates of the kinds that shape; others keep None."""
    if data is None:
        return
    nested = _attrs(data)
    if obj.kind == "tbf":
        obj.rate = _rate(nested.get(4), nested.get(1), 8)
        obj.peak = _rate(nested.get(5), nested.get(1), 20)
    elif obj.kind == "htb" and obj.object == "class":
        obj.rate = _rate(nested.get(6), nested.get(1), 8)
        obj.ceil = _rate(nested.get(7), nested.get(1), 20)
    elif obj.kind == "htb":
        default = _u32(nested.get(2), 8)
        obj.default_class = None if not default else f"{obj.handle.rstrip(':')}:{default:x}"


def parse_dump(data: bytes) -> list[TcObject]:
    """The qdiscs or classes in the bytes of a dump (the ``recv`` chunks concatenated)."""
    found: list[TcObject] = []
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind, _flags, _seq, _pid = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size:
            break
        body = data[offset + _NLMSGHDR.size : offset + length]
        offset += (length + 3) & ~3
        if kind == NLMSG_DONE:
            continue  # the end of one dump; several dumps may be concatenated
        if kind == NLMSG_ERROR:
            code = -struct.unpack_from("=i", body)[0]
            raise OSError(code, f"netlink: {errno.errorcode.get(code, code)}")
        if kind not in (36, 40) or len(body) < _TCMSG.size:  # RTM_NEWQDISC, RTM_NEWTCLASS
            continue
        _family, ifindex, handle, parent, _info = _TCMSG.unpack_from(body)
        attrs = _attrs(body, _TCMSG.size)
        is_qdisc = kind == 36
        obj = TcObject(
            object="qdisc" if is_qdisc else "class",
            ifindex=ifindex,
            kind=(attrs.get(1) or b"").rstrip(b"\0").decode("ascii", "replace"),
            handle=handle_text(handle, qdisc=is_qdisc),
            parent=handle_text(parent, qdisc=True),
        )
        _options(obj, attrs.get(2))
        obj.stats = _stats(attrs.get(7))
        found.append(obj)
    return found


class TcDumper:
    """An open rtnetlink socket that dumps qdiscs or classes on demand (one socket per reader:
    the sampler's probe keeps it for the whole run, discovery opens one for two dumps)."""

    def __init__(self) -> None:
        self._sock = socket.socket(
            socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.NETLINK_ROUTE
        )
        self._seq = 0

    def dump(self, message: int = RTM_GETQDISC, ifindex: int = 0) -> bytes:
        """The raw reply to one dump request, every message up to and including NLMSG_DONE.
        Qdiscs dump for every interface at once; classes only for the ``ifindex`` named."""
        self._seq += 1
        header = _NLMSGHDR.pack(
            _NLMSGHDR.size + _TCMSG.size, message, NLM_F_REQUEST | NLM_F_DUMP, self._seq, 0
        )
        self._sock.send(header + _TCMSG.pack(0, ifindex, 0, 0, 0))
        chunks = []
        while True:
            data, _, flags, _ = self._sock.recvmsg(_RECV_BYTES)
            if flags & socket.MSG_TRUNC:
                raise OSError(errno.EMSGSIZE, "netlink reply larger than the receive buffer")
            chunks.append(data)
            if _last_is_done(data):
                return b"".join(chunks)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> TcDumper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _last_is_done(data: bytes) -> bool:
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        if kind in (NLMSG_DONE, NLMSG_ERROR):
            return True
        if length < _NLMSGHDR.size:
            return True
        offset += (length + 3) & ~3
    return False


def stats_offsets(message: bytes) -> tuple[int, int] | None:
    """Where one ``RTM_NEWQDISC`` message keeps its counters: the offsets (from the message's
    start) of ``TCA_STATS_BASIC``'s payload (u64 bytes, u32 packets) and ``TCA_STATS_QUEUE``'s
    (u32 qlen, backlog, drops, requeues, overlimits); None when it has no ``TCA_STATS2``."""
    offset = _NLMSGHDR.size + _TCMSG.size
    while offset + 4 <= len(message):
        length, kind = _RTATTR.unpack_from(message, offset)
        if length < 4:
            return None
        if kind & 0x3FFF == 7:  # TCA_STATS2
            inner, end = offset + 4, offset + length
            basic = queue = None
            while inner + 4 <= end:
                ilen, ikind = _RTATTR.unpack_from(message, inner)
                if ilen < 4:
                    break
                if ikind & 0x3FFF == 1 and ilen >= 4 + 12:
                    basic = inner + 4
                elif ikind & 0x3FFF == 3 and ilen >= 4 + 20:
                    queue = inner + 4
                inner += (ilen + 3) & ~3
            return (basic, queue) if basic is not None and queue is not None else None
        offset += (length + 3) & ~3
    return None


class RootQdiscGetter:
    """A kept-open rtnetlink socket that asks for one NIC's root qdisc (see the module
    docstring): ``query()`` returns the kernel's answer as it came (one ``RTM_NEWQDISC``
    message, or an ``NLMSG_ERROR`` when the NIC is gone)."""

    def __init__(self, ifindex: int) -> None:
        self.ifindex = ifindex
        self._sock = socket.socket(
            socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.NETLINK_ROUTE
        )
        header = _NLMSGHDR.pack(
            _NLMSGHDR.size + _TCMSG.size, RTM_GETQDISC, NLM_F_REQUEST | NLM_F_ECHO, 1, 0
        )
        self.request = header + _TCMSG.pack(0, ifindex, 0, TC_H_ROOT, 0)
        self.send = self._sock.send
        self.recv = self._sock.recv

    def query(self) -> bytes:
        self.send(self.request)
        return self.recv(_RECV_BYTES, socket.MSG_DONTWAIT)

    def close(self) -> None:
        self._sock.close()


# Where a captured tree keeps the dumps (raw bytes as the kernel sent them): the qdisc dump, and
# the class dump of each interface with a classful shaper, concatenated.
CAPTURED_QDISCS = "/captured/netlink/qdisc.bin"
CAPTURED_CLASSES = "/captured/netlink/class.bin"
CLASSFUL_SHAPERS = frozenset({"htb"})


def dump_all(dumper: TcDumper) -> tuple[bytes, bytes]:
    """The qdisc dump, and the class dumps of the interfaces whose qdiscs shape by class."""
    qdiscs = dumper.dump(RTM_GETQDISC)
    shaped = sorted({o.ifindex for o in parse_dump(qdiscs) if o.kind in CLASSFUL_SHAPERS})
    return qdiscs, b"".join(dumper.dump(RTM_GETTCLASS, index) for index in shaped)


def read_tc(sysroot: SysRoot) -> tuple[list[TcObject], list[str]]:
    """Every qdisc and class of the machine (live: a netlink dump in this network namespace;
    a captured tree: its saved dumps), and notes on what could not be read."""
    if not sysroot.live:
        objects: list[TcObject] = []
        notes: list[str] = []
        for inner in (CAPTURED_QDISCS, CAPTURED_CLASSES):
            data = sysroot.read_bytes(inner)
            if data is None:
                notes.append(f"{inner}: not captured; traffic shaping unknown")
            else:
                objects += parse_dump(data)
        return objects, notes
    try:
        with TcDumper() as dumper:
            qdiscs, classes = dump_all(dumper)
        return parse_dump(qdiscs) + parse_dump(classes), []
    except OSError as exc:
        return [], [f"rtnetlink qdisc dump failed ({exc.strerror or exc}); traffic shaping unknown"]


def interface_names(sysroot: SysRoot) -> dict[int, str]:
    """ifindex -> interface name, from ``/sys/class/net/*/ifindex``."""
    names: dict[int, str] = {}
    for name in sysroot.listdir("/sys/class/net"):
        index = sysroot.read_int(f"/sys/class/net/{name}/ifindex")
        if index is not None:
            names[index] = name
    return names
