"""Memory in use and available, reclaim, swap and memory pressure.

Counters:

* ``/proc/meminfo`` (kB): ``MemTotal``, ``MemAvailable`` (the kernel's estimate of what can be
  allocated without swapping), ``Buffers``, ``Cached``, ``SwapTotal``, ``SwapFree``, ``Dirty``,
  ``Writeback``.
* ``/proc/vmstat`` (pages, cumulative): ``pgscan_kswapd``/``pgscan_direct`` (pages scanned for
  reclaim by the background daemon / by allocating tasks themselves), ``pgsteal_*`` (pages
  reclaimed), ``pswpin``/``pswpout`` (pages swapped in/out), ``pgmajfault``.
* memory pressure (PSI) is read by the ``memory_pressure`` plug-in, at the sampler's full rate.

Formulas:

* ``memory:host/util_capacity`` = (MemTotal - MemAvailable) / capacity, the capacity being the
  graph's ``capacity`` limit or MemTotal (source ``derived``).
* ``*_per_s`` = delta(counter) / delta t; swap in bytes: pages x page size.
Memory bandwidth is not exposed by /proc; it is not reported rather than guessed.

How often these files are worth reading (``max_rate_hz``), from the kernel source
(mm/vmstat.c, ``vmstat_start``; Documentation/admin-guide/sysctl/vm.rst ``stat_interval``):

* meminfo's MemFree/MemAvailable/Cached/Dirty/Writeback and vmstat's ``nr_*`` items are zone
  and node counters that every CPU accumulates as a private delta and folds into the global
  value only when the delta crosses a per-CPU threshold (``vm stats threshold`` in
  /proc/zoneinfo, tens of pages) or when its ``vmstat_update`` work runs, every
  ``vm.stat_interval`` (default 1 s; the commit adding /proc/sys/vm/stat_refresh describes this
  folding). A read between folds sees the same global value: reading faster than a few times
  per fold interval measures when the folding ran, not when memory changed. So this probe is
  read at ``10 / stat_interval`` Hz (10 Hz by default), capped at 10 Hz.
* vmstat's *event* counters that this probe uses (``pswpin``, ``pswpout``, ``pgmajfault``,
  ``pgscan_*``, ``pgsteal_*``) are different: ``all_vm_events`` sums every CPU's counters on
  each read, so they are exact at every read. Read at the probe's rate they lose no event
  (they are cumulative: the count between two reads is exact whatever the interval), only the
  timing of reclaim and swap volume finer than one read interval. The timing of memory
  *stalls* (reclaim, swap-in, thrashing) is kept at the sampler's full rate by the
  ``memory_pressure`` plug-in (PSI ``total`` is exact at every read).
"""

from __future__ import annotations

import os

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import LineTable, Wanted
from pilot_sys.monitor.rates import per_second, ratio
from pilot_sys.topology.components import Limit, LimitSource

KIND = "dynamic"
NAME = "memory"

HOST = "memory:host"
MEMINFO = (
    "MemTotal",
    "MemAvailable",
    "Buffers",
    "Cached",
    "SwapTotal",
    "SwapFree",
    "Dirty",
    "Writeback",
)
VMSTAT = (
    "pswpin",
    "pswpout",
    "pgmajfault",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgscan_kswapd",
    "pgscan_direct",
)
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
KIB = 1024.0
DEFAULT_STAT_INTERVAL_S = 1.0  # the kernel's default vm.stat_interval (HZ jiffies)
READS_PER_FOLD = 10.0  # reads per fold interval: when a fold happened, to a tenth of the interval
MAX_RATE_HZ = 10.0


def stat_interval(root: os.PathLike[str] | str = "/") -> tuple[float, str]:
    """``vm.stat_interval`` in seconds and where it came from."""
    path = os.path.join(root, "proc", "sys", "vm", "stat_interval")
    try:
        with open(path, "rb") as fh:
            value = float(fh.read().split()[0])
        if value > 0:
            return value, f"vm.stat_interval = {value:g} s"
    except (OSError, ValueError, IndexError):
        pass
    return (
        DEFAULT_STAT_INTERVAL_S,
        f"vm.stat_interval unreadable, the kernel default {DEFAULT_STAT_INTERVAL_S:g} s assumed",
    )


def useful_rate_hz(interval_s: float) -> float:
    """``READS_PER_FOLD`` reads per fold interval, at most ``MAX_RATE_HZ``."""
    return min(MAX_RATE_HZ, READS_PER_FOLD / interval_s)


class MemoryProbe(Probe):
    name = NAME

    def __init__(self, context: ProbeContext) -> None:
        super().__init__()
        present_mem = set(_keys(context.path("proc", "meminfo"), b":"))
        self.meminfo_keys = [k for k in MEMINFO if k in present_mem]
        self._meminfo = LineTable(
            context.path("proc", "meminfo"), [Wanted(f"{k}:", 1) for k in self.meminfo_keys]
        )
        present_vm = set(_keys(context.path("proc", "vmstat")))
        self.vmstat_keys = [k for k in VMSTAT if k in present_vm]
        self._vmstat = LineTable(
            context.path("proc", "vmstat"), [Wanted(k, 1) for k in self.vmstat_keys]
        )
        columns = [f"{HOST}/{k}_kb" for k in self.meminfo_keys] + [
            f"{HOST}/{k}" for k in self.vmstat_keys
        ]
        self.readers = [self._meminfo, self._vmstat]
        self.columns = tuple(columns)
        interval, source = stat_interval(context.root)
        self.max_rate_hz = useful_rate_hz(interval)
        self.rate_reason = (
            f"meminfo levels and vmstat nr_* are folded from per-CPU deltas every vm.stat_interval "
            f"({source}): {READS_PER_FOLD:g} reads per fold, at most {MAX_RATE_HZ:g} Hz; the "
            "vmstat events used are exact at every read and cumulative, so no event is lost, only "
            "timing finer than the read interval (memory stalls keep the full rate through memory "
            "PSI)"
        )
        self._capacity = context.limit(HOST, "capacity")

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}

        def kb(key: str) -> np.ndarray:
            name = f"{HOST}/{key}_kb"
            return self.col(raw, name) * KIB if name in self.columns else np.full(len(t), np.nan)

        total, available = kb("MemTotal"), kb("MemAvailable")
        used = total - available
        if self._capacity.known and self._capacity.value:
            capacity = np.full(len(t), float(self._capacity.value))
            self.limits[f"{HOST}/capacity"] = self._capacity
        else:
            capacity = total
            finite = total[np.isfinite(total)]
            self.limits[f"{HOST}/capacity"] = Limit(
                value=float(finite[-1]) if finite.size else None,
                unit="B",
                source=LimitSource.DERIVED if finite.size else LimitSource.UNKNOWN,
                detail="MemTotal",
            )
        out[f"{HOST}/used_bytes"] = used
        out[f"{HOST}/available_bytes"] = available
        out[f"{HOST}/util_capacity"] = ratio(used, capacity)
        out[f"{HOST}/cached_bytes"] = kb("Buffers") + kb("Cached")
        out[f"{HOST}/swap_used_bytes"] = kb("SwapTotal") - kb("SwapFree")
        out[f"{HOST}/dirty_bytes"] = kb("Dirty")
        out[f"{HOST}/writeback_bytes"] = kb("Writeback")

        def rate(key: str) -> np.ndarray:
            name = f"{HOST}/{key}"
            return (
                per_second(self.col(raw, name), t)
                if name in self.columns
                else np.full(len(t), np.nan)
            )

        out[f"{HOST}/swap_in_bytes_per_s"] = rate("pswpin") * PAGE_SIZE
        out[f"{HOST}/swap_out_bytes_per_s"] = rate("pswpout") * PAGE_SIZE
        out[f"{HOST}/major_faults_per_s"] = rate("pgmajfault")

        def rate_sum(*keys: str) -> np.ndarray:  # kswapd + direct; a kernel may lack one of them
            present = [rate(k) for k in keys if f"{HOST}/{k}" in self.columns]
            return np.sum(present, axis=0) if present else np.full(len(t), np.nan)

        out[f"{HOST}/reclaim_scan_pages_per_s"] = rate_sum("pgscan_kswapd", "pgscan_direct")
        out[f"{HOST}/direct_reclaim_scan_pages_per_s"] = rate("pgscan_direct")
        out[f"{HOST}/reclaim_steal_pages_per_s"] = rate_sum("pgsteal_kswapd", "pgsteal_direct")
        return out

    def close(self) -> None:
        self._meminfo.close()
        self._vmstat.close()


def _keys(path: os.PathLike[str], strip: bytes = b"") -> list[str]:
    """The line keys of a key-value file, read once at open time."""
    try:
        with open(path, "rb") as fh:
            lines = fh.read().split(b"\n")
    except OSError:
        return []
    keys = [line.split(None, 1)[0].rstrip(strip).decode() for line in lines if line.strip()]
    return keys


def open_probe(context: ProbeContext) -> MemoryProbe | None:
    return MemoryProbe(context) if context.wants(HOST) else None
