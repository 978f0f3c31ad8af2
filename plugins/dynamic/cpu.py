"""CPU time per core and in total, run queue and CPU pressure.

Counters (``/proc/stat``, USER_HZ ticks; ``man 5 proc``): per ``cpuN`` line the fields
1 user, 2 nice, 3 system, 4 idle, 5 iowait, 6 irq, 7 softirq, 8 steal (guest time is already
included in user/nice); ``procs_running`` (tasks runnable now, the sampler's own thread
included), ``procs_blocked`` (in uninterruptible sleep), ``ctxt`` (context switches).
``/proc/pressure/cpu`` ``some total`` (microseconds during which some runnable task waited
for a CPU).

Formulas (per interval, from counter deltas, sysstat style):

* ``core:N/util_compute`` = (user + nice + system + irq + softirq) / (total - steal): the share
  of the CPU time this guest actually got that it used; iowait is idle (the CPU was free).
* ``cpu:host/busy_cores`` = sum of busy over cores / (sum of total / number of cores).
* ``cpu:host/util_compute`` = busy_cores / (compute limit x (1 - steal share)): the fraction of
  the stated limit (the graph's ``compute`` limit in cores; without a graph, the number of
  CPUs counted in /proc/stat, source ``derived``).
* ``cpu:host/busiest_core`` = the highest ``core:N/util_compute`` in each interval: a
  single-threaded workload saturates one core of two while the total reads 50 %.
* ``cpu:host/psi_some`` = delta(some total) / (delta t x 1e6).
* ``user``, ``system``, ``iowait``, ``irq``, ``softirq``, ``steal``: shares of total time.
"""

from __future__ import annotations

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import LineTable, Wanted
from pilot_sys.monitor.rates import deltas, per_second, ratio
from pilot_sys.topology.components import Limit, LimitSource

KIND = "dynamic"
NAME = "cpu"

# /proc/stat fields 1-8
FIELDS = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
)
BUSY = ("user", "nice", "system", "irq", "softirq")
SHARES = ("user", "system", "iowait", "irq", "softirq", "steal")
HOST = "cpu:host"


class CpuProbe(Probe):
    name = NAME

    def __init__(self, context: ProbeContext) -> None:
        super().__init__()
        self._stat_lines = LineTable(context.path("proc", "stat"), [Wanted("cpu", 1)])
        self.cores = sorted(
            int(k[3:]) for k in self._stat_lines.keys() if k.startswith("cpu") and k[3:].isdigit()
        )
        self._stat_lines.close()
        wanted = [Wanted(f"cpu{n}", i + 1) for n in self.cores for i in range(len(FIELDS))]
        wanted += [Wanted("ctxt", 1), Wanted("procs_running", 1), Wanted("procs_blocked", 1)]
        self._stat = LineTable(context.path("proc", "stat"), wanted)
        columns = [f"core:{n}/{f}" for n in self.cores for f in FIELDS]
        columns += [f"{HOST}/ctxt", f"{HOST}/procs_running", f"{HOST}/procs_blocked"]
        self._psi: LineTable | None = None
        psi_path = context.path("proc", "pressure", "cpu")
        if psi_path.exists():
            try:
                self._psi = LineTable(psi_path, [Wanted("some", 8)], separators=b"=")
                columns.append(f"{HOST}/psi_some_us")
            except OSError:  # PSI compiled in but disabled (psi=0): the file exists, reads fail
                self._psi = None
        self.columns = tuple(columns)
        limit = context.limit(HOST, "compute")
        if not limit.known:
            limit = Limit(
                value=float(len(self.cores)),
                unit="cores",
                source=LimitSource.DERIVED,
                detail="online CPUs counted in /proc/stat",
            )
        self.limits[f"{HOST}/compute"] = limit
        for n in self.cores:
            self.limits[f"core:{n}/compute"] = Limit(
                value=1.0, unit="cores", source=LimitSource.DERIVED, detail="one core"
            )
        self.readers = [self._stat] + ([self._psi] if self._psi is not None else [])

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        n_cores = len(self.cores)
        # ticks per interval: samples x cores x fields
        ticks = deltas(raw[:, : n_cores * len(FIELDS)]).reshape(len(t), n_cores, len(FIELDS))
        f = {name: ticks[:, :, i] for i, name in enumerate(FIELDS)}
        total = ticks.sum(axis=2)
        busy = sum(f[b] for b in BUSY)
        available = total - f["steal"]
        core_util = ratio(busy, available)
        for j, n in enumerate(self.cores):
            cid = f"core:{n}"
            out[f"{cid}/util_compute"] = core_util[:, j]
            for share in SHARES:
                out[f"{cid}/{share}"] = ratio(f[share][:, j], total[:, j])
        host_total = total.sum(axis=1)
        host_busy = busy.sum(axis=1)
        ticks_per_core = host_total / n_cores
        busy_cores = ratio(host_busy, ticks_per_core)
        steal_share = ratio(f["steal"].sum(axis=1), host_total)
        limit = float(self.limits[f"{HOST}/compute"].value or n_cores)
        out[f"{HOST}/busy_cores"] = busy_cores
        out[f"{HOST}/busy"] = ratio(host_busy, host_total)
        out[f"{HOST}/util_compute"] = ratio(busy_cores, limit * (1.0 - steal_share))
        with np.errstate(all="ignore"):
            finite = np.where(np.isfinite(core_util), core_util, -np.inf)
            busiest = finite.max(axis=1) if n_cores else np.full(len(t), np.nan)
        out[f"{HOST}/busiest_core"] = np.where(np.isfinite(busiest), busiest, np.nan)
        for share in SHARES:
            out[f"{HOST}/{share}"] = ratio(f[share].sum(axis=1), host_total)
        out[f"{HOST}/context_switches_per_s"] = per_second(self.col(raw, f"{HOST}/ctxt"), t)
        out[f"{HOST}/runnable"] = self.col(raw, f"{HOST}/procs_running").astype(np.float64)
        out[f"{HOST}/blocked"] = self.col(raw, f"{HOST}/procs_blocked").astype(np.float64)
        if self._psi is not None:
            out[f"{HOST}/psi_some"] = per_second(self.col(raw, f"{HOST}/psi_some_us"), t) / 1e6
        return out

    def close(self) -> None:
        self._stat.close()
        if self._psi is not None:
            self._psi.close()


def open_probe(context: ProbeContext) -> CpuProbe | None:
    if not (context.wants(HOST) or any(c.startswith("core:") for c in (context.components or ()))):
        return None
    return CpuProbe(context)
