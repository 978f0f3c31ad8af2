"""The culprits of a hidden bottleneck: the other processes that used the hot component most
during the run, named in its evidence and listed in the verdict (``HiddenBottleneck.culprits``).

Read from the trace's ranking of the other processes (``monitor.culprits``, attrs
``processes:other``): the host's CPU and its cores by CPU time, a disk or a mount by bytes read
and written (``/proc/PID/io`` counts all disks: the ranking is not per device, and the words say
so), the host's memory by resident memory. A NIC has no per-process counters in /proc: nothing
is named for it. A process that used less than ``MIN_CORES`` or wrote less than
``MIN_DISK_SHARE`` of the others' bytes is not named.
"""

from __future__ import annotations

from typing import Any

from pilot_sys import units
from pilot_sys.monitor.culprits import OTHERS, TOP
from pilot_sys.monitor.trace import MonitorTrace

NAMED = TOP  # processes named in an evidence line: the whole top the ranking keeps
MIN_CORES = 0.01
MIN_DISK_SHARE = 0.01


def _ranking(trace: MonitorTrace) -> dict[str, Any]:
    found = trace.attrs.get(OTHERS)
    return found if isinstance(found, dict) else {}


def _local_peers(trace: MonitorTrace) -> set[int]:
    """The local servers the process probe counted as the workload's (``local_peers``)."""
    return {
        int(pid)
        for attrs in trace.attrs.values()
        if isinstance(attrs, dict)
        for pid in attrs.get("local_peers") or []
    }


def culprits_for(trace: MonitorTrace, component: str) -> list[dict[str, Any]]:
    """The other processes that used ``component`` most, best first (empty: no ranking in the
    trace, or none for that kind of component); a local server the workload talked to is the
    workload's, not another process (``monitor.local_peers``)."""
    peers = _local_peers(trace)
    return [r for r in _ranked_for(trace, component) if r.get("pid") not in peers]


def _ranked_for(trace: MonitorTrace, component: str) -> list[dict[str, Any]]:
    ranking = _ranking(trace)
    if component == "cpu:host" or component.startswith("core:"):
        rows = ranking.get("top_cpu") or []
        return [r for r in rows if (r.get("cores") or 0.0) >= MIN_CORES]
    if component.startswith(("block:", "mount:")):
        rows = ranking.get("top_disk") or []
        return [r for r in rows if (r.get("share") or 0.0) >= MIN_DISK_SHARE]
    if component == "memory:host":
        return list(ranking.get("top_memory") or [])
    return []


def _where(row: dict[str, Any]) -> str:
    """What a netns or a cgroup tells about a process: named only where it is not the root's."""
    parts = []
    if row.get("netns"):
        parts.append(f"netns {row['netns']}")
    if row.get("cgroup") not in (None, "", "/"):
        parts.append(f"cgroup {row['cgroup']}")
    if row.get("note"):
        parts.append(str(row["note"]))
    return f" [{', '.join(parts)}]" if parts else ""


def _name(row: dict[str, Any]) -> str:
    return f"{row.get('command') or '?'} pid {row.get('pid')}"


def culprit_words(row: dict[str, Any], component: str) -> str:
    """One culprit in words, for the kind of component it is a culprit of: ``stress-ng-cpu pid
    1234 0.95 cores (48 % of the other processes' CPU)``, its disk bytes, or its memory."""
    share = row.get("share")
    of = f" ({units.percent(share, 0)} of the other processes'" if share is not None else ""
    if component.startswith(("block:", "mount:")):
        text = (
            f"{_name(row)} read {units.size(row.get('read_bytes'))} "
            f"wrote {units.size(row.get('write_bytes'))}"
        )
        text += f"{of} disk bytes)" if of else ""
    elif component == "memory:host":
        text = f"{_name(row)} {units.size(row.get('rss_bytes'))} resident"
    else:
        text = f"{_name(row)} {float(row.get('cores') or 0.0):.2f} cores"
        text += f"{of} CPU)" if of else ""
    return text + _where(row)


def cpu_culprits_text(trace: MonitorTrace) -> str:
    """`` (stress-ng pid 1234 0.95, stress-ng pid 1235 0.93)``: the top other processes by
    cores, to follow "other processes N cores"; empty without a ranking."""
    rows = culprits_for(trace, "cpu:host")[:NAMED]
    if not rows:
        return ""
    return " (" + ", ".join(f"{_name(r)} {r['cores']:.2f}{_where(r)}" for r in rows) + ")"


def culprits_clause(trace: MonitorTrace, component: str) -> str:
    """``; other processes' disk I/O (all disks): fio pid 55 1.20 GB, ...`` for a disk, ``;
    largest other processes: ...`` for memory; empty where nothing is named (the CPU's names
    are in its own evidence, ``cpu_culprits_text``)."""
    rows = culprits_for(trace, component)[:NAMED]
    if not rows:
        return ""
    named = ", ".join(culprit_words(r, component) for r in rows)
    if component.startswith(("block:", "mount:")):
        return f"; other processes' disk I/O during the run (/proc/PID/io, all disks): {named}"
    if component == "memory:host":
        return f"; the largest other processes: {named}"
    return ""
