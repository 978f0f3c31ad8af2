"""Hosts seen through the Prometheus server that already scrapes them (``--host
NAME=prom://SERVER:9090?instance=...``), or any engine with Prometheus's HTTP API (Thanos,
VictoriaMetrics, Mimir).

What is asked, and why. Every host of one server is one ``Fleet``: each poll is one query per
metric family for all its hosts (label matchers ``instance=~"a|b|c"``, the values escaped only
where RE2 needs it, so that Prometheus looks them up as a set), never one per host, so the
number of requests grows with the families (12), not with the hosts, and the work per host on
this side is the same at 10 or 1,000 hosts (``prometheus_query``: linear in the hosts). Each
poll asks for the raw samples of the last few scrape intervals, ``family{matchers}[Ws]`` (an
instant query of a range vector), not ``query_range`` or ``rate()``: the raw counters at the
times the engine scraped them are exactly what a direct scrape gives, so the same formulas
(``node_exporter.counters_from_samples``, ``utilization.utilizations``) turn them into the same
components (``cpu:NAME``, ``block:NAME/DEV``, ``nic:NAME/IF``) and the same verdict; a
``query_range`` would resample onto its step (values repeated or skipped between scrapes) and
``rate()`` extrapolates to the window's edges. The answer holds at most W / scrape interval
points per series (``query_range``'s 11,000-points limit does not apply; the size cap does).

Time. A host's sample time is the engine's scrape timestamp of its ``node_cpu_seconds_total``
(every series of one scrape carries the same one); of each other series the latest sample at
or before it is taken, so one reading is one scrape. A poll that finds no newer scrape repeats
the time and is dropped by the source runner as "nothing newer". The resolution is the engine's
scrape interval, estimated per host from the spacing of its ``up`` samples; the host's source
asks once per interval (each raw sample is then fetched at most twice) and carries a value for
three intervals (``source.RemoteHostPlugin``).

A window (a round's or the session's, judged after the fact: ``Fleet.window``) is not asked as
raw samples, whose number grows with the window's length: ``prometheus_window`` asks the raw
counters at a fixed number of instants over it (``query_range`` of the plain selector, with
``timestamp()`` of each sample; no ``rate()``), so its answer is hosts x series x points
whatever the length; a restart of the host or of its exporter (their start times, two gauges)
leaves the counters it reset out of the interval it falls in.

Per host, a reading fails (a gap in its series, named in the trace) when the engine has no
sample of it in the window (the host disappeared or is no longer scraped), when its target is
down (``up`` 0 after its last good scrape), or when the engine does not answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from pilot_sys.monitor.remote import dcgm
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import HttpConnection, RemoteUnavailable, Response
from pilot_sys.monitor.remote.node_exporter import (
    _DISK,
    _NET,
    INVENTORY_COLLECTORS,
    Samples,
    counters_from_samples,
    inventory_from_samples,
)
from pilot_sys.monitor.remote.prometheus_query import (  # noqa: F401  (the module's API)
    Series,
    belongs,
    instant_query,
    label_names,
    parse_answer,
    range_query,
    regex_literal,
    scrape_interval_of,
    selector,
    split_by_host,
)
from pilot_sys.monitor.remote.prometheus_window import WINDOW_POINTS, WindowPlan, fetch_window
from pilot_sys.topology.remote_hosts import RemoteHost
from pilot_sys.topology.remote_inventory import RemoteInventory

MAX_ANSWER_BYTES = 64 * 1024 * 1024  # a query's answer (all hosts of one family)
WINDOW_INTERVALS = 2.0  # a poll asks for the raw samples of this many scrape intervals
DEFAULT_SCRAPE_S = 15.0  # Prometheus's default, until a host's own is known
INTERVAL_PROBES_S = (60.0, 600.0)  # windows of `up` to learn a scrape interval from

COUNTER_FAMILIES = (
    "up",
    "node_cpu_seconds_total",
    "process_cpu_seconds_total",
    *_DISK,
    *_NET,
)
WINDOW_FAMILIES = COUNTER_FAMILIES[1:]  # a window's readings (whether a target is up: poll only)
INVENTORY_FAMILIES = (
    "node_cpu_seconds_total",
    "node_memory_MemTotal_bytes",
    "node_network_speed_bytes",
    "node_network_up",
    "node_network_mtu_bytes",
    "node_network_protocol_type",
    "node_network_info",
    "node_disk_info",
    "node_disk_read_bytes_total",
    "node_filesystem_size_bytes",
    "node_scrape_collector_success",
)


def window_readings(
    host: RemoteHost, families: dict[str, list[Series]], response: Response
) -> list[RemoteCounters]:
    """Every scrape of ``host`` in its series of the answers (``split_by_host``: raw samples
    over a window), oldest first: one reading per timestamp of its ``node_cpu_seconds_total``
    samples, each made of the samples that scrape wrote (one scrape stamps all its series
    alike)."""
    by_time: dict[float, Samples] = {}
    for family, series in families.items():
        if family == "up":
            continue
        for labels, points in series:
            for t, value in points:
                by_time.setdefault(t, {}).setdefault(family, []).append((labels, value))
    readings = []
    for t in sorted(by_time):
        samples = by_time[t]
        if "node_cpu_seconds_total" not in samples:
            continue
        counters = counters_from_samples(host.name, samples, response)
        readings.append(counters.model_copy(update={"remote_time": t}))
    return readings


def host_reading(
    host: RemoteHost, families: dict[str, list[Series]], response: Response
) -> RemoteCounters | str:
    """One host's counters at its latest scrape in the answers, or why there is none."""
    return reading_of_host(host, split_by_host(families, [host])[host.name], response)


def reading_of_host(
    host: RemoteHost, mine: dict[str, list[Series]], response: Response
) -> RemoteCounters | str:
    """``host_reading`` of the host's own series (``split_by_host``'s part for it)."""
    cpu_times = [t for _, points in mine.get("node_cpu_seconds_total", []) for t, _ in points]
    up = sorted(p for _, points in mine.get("up", []) for p in points)
    if not cpu_times:
        if up and up[-1][1] == 0.0:
            return "its target is down (up 0 at its last scrape): no sample in the window"
        return "no sample in the engine's window: the host is not scraped (or no longer)"
    scraped = max(cpu_times)
    if up and up[-1][1] == 0.0 and up[-1][0] > scraped:
        return f"its target is down since {up[-1][0] - scraped:.1f} s after its last good scrape"
    samples: Samples = {}
    for family, series in mine.items():
        if family == "up":
            continue
        for labels, points in series:
            before = [p for p in points if p[0] <= scraped + 1e-3]
            if before:
                samples.setdefault(family, []).append((labels, max(before)[1]))
    counters = counters_from_samples(host.name, samples, response)
    return counters.model_copy(update={"remote_time": scraped})


@dataclass
class Fleet:
    """The hosts of one engine (one URL and one set of credentials), asked together."""

    base_url: str
    hosts: list[RemoteHost] = field(default_factory=list)
    timeout: float = 2.0
    _connection: HttpConnection | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _polled_at: float = -float("inf")
    _readings: dict[str, RemoteCounters | str] = field(default_factory=dict)
    _error: RemoteUnavailable | None = None
    _intervals: dict[str, float | None] = field(default_factory=dict)
    _inventories: dict[str, RemoteInventory] = field(default_factory=dict)
    queries: int = 0  # requests made so far (the cost is per query, not per host)
    last_poll_bytes: int = 0
    last_answer_bytes: int = 0  # the answers' bytes since the last poll or window began
    last_window_resets: dict[str, int] = field(default_factory=dict)

    def add(self, host: RemoteHost) -> None:
        with self._lock:
            if host.name not in {h.name for h in self.hosts}:
                self.hosts.append(host)
                self._polled_at = -float("inf")  # the next poll includes it

    def _connect(self) -> None:
        auth = self.hosts[0].auth if self.hosts else None
        self._connection = HttpConnection(
            self.base_url, self.timeout, auth=auth, max_bytes=MAX_ANSWER_BYTES
        )

    def _query(self, expr: str) -> tuple[list[Series], Response]:
        if self._connection is None:
            self._connect()
        assert self._connection is not None
        url = f"{self.base_url}/api/v1/query?{urlencode({'query': expr})}"
        self.queries += 1
        self._connection.timeout = self.timeout  # the deadline of each query, whole
        response = self._connection.get(url)
        self.last_answer_bytes += len(response.body)
        return parse_answer(response.body, f"{self.base_url}/api/v1/query ({expr})"), response

    def scrape_interval(self, host: RemoteHost) -> float | None:
        """The engine's scrape interval of ``host`` (its ``up`` samples' spacing), learnt once
        for all hosts; None while unknown."""
        with self._lock:
            if host.name not in self._intervals:
                self._learn_intervals()
            return self._intervals.get(host.name)

    def _learn_intervals(self) -> None:
        hosts = list(self.hosts)
        for window in INTERVAL_PROBES_S:
            try:
                series, _ = self._query(range_query("up", hosts, window))
            except RemoteUnavailable:
                return  # asked again later
            split = split_by_host({"up": series}, hosts)
            for host in hosts:
                points = [p for _, pts in split[host.name].get("up", []) for p in pts]
                self._intervals[host.name] = scrape_interval_of(points)
            if all(self._intervals.get(h.name) for h in hosts):
                return

    def counters(self, host: RemoteHost, max_age: float) -> RemoteCounters:
        """``host``'s latest scrape; the engine is asked (one query per family, all hosts)
        unless a poll younger than ``max_age`` seconds already answered."""
        with self._lock:
            if time.monotonic() - self._polled_at >= max_age:
                self._poll()
            error, reading = self._error, self._readings.get(host.name)
        if error is not None:
            raise error
        if reading is None or isinstance(reading, str):
            raise RemoteUnavailable(
                f"{self.base_url} {selector([host])}", reading or "not asked yet"
            )
        return reading

    def _window(self) -> float:
        known = [i for i in self._intervals.values() if i]
        return WINDOW_INTERVALS * (max(known) if known else DEFAULT_SCRAPE_S)

    def _poll(self) -> None:
        hosts = list(self.hosts)
        if any(h.name not in self._intervals for h in hosts):
            self._learn_intervals()
        window = self._window()
        self.last_answer_bytes = 0
        sent = time.time()
        families: dict[str, list[Series]] = {}
        size = 0
        self._polled_at = time.monotonic()
        try:
            for family in COUNTER_FAMILIES:
                families[family], response = self._query(range_query(family, hosts, window))
                size += len(response.body)
        except RemoteUnavailable as exc:
            self._error, self._readings = exc, {}
            return
        self._error = None
        whole = Response(self.base_url, b"", sent, time.time())
        split = split_by_host(families, hosts)
        gpus = (
            dcgm.ask(lambda e: self._query(e)[0], hosts, window)
            if dcgm.may_have_gpus(self._inventories, hosts)
            else {h.name: [] for h in hosts}
        )
        self._readings = {
            h.name: dcgm.with_gpus(reading_of_host(h, split[h.name], whole), gpus[h.name])
            for h in hosts
        }
        self.last_poll_bytes = size
        for reading in self._readings.values():
            if isinstance(reading, RemoteCounters):
                reading.response_bytes = size // max(len(hosts), 1)

    def _query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        if self._connection is None:
            self._connect()
        assert self._connection is not None
        params = {
            "query": expr,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:.3f}",
        }
        url = f"{self.base_url}/api/v1/query_range?{urlencode(params)}"
        self.queries += 1
        self._connection.timeout = self.timeout
        response = self._connection.get(url)
        self.last_answer_bytes += len(response.body)
        return parse_answer(response.body, f"{self.base_url}/api/v1/query_range ({expr})")

    def server_time(self) -> float:
        """The engine's clock now (``time()``): the end of a window it is asked for."""
        series, _ = self._query("vector(time())")
        if len(series) != 1 or not series[0][1]:
            raise RemoteUnavailable(self.base_url, "no answer to vector(time())")
        return series[0][1][0][1]

    def window(
        self, hosts: Sequence[RemoteHost], seconds: float, points: int = WINDOW_POINTS
    ) -> dict[str, list[RemoteCounters]]:
        """``hosts``' readings over the engine's last ``seconds``, at ``points`` instants spread
        evenly over it (``prometheus_window``): one query per metric family for all of them,
        each answer hosts x series x ``points`` values whatever the window's length. The number
        of intervals with a counter reset per host (left out) is in ``last_window_resets``."""
        with self._lock:
            known = [i for i in (self._intervals.get(h.name) for h in hosts) if i]
            if known and len(known) == len(hosts):  # no step shorter than the fastest scrape
                points = min(points, max(2, int(seconds / min(known)) + 1))
            self.last_answer_bytes = 0
            plan = WindowPlan(self.server_time(), seconds, points)
            readings, broken = fetch_window(
                self._query_range, hosts, WINDOW_FAMILIES, plan, self.base_url
            )
            self.last_window_resets = {name: n for name, n in broken.items() if n}
            gpus = dcgm.ask(lambda e: self._query(e)[0], hosts, seconds)  # raw samples (dcgm)
        return {h.name: dcgm.with_gpus_over(readings[h.name], gpus[h.name]) for h in hosts}

    def inventory(self, host: RemoteHost) -> RemoteInventory:
        """``host``'s inventory from the engine's latest values (asked once for all hosts)."""
        with self._lock:
            if host.name not in self._inventories:
                self._ask_inventories()
            found = self._inventories.get(host.name)
        if found is None:
            raise RemoteUnavailable(
                f"{self.base_url} {selector([host])}",
                "no node_exporter series of this host in the engine (not scraped, or "
                "the label matchers select nothing)",
            )
        return found

    def _ask_inventories(self) -> None:
        hosts = list(self.hosts)
        if any(h.name not in self._intervals for h in hosts):
            self._learn_intervals()
        answers = {f: self._query(instant_query(f, hosts))[0] for f in INVENTORY_FAMILIES}
        gpus = dcgm.ask(lambda e: self._query(e)[0], hosts, None)
        split = split_by_host(answers, hosts)
        for host in hosts:
            samples: Samples = {}
            for family, series in split[host.name].items():
                for labels, points in series:
                    if family == "node_scrape_collector_success" and (
                        labels.get("collector") not in INVENTORY_COLLECTORS
                    ):
                        continue  # the engine runs every collector; a direct scrape asks these
                    if points:
                        samples.setdefault(family, []).append((labels, points[-1][1]))
            if "node_cpu_seconds_total" not in samples:
                continue
            inventory = inventory_from_samples(host.name, samples)
            interval = self._intervals.get(host.name)
            inventory.notes.append(
                f"seen through the engine at {self.base_url} ({selector([host])}); "
                + (
                    f"it scrapes the host every {interval:.3g} s"
                    if interval
                    else "its scrape interval is not known yet"
                )
            )
            inventory.gpus = dcgm.gpus_from_series(gpus[host.name])
            inventory.notes += dcgm.inventory_notes(inventory.gpus)
            self._inventories[host.name] = inventory

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


_FLEETS: dict[tuple[str, object], Fleet] = {}
_FLEETS_LOCK = threading.Lock()


def fleet_of(host: RemoteHost, timeout: float = 2.0) -> Fleet:
    """The one fleet of ``host``'s engine in this process (created on first use), with the
    host in it."""
    key = (host.base_url, host.auth)
    with _FLEETS_LOCK:
        fleet = _FLEETS.get(key)
        if fleet is None:
            fleet = _FLEETS[key] = Fleet(host.base_url, timeout=timeout)
        fleet.timeout = timeout  # the latest client's: a round's sources, or an inventory
    fleet.add(host)
    return fleet


def declare(hosts: Iterable[RemoteHost]) -> None:
    """Put every Prometheus host in its fleet before the first query, so that the first poll
    already asks for all of them."""
    for host in hosts:
        if host.labels:
            fleet_of(host)


class PrometheusClient:
    """One host's view of its fleet (the ``clients.RemoteClient`` interface)."""

    def __init__(self, host: RemoteHost, timeout: float = 2.0) -> None:
        self.host = host
        self.fleet = fleet_of(host, timeout)
        self.max_age = 0.0  # set by the source: polls younger than this are reused

    def scrape_interval(self) -> float | None:
        return self.fleet.scrape_interval(self.host)

    def counters(self) -> RemoteCounters:
        return self.fleet.counters(self.host, self.max_age)

    def inventory(self) -> RemoteInventory:
        return self.fleet.inventory(self.host)

    def close(self) -> None:
        """The fleet's connection is shared and stays open (it is reopened when closed)."""
