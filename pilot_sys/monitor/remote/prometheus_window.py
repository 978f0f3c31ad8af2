"""A window of hosts seen through Prometheus (a round's, or the session's), fetched in a size
that does not depend on the window's length.

What is asked. The counters at ``points`` instants spread evenly over the window, first and last
included: one ``/api/v1/query_range`` per counter family for all hosts, of the plain selector
(``node_cpu_seconds_total{instance=~"a|b"}``, start, end, step = window / (points - 1)). At each
step the engine answers the latest raw sample at or before it, and ``timestamp()`` of the same
selector (one more query, one series per host: ``max by (instance) (...)``) says when that
sample was scraped. Each point is thus a genuine raw sample at its genuine scrape time, only
fewer of them: the answer holds at most hosts x series x ``points`` values, whatever the
window's length (a step shorter than the scrape interval repeats a sample; repeats are dropped,
so a short window gives every scrape it holds, as raw samples would).

No extrapolation. Differences of these counters over their own sample times are exact
(busy CPU seconds, bytes) for each interval between two kept scrapes; ``rate()`` and
``increase()`` would extrapolate each interval to the step's edges (by up to half a scrape
interval each side, more where series start or end), which is what a direct scrape does not
do. With ``points=2`` the window is judged from two values per series, its first and last
scrape: the mean over the window of every rate and busy share is then exact, since the
differences telescope.

What the thinning gives up. The verdict's rule is a share of the window's *time* above a
threshold, so it needs intervals, not only the mean: at least ``1 / max_hot_fraction`` of them
(10 at the default). ``WINDOW_POINTS`` (21: 20 intervals) keeps a distribution at a resolution
of window / 20: a burst shorter than that is averaged over its interval (as a burst shorter
than the scrape interval is averaged by the engine anyway), and the busiest core is the busiest
over each interval, not over each scrape. Windows holding fewer scrapes than ``points`` lose
nothing.

Counter resets. A counter resets when its process starts again: the kernel's (CPU time, disk
and network counters) when the host boots, the exporter's own CPU time when the exporter
restarts. An interval holding one has a wrong difference even where the counter ends higher
than it began, so each point also carries the two gauges that say when those processes started,
``node_boot_time_seconds`` and ``process_start_time_seconds`` (one series per host each); where
one is later than at the point before (by more than the second or so a clock adjustment moves
it), the families it resets are left out at that point (the two
intervals around it give no rate from them), and the number of such intervals is reported per
host. No ``resets()``: it reads every raw sample of the window on the server (measured: it cost
more server CPU than all the other queries of a window together, and grows with the window);
two values per point tell the same for these causes. A counter reset by anything else (an
interface or a device that was removed and added again) is caught only where it ends lower than
the point before (a negative difference, no rate), not where it grew past it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import Response
from pilot_sys.monitor.remote.node_exporter import _DISK, _NET, Samples, counters_from_samples
from pilot_sys.monitor.remote.prometheus_query import (
    Series,
    label_names,
    selector,
    split_by_host,
)
from pilot_sys.topology.remote_hosts import RemoteHost

WINDOW_POINTS = 21  # readings of a window: 20 intervals, twice what the verdict's rule needs
MAX_POINTS = 11_000  # the API's bound on the points of one series of a query_range
TIME_FAMILY = "node_cpu_seconds_total"  # the scrape time of a host is that of its CPU series
TIME_KEY = "__scrape_time__"  # the times' answer, among the families'
# a gauge that changes when a process starts again -> the counter families that start again
RESTART_MARKERS = {
    "node_boot_time_seconds": (
        "node_cpu_seconds_total",
        *(f for f in _DISK),
        *(f for f in _NET),
    ),
    "process_start_time_seconds": ("process_cpu_seconds_total",),
}

# the kernel derives the boot time (and so a process's start time) from the wall clock less the
# time since boot: a clock step moves both by a second or so while nothing restarted
RESTART_JITTER_S = 2.0

# (query, start, end, step) -> the answer's series
RangeQuery = Callable[[str, float, float, float], list[Series]]


class WindowPlan:
    """The instants a window is asked at: ``points`` steps from ``end - seconds`` to ``end``,
    the step rounded to whole milliseconds (the API's resolution)."""

    def __init__(self, end: float, seconds: float, points: int) -> None:
        if not 2 <= points <= MAX_POINTS:
            raise ValueError(f"a window is asked at 2 to {MAX_POINTS} points, not {points}")
        self.step = max(math.ceil(seconds * 1000.0 / (points - 1)), 1) / 1000.0
        self.end = end
        self.start = end - self.step * (points - 1)
        self.points = points


def by_host(hosts: Sequence[RemoteHost]) -> str:
    return f"by ({', '.join(label_names(hosts))})"


def value_query(family: str, hosts: Sequence[RemoteHost]) -> str:
    return f"{family}{selector(hosts)}"


def time_query(hosts: Sequence[RemoteHost]) -> str:
    """Each host's scrape time at each step: the timestamp of its latest CPU sample (one
    series per host; ``timestamp`` of a plain selector is the sample's, not the step's)."""
    matchers = selector(hosts)[1:-1]
    return f'max {by_host(hosts)} (timestamp({TIME_FAMILY}{{mode="idle",{matchers}}}))'


def restarted(previous: Samples, now: Samples) -> set[str]:
    """The counter families reset between two points: those of a restart marker that moved
    later by more than ``RESTART_JITTER_S`` (a marker missing at either point tells nothing)."""
    out: set[str] = set()
    for marker, families in RESTART_MARKERS.items():
        before = {tuple(sorted(labels.items())): v for labels, v in previous.get(marker, [])}
        after = {tuple(sorted(labels.items())): v for labels, v in now.get(marker, [])}
        if any(
            key in before and value - before[key] > RESTART_JITTER_S for key, value in after.items()
        ):
            out.update(families)
    return out


def readings_of_host(
    host: RemoteHost, mine: dict[str, list[Series]], response: Response
) -> tuple[list[RemoteCounters], int]:
    """One host's readings, one per distinct scrape among the steps (oldest first), and at how
    many of them a family's counters were left out because its process started again since the
    reading before (the interval's difference would be wrong; the next one loses them too)."""
    step_times = {t: scraped for _, points in mine.get(TIME_KEY, []) for t, scraped in points}
    by_step: dict[float, Samples] = {}
    for family, series in mine.items():
        if family == TIME_KEY:
            continue
        for labels, points in series:
            for t, value in points:
                if t in step_times:
                    by_step.setdefault(t, {}).setdefault(family, []).append((labels, value))
    readings: list[RemoteCounters] = []
    broken = 0
    last_scrape = -math.inf
    previous: Samples | None = None
    for t in sorted(step_times):
        scraped = step_times[t]
        samples = by_step.get(t, {})
        if scraped <= last_scrape or TIME_FAMILY not in samples:
            continue  # the same scrape as the step before (or none of its CPU series)
        last_scrape = scraped
        reset = restarted(previous, samples) & set(samples) if previous is not None else set()
        previous = samples
        if reset:
            samples = {f: v for f, v in samples.items() if f not in reset}
            broken += 1
        counters = counters_from_samples(host.name, samples, response)
        readings.append(counters.model_copy(update={"remote_time": scraped}))
    return readings, broken


def fetch_window(
    query_range: RangeQuery,
    hosts: Sequence[RemoteHost],
    families: Sequence[str],
    plan: WindowPlan,
    base_url: str,
) -> tuple[dict[str, list[RemoteCounters]], dict[str, int]]:
    """Every host's readings over ``plan`` and the number of intervals with a counter reset
    per host: one query per family and restart marker, and one for the scrape times, whatever
    the hosts and the window's length."""
    sent = time.time()
    answers: dict[str, list[Series]] = {}
    for family in (*families, *RESTART_MARKERS):
        answers[family] = query_range(value_query(family, hosts), plan.start, plan.end, plan.step)
    answers[TIME_KEY] = query_range(time_query(hosts), plan.start, plan.end, plan.step)
    whole = Response(base_url, b"", sent, time.time())
    split = split_by_host(answers, hosts)
    readings: dict[str, list[RemoteCounters]] = {}
    broken: dict[str, int] = {}
    for host in hosts:
        readings[host.name], broken[host.name] = readings_of_host(host, split[host.name], whole)
    return readings, broken
