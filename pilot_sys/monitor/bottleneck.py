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
from typing import Any

import numpy as np

from pilot_sys import units
from pilot_sys.monitor import bottleneck_accelerator as accelerator
from pilot_sys.monitor import bottleneck_gpu_startup as gpu_startup
from pilot_sys.monitor.bottleneck_cpu import _cpu_evidence, _workload_single_core
from pilot_sys.monitor.bottleneck_culprits import culprits_clause, culprits_for
from pilot_sys.monitor.bottleneck_frequency import _frequency_warning
from pilot_sys.monitor.bottleneck_limits import (
    BOUND_FIRST,
    MEMORY_EVIDENCE,
    QUOTA_NOTE,
    THROTTLED,
    _applied_notes,
    _cover_by_limiters,
    _effective_for_cut,
    _judged_by,
    _limiter_evidence,
    _limiters,
    _mark_applied,
)
from pilot_sys.monitor.bottleneck_loopback import covered_by_loopback, is_loopback, loopback_note
from pilot_sys.monitor.bottleneck_model import (
    ALWAYS_ON_PATH,
    BUSIEST_CORE,
    DEFAULT_MAX_HOT_FRACTION,
    DEFAULT_THRESHOLD,
    MIN_INTERVALS,
    OVER_LIMIT,
    SINGLE_CORE,
    ComponentStats,
    HiddenBottleneck,
    Verdict,
    _describe_limit,
    _is_cut,
    _limiter_kind,
    _mean_of,
    _pct,
    _series,
)
from pilot_sys.monitor.trace import MonitorTrace

__all__ = [
    "ALWAYS_ON_PATH",
    "BUSIEST_CORE",
    "DEFAULT_MAX_HOT_FRACTION",
    "DEFAULT_THRESHOLD",
    "MIN_INTERVALS",
    "SINGLE_CORE",
    "THROTTLED",
    "ComponentStats",
    "HiddenBottleneck",
    "Verdict",
    "assess",
    "cut_line",
    "enough_to_judge",
    "governs_text",
    "min_intervals",
]


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
    # a GPU workload's start-up is judged apart, in each launch (bottleneck_gpu_startup)
    startup = gpu_startup.startup(trace)
    skip = startup.apart if startup is not None else np.zeros(t.size, dtype=bool)
    if startup is not None:
        weights[skip] = 0.0
        notes.append(gpu_startup.startup_note(trace, startup))
    on_path = (
        None
        if data_path is None
        else set(data_path) | set(ALWAYS_ON_PATH) | ({cut} if cut else set())
    )
    limiters = _limiters(trace)
    if on_path is not None:  # a GPU the workload had a process on carries its data
        on_path |= set(accelerator.driven(trace))
    if on_path is not None:  # a limit on what the data passes is on the path too
        on_path |= {lim for target, found in limiters.items() if target in on_path for lim in found}
    signals = _signals(trace) + _effective_for_cut(trace, cut, limiters)
    stats = [
        _stats(s, _apart(_judged_series(trace, s, threshold), skip), weights, threshold)
        for s in signals
    ]
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
    accelerator.settle(trace, stats, max_hot_fraction)
    hot = [s for s in stats if s.judged and (s.time_above_fraction or 0.0) > max_hot_fraction]
    loopback = is_loopback(cut, trace, graph)  # the CPU and memory are the CUT's data path

    def part_of_cut(s: ComponentStats) -> bool:
        return _is_cut(s.component, cut) or (loopback and covered_by_loopback(s))

    cut_stats = [s for s in stats if _is_cut(s.component, cut)]
    cut_utilizations = [
        s for s in cut_stats if s.kind == "utilization" and s.direction != SINGLE_CORE
    ]
    cut_limit_unknown = cut is not None and not cut_utilizations
    cut_saturated = any(part_of_cut(s) for s in hot)
    hidden = [
        HiddenBottleneck(
            component=s.component,
            direction=s.direction,
            metric=s.metric,
            mean=s.mean or 0.0,
            p95=s.p95 or 0.0,
            peak=s.peak or 0.0,
            time_above_fraction=s.time_above_fraction or 0.0,
            evidence=_evidence(s, trace, threshold, weights),
            culprits=culprits_for(trace, s.component),
        )
        for s in hot
        if not part_of_cut(s) and not _covered_by_cut(s, cut)
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
    notes += accelerator.notes(trace, weights, threshold, max_hot_fraction)
    # intervals sampled, less those judged apart (a GPU workload's start-up)
    longest = max(len(t) - 1 - int(np.count_nonzero(skip[1:])), 0)
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
    if loopback and cut is not None:
        notes.append(loopback_note(cut, stats, trace))
    elif cut_limit_unknown and cut_measured:
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
        accelerators=accelerator.summary(trace, weights, threshold),
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


def _judged_series(trace: MonitorTrace, signal: ComponentStats, threshold: float) -> np.ndarray:
    """The values a signal is judged on: its series, except for a memory limit's fill, which
    counts only in intervals where the kernel reclaimed for the limit or its tasks stalled on
    memory (0 elsewhere; NaN where neither could be read)."""
    values = _series(trace, signal.metric)
    owner, metric = signal.metric.rsplit("/", 1)
    if signal.direction == SINGLE_CORE and owner == "cpu:host":
        return accelerator.judged_single_core(
            trace, _workload_single_core(trace, values), threshold
        )
    if accelerator.remote_gpus(trace, owner):  # a remote GPU host's (bottleneck_accelerator)
        return accelerator.remote_judged(trace, owner, signal.direction, values, threshold)
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


def _apart(values: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """A series without the samples judged apart (NaN there)."""
    if values.size != skip.size or not skip.any():
        return values
    return np.where(skip, np.nan, values)


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


def _covered_by_cut(s: ComponentStats, cut: str | None) -> bool:
    """The CUT being a CPU: its own cores and its busiest core are the CUT too."""
    return cut == "cpu:host" and (s.component.startswith("core:") or s.direction == SINGLE_CORE)


# -- words -----------------------------------------------------------------------------------
def _evidence(s: ComponentStats, trace: MonitorTrace, threshold: float, weights: np.ndarray) -> str:
    numbers = (
        f"above {_pct(threshold)} for {_pct(s.time_above_fraction)} of the run "
        f"(mean {_pct(s.mean)}, p95 {_pct(s.p95)}, peak {_pct(s.peak)})"
    )
    if _limiter_kind(trace, s.component):
        return _limiter_evidence(s, trace, numbers)
    cpu = _cpu_evidence(s, trace, numbers)
    if cpu is not None:
        if s.direction == SINGLE_CORE:
            cpu += accelerator.starved_suffix(trace, weights)
        return cpu
    gpu = accelerator.evidence(s, trace, numbers, threshold)
    if gpu is not None:
        return gpu
    return _device_evidence(s, trace, numbers) + culprits_clause(trace, s.component)


def _device_evidence(s: ComponentStats, trace: MonitorTrace, numbers: str) -> str:
    """A disk's, the memory's or another device's evidence (its culprits follow it)."""
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
