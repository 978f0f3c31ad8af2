"""Hidden-bottleneck detection (the Pilot paper, §III-B): did the run measure the component
under test?

Pure functions of a ``MonitorTrace`` (no I/O). For every component and direction the trace has a
saturation signal for: mean, p95 and peak, and the share of the run's *time* above the threshold
(samples weighted by their interval, so late ticks count for what they covered).

Saturation signals, in order of preference:

* ``util_<direction>``: throughput as a fraction of a *stated* limit (disk read/write, NIC
  send/receive, PCIe link, CPU compute in cores, memory capacity);
* ``cpu:host/busiest_core``: the busiest core's busy share, because a single-threaded workload
  saturates one core while the total reads 1/N;
* ``block:<dev>/busy`` (share of time with a request in flight, from io_ticks) only where the
  device's throughput limit is unknown *and* it serves one request at a time: on NVMe, RAID and
  multi-queue devices 100 % busy says nothing about headroom, so it is reported, never judged.

Kernel-imposed limits (``limiter`` in the trace's ``attrs``: a cgroup's CPU quota, cpuset,
memory limit or I/O throttle, a NIC's shaping qdisc; ``monitor.limiters``) are components too,
judged on their own counters against their own limit, and on the data path whenever what they
limit is:

* a CPU quota by ``throttled_periods``, the share of enforcement periods in which the quota ran
  out (the kernel's own statement that it bound; its cores used over the quota is reported);
* a memory limit by its fill, counted only in intervals where the kernel had to reclaim for the
  limit (``limit_hits_per_s``) or its tasks stalled on memory: a cgroup full of clean page cache
  has not hit anything yet;
* an I/O throttle, a qdisc or a cpuset by their utilization.

A limiter above the threshold long enough is a hidden bottleneck that names itself, and what it
limits is then not blamed as well (the limit bound first: a workload throttled by its quota got
all the CPU it was allowed, whatever the host's load). The CUT is judged against its *effective*
limit where a limiter's is tighter than its physical one, on that limiter's counters (the
workload's own traffic against the throttle or the shaper's rate); ``applied`` in its stats
says which limit applied and where it came from. A CPU-bound result measured while a cpufreq
policy ran below its nominal frequency gets a warning with the frequencies seen.

The verdict: **valid** when no component other than the CUT is above the threshold for more
than ``max_hot_fraction`` of the run. The default 10 % tolerates what every run has and what
cannot have shaped its result: start-up and exit transients, a periodic page-cache flush, a
daemon waking up. A constraint that holds a tenth of the run or longer is a regime of its own:
at least 10 % of the result was produced against a different limit, which is more than the
confidence intervals pilot-sys targets. Also flagged: nothing (the CUT included) near saturation
(the limit lies elsewhere: latency, locks, an unmonitored component), and a CUT whose limit is
unknown (then what was measured instead is stated).

A run is **judged** only with enough sampled intervals to resolve that share: at least
``1 / max_hot_fraction`` (10 at the default), never fewer than ``MIN_INTERVALS``. With fewer, a
component above the threshold is still listed in ``hidden_bottlenecks`` (what was seen), but
``enough_samples`` is False and the run is not called invalid on its own account: one hot
sample of three is a third of the run, and says nothing about a tenth.

When the CUT is saturated *and* another component is a hidden bottleneck, both are reported and
the hidden bottleneck governs (``governing``): the number may be that component's limit, not the
CUT's. ``cut_line`` says so in the words every output uses.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from pilot_sys import units
from pilot_sys.monitor.trace import MonitorTrace

DEFAULT_THRESHOLD = 0.8
DEFAULT_MAX_HOT_FRACTION = 0.10
MIN_INTERVALS = 3  # fewer than this and p95 or a time share mean nothing
OVER_LIMIT = 1.05  # a utilization above this says more about the stated limit than the device
ALWAYS_ON_PATH = ("cpu:host", "memory:host")  # every workload's data passes the CPU and memory
BUSIEST_CORE = "busiest_core"
SINGLE_CORE = "single core"
#: series of the workload's own CPU use: its processes', or the round's thread's (in-process)
WORKLOAD_CPU = ("process:", "thread:")
THROTTLED = "throttled periods"  # a CPU quota's signal: share of CFS periods it ran out in
MEMORY_EVIDENCE = ("limit_hits_per_s", "psi_some")  # the kernel reclaimed for / stalled on it
QUOTA_NOTE = "a CPU quota is judged by its throttled periods"
BOUND_FIRST = "bound first"


class ComponentStats(BaseModel):
    """One component and direction over the run."""

    component: str
    direction: (
        str  # read, write, send, receive, compute, capacity, iops_read, ..., busy, single core
    )
    metric: str  # the trace key
    kind: Literal["utilization", "busy"]  # a fraction of a stated limit, or of wall time
    limit: dict[str, Any] | None = None  # the Limit a utilization is a fraction of
    mean: float | None = None
    p95: float | None = None
    peak: float | None = None
    time_above_fraction: float | None = None
    samples: int = 0
    judged: bool = True  # counts toward the verdict (False: reported only, see ``note``)
    note: str = ""
    # which limit the utilization is a fraction of: "physical" (the component's own: sysfs, DMI,
    # user), "effective" (a limiter's, tighter: ``imposed_by``), or None (not a limited
    # component); ``physical_limit`` is the component's own when the effective one applied
    applied: Literal["physical", "effective"] | None = None
    imposed_by: str | None = None
    physical_limit: dict[str, Any] | None = None


class HiddenBottleneck(BaseModel):
    component: str
    direction: str
    metric: str
    mean: float
    p95: float
    peak: float
    time_above_fraction: float
    evidence: str


class Verdict(BaseModel):
    valid: bool  # no hidden bottleneck seen (read with ``enough_samples``: see ``judged_invalid``)
    threshold: float
    max_hot_fraction: float
    cut: str | None
    cut_saturated: bool
    cut_limit_unknown: bool
    nothing_saturated: bool
    hidden_bottlenecks: list[HiddenBottleneck] = Field(default_factory=list)
    per_component: list[ComponentStats] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    intervals: int = 0  # sampled intervals the shares are over
    # intervals >= min_intervals(max_hot_fraction): the run can be judged
    enough_samples: bool = True
    # whose limit the result reflects: a hidden bottleneck, else a saturated CUT
    governing: str | None = None

    @property
    def judged_invalid(self) -> bool:
        """A hidden bottleneck over enough samples to call the run invalid."""
        return not self.valid and self.enough_samples


def min_intervals(max_hot_fraction: float = DEFAULT_MAX_HOT_FRACTION) -> int:
    """Sampled intervals a run needs before the share of its time above the threshold can be
    compared with ``max_hot_fraction``: one interval is 1/n of the run, so n >= 1 / fraction."""
    if max_hot_fraction <= 0:
        return MIN_INTERVALS
    return max(MIN_INTERVALS, math.ceil(1.0 / max_hot_fraction - 1e-9))


def enough_to_judge(samples: int, max_hot_fraction: float = DEFAULT_MAX_HOT_FRACTION) -> bool:
    """Whether ``samples`` samples (``samples - 1`` intervals) can be judged on their own."""
    return samples - 1 >= min_intervals(max_hot_fraction)


def governs_text(hidden: list[str], cut: str | None, cut_saturated: bool) -> str | None:
    """The clause every output uses when a hidden bottleneck and a saturated CUT meet
    (``hidden``: "cpu:host (compute)" labels); None when there is nothing to decide."""
    if not hidden or not cut or not cut_saturated:
        return None
    first = hidden[0].split(" (", 1)[0]
    return (
        f"the hidden bottleneck governs the verdict: the number may be {first}'s limit, not {cut}'s"
    )


def cut_line(cut: str, cut_saturated: bool, hidden: list[str]) -> str:
    """``CUT block:vda: saturated, but the hidden bottleneck governs the verdict: ...``, or the
    CUT's state alone: the line `monitor`, `run` and report.md share."""
    governs = governs_text(hidden, cut, cut_saturated)
    if governs is not None:
        return f"CUT {cut}: saturated, but {governs}"
    return f"CUT {cut}: {'saturated' if cut_saturated else 'not saturated'}"


def assess(
    trace: MonitorTrace,
    graph: Any = None,
    cut: str | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    max_hot_fraction: float = DEFAULT_MAX_HOT_FRACTION,
    data_path: list[str] | None = None,
) -> Verdict:
    """Judge a recorded run. ``cut`` defaults to the trace's; ``data_path`` (component ids, e.g.
    ``DataPath.components``) limits the candidates for hidden bottlenecks to the path plus CPU
    and memory (a busy disk elsewhere is noted, not blamed); ``graph`` is only used for the
    CUT's stated limits when the trace lacks them."""
    cut = cut if cut is not None else trace.component_under_test
    t = np.asarray(trace.timestamps, dtype=np.float64)
    weights = np.empty_like(t)
    if t.size:
        weights[0] = 0.0  # a rate at row 0 covers no interval (it is NaN anyway)
        weights[1:] = np.diff(t)
    notes: list[str] = []
    on_path = (
        None
        if data_path is None
        else set(data_path) | set(ALWAYS_ON_PATH) | ({cut} if cut else set())
    )
    limiters = _limiters(trace)
    if on_path is not None:  # a limit on what the data passes is on the path too
        on_path |= {lim for target, found in limiters.items() if target in on_path for lim in found}
    signals = _signals(trace) + _effective_for_cut(trace, cut, limiters)
    stats = [_stats(s, _judged_series(trace, s), weights, threshold) for s in signals]
    _mark_applied(trace, stats, limiters)
    for s in stats:
        if (
            on_path is not None
            and s.component not in on_path
            and not s.component.startswith("core:")
        ):
            s.judged = False
            s.note = s.note or "not on the data path"
    _cover_by_limiters(stats, cut, limiters, max_hot_fraction)
    hot = [s for s in stats if s.judged and (s.time_above_fraction or 0.0) > max_hot_fraction]
    cut_stats = [s for s in stats if _is_cut(s.component, cut)]
    cut_utilizations = [
        s for s in cut_stats if s.kind == "utilization" and s.direction != SINGLE_CORE
    ]
    cut_limit_unknown = cut is not None and not cut_utilizations
    cut_saturated = any(_is_cut(s.component, cut) for s in hot)
    hidden = [
        HiddenBottleneck(
            component=s.component,
            direction=s.direction,
            metric=s.metric,
            mean=s.mean or 0.0,
            p95=s.p95 or 0.0,
            peak=s.peak or 0.0,
            time_above_fraction=s.time_above_fraction or 0.0,
            evidence=_evidence(s, trace, threshold),
        )
        for s in hot
        if not _is_cut(s.component, cut) and not _covered_by_cut(s, cut)
    ]
    # a CPU whose cores are all hot says it already: its busiest core is not named again (only
    # that CPU's: a remote host's busy core stays named beside a hot local CPU)
    all_hot = {h.component for h in hidden if h.direction != SINGLE_CORE}
    hidden = [h for h in hidden if not (h.direction == SINGLE_CORE and h.component in all_hot)]
    hidden.sort(key=lambda h: -h.time_above_fraction)
    nothing_saturated = not hot
    warning = _frequency_warning(trace, weights, cut, hot, max_hot_fraction)
    if warning:
        notes.append(warning)
    longest = max(len(t) - 1, 0)  # intervals sampled
    needed = min_intervals(max_hot_fraction)
    if longest < needed:
        notes.append(
            f"only {longest} sampled interval(s), {needed} needed to judge a share of "
            f"{_pct(max_hot_fraction)}: too short to judge; raise --rate or run longer"
        )
    cut_measured = cut is not None and any(key.rsplit("/", 1)[0] == cut for key in trace.series)
    if cut is None:
        notes.append("no component under test named or resolved: every hot component is reported")
    elif not cut_measured:
        notes.append(f"nothing was measured for the CUT {cut} (no dynamic plug-in covers it)")
    if cut_limit_unknown and cut_measured:
        notes.append(_instead(cut, cut_stats, trace, graph))
    if nothing_saturated and longest >= needed:
        notes.append(
            f"nothing monitored, the CUT included, was above {_pct(threshold)} for more than "
            f"{_pct(max_hot_fraction)} of the run: the limit lies elsewhere (latency, locks, an "
            "unmonitored component) or the workload did not push hard"
        )
    notes += [
        f"{s.component} ({s.direction}) reached {_pct(s.peak)} of "
        f"{_describe_limit(s.limit, s.component)}: "
        "the stated limit understates it, or a cache absorbed the traffic; check the limit"
        for s in stats
        if s.kind == "utilization"
        and s.peak is not None
        and s.peak > OVER_LIMIT
        and s.direction != SINGLE_CORE
        # a kernel limit is enforced: a sample above it is the kernel's dispatch granularity
        and not _limiter_kind(trace, s.metric.rsplit("/", 1)[0])
    ]
    notes += _applied_notes(stats)
    notes += list(
        dict.fromkeys(
            f"{s.component}: {s.note}"
            for s in stats
            if not s.judged
            and s.note
            and s.note != "not on the data path"
            and s.applied is None
            and not s.note.startswith(QUOTA_NOTE)
        )
    )
    notes += list(
        dict.fromkeys(
            f"{s.component}: {s.note}"
            for s in stats
            if not s.judged and s.applied == "physical" and s.note.startswith(BOUND_FIRST)
        )
    )
    off_path_hot = [
        s
        for s in stats
        if s.note == "not on the data path" and (s.time_above_fraction or 0.0) > max_hot_fraction
    ]
    notes += [
        f"{s.component} ({s.direction}) was above {_pct(threshold)} "
        f"for {_pct(s.time_above_fraction)} "
        "of the run but is not on the data path"
        for s in off_path_hot
    ]
    notes += trace.notes
    return Verdict(
        valid=not hidden,
        threshold=threshold,
        max_hot_fraction=max_hot_fraction,
        cut=cut,
        cut_saturated=cut_saturated,
        cut_limit_unknown=cut_limit_unknown,
        nothing_saturated=nothing_saturated,
        hidden_bottlenecks=hidden,
        per_component=stats,
        notes=notes,
        intervals=longest,
        enough_samples=longest >= needed,
        governing=hidden[0].component if hidden else (cut if cut_saturated else None),
    )


# -- signals ---------------------------------------------------------------------------------
def _signals(trace: MonitorTrace) -> list[ComponentStats]:
    """Which series are saturation signals (see the module docstring), unfilled."""
    found: list[ComponentStats] = []
    with_util = {
        key.rsplit("/", 1)[0] for key in trace.series if key.rsplit("/", 1)[1].startswith("util_")
    }
    for key in sorted(trace.series):
        component, metric = key.rsplit("/", 1)  # ids may hold "/" (cgroup:/bench/cpu)
        quota = _judged_by(trace, component) == "throttled_periods"
        if metric.startswith("util_"):
            direction = metric[len("util_") :]
            limit = trace.limits.get(f"{component}/{direction}")
            found.append(
                ComponentStats(
                    component=component,
                    direction=direction,
                    metric=key,
                    kind="utilization",
                    limit=limit,
                    # per-core series are reported; the verdict uses the host total and the
                    # busiest core; a CPU quota is judged by the periods it throttled
                    judged=not component.startswith("core:") and not quota,
                    note=QUOTA_NOTE if quota else "",
                )
            )
            if _limiter_kind(trace, component) == "memory limit" and metric == "util_capacity":
                if not any(f"{component}/{m}" in trace.series for m in MEMORY_EVIDENCE):
                    found[-1].judged = False
                    found[-1].note = (
                        "no reclaim counter was readable: its fill is reported, "
                        "not judged (a full cgroup need not have hit its limit)"
                    )
        elif metric == "throttled_periods" and quota:
            found.append(
                ComponentStats(
                    component=component,
                    direction=THROTTLED,
                    metric=key,
                    kind="utilization",
                    limit={
                        "value": 1.0,
                        "unit": "periods",
                        "source": "cgroup",
                        "detail": "share of CFS enforcement periods in which the quota ran out",
                    },
                )
            )
        elif metric == BUSIEST_CORE:
            found.append(
                ComponentStats(
                    component=component,
                    direction=SINGLE_CORE,
                    metric=key,
                    kind="utilization",
                    limit={
                        "value": 1.0,
                        "unit": "cores",
                        "source": "derived",
                        "detail": "one core",
                    },
                )
            )
        elif metric == "busy" and component.startswith("block:"):
            parallel = bool(trace.attrs.get(component, {}).get("serves_in_parallel"))
            judged = component not in with_util and not parallel
            note = ""
            if parallel:
                note = (
                    "serves requests in parallel (NVMe, RAID or multi-queue): busy time is "
                    "reported but not judged, 100 % busy can be far from its limit"
                )
                if component not in with_util:
                    note += (
                        "; its throughput limit is unknown, so it has no usable saturation signal"
                    )
            found.append(
                ComponentStats(
                    component=component,
                    direction="busy",
                    metric=key,
                    kind="busy",
                    judged=judged,
                    note=note,
                )
            )
    return found


def _limiter_kind(trace: MonitorTrace, component: str) -> str | None:
    return trace.attrs.get(component, {}).get("limiter")


def _judged_by(trace: MonitorTrace, component: str) -> str | None:
    return trace.attrs.get(component, {}).get("judged_by")


def _limiters(trace: MonitorTrace) -> dict[str, list[str]]:
    """What each limited component's limiters are (from the limiters' ``attrs``)."""
    found: dict[str, list[str]] = {}
    for component, attrs in sorted(trace.attrs.items()):
        target = attrs.get("limits") if attrs.get("limiter") else None
        if target:
            found.setdefault(str(target), []).append(component)
    return found


def _judged_series(trace: MonitorTrace, signal: ComponentStats) -> np.ndarray:
    """The values a signal is judged on: its series, except for a memory limit's fill, which
    counts only in intervals where the kernel reclaimed for the limit or its tasks stalled on
    memory (0 elsewhere; NaN where neither could be read)."""
    values = _series(trace, signal.metric)
    owner, metric = signal.metric.rsplit("/", 1)
    if signal.direction == SINGLE_CORE and owner == "cpu:host":
        return _workload_single_core(trace, values)
    if metric != "util_capacity" or _limiter_kind(trace, owner) != "memory limit":
        return values
    evidence = [
        _series(trace, f"{owner}/{m}") for m in MEMORY_EVIDENCE if f"{owner}/{m}" in trace.series
    ]
    evidence = [e for e in evidence if e.size == values.size]
    if not evidence:
        return values
    stacked = np.vstack(evidence)
    known = np.isfinite(stacked).any(axis=0)
    hit = (np.nan_to_num(stacked, nan=0.0) > 0).any(axis=0)
    return np.where(known, np.where(hit, values, 0.0), np.nan)


def _workload_cores_series(trace: MonitorTrace, size: int) -> np.ndarray | None:
    """The workload's processes' CPU use per sample, in cores (None: not recorded)."""
    keys = [k for k in trace.series if k.startswith(WORKLOAD_CPU) and k.endswith("/cpu_cores")]
    parts = [p for p in (_series(trace, k) for k in keys) if p.size == size]
    if not parts:
        return None
    stacked = np.vstack(parts)
    known = np.isfinite(stacked).any(axis=0)
    return np.where(known, np.nansum(stacked, axis=0), np.nan)


def _workload_single_core(trace: MonitorTrace, busiest: np.ndarray) -> np.ndarray:
    """The single-core signal judged against the workload: a saturated core holds back a
    single-threaded workload only while the workload itself runs on it, so the busiest core
    counts up to the workload's own CPU use. A core that another process keeps busy (a second
    core's worth of background work) leaves the workload the other cores: not its limit. Without
    the workload's processes in the trace, the busiest core is judged as it is."""
    own = _workload_cores_series(trace, busiest.size)
    if own is None:
        return busiest
    return np.where(np.isfinite(own), np.minimum(busiest, own), busiest)


def _effective_for_cut(
    trace: MonitorTrace, cut: str | None, limiters: dict[str, list[str]]
) -> list[ComponentStats]:
    """The CUT's utilization against its effective limit, per limited key where a limiter's is
    tighter than the CUT's physical limit (or the physical one is unknown): the tightest
    limiter's own utilization series (the workload's traffic against the throttle, the sent
    bytes against the shaper's rate, the cgroup's cores against its quota)."""
    if cut is None:
        return []
    best: dict[str, tuple[float, str, dict[str, Any]]] = {}
    for limiter in limiters.get(cut, []):
        for key in list(trace.limits):
            owner, _, direction = key.rpartition("/")
            limit = trace.limits[key]
            if owner != limiter or f"{limiter}/util_{direction}" not in trace.series:
                continue
            value = limit.get("value")
            if value is None:
                continue
            if direction not in best or value < best[direction][0]:
                best[direction] = (float(value), limiter, limit)
    found = []
    for direction, (value, limiter, limit) in sorted(best.items()):
        physical = trace.limits.get(f"{cut}/{direction}")
        if physical and physical.get("value") is not None and physical["value"] <= value:
            continue  # the hardware binds first: the physical limit applies
        found.append(
            ComponentStats(
                component=cut,
                direction=direction,
                metric=f"{limiter}/util_{direction}",
                kind="utilization",
                limit=limit,
                applied="effective",
                imposed_by=limiter,
                physical_limit=physical,
                note=f"against its effective limit, {limiter}'s, on that limiter's own counters",
            )
        )
    return found


def _mark_applied(
    trace: MonitorTrace, stats: list[ComponentStats], limiters: dict[str, list[str]]
) -> None:
    """Say which limit each limited component's utilization is a fraction of: its physical
    one, noting a tighter limiter (judged on its own counters); the CUT's physical entry is
    only reported where its effective one applied."""
    effective = {(s.component, s.direction): s for s in stats if s.applied == "effective"}
    for s in stats:
        if s.applied is not None or s.kind != "utilization" or s.component not in limiters:
            continue
        s.applied = "physical"
        if (s.component, s.direction) in effective:
            chosen = effective[(s.component, s.direction)]
            s.judged = False
            s.note = (
                f"its physical limit; the tighter effective limit of {chosen.imposed_by} applied"
            )
            continue
        tighter = [
            lim
            for lim in limiters[s.component]
            if (v := (trace.limits.get(f"{lim}/{s.direction}") or {}).get("value")) is not None
            and (s.limit is None or s.limit.get("value") is None or v < s.limit["value"])
        ]
        if tighter and not s.note:
            s.note = (
                f"{', '.join(tighter)} limits it more tightly; judged on "
                f"{'its' if len(tighter) == 1 else 'their'} own counters"
            )


def _cover_by_limiters(
    stats: list[ComponentStats],
    cut: str | None,
    limiters: dict[str, list[str]],
    max_hot_fraction: float,
) -> None:
    """A limiter that bound long enough speaks for what it limits: that component (unless it
    is the CUT) is reported, not blamed as well."""
    limiter_ids = {lim for found in limiters.values() for lim in found}
    hot = {
        s.component: s
        for s in stats
        if s.judged
        and s.component in limiter_ids
        and (s.time_above_fraction or 0.0) > max_hot_fraction
    }
    for s in stats:
        if not s.judged or _is_cut(s.component, cut):
            continue
        binding = [hot[lim] for lim in limiters.get(s.component, []) if lim in hot]
        if binding:
            s.judged = False
            s.note = (
                f"{BOUND_FIRST}: {binding[0].component} ({binding[0].direction} above the "
                f"threshold for {_pct(binding[0].time_above_fraction)} of the run): "
                "the workload could not use more of it, whatever its load"
            )


def _applied_notes(stats: list[ComponentStats]) -> list[str]:
    """Which limit the CUT was judged against where a limiter's was the tighter, and where
    both came from."""
    out = []
    for s in stats:
        if s.applied != "effective":
            continue
        physical = (
            f"its physical {_describe_limit(s.physical_limit, s.component)[4:]}"
            if s.physical_limit and s.physical_limit.get("value") is not None
            else "its physical limit (unknown)"
        )
        out.append(
            f"{s.component} ({s.direction}) judged against its effective limit: "
            f"{s.imposed_by}'s, {_describe_limit(s.limit, s.component)[4:]}, tighter than "
            f"{physical}"
        )
    return out


def _series(trace: MonitorTrace, key: str) -> np.ndarray:
    return np.array(
        [np.nan if v is None else v for v in trace.series.get(key, [])], dtype=np.float64
    )


def _stats(
    signal: ComponentStats, values: np.ndarray, weights: np.ndarray, threshold: float
) -> ComponentStats:
    finite = np.isfinite(values)
    if values.size != weights.size or not finite.any():
        return signal
    v = values[finite]
    w = weights[finite]
    total = float(w.sum())
    above = float(w[v > threshold].sum())
    return signal.model_copy(
        update={
            "mean": float(np.average(v, weights=w)) if total > 0 else float(v.mean()),
            "p95": float(np.percentile(v, 95)),
            "peak": float(v.max()),
            "time_above_fraction": above / total if total > 0 else float(np.mean(v > threshold)),
            "samples": int(v.size),
        }
    )


def _is_cut(component: str, cut: str | None) -> bool:
    return cut is not None and component == cut


def _covered_by_cut(s: ComponentStats, cut: str | None) -> bool:
    """The CUT being a CPU: its own cores and its busiest core are the CUT too."""
    return cut == "cpu:host" and (s.component.startswith("core:") or s.direction == SINGLE_CORE)


# -- words -----------------------------------------------------------------------------------
def _mean_of(trace: MonitorTrace, key: str) -> float | None:
    values = _series(trace, key)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def _workload_cores(trace: MonitorTrace) -> float | None:
    keys = [k for k in trace.series if k.startswith(WORKLOAD_CPU) and k.endswith("/cpu_cores")]
    means = [m for m in (_mean_of(trace, k) for k in keys) if m is not None]
    return sum(means) if means else None


def _pct(fraction: float | None) -> str:
    return units.percent(fraction, 0)


def _describe_limit(limit: dict[str, Any] | None, component: str) -> str:
    if not limit or limit.get("value") is None:
        return "an unknown limit"
    network = units.network_component(component)
    shown = units.quantity(float(limit["value"]), limit.get("unit", ""), network)
    source = limit.get("source", "")
    return f"its limit of {shown} ({source}{': ' + limit['detail'] if limit.get('detail') else ''})"


def _evidence(s: ComponentStats, trace: MonitorTrace, threshold: float) -> str:
    numbers = (
        f"above {_pct(threshold)} for {_pct(s.time_above_fraction)} of the run "
        f"(mean {_pct(s.mean)}, p95 {_pct(s.p95)}, peak {_pct(s.peak)})"
    )
    if _limiter_kind(trace, s.component):
        return _limiter_evidence(s, trace, numbers)
    if s.component == "cpu:host" and s.direction == SINGLE_CORE:
        total = _mean_of(trace, "cpu:host/busy")
        own_known = _workload_cores(trace) is not None
        text = (
            f"the workload's own processes kept a core busy {numbers}"
            if own_known
            else f"the busiest core was {numbers}"
        )
        if total is not None:
            text += (
                f" while all cores together averaged {_pct(total)}: "
                "a single thread is limited by one core"
            )
        own = _workload_cores(trace)
        if own is not None:
            text += f"; the workload's processes used {own:.2f} cores on average"
        return text
    if s.component == "cpu:host":
        text = f"CPU busy {numbers} of {_describe_limit(s.limit, s.component)}"
        own = _workload_cores(trace)
        busy = _mean_of(trace, "cpu:host/busy_cores")
        if own is not None and busy is not None:
            text += (
                f"; the workload's processes used {own:.2f} cores, "
                f"other processes {max(busy - own, 0.0):.2f}"
            )
        psi = _mean_of(trace, "cpu:host/psi_some")
        if psi is not None:
            text += f"; runnable tasks waited for a CPU {_pct(psi)} of the time (PSI)"
        return text
    if s.kind == "busy":
        depth = _mean_of(trace, f"{s.component}/queue_depth")
        text = (
            f"requests in flight {numbers} (busy time from io_ticks: its throughput limit is "
            "unknown, and it serves one request at a time, so busy time is its saturation signal)"
        )
        if depth is not None:
            text += f"; mean queue depth {depth:.1f}"
        return text
    if s.component == "memory:host":
        text = f"memory in use {numbers} of {_describe_limit(s.limit, s.component)}"
        scans = _mean_of(trace, "memory:host/reclaim_scan_pages_per_s")
        if scans:
            text += f"; reclaim scanned {units.count(scans, 'pages/s')}"
        return text
    return f"{s.direction} {numbers} of {_describe_limit(s.limit, s.component)}"


def _weights(trace: MonitorTrace) -> np.ndarray:
    t = np.asarray(trace.timestamps, dtype=np.float64)
    w = np.zeros_like(t)
    w[1:] = np.diff(t) if t.size > 1 else w[1:]
    return w


def _time_mean(trace: MonitorTrace, key: str) -> float | None:
    """The time-weighted mean of an interval series over the intervals where it is known."""
    values, w = _series(trace, key), _weights(trace)
    ok = np.isfinite(values) & (w > 0) if values.size == w.size else np.zeros(0, dtype=bool)
    return float(np.average(values[ok], weights=w[ok])) if ok.any() else None


ACTIVE_GAP = 2  # idle intervals inside a stretch of I/O: a throttle dispatches in slices


def _active_mean(trace: MonitorTrace, key: str) -> float | None:
    """The time-weighted mean of a rate over the stretches in which it was active: intervals
    with a rate above 0, and runs of at most ``ACTIVE_GAP`` idle intervals between two of them
    (a throttle releases I/O in slices, so a sampled rate alternates between 0 and twice the
    limit). What a workload was held at while it did I/O, not diluted by its start-up or by
    the gaps between rounds."""
    values, w = _series(trace, key), _weights(trace)
    if values.size != w.size or not values.size:
        return None
    known = np.isfinite(values)
    busy = known & (values > 0)
    at = np.flatnonzero(busy)
    short = (np.diff(at) - 1 > 0) & (np.diff(at) - 1 <= ACTIVE_GAP)  # gaps to bridge
    edges = np.zeros(values.size + 1, dtype=np.int64)
    np.add.at(edges, at[:-1][short] + 1, 1)
    np.add.at(edges, at[1:][short], -1)
    active = busy | ((np.cumsum(edges)[:-1] > 0) & known)
    ok = active & (w > 0)
    return float(np.average(values[ok], weights=w[ok])) if ok.any() else None


def _total(trace: MonitorTrace, key: str) -> float | None:
    """Events over the run from a per-second series: the sum of rate x interval."""
    values, w = _series(trace, key), _weights(trace)
    ok = np.isfinite(values) if values.size == w.size else np.zeros(0, dtype=bool)
    return float(np.sum(values[ok] * w[ok])) if ok.any() else None


def _limiter_evidence(s: ComponentStats, trace: MonitorTrace, numbers: str) -> str:
    """A limiter names itself, its limit, and the counters that show it bound."""
    attrs = trace.attrs.get(s.component, {})
    kind = attrs.get("limiter")
    limit = (s.limit or {}).get("value") if s.direction != THROTTLED else None
    if limit is None:
        limit = (trace.limits.get(f"{s.component}/compute") or {}).get("value")
    cgroup = attrs.get("cgroup", "")
    c = s.component
    if kind == "CPU quota":
        text = f"cgroup {cgroup} CPU quota {units.quantity(limit, 'cores')}"
        share = _ratio_of_totals(trace, f"{c}/throttled_periods_per_s", f"{c}/periods_per_s")
        text += f": throttled in {_pct(share)} of periods" if share is not None else f": {numbers}"
        used = _time_mean(trace, f"{c}/cores_used")
        if used is None:
            used = _workload_cores(trace)
        if used is not None:
            text += f"; the workload used {used:.2f} cores"
        return text
    if kind == "cpuset":
        cpus = attrs.get("cpus") or []
        return (
            f"cgroup {cgroup} cpuset of {len(cpus) or units.quantity(limit, 'cores')} CPUs"
            f"{' (' + ','.join(map(str, cpus)) + ')' if cpus else ''}: {numbers}"
        )
    if kind == "I/O throttle":
        disk = attrs.get("disk") or attrs.get("device", "?")
        what = {"read": "reads", "write": "writes", "iops_read": "reads", "iops_write": "writes"}
        rate_key = {
            "read": "read_bytes_per_s",
            "write": "write_bytes_per_s",
            "iops_read": "read_iops",
            "iops_write": "write_iops",
        }.get(s.direction)
        unit = (s.limit or {}).get("unit", "B/s")
        text = (
            f"cgroup {cgroup} io throttle on {disk} {s.direction.replace('_', ' ')} "
            f"{units.quantity(limit, unit)}"
        )
        held = _active_mean(trace, f"{c}/{rate_key}") if rate_key else None
        if held is None:
            return f"{text}: {numbers}"
        text += f": {what.get(s.direction, 'I/O')} held at {units.quantity(held, unit)}"
        busy = _time_mean(trace, f"block:{disk}/busy")
        if busy is not None:
            text += f" while {disk} was {_pct(busy)} busy"
        return text
    if kind == "traffic shaping":
        nic = attrs.get("interface", c.split(":", 1)[-1])
        text = f"qdisc {attrs.get('qdisc', '?')} on {nic} rate {units.bit_rate(limit)}"
        over = _time_mean(trace, f"{c}/over_rate")
        drops = _total(trace, f"{c}/drops_per_s")
        parts = []
        if over is not None:
            parts.append(f"over its rate in {_pct(over)} of samples")
        if drops is not None:
            parts.append(f"{units.count(round(drops))} drops")
        sent = _time_mean(trace, f"{c}/sent_bytes_per_s")
        if sent is not None:
            parts.append(f"sent {units.bit_rate(sent)} on average")
        return text + ": " + (", ".join(parts) if parts else numbers)
    if kind == "memory limit":
        text = f"cgroup {cgroup} memory limit {units.size(limit)}: usage {numbers}"
        hits = _total(trace, f"{c}/limit_hits_per_s")
        if hits:
            source = "memory.failcnt" if attrs.get("version") == 1 else "memory.events max/high"
            text += (
                f"; the kernel reclaimed to stay under it {units.count(round(hits))} times "
                f"({source})"
            )
        refaults = _total(trace, f"{c}/refaults_per_s")
        if refaults:
            text += (
                f"; {units.count(round(refaults))} evicted file pages were read again "
                "(workingset refaults: the page cache could not hold the data)"
            )
        stall = _time_mean(trace, f"{c}/psi_some")
        if stall:
            text += f"; its tasks stalled on memory {_pct(stall)} of the time (PSI)"
        return text
    return f"{kind} {s.direction} {numbers}"


def _ratio_of_totals(trace: MonitorTrace, numerator: str, denominator: str) -> float | None:
    top, bottom = _total(trace, numerator), _total(trace, denominator)
    return top / bottom if top is not None and bottom else None


CPU_BOUND_COMPONENTS = ("cpu:host", "core:")


def _frequency_warning(
    trace: MonitorTrace,
    weights: np.ndarray,
    cut: str | None,
    hot: list[ComponentStats],
    max_hot_fraction: float,
) -> str | None:
    """A CPU-bound result (the CUT is the CPU, or the CPU or a CPU quota bound) measured while
    a cpufreq policy ran below its nominal frequency for longer than ``max_hot_fraction`` of
    the run: the frequencies seen, per policy."""
    policies = {c: a for c, a in trace.attrs.items() if c.startswith("cpufreq:policy")}
    cpu_bound = (cut is not None and cut.startswith(CPU_BOUND_COMPONENTS)) or any(
        h.component.startswith(CPU_BOUND_COMPONENTS)
        or _limiter_kind(trace, h.component) in ("CPU quota", "cpuset")
        for h in hot
    )
    if not policies or not cpu_bound:
        return None
    seen = []
    for policy, attrs in sorted(policies.items()):
        below = _series(trace, f"{policy}/below_nominal")
        hz = _series(trace, f"{policy}/frequency_hz")
        nominal = attrs.get("nominal_hz")
        if not nominal or below.size != weights.size or hz.size != weights.size:
            continue
        ok = np.isfinite(below)
        total = float(weights[ok].sum())
        share = float(weights[ok][below[ok] > 0].sum()) / total if total > 0 else 0.0
        if share <= max_hot_fraction:
            continue
        low = hz[np.isfinite(hz) & (below > 0)]
        cpus = ",".join(map(str, attrs.get("cpus") or [])) or "?"
        seen_at = (
            _ghz(low.min())
            if _ghz(low.min()) == _ghz(low.max())
            else f"{_ghz(low.min())}-{_ghz(low.max())} (mean {_ghz(low.mean())})"
        )
        text = (
            f"{policy.split(':', 1)[1]} (CPUs {cpus}) at {seen_at} below its nominal "
            f"{_ghz(nominal)} for {_pct(share)} of the run"
        )
        cap, hardware = attrs.get("scaling_max_hz"), attrs.get("hardware_max_hz")
        if cap and hardware and cap < hardware:
            text += f", capped at {_ghz(cap)} (scaling_max_freq)"
        if attrs.get("governor"):
            text += f", governor {attrs['governor']}"
        seen.append(text)
    if not seen:
        return None
    return (
        "warning: a CPU-bound result measured below the nominal CPU frequency (it would be "
        "faster at the CPU's rated speed): " + "; ".join(seen)
    )


def _ghz(hz: float) -> str:
    return f"{hz / 1e9:.2f} GHz"


def _instead(cut: str, cut_stats: list[ComponentStats], trace: MonitorTrace, graph: Any) -> str:
    """What was measured for a CUT whose limit is unknown."""
    detail = ""
    for direction in ("read", "write", "send", "receive"):
        limit = trace.limits.get(f"{cut}/{direction}")
        if limit and limit.get("detail"):
            detail = f" ({limit['detail']})"
            break
    if not detail and graph is not None and cut in graph:
        for direction in ("read", "write", "send", "receive"):
            limit = graph.limit(cut, direction)
            if limit.detail:
                detail = f" ({limit.detail})"
                break
    text = f"the CUT {cut} has no stated throughput limit{detail}, so its utilization is unknown"
    busy = next((s for s in cut_stats if s.kind == "busy" and s.mean is not None), None)
    if busy is not None:
        text += (
            f"; measured instead: busy time (io_ticks) mean {_pct(busy.mean)}, "
            f"p95 {_pct(busy.p95)}, "
            f"above the threshold {_pct(busy.time_above_fraction)} of the run"
        )
        if not busy.judged and busy.note:
            text += f" ({busy.note})"
    rates = [
        (label, _mean_of(trace, f"{cut}/{metric}"))
        for label, metric in (
            ("read", "read_bytes_per_s"),
            ("write", "write_bytes_per_s"),
            ("receive", "rx_bytes_per_s"),
            ("send", "tx_bytes_per_s"),
        )
    ]
    network = units.network_component(cut)
    shown = [f"{label} {units.quantity(v, 'B/s', network)}" for label, v in rates if v]
    if shown:
        text += "; throughput " + ", ".join(shown)
    return text
