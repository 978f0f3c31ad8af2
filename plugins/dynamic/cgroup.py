"""cgroup CPU quotas, cpusets and I/O throttles: are they binding, and how hard?

Which cgroups: the limiter components the session discovered for the workload
(``cgroup:<path>/cpu``, ``cgroup:<path>/io:<disk>``; ``pilot_sys.monitor.limiters``), each read
where the kernel counts for that limit (``topology.cgroups``: the cgroup that *sets* a quota,
the throttling cgroup of a v1 throttle). Memory limits have their own plug-in (``memory_limit``).

Counters (Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/blkio-controller.rst,
scheduler/sched-bwc.rst):

* CPU quota: ``cpu.stat`` ``nr_periods`` (enforcement periods with runnable tasks),
  ``nr_throttled`` (periods in which the quota ran out), v1 ``throttled_time`` (ns) / v2
  ``throttled_usec``; cores used: v1 ``cpuacct.usage`` (ns) of the same cgroup path, v2
  ``cpu.stat`` ``usage_usec``.
* I/O throttle on device ``MAJ:MIN``: v1 ``blkio.throttle.io_service_bytes`` and
  ``io_serviced`` lines ``Read``/``Write`` (the throttling cgroup's own tasks); v2 ``io.stat``
  ``rbytes``, ``wbytes``, ``rios``, ``wios`` (hierarchical, as ``io.max`` is).

Formulas (``monitor.throttling`` states each with its kernel field), per limiter ``L``:

* ``L/periods_per_s``, ``L/throttled_periods_per_s`` = d(nr_periods), d(nr_throttled) / dt;
  ``L/throttled_periods`` = d(nr_throttled) / d(nr_periods), the share of periods in which the
  quota ran out (NaN in an interval without a period: nothing was runnable). This is the
  quota's saturation signal: "throttled in more than a tenth of the periods" is a limit hit.
* ``L/throttled_share`` = d(throttled time) / dt (summed over CPUs: can exceed 1).
* ``L/cores_used`` = d(usage) / dt; ``L/util_compute`` = cores_used / the compute limit (quota
  / period, or the cpuset's CPU count). A cpuset without a usage counter of its own scope takes
  the mean ``util_compute`` of its CPUs (``core:N``, from the cpu plug-in) instead.
* ``L/read_bytes_per_s``, ``L/write_bytes_per_s``, ``L/read_iops``, ``L/write_iops`` = the
  cgroup's I/O on the device per second; ``L/util_read`` etc. = those / the throttle.

Every file is opened once; the tick stores each file's text (``procread``'s readers, and
``kernel_counters.BlkioDeviceLines`` for the blkio format). A file that cannot be opened leaves
its counters out, with a note; the limit stays in the graph, unknown as to whether it bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot_sys.monitor import throttling
from pilot_sys.monitor.kernel_counters import BlkioDeviceLines
from pilot_sys.monitor.limiters import cgroup_limiters, limiter_attrs
from pilot_sys.monitor.probe import Probe, ProbeContext, Reader, TextReader
from pilot_sys.monitor.procread import FieldFile, LineTable, Wanted
from pilot_sys.monitor.rates import per_second, ratio
from pilot_sys.topology.components import Component

KIND = "dynamic"
NAME = "cgroup"

V1_CPU_STAT = ("nr_periods", "nr_throttled", "throttled_time")
V2_CPU_STAT = ("nr_periods", "nr_throttled", "throttled_usec")
V2_IO_FIELDS = {"rbytes": 2, "wbytes": 4, "rios": 6, "wios": 8}  # token index after "MAJ:MIN"
IO_RATES = {  # limit key -> (raw column, metric)
    "read": ("read_bytes", "read_bytes_per_s"),
    "write": ("write_bytes", "write_bytes_per_s"),
    "iops_read": ("reads", "read_iops"),
    "iops_write": ("writes", "write_iops"),
}


def _open(context: ProbeContext, make: Any, path: str, *args: Any, **kw: Any) -> Any:
    """A reader of ``path`` (inside the machine), or None with a note when it cannot be read."""
    try:
        return make(context.path(path.lstrip("/")), *args, **kw)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        context.notes.append(f"{path}: not sampled ({why}); that limit's counters are unknown")
        return None


class CgroupProbe(Probe):
    name = NAME
    derives_from_metrics = True  # a cpuset without a usage counter reads its cores' utilization

    def __init__(self, context: ProbeContext, limiters: list[Component]) -> None:
        super().__init__()
        self.readers: list[Reader | TextReader] = []
        self._columns: list[str] = []
        self.plans: dict[str, dict[str, Any]] = {}  # limiter id -> what was opened for it
        self._attrs: dict[str, dict[str, Any]] = {}
        for component in limiters:
            resources = set(component.attrs.get("resources", []))
            if "io" in resources:
                self._open_io(context, component)
            elif resources & {"cpu", "cpuset"}:
                self._open_cpu(context, component)
        self.columns = tuple(self._columns)

    # -- opening -------------------------------------------------------------------------------
    def _add(self, reader: Reader | TextReader | None, columns: list[str]) -> bool:
        if reader is None:
            return False
        self.readers.append(reader)
        self._columns += columns
        return True

    def _open_cpu(self, context: ProbeContext, component: Component) -> None:
        cid = component.id
        counters = component.attrs.get("counters", {})
        version = component.attrs.get("version", 1)
        plan: dict[str, Any] = {"kind": "cpu", "version": version, "stat": False, "usage": None}
        limit = component.limits.get("compute")
        if limit is not None:
            self.limits[f"{cid}/compute"] = limit
        quota = "cpu" in component.attrs.get("resources", [])
        fields = V2_CPU_STAT if version == 2 else V1_CPU_STAT
        if quota and "cpu.stat" in counters:
            wanted = [Wanted(f, 1) for f in fields]
            plan["stat"] = self._add(
                _open(context, LineTable, counters["cpu.stat"], wanted),
                [f"{cid}/{f}" for f in fields],
            )
        if version == 2 and "usage_usec" in counters:
            plan["usage"] = (
                "us"
                if self._add(
                    _open(context, LineTable, counters["usage_usec"], [Wanted("usage_usec", 1)]),
                    [f"{cid}/usage_usec"],
                )
                else None
            )
        elif "usage" in counters:
            plan["usage"] = (
                "ns"
                if self._add(_open(context, FieldFile, counters["usage"], [0]), [f"{cid}/usage_ns"])
                else None
            )
        plan["cpus"] = list(component.attrs.get("cpus", []))
        if quota and not plan["stat"] and "cpu.stat" not in counters:
            context.notes.append(
                f"{cid}: no cpu.stat beside the quota in {component.attrs.get('directory')}; "
                "whether the quota throttled the workload is unknown"
            )
        self.plans[cid] = plan
        what = "CPU quota" if quota else "cpuset"
        judged = "throttled_periods" if quota and plan["stat"] else "util_compute"
        self._attrs[cid] = limiter_attrs(
            component,
            what,
            cgroup=component.attrs.get("cgroup"),
            version=version,
            judged_by=judged,
            usage_counter=plan["usage"] is not None,
            cpus=plan["cpus"],
        )

    def _open_io(self, context: ProbeContext, component: Component) -> None:
        cid = component.id
        counters = component.attrs.get("counters", {})
        device = str(component.attrs.get("device", ""))
        version = component.attrs.get("version", 1)
        for key in IO_RATES:
            if key in component.limits:
                self.limits[f"{cid}/{key}"] = component.limits[key]
        raw = [f"{cid}/{c}" for c in ("read_bytes", "write_bytes", "reads", "writes")]
        opened = False
        if version == 2 and "io.stat" in counters:
            wanted = [Wanted(device, i) for i in V2_IO_FIELDS.values()]
            opened = self._add(
                _open(context, LineTable, counters["io.stat"], wanted, separators=b"="), raw
            )
        elif "bytes" in counters and "ios" in counters:
            sizes = _open(context, BlkioDeviceLines, counters["bytes"], device, ("Read", "Write"))
            ios = _open(context, BlkioDeviceLines, counters["ios"], device, ("Read", "Write"))
            if sizes is not None and ios is not None:
                opened = self._add(sizes, raw[:2]) and self._add(ios, raw[2:])
            else:
                for reader in (sizes, ios):
                    if reader is not None:
                        reader.close()
        if not opened and not ({"io.stat"} <= set(counters) or {"bytes", "ios"} <= set(counters)):
            context.notes.append(
                f"{cid}: no I/O counters beside the throttle in "
                f"{component.attrs.get('directory')}; its use is unknown"
            )
        self.plans[cid] = {"kind": "io", "opened": opened}
        self._attrs[cid] = limiter_attrs(
            component,
            "I/O throttle",
            cgroup=component.attrs.get("cgroup"),
            version=version,
            device=device,
            disk=str(component.attrs.get("limits", "")).removeprefix("block:"),
            judged_by="util",
        )

    # -- after the run -------------------------------------------------------------------------
    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for cid, plan in self.plans.items():
            if plan["kind"] == "cpu":
                out.update(self._derive_cpu(cid, plan, raw, t, metrics))
            elif plan["opened"]:
                out.update(self._derive_io(cid, raw, t))
        return out

    def _derive_cpu(
        self,
        cid: str,
        plan: dict[str, Any],
        raw: np.ndarray,
        t: np.ndarray,
        metrics: dict[str, np.ndarray],
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        if plan["stat"]:
            periods = self.col(raw, f"{cid}/nr_periods")
            throttled = self.col(raw, f"{cid}/nr_throttled")
            out[f"{cid}/periods_per_s"] = per_second(periods, t)
            out[f"{cid}/throttled_periods_per_s"] = per_second(throttled, t)
            out[f"{cid}/throttled_periods"] = throttling.throttled_periods(throttled, periods)
            if plan["version"] == 2:
                time_column, scale = f"{cid}/throttled_usec", throttling.US
            else:
                time_column, scale = f"{cid}/throttled_time", throttling.NS
            out[f"{cid}/throttled_share"] = throttling.time_share(
                self.col(raw, time_column), t, scale
            )
        limit = self.limits.get(f"{cid}/compute")
        cores = None
        if plan["usage"] == "us":
            cores = throttling.cores_used(self.col(raw, f"{cid}/usage_usec"), t, throttling.US)
        elif plan["usage"] == "ns":
            cores = throttling.cores_used(self.col(raw, f"{cid}/usage_ns"), t, throttling.NS)
        if cores is not None:
            out[f"{cid}/cores_used"] = cores
            fraction = throttling.fraction_of(cores, limit.value if limit else None)
            if fraction is not None:
                out[f"{cid}/util_compute"] = fraction
        elif plan["cpus"]:
            per_core = [
                metrics[k] for n in plan["cpus"] if (k := f"core:{n}/util_compute") in metrics
            ]
            if per_core:
                stacked = np.vstack(per_core)
                known = np.isfinite(stacked).sum(axis=0)
                total = np.where(np.isfinite(stacked), stacked, 0.0).sum(axis=0)
                out[f"{cid}/util_compute"] = ratio(total, known.astype(np.float64))
        return out

    def _derive_io(self, cid: str, raw: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for key, (column, metric) in IO_RATES.items():
            rate = per_second(self.col(raw, f"{cid}/{column}"), t)
            out[f"{cid}/{metric}"] = rate
            limit = self.limits.get(f"{cid}/{key}")
            if limit is not None and limit.known and limit.value:
                out[f"{cid}/util_{key}"] = ratio(rate, np.full(len(t), float(limit.value)))
        return out

    def interval_metric(self, key: str) -> bool:
        name = key.rsplit("/", 1)[-1]
        return super().interval_metric(key) or name in (
            "throttled_periods",
            "throttled_share",
            "cores_used",
            "util_compute",
            "read_iops",
            "write_iops",
            "util_read",
            "util_write",
            "util_iops_read",
            "util_iops_write",
        )

    def attrs(self) -> dict[str, dict[str, Any]]:
        return self._attrs

    def close(self) -> None:
        for reader in self.readers:
            close = getattr(reader, "close", None)
            if close is not None:
                close()


def open_probe(context: ProbeContext) -> CgroupProbe | None:
    limiters = cgroup_limiters(context, {"cpu", "cpuset", "io"})
    if not limiters:
        return None
    probe = CgroupProbe(context, limiters)
    if not probe.plans:
        return None
    return probe
