"""Parse the kernel's CPU list format (``0-3,8,10-11``) used across sysfs."""

from __future__ import annotations


def parse_cpulist(text: str | None) -> list[int]:
    cpus: list[int] = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            cpus.extend(range(int(low), int(high or low) + 1))
        except ValueError:
            continue
    return cpus
