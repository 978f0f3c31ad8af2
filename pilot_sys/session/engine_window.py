"""Hosts seen through an engine that scrapes them on its own schedule (``prom://``), in rounds too
short for that schedule: judged over the session's window instead.

A rate needs two scrapes, and a verdict a few of them: a round shorter than
``MIN_ENGINE_INTERVALS`` scrape intervals holds one or two rates of such a host, each spanning
mostly time outside the round. Its components are then left out of the round's own judgement
(their series blanked in the round's trace, with a note), and judged instead over the window
since the session's first round began: the engine's scrapes at a fixed number of instants
spread over it (``remote.prometheus_window``: every scrape while the window holds fewer, so the
answer's size does not grow with the session), fetched once (one query per metric family for
all such hosts), turned into utilizations by the same formulas (``remote.utilization``) and
judged by the same rules (``bottleneck.assess``) at that resolution. What is found is added
to the round's verdict, marked as judged over the session, and the note says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pilot_sys.monitor.remote.source import ENGINE_STALE_INTERVALS, MIN_ENGINE_INTERVALS
from pilot_sys.topology.remote_hosts import Backend, RemoteHost

MIN_SCRAPES = 3  # a session window with fewer scrapes of a host does not judge it either


@dataclass
class EngineJudgement:
    hidden: list[str] = field(default_factory=list)  # "cpu:srv (compute)", as a round names them
    notes: list[str] = field(default_factory=list)


def _of_host(key: str, name: str) -> bool:
    component = key.split("/", 1)[0] if ":" in key else ""
    kind, _, rest = component.partition(":")
    return bool(kind) and kind != "network" and (rest == name or key.startswith(f"{kind}:{name}/"))


def short_engine_hosts(trace: Any, hosts: Sequence[RemoteHost]) -> dict[str, float]:
    """Engine hosts (name -> scrape interval) for which the round is too short."""
    t = trace.timestamps
    duration = float(t[-1] - t[0]) if len(t) >= 2 else 0.0
    short: dict[str, float] = {}
    for host in hosts:
        source = trace.sources.get(f"remote:{host.name}")
        if host.backend is not Backend.PROMETHEUS or source is None:
            continue
        scrape = source.stale_after_s / ENGINE_STALE_INTERVALS
        if duration < MIN_ENGINE_INTERVALS * scrape:
            short[host.name] = scrape
    return short


def blank_hosts(trace: Any, names: Sequence[str]) -> None:
    """Leave these hosts' components out of the round's own judgement."""
    for key, values in trace.series.items():
        if any(_of_host(key, name) for name in names):
            trace.series[key] = [None] * len(values)


def judge_over_session(
    trace: Any,
    hosts: Sequence[RemoteHost],
    short: dict[str, float],
    session_started: float,
    *,
    graph: Any,
    threshold: float,
    data_path: list[str] | None,
) -> EngineJudgement:
    """The short-round hosts judged over ``[session_started, now]`` through their engines."""
    from pilot_sys.monitor.bottleneck import assess
    from pilot_sys.monitor.remote.http import RemoteUnavailable
    from pilot_sys.monitor.remote.prometheus import fleet_of
    from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
    from pilot_sys.monitor.trace import MonitorTrace
    from pilot_sys.topology.components import Limit

    out = EngineJudgement()
    chosen = [h for h in hosts if h.name in short]
    duration = float(trace.timestamps[-1] - trace.timestamps[0]) if len(trace.timestamps) else 0.0
    by_fleet: dict[int, list[RemoteHost]] = {}
    for host in chosen:
        by_fleet.setdefault(id(fleet_of(host)), []).append(host)
    for group in by_fleet.values():
        fleet = fleet_of(group[0])
        longest = max(short[h.name] for h in group)
        window = max(time.time() - session_started, 0.0) + longest  # the scrape before, too
        try:
            readings = fleet.window(group, window)
        except RemoteUnavailable as exc:
            out.notes += [
                f"remote host {h.name}: not judged in this round (shorter than "
                f"{MIN_ENGINE_INTERVALS:g} scrape intervals) nor over the session: {exc}"
                for h in group
            ]
            continue
        for host in group:
            scrape = short[host.name]
            found = readings.get(host.name, [])
            head = (
                f"remote host {host.name}: this round ({duration:.1f} s) is shorter than "
                f"{MIN_ENGINE_INTERVALS:g} of its engine's scrape intervals ({scrape:.3g} s)"
            )
            if len(found) < MIN_SCRAPES:
                out.notes.append(
                    f"{head}, and the session so far holds {len(found)} scrape(s) of it: "
                    "not judged yet"
                )
                continue
            series = CounterSeries.from_readings(found)
            times = series.remote_time
            span = float(times[-1] - times[0])
            resolution = max(scrape, span / (len(found) - 1))
            limits = {k: Limit(**v) for k, v in trace.limits.items() if _of_host(k, host.name)}
            metrics = utilizations(series, limits)
            window_trace = MonitorTrace(
                rate_hz=1.0 / resolution,
                start_time=float(times[0]),
                timestamps=[float(x) for x in times - times[0]],
                series={
                    k: [float(v) if math.isfinite(v) else None for v in np.asarray(vals).tolist()]
                    for k, vals in metrics.items()
                },
                limits={k: v for k, v in trace.limits.items() if _of_host(k, host.name)},
                attrs={k: v for k, v in trace.attrs.items() if _of_host(k, host.name)},
            )
            verdict = assess(
                window_trace,
                graph,
                trace.component_under_test,
                threshold=threshold,
                data_path=data_path,
            )
            hidden = [
                f"{h.component} ({h.direction})"
                for h in verdict.hidden_bottlenecks
                if _of_host(h.component, host.name)
            ]
            out.hidden += [f"{h} [over the session]" for h in hidden]
            found_text = (
                "hidden bottleneck(s) " + ", ".join(hidden) if hidden else "nothing saturated"
            )
            resets = fleet.last_window_resets.get(host.name, 0)
            reset_text = (
                f"; its counters were reset (the exporter or the host restarted) in {resets} "
                "interval(s), left out"
                if resets
                else ""
            )
            out.notes.append(
                f"{head}: judged over the session so far instead ({span:.0f} s, {len(found)} "
                f"scrapes, one every {resolution:.3g} s{reset_text}): {found_text}"
            )
    return out
