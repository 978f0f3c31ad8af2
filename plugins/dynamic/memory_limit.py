"""cgroup memory limits: how full, how often hit, and what hitting them cost.

Which cgroups: the ``cgroup:<path>/memory`` limiter components the session discovered for the
workload (``pilot_sys.monitor.limiters``), read in the cgroup that sets the limit (an ancestor's
limit is counted in the ancestor, hierarchically).

Counters (Documentation/admin-guide/cgroup-v1/memory.rst, cgroup-v2.rst "Memory Interface
Files", filesystems/proc.rst for PSI):

* v1: ``memory.usage_in_bytes`` (page cache included), ``memory.failcnt`` (times a charge hit
  ``limit_in_bytes``, so that the kernel had to reclaim in the cgroup before it could go on),
  ``memory.stat`` ``total_workingset_refault_file`` (file pages read again soon after this
  cgroup's reclaim evicted them: the page cache thrashing) and ``total_pgmajfault``.
* v2: ``memory.current``, ``memory.events`` ``max`` and ``high`` (times usage hit
  ``memory.max`` / went over ``memory.high``), ``oom_kill``; ``memory.stat``
  ``workingset_refault_file`` and ``pgmajfault``; ``memory.pressure`` ``some``/``full`` ``total``
  (us stalled on memory, this cgroup's tasks only).

Formulas (``monitor.throttling``), per limiter ``L``:

* ``L/usage_bytes`` = usage (a level); ``L/util_capacity`` = usage / the limit (the fill);
* ``L/limit_hits_per_s`` = d(failcnt) / dt (v1), d(max + high) / dt (v2);
* ``L/oom_kills_per_s`` = d(oom_kill) / dt (v2);
* ``L/refaults_per_s`` = d(workingset_refault_file) / dt, pages; ``L/major_faults_per_s``
  likewise from pgmajfault;
* ``L/psi_some``, ``L/psi_full`` = d(total) / (dt x 1e6) (v2).

A cgroup full of page cache is not yet limited: the kernel fills any cgroup up to its limit
and drops clean cache when it must. The limit *binds* when the kernel had to reclaim for it
(``limit_hits_per_s``), and it costs the workload when what was reclaimed is needed again
(``refaults_per_s``) or tasks stall (``psi_*``); the verdict judges the fill only with that
evidence (``monitor.bottleneck``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot_sys.monitor import throttling
from pilot_sys.monitor.limiters import cgroup_limiters, limiter_attrs
from pilot_sys.monitor.probe import Probe, ProbeContext, Reader, TextReader
from pilot_sys.monitor.procread import FieldFile, LineTable, Wanted
from pilot_sys.monitor.rates import levels, per_second
from pilot_sys.topology.components import Component

KIND = "dynamic"
NAME = "memory_limit"

# memory.stat keys, newest name first (before Linux 5.9 there was one workingset_refault)
REFAULT_KEYS = {
    1: ("total_workingset_refault_file", "total_workingset_refault"),
    2: ("workingset_refault_file", "workingset_refault"),
}
MAJOR_FAULT_KEYS = {1: ("total_pgmajfault",), 2: ("pgmajfault",)}


def _reader(context: ProbeContext, make: Any, path: str, *args: Any, **kw: Any) -> Any:
    try:
        return make(context.path(path.lstrip("/")), *args, **kw)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        context.notes.append(
            f"{path}: not sampled ({why}); that memory limit's counters are unknown"
        )
        return None


def _present(context: ProbeContext, path: str, keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` that ``memory.stat`` has (None: none, or unreadable)."""
    try:
        text = context.path(path.lstrip("/")).read_text()
    except OSError:
        return None
    found = {line.split(" ", 1)[0] for line in text.splitlines()}
    return next((k for k in keys if k in found), None)


class MemoryLimitProbe(Probe):
    name = NAME

    def __init__(self, context: ProbeContext, limiters: list[Component]) -> None:
        super().__init__()
        self.readers: list[Reader | TextReader] = []
        self._columns: list[str] = []
        self.plans: dict[str, dict[str, Any]] = {}
        self._attrs: dict[str, dict[str, Any]] = {}
        for component in limiters:
            self._open(context, component)
        self.columns = tuple(self._columns)

    def _open(self, context: ProbeContext, component: Component) -> None:
        cid = component.id
        counters = component.attrs.get("counters", {})
        version = int(component.attrs.get("version", 1))
        plan: dict[str, Any] = {"version": version, "have": set()}

        def add(role: str, reader: Reader | TextReader | None, names: list[str]) -> None:
            if reader is not None:
                self.readers.append(reader)
                self._columns.extend(f"{cid}/{n}" for n in names)
                plan["have"].add(role)

        if "capacity" in component.limits:
            self.limits[f"{cid}/capacity"] = component.limits["capacity"]
        if "usage" in counters:
            add("usage", _reader(context, FieldFile, counters["usage"], [0]), ["usage"])
        if version == 1 and "failcnt" in counters:
            add("failcnt", _reader(context, FieldFile, counters["failcnt"], [0]), ["failcnt"])
        if version == 2 and "events" in counters:
            wanted = [Wanted("max", 1), Wanted("high", 1), Wanted("oom_kill", 1)]
            add(
                "events",
                _reader(context, LineTable, counters["events"], wanted),
                ["events_max", "events_high", "oom_kill"],
            )
        if "stat" in counters:
            refault = _present(context, counters["stat"], REFAULT_KEYS[version])
            major = _present(context, counters["stat"], MAJOR_FAULT_KEYS[version])
            keys = [(k, n) for k, n in ((refault, "refaults"), (major, "major_faults")) if k]
            if keys:
                wanted = [Wanted(k, 1) for k, _ in keys]
                add(
                    "stat",
                    _reader(context, LineTable, counters["stat"], wanted),
                    [n for _, n in keys],
                )
                plan["stat"] = [n for _, n in keys]
        if version == 2 and "pressure" in counters:
            wanted = [Wanted("some", 8), Wanted("full", 8)]
            add(
                "pressure",
                _reader(context, LineTable, counters["pressure"], wanted, separators=b"="),
                ["psi_some_us", "psi_full_us"],
            )
        if "usage" not in counters:
            context.notes.append(
                f"{cid}: no usage counter beside the limit in "
                f"{component.attrs.get('directory')}; its fill is unknown"
            )
        if plan["have"]:
            self.plans[cid] = plan
            self._attrs[cid] = limiter_attrs(
                component,
                "memory limit",
                cgroup=component.attrs.get("cgroup"),
                version=version,
                judged_by="util_capacity with reclaim evidence",
            )

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for cid, plan in self.plans.items():
            have = plan["have"]
            if "usage" in have:
                usage = levels(self.col(raw, f"{cid}/usage"))
                out[f"{cid}/usage_bytes"] = usage
                limit = self.limits.get(f"{cid}/capacity")
                fill = throttling.fraction_of(usage, limit.value if limit else None)
                if fill is not None:
                    out[f"{cid}/util_capacity"] = fill
            if "failcnt" in have:
                out[f"{cid}/limit_hits_per_s"] = throttling.events_per_second(
                    self.col(raw, f"{cid}/failcnt"), t
                )
            if "events" in have:
                hits = self.col(raw, f"{cid}/events_max") + self.col(raw, f"{cid}/events_high")
                out[f"{cid}/limit_hits_per_s"] = throttling.events_per_second(hits, t)
                out[f"{cid}/oom_kills_per_s"] = per_second(self.col(raw, f"{cid}/oom_kill"), t)
            for name in plan.get("stat", []) if "stat" in have else []:
                out[f"{cid}/{name}_per_s"] = per_second(self.col(raw, f"{cid}/{name}"), t)
            if "pressure" in have:
                for kind in ("some", "full"):
                    out[f"{cid}/psi_{kind}"] = throttling.time_share(
                        self.col(raw, f"{cid}/psi_{kind}_us"), t, throttling.US
                    )
        return out

    def attrs(self) -> dict[str, dict[str, Any]]:
        return self._attrs

    def close(self) -> None:
        for reader in self.readers:
            close = getattr(reader, "close", None)
            if close is not None:
                close()


def open_probe(context: ProbeContext) -> MemoryLimitProbe | None:
    limiters = cgroup_limiters(context, {"memory"})
    if not limiters:
        return None
    probe = MemoryLimitProbe(context, limiters)
    return probe if probe.plans else None
