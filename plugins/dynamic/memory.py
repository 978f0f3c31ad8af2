"""Memory in use and available, reclaim, swap and memory pressure.

Counters:

* ``/proc/meminfo`` (kB): ``MemTotal``, ``MemAvailable`` (the kernel's estimate of what can be
  allocated without swapping), ``Buffers``, ``Cached``, ``SwapTotal``, ``SwapFree``, ``Dirty``,
  ``Writeback``.
* ``/proc/vmstat`` (pages, cumulative): ``pgscan_kswapd``/``pgscan_direct`` (pages scanned for
  reclaim by the background daemon / by allocating tasks themselves), ``pgsteal_*`` (pages
  reclaimed), ``pswpin``/``pswpout`` (pages swapped in/out), ``pgmajfault``.
* ``/proc/pressure/memory`` ``some``/``full`` ``total`` (microseconds some / all non-idle tasks
  stalled on memory).

Formulas:

* ``memory:host/util_capacity`` = (MemTotal - MemAvailable) / capacity, the capacity being the
  graph's ``capacity`` limit or MemTotal (source ``derived``).
* ``*_per_s`` = delta(counter) / delta t; swap in bytes: pages x page size.
* ``psi_some`` / ``psi_full`` = delta(total us) / (delta t x 1e6).
Memory bandwidth is not exposed by /proc; it is not reported rather than guessed.
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
MEMINFO = ("MemTotal", "MemAvailable", "Buffers", "Cached", "SwapTotal", "SwapFree", "Dirty", "Writeback")
VMSTAT = ("pswpin", "pswpout", "pgmajfault", "pgsteal_kswapd", "pgsteal_direct", "pgscan_kswapd", "pgscan_direct")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
KIB = 1024.0


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
        self._vmstat = LineTable(context.path("proc", "vmstat"), [Wanted(k, 1) for k in self.vmstat_keys])
        columns = [f"{HOST}/{k}_kb" for k in self.meminfo_keys] + [f"{HOST}/{k}" for k in self.vmstat_keys]
        self.readers = [self._meminfo.read, self._vmstat.read]
        self._psi: LineTable | None = None
        psi_path = context.path("proc", "pressure", "memory")
        if psi_path.exists():
            try:
                self._psi = LineTable(psi_path, [Wanted("some", 8), Wanted("full", 8)], separators=b"=")
                columns += [f"{HOST}/psi_some_us", f"{HOST}/psi_full_us"]
                self.readers.append(self._psi.read)
            except OSError:
                self._psi = None
        self.columns = tuple(columns)
        self._capacity = context.limit(HOST, "capacity")

    def derive(self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
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
                value=float(finite[-1]) if finite.size else None, unit="B",
                source=LimitSource.DERIVED if finite.size else LimitSource.UNKNOWN, detail="MemTotal",
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
            return per_second(self.col(raw, name), t) if name in self.columns else np.full(len(t), np.nan)

        out[f"{HOST}/swap_in_bytes_per_s"] = rate("pswpin") * PAGE_SIZE
        out[f"{HOST}/swap_out_bytes_per_s"] = rate("pswpout") * PAGE_SIZE
        out[f"{HOST}/major_faults_per_s"] = rate("pgmajfault")

        def rate_sum(*keys: str) -> np.ndarray:  # kswapd + direct; a kernel may lack one of them
            present = [rate(k) for k in keys if f"{HOST}/{k}" in self.columns]
            return np.sum(present, axis=0) if present else np.full(len(t), np.nan)

        out[f"{HOST}/reclaim_scan_pages_per_s"] = rate_sum("pgscan_kswapd", "pgscan_direct")
        out[f"{HOST}/direct_reclaim_scan_pages_per_s"] = rate("pgscan_direct")
        out[f"{HOST}/reclaim_steal_pages_per_s"] = rate_sum("pgsteal_kswapd", "pgsteal_direct")
        if self._psi is not None:
            out[f"{HOST}/psi_some"] = per_second(self.col(raw, f"{HOST}/psi_some_us"), t) / 1e6
            out[f"{HOST}/psi_full"] = per_second(self.col(raw, f"{HOST}/psi_full_us"), t) / 1e6
        return out

    def close(self) -> None:
        for table in (self._meminfo, self._vmstat, self._psi):
            if table is not None:
                table.close()


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
