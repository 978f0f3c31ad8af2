"""Limits as people read them: binary units (MiB/s, GiB) and the limit's source next to it."""

from __future__ import annotations

from pilot_sys.topology.components import Limit

_BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi")


def format_value(value: float, unit: str) -> str:
    if unit in ("B/s", "B"):
        scaled, index = float(value), 0
        while abs(scaled) >= 1024 and index < len(_BINARY) - 1:
            scaled /= 1024
            index += 1
        suffix = "/s" if unit == "B/s" else ""
        return f"{scaled:.3g} {_BINARY[index]}B{suffix}"
    return f"{value:g} {unit}"


def format_limit(limit: Limit, *, with_source: bool = True) -> str:
    """``3.67 GiB/s (sysfs: PCIe 8 GT/s x4, 128b/130b)`` or ``unknown (speed reads -1)``."""
    if not limit.known or limit.value is None:
        return f"unknown ({limit.detail})" if limit.detail else "unknown"
    text = format_value(limit.value, limit.unit)
    if with_source:
        why = f"{limit.source.value}: {limit.detail}" if limit.detail else limit.source.value
        text += f" ({why})"
    return text


def format_limits(limits: dict[str, Limit]) -> list[str]:
    """One line per distinct limit, directions with the same limit joined (``read/write``)."""
    grouped: dict[str, list[str]] = {}
    for key, limit in limits.items():
        grouped.setdefault(format_limit(limit), []).append(key)
    return [f"{'/'.join(keys)} {text}" for text, keys in grouped.items()]
