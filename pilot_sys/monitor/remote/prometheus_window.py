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

Counter resets (a host that rebooted; an exporter that restarted resets its own CPU time)
inside an interval make its differences wrong even where the counter ends higher than it began,
so they are counted server-side: first over the whole window (one instant query, ``@`` its end,
that answers only for a host and family with a reset; the engine reads the window's samples for
it, the answer stays empty), then, for those hosts alone, ``resets()`` of every counter family
over each step plus one scrape interval (so that the pair of samples straddling a step is seen;
a reset may then be counted in two intervals), summed per host and family. At the kept scrape
that ends an interval with a reset, that family's counters are left out (the two intervals
around it give no rate from them), and the number of such intervals is reported per host.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import Response
from pilot_sys.monitor.remote.node_exporter import Samples, counters_from_samples
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
FAMILY_LABEL = "pilot_family"  # the resets' answer: which family reset

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


def resets_query(
    families: Sequence[str], hosts: Sequence[RemoteHost], range_s: float, at: float | None = None
) -> str:
    """Counter resets per host and family over ``range_s`` before each step (or before ``at``,
    an instant query's ``@``), in one query (each family's result labelled with its index:
    ``or`` keeps one of two equal label sets); it answers only where there is one."""
    ms = max(int(math.ceil(range_s * 1000.0)), 1)
    when = "" if at is None else f" @ {at:.3f}"
    parts = [
        f'label_replace(resets({family}{selector(hosts)}[{ms}ms]{when}), "{FAMILY_LABEL}", '
        f'"{i}", "", "")'
        for i, family in enumerate(families)
    ]
    by = ", ".join([*label_names(hosts), FAMILY_LABEL])
    return f"sum by ({by}) ({' or '.join(parts)}) > 0"


def resets_by_step(families: Sequence[str], series: list[Series]) -> dict[float, set[str]]:
    """Step time -> the families with a reset in the range before it (one host's answer)."""
    out: dict[float, set[str]] = {}
    for labels, points in series:
        index = labels.get(FAMILY_LABEL, "")
        if not index.isdigit() or int(index) >= len(families):
            continue
        for t, count in points:
            if count > 0:
                out.setdefault(t, set()).add(families[int(index)])
    return out


def readings_of_host(
    host: RemoteHost,
    mine: dict[str, list[Series]],
    resets: dict[float, set[str]],
    response: Response,
) -> tuple[list[RemoteCounters], int]:
    """One host's readings, one per distinct scrape among the steps (oldest first), and in how
    many of them a family's counters were left out because they were reset since the reading
    before (the interval's difference would be wrong; the next interval loses them too)."""
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
    for t in sorted(step_times):
        scraped = step_times[t]
        samples = by_step.get(t, {})
        if scraped <= last_scrape or TIME_FAMILY not in samples:
            continue  # the same scrape as the step before (or none of its CPU series)
        last_scrape = scraped
        reset = resets.get(t, set()) & set(samples)
        if reset and readings:
            samples = {f: v for f, v in samples.items() if f not in reset}
            broken += 1
        counters = counters_from_samples(host.name, samples, response)
        readings.append(counters.model_copy(update={"remote_time": scraped}))
    return readings, broken


def fetch_window(
    query: Callable[[str], list[Series]],
    query_range: RangeQuery,
    hosts: Sequence[RemoteHost],
    families: Sequence[str],
    plan: WindowPlan,
    scrape_s: float,
    base_url: str,
) -> tuple[dict[str, list[RemoteCounters]], dict[str, int]]:
    """Every host's readings over ``plan`` and the number of intervals with a counter reset
    per host: ``len(families) + 2`` queries, whatever the hosts and the window's length (one
    more, for the hosts with a reset in the window, to place it)."""
    sent = time.time()
    answers: dict[str, list[Series]] = {}
    for family in families:
        answers[family] = query_range(value_query(family, hosts), plan.start, plan.end, plan.step)
    answers[TIME_KEY] = query_range(time_query(hosts), plan.start, plan.end, plan.step)
    # whether any counter was reset in the window: one instant query whose answer is empty
    # but for a host and family with a reset; only those hosts are asked where, step by step
    window = plan.end - plan.start + 1.1 * scrape_s
    found = split_by_host({"resets": query(resets_query(families, hosts, window, plan.end))}, hosts)
    reset_hosts = [h for h in hosts if found[h.name]]
    resets: list[Series] = []
    if reset_hosts:
        reset_range = plan.step + 1.1 * scrape_s
        resets = query_range(
            resets_query(families, reset_hosts, reset_range), plan.start, plan.end, plan.step
        )
    whole = Response(base_url, b"", sent, time.time())
    split = split_by_host(answers, hosts)
    reset_split = split_by_host({"resets": resets}, hosts)
    readings: dict[str, list[RemoteCounters]] = {}
    broken: dict[str, int] = {}
    for host in hosts:
        resets_of_host = resets_by_step(families, reset_split[host.name].get("resets", []))
        readings[host.name], broken[host.name] = readings_of_host(
            host, split[host.name], resets_of_host, whole
        )
    return readings, broken
