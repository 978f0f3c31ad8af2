"""Limits as people read them: the value (``pilot_sys.units``: IEC bytes, network rates in
bit/s) and the limit's source next to it."""

from __future__ import annotations

from pilot_sys import units
from pilot_sys.topology.components import Limit


def network_link(source: str, target: str) -> bool:
    """A link whose rates are network traffic: one of its ends is a network component."""
    return units.network_component(source) or units.network_component(target)


def format_value(value: float, unit: str, network: bool = False) -> str:
    """``3.67 GiB/s``; a network component's byte rate in bit/s (``10.0 Gbit/s``)."""
    return units.quantity(value, unit, network)


def short_limit(limit: Limit, network: bool = False) -> str:
    """The value alone, ``?`` when unknown: for captions and edge labels."""
    if not limit.known or limit.value is None:
        return "?"
    return format_value(limit.value, limit.unit, network)


def format_limit(limit: Limit, *, with_source: bool = True, component: str | None = None) -> str:
    """``3.67 GiB/s (sysfs: PCIe 8 GT/s x4, 128b/130b)`` or ``unknown (speed reads -1)``;
    the limit of a network ``component`` (``nic:eth0``) in bit/s."""
    if not limit.known or limit.value is None:
        return f"unknown ({limit.detail})" if limit.detail else "unknown"
    text = format_value(limit.value, limit.unit, units.network_component(component))
    if with_source:
        why = f"{limit.source.value}: {limit.detail}" if limit.detail else limit.source.value
        text += f" ({why})"
    return text


def format_limits(limits: dict[str, Limit], component: str | None = None) -> list[str]:
    """One line per distinct limit, directions with the same limit joined (``read/write``)."""
    grouped: dict[str, list[str]] = {}
    for key, limit in limits.items():
        grouped.setdefault(format_limit(limit, component=component), []).append(key)
    return [f"{'/'.join(keys)} {text}" for text, keys in grouped.items()]
