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


class ComponentStats(BaseModel):
    """One component and direction over the run."""

    component: str
    direction: str  # read, write, send, receive, compute, capacity, iops_read, ..., busy, single core
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
    return (f"the hidden bottleneck governs the verdict: the number may be {first}'s limit, "
            f"not {cut}'s")


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
    on_path = None if data_path is None else set(data_path) | set(ALWAYS_ON_PATH) | ({cut} if cut else set())
    stats = [
        _stats(s, _series(trace, s.metric), weights, threshold)
        for s in _signals(trace)
    ]
    for s in stats:
        if on_path is not None and s.component not in on_path and not s.component.startswith("core:"):
            s.judged = False
            s.note = s.note or "not on the data path"
    hot = [s for s in stats if s.judged and (s.time_above_fraction or 0.0) > max_hot_fraction]
    cut_stats = [s for s in stats if _is_cut(s.component, cut)]
    cut_utilizations = [s for s in cut_stats if s.kind == "utilization" and s.direction != SINGLE_CORE]
    cut_limit_unknown = cut is not None and not cut_utilizations
    cut_saturated = any(_is_cut(s.component, cut) for s in hot)
    hidden = [
        HiddenBottleneck(
            component=s.component, direction=s.direction, metric=s.metric, mean=s.mean or 0.0,
            p95=s.p95 or 0.0, peak=s.peak or 0.0, time_above_fraction=s.time_above_fraction or 0.0,
            evidence=_evidence(s, trace, threshold),
        )
        for s in hot
        if not _is_cut(s.component, cut) and not _covered_by_cut(s, cut)
    ]
    if any(h.component == "cpu:host" and h.direction != SINGLE_CORE for h in hidden):
        hidden = [h for h in hidden if h.direction != SINGLE_CORE]  # all cores hot says it already
    hidden.sort(key=lambda h: -h.time_above_fraction)
    nothing_saturated = not hot
    longest = max(len(t) - 1, 0)  # intervals sampled
    needed = min_intervals(max_hot_fraction)
    if longest < needed:
        notes.append(
            f"only {longest} sampled interval(s), {needed} needed to judge a share of "
            f"{_pct(max_hot_fraction)}: too short to judge; raise --rate or run longer"
        )
    cut_measured = cut is not None and any(key.startswith(f"{cut}/") for key in trace.series)
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
        if s.kind == "utilization" and s.peak is not None and s.peak > OVER_LIMIT and s.direction != SINGLE_CORE
    ]
    notes += [f"{s.component}: {s.note}" for s in stats if not s.judged and s.note and s.note != "not on the data path"]
    off_path_hot = [
        s for s in stats if s.note == "not on the data path" and (s.time_above_fraction or 0.0) > max_hot_fraction
    ]
    notes += [
        f"{s.component} ({s.direction}) was above {_pct(threshold)} "
        f"for {_pct(s.time_above_fraction)} "
        "of the run but is not on the data path" for s in off_path_hot
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
    with_util = {key.split("/", 1)[0] for key in trace.series if key.split("/", 1)[1].startswith("util_")}
    for key in sorted(trace.series):
        component, metric = key.split("/", 1)
        if metric.startswith("util_"):
            direction = metric[len("util_"):]
            limit = trace.limits.get(f"{component}/{direction}")
            found.append(
                ComponentStats(
                    component=component, direction=direction, metric=key, kind="utilization", limit=limit,
                    # per-core series are reported; the verdict uses the host total and the busiest core
                    judged=not component.startswith("core:"),
                )
            )
        elif metric == BUSIEST_CORE:
            found.append(
                ComponentStats(
                    component=component, direction=SINGLE_CORE, metric=key, kind="utilization",
                    limit={"value": 1.0, "unit": "cores", "source": "derived", "detail": "one core"},
                )
            )
        elif metric == "busy" and component.startswith("block:"):
            parallel = bool(trace.attrs.get(component, {}).get("serves_in_parallel"))
            judged = component not in with_util and not parallel
            note = ""
            if parallel:
                note = (
                    "serves requests in parallel (NVMe, RAID or multi-queue): busy time is reported "
                    "but not judged, 100 % busy can be far from its limit"
                )
                if component not in with_util:
                    note += "; its throughput limit is unknown, so it has no usable saturation signal"
            found.append(
                ComponentStats(component=component, direction="busy", metric=key, kind="busy", judged=judged, note=note)
            )
    return found


def _series(trace: MonitorTrace, key: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in trace.series.get(key, [])], dtype=np.float64)


def _stats(signal: ComponentStats, values: np.ndarray, weights: np.ndarray, threshold: float) -> ComponentStats:
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
    keys = [k for k in trace.series if k.startswith("process:") and k.endswith("/cpu_cores")]
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
    if s.component == "cpu:host" and s.direction == SINGLE_CORE:
        total = _mean_of(trace, "cpu:host/busy")
        text = f"the busiest core was {numbers}"
        if total is not None:
            text += (f" while all cores together averaged {_pct(total)}: "
                     "a single thread is limited by one core")
        own = _workload_cores(trace)
        if own is not None:
            text += f"; the workload's processes used {own:.2f} cores on average"
            if own < 0.5:
                text += ", so other processes kept that core busy"
        return text
    if s.component == "cpu:host":
        text = f"CPU busy {numbers} of {_describe_limit(s.limit, s.component)}"
        own = _workload_cores(trace)
        busy = _mean_of(trace, "cpu:host/busy_cores")
        if own is not None and busy is not None:
            text += f"; the workload's processes used {own:.2f} cores, other processes {max(busy - own, 0.0):.2f}"
        psi = _mean_of(trace, "cpu:host/psi_some")
        if psi is not None:
            text += f"; runnable tasks waited for a CPU {_pct(psi)} of the time (PSI)"
        return text
    if s.kind == "busy":
        depth = _mean_of(trace, f"{s.component}/queue_depth")
        text = (
            f"requests in flight {numbers} (busy time from io_ticks: its throughput limit is unknown, "
            "and it serves one request at a time, so busy time is its saturation signal)"
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
        for label, metric in (("read", "read_bytes_per_s"), ("write", "write_bytes_per_s"),
                              ("receive", "rx_bytes_per_s"), ("send", "tx_bytes_per_s"))
    ]
    network = units.network_component(cut)
    shown = [f"{label} {units.quantity(v, 'B/s', network)}" for label, v in rates if v]
    if shown:
        text += "; throughput " + ", ".join(shown)
    return text
