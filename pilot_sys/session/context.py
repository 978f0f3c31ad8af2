"""Hardware and software context of a session, so that two results can be judged comparable.

Read once per session from /proc and /sys (cheap, no caching library); a value that cannot be
read is ``None``, never guessed.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

from pilot_sys import __version__
from pilot_sys.redaction import redact_all


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _cpu_model(cpuinfo: str | None) -> str | None:
    if not cpuinfo:
        return None
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Processor", "cpu model"):
            return value.strip() or None
    return None


def _os_name(os_release: str | None) -> str | None:
    for line in (os_release or "").splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"') or None
    return None


def _governors(root: str = "/sys/devices/system/cpu") -> list[str]:
    found: set[str] = set()
    base = Path(root)
    for gov in base.glob("cpu[0-9]*/cpufreq/scaling_governor"):
        value = _read(str(gov))
        if value:
            found.add(value)
    return sorted(found)


def collect_context(command_line: list[str] | None = None) -> dict[str, Any]:
    """CPU model, cores, memory, kernel, frequency governor(s), versions, the command line."""
    meminfo = _read("/proc/meminfo") or ""
    mem_total = None
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            mem_total = int(line.split()[1]) * 1024
            break
    governors = _governors()
    return {
        "hostname": platform.node() or None,
        "cpu_model": _cpu_model(_read("/proc/cpuinfo")),
        "cpus_online": os.cpu_count(),
        "memory_bytes": mem_total,
        "kernel": platform.release() or None,
        "os": _os_name(_read("/etc/os-release")),
        "governor": ",".join(governors) if governors else None,
        "pilot_sys_version": __version__,
        "python": sys.version.split()[0],
        "command_line": redact_all(command_line if command_line is not None else sys.argv),
        "cwd": os.getcwd(),
    }
