"""The egress rate a NIC's root qdisc imposes, from the qdiscs and classes of ``netlink_tc``.

- tbf: its ``rate`` (the peak rate only bounds bursts above it).
- htb: traffic no filter classifies goes to the ``default`` class and is held to the smallest
  ``ceil`` on that class's way up to the root; without a default class it leaves unshaped, so
  the limit is unknown for the workload (a classified flow gets its own class's ceil).
- mq / mqprio: one child qdisc per transmit queue; shaped only when every child is, at the sum.
- cake, netem, hfsc: shapers whose rate this reader does not decode: reported, rate unknown.
Any other root qdisc (pfifo_fast, fq_codel, fq, noqueue, ...) does not shape the device (fq's
optional ``maxrate`` caps single flows and is not read).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pilot_sys.topology.netlink_tc import TcObject

RATE_KINDS = frozenset({"tbf"})
MULTIQUEUE = frozenset({"mq", "mqprio"})
UNDECODED_SHAPERS = frozenset({"cake", "netem", "hfsc"})


class Shaping(BaseModel):
    """One NIC's egress shaping. ``rate`` (bytes/s) is None when the qdisc shapes but the rate
    that binds the workload's traffic cannot be told (htb without a default class)."""

    interface: str
    kind: str
    handle: str
    rate: float | None
    detail: str
    attrs: dict[str, object] = Field(default_factory=dict)


def mbit(rate: float) -> str:
    return f"{rate * 8 / 1e6:g} Mbit/s"


def _htb(root: TcObject, classes: list[TcObject], interface: str) -> Shaping:
    by_handle = {c.handle: c for c in classes if c.kind == "htb"}
    top = [c for c in classes if c.parent == "root" or c.parent == root.handle]
    attrs: dict[str, object] = {
        "default_class": root.default_class,
        "classes": {
            c.handle: {"parent": c.parent, "rate": c.rate, "ceil": c.ceil}
            for c in by_handle.values()
        },
    }
    if top and all(c.ceil for c in top):
        attrs["top_level_ceil_sum"] = sum(c.ceil or 0.0 for c in top)
    chain: list[TcObject] = []
    current = by_handle.get(root.default_class or "")
    while current is not None and current not in chain:
        chain.append(current)
        current = by_handle.get(current.parent)
    if not chain:
        why = (
            "no default class: unclassified traffic is sent unshaped"
            if root.default_class is None
            else f"default class {root.default_class} does not exist: "
            "unclassified traffic is sent unshaped"
        )
        return Shaping(
            interface=interface,
            kind="htb",
            handle=root.handle,
            rate=None,
            detail=f"htb: {why}; a classified flow gets its class's ceil",
            attrs=attrs,
        )
    binding = min((c for c in chain if c.ceil), key=lambda c: c.ceil or 0.0, default=None)
    if binding is None:
        return Shaping(
            interface=interface,
            kind="htb",
            handle=root.handle,
            rate=None,
            detail=f"htb default class {root.default_class}: no ceil readable",
            attrs=attrs,
        )
    return Shaping(
        interface=interface,
        kind="htb",
        handle=root.handle,
        rate=binding.ceil,
        detail=f"htb default class {root.default_class}: ceil {mbit(binding.ceil or 0.0)} "
        f"(class {binding.handle})",
        attrs=attrs,
    )


def _rate_of(qdisc: TcObject) -> float | None:
    return qdisc.rate if qdisc.kind in RATE_KINDS else None


def egress_shaping(objects: list[TcObject], names: dict[int, str]) -> dict[str, Shaping]:
    """Interface name -> its shaping, for the interfaces whose root qdisc shapes."""
    found: dict[str, Shaping] = {}
    for root in (o for o in objects if o.object == "qdisc" and o.root):
        interface = names.get(root.ifindex, f"ifindex{root.ifindex}")
        same = [o for o in objects if o.ifindex == root.ifindex]
        if root.kind == "htb":
            found[interface] = _htb(root, [o for o in same if o.object == "class"], interface)
        elif (rate := _rate_of(root)) is not None:
            detail = f"{root.kind} rate {mbit(rate)}"
            if root.kind == "tbf" and root.peak:
                detail += f", peak {mbit(root.peak)}"
            found[interface] = Shaping(
                interface=interface, kind=root.kind, handle=root.handle, rate=rate, detail=detail
            )
        elif root.kind in UNDECODED_SHAPERS:
            found[interface] = Shaping(
                interface=interface,
                kind=root.kind,
                handle=root.handle,
                rate=None,
                detail=f"{root.kind} may limit the rate; its options are not decoded",
            )
        elif root.kind in MULTIQUEUE:
            major = root.handle.rstrip(":")
            children = [o for o in same if o.object == "qdisc" and o.parent.split(":")[0] == major]
            rates = [_rate_of(c) for c in children]
            if children and all(r is not None for r in rates):
                total = sum(r or 0.0 for r in rates)
                found[interface] = Shaping(
                    interface=interface,
                    kind=root.kind,
                    handle=root.handle,
                    rate=total,
                    detail=f"{root.kind}: {len(children)} queues shaped by "
                    f"{'/'.join(sorted({c.kind for c in children}))}, {mbit(total)} in all",
                )
    return found
