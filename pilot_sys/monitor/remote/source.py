"""A declared remote host as a sampler source, and the link to it as a derived probe.

``RemoteHostSource`` is a thin ``Source`` over the host's engine client (``clients.connect``):
each ``sample()`` is one ``counters()`` call on the source's own thread, returned with the time
the host took it (pmproxy's fetch timestamp, node_exporter's ``node_time_seconds``) and the
engine's own CPU time (what sampling costs the far side). After the run the same formulas as
``utilization.utilizations`` turn the counters into rates and utilizations, at the sample
times the source runner placed on this machine's clock. A host that stops answering is a gap
for that stretch (the runner's rule), never the end of the session.

``RemoteHostPlugin`` opens one such source per host per sampler; the source asks the host as
often as the sampler ticks, but never more often than ``MAX_RATE_HZ`` (a scrape costs about a
millisecond of CPU at each end, against microseconds for a local read: see
``benchmarks/results/remote.md``).

``HostLinkProbe`` judges the link between this machine and each host (``network:host~NAME``):
the traffic on it is at most what our NIC sent and at most what the host's NIC received (each
NIC may carry other traffic too), so the smaller of the two is the tightest bound the counters
give; its utilization is that over the link's capacity (the slower end, a qdisc included).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.rates import utilization
from pilot_sys.monitor.remote import dcgm
from pilot_sys.monitor.remote.clients import RemoteClient, connect, prepare
from pilot_sys.monitor.remote.counters import (
    BLOCK_COUNTERS,
    CPU_COUNTERS,
    NIC_COUNTERS,
    core_counters,
)
from pilot_sys.monitor.remote.http import RemoteUnavailable
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
from pilot_sys.monitor.source import Source, SourceReading
from pilot_sys.topology.remote_hosts import LOCAL_HOST, RemoteHost
from pilot_sys.topology.remote_inventory import link_id

MAX_RATE_HZ = 10.0  # a remote host is asked at most this often
MIN_TIMEOUT_S = 0.5
MAX_TIMEOUT_S = 2.0
KIND = "dynamic"
ENGINE_DEFAULT_SCRAPE_S = 15.0  # Prometheus's default scrape interval, until a host's is known
ENGINE_STALE_INTERVALS = 3.0  # an engine's value is carried this many scrape intervals
MIN_ENGINE_INTERVALS = 3.0  # a window judged through an engine spans at least this many

ClientFactory = Callable[[RemoteHost, float], RemoteClient]


def remote_interval(rate_hz: float) -> float:
    """Seconds between two samples of a remote host for a sampler at ``rate_hz``."""
    return 1.0 / min(float(rate_hz), MAX_RATE_HZ)


def call_timeout(interval_s: float) -> float:
    """A call waits at most two intervals (within 0.5..2 s): a host that stopped answering
    costs a gap of a few intervals, not a thread stuck for the socket's default."""
    return min(max(2.0 * interval_s, MIN_TIMEOUT_S), MAX_TIMEOUT_S)


def _host_of(component: str) -> str:
    return component.split(":", 1)[1].split("/", 1)[0]


def counter_columns(component_ids: list[str], host: str, cpus: int | None = None) -> list[str]:
    """The counters of ``host``'s CPU (per CPU too, for ``cpus`` CPUs), disks and NICs among
    ``component_ids``."""
    columns: list[str] = []
    for cid in sorted(component_ids):
        if ":" not in cid or _host_of(cid) != host:
            continue
        kind = cid.split(":", 1)[0]
        if kind == "cpu" and cid == f"cpu:{host}":
            columns += [f"{cid}/{c}" for c in CPU_COUNTERS]
            for n in range(cpus or 0):
                columns += [f"{cid}/{c}" for c in core_counters(n)]
        elif kind == "block" and "/" in cid:
            columns += [f"{cid}/{c}" for c in BLOCK_COUNTERS]
        elif kind == "nic" and "/" in cid:
            columns += [f"{cid}/{c}" for c in NIC_COUNTERS]
        elif kind == "accelerator" and "/" in cid:  # dcgm-exporter's, through Prometheus
            columns += dcgm.columns(cid)
    return columns


class RemoteHostSource(Source):
    """One declared host's counters, sampled through its engine."""

    def __init__(
        self,
        host: RemoteHost,
        columns: list[str],
        context: ProbeContext,
        interval_s: float,
        client: RemoteClient,
    ) -> None:
        super().__init__()
        self.host = host
        self.name = f"remote:{host.name}"
        self.columns = list(columns)
        self.interval_s = interval_s
        self._client = client
        for column in self.columns:
            component, counter = column.rsplit("/", 1)
            if counter == "busy_s":
                self.limits[f"{component}/compute"] = context.limit(component, "compute")
            elif counter == "read_bytes":
                for direction in ("read", "write"):
                    self.limits[f"{component}/{direction}"] = context.limit(component, direction)
            elif counter == "rx_bytes":
                for direction in ("receive", "send"):
                    self.limits[f"{component}/{direction}"] = context.limit(component, direction)
            elif counter == dcgm.RAW_COLUMNS[0]:
                for direction in dcgm.LIMITS:
                    self.limits[f"{component}/{direction}"] = context.limit(component, direction)
        graph = context.graph
        self.gpu_attrs = {
            c: dict(graph.component(c).attrs)
            for c in dcgm.components_in(self.columns, host.name)
            if graph is not None and c in graph
        }

    def sample(self) -> SourceReading:
        counters = self._client.counters()
        values = counters.values
        return SourceReading(
            values=[values.get(column, np.nan) for column in self.columns],
            taken_at=counters.remote_time,
            remote_cpu_seconds=counters.exporter_cpu_s,
        )

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        n = len(t)
        series = CounterSeries(
            host=self.host.name,
            keys=list(self.columns),
            values=np.asarray(raw, dtype=np.float64).reshape(n, len(self.columns)),
            sent=np.asarray(t, dtype=np.float64),
            received=np.asarray(t, dtype=np.float64),
            remote_time=np.full(n, np.nan),
            exporter_cpu_s=np.full(n, np.nan),
        )
        return utilizations(series, self.limits)

    def interval_metric(self, key: str) -> bool:
        """Every metric of a remote host is a rate or a share of the interval it ends."""
        return True

    def attrs(self) -> dict[str, dict[str, Any]]:
        return {
            f"cpu:{self.host.name}": {
                "host": self.host.name,
                "backend": self.host.backend.value,
                "url": self.host.base_url,
            },
            **self.gpu_attrs,
        }

    def close(self) -> None:
        self._client.close()


class RemoteHostPlugin:
    """A dynamic plug-in object for one declared host (``Sampler(plugins=...)``): its source,
    asking the host at the sampler's rate (at most ``MAX_RATE_HZ``)."""

    KIND = KIND

    def __init__(
        self, host: RemoteHost, rate_hz: float, client_factory: ClientFactory = connect
    ) -> None:
        self.host = host
        self.NAME = f"remote:{host.name}"
        self.interval_s = remote_interval(rate_hz)
        self.client_factory = client_factory

    def open_probe(self, context: ProbeContext) -> RemoteHostSource | None:
        host = self.host
        client = self.client_factory(host, call_timeout(self.interval_s))
        graph_ids = [c.id for c in context.graph.components()] if context.graph is not None else []
        cpus = None
        if context.graph is not None and f"cpu:{host.name}" in context.graph:
            cpus = context.graph.component(f"cpu:{host.name}").attrs.get("cpus")
        columns = counter_columns(graph_ids, host.name, cpus)
        scrape_interval = getattr(client, "scrape_interval", None)
        engine_interval = scrape_interval() if scrape_interval is not None else None
        if not columns:  # its inventory never came: learn its devices from one reading
            try:
                columns = sorted(client.counters().values)
            except RemoteUnavailable as exc:
                client.close()
                context.notes.append(f"remote host {host.name} not sampled: {exc}")
                return None
        if scrape_interval is None:
            return RemoteHostSource(host, columns, context, self.interval_s, client)
        return self._engine_source(host, columns, context, client, engine_interval)

    def _engine_source(
        self,
        host: RemoteHost,
        columns: list[str],
        context: ProbeContext,
        client: Any,
        scrape_s: float | None,
    ) -> RemoteHostSource:
        """A host seen through an engine that scrapes it (Prometheus): asked once per scrape
        interval (the sample's time is the engine's scrape time, so when it is asked does not
        matter; a repeated scrape is dropped), a value carried for three intervals, and the
        resolution stated."""
        scrape = scrape_s or ENGINE_DEFAULT_SCRAPE_S
        interval = max(self.interval_s, scrape)
        client.max_age = interval / 2.0
        source = RemoteHostSource(host, columns, context, interval, client)
        source.stale_after_s = ENGINE_STALE_INTERVALS * scrape
        source.repeats_expected = True
        known = f"{scrape:.3g} s" if scrape_s else f"not known yet ({scrape:g} s assumed)"
        context.notes.append(
            f"remote host {host.name} is seen through its engine at {host.base_url}: its "
            f"scrape interval is {known}, the resolution of its series; a window shorter than "
            f"{MIN_ENGINE_INTERVALS * scrape:.3g} s ({MIN_ENGINE_INTERVALS:g} scrape intervals: "
            "a rate needs two scrapes) is too short to judge it (a session judges it over the "
            "session's window instead)"
        )
        return source


class HostLinkProbe(Probe):
    """``network:host~NAME``: the traffic between this machine and each host, bounded by both
    NICs' counters, against the link's capacity (see the module docstring)."""

    name = "host-links"
    derives_from_metrics = True

    def __init__(self, context: ProbeContext, links: dict[str, tuple[str, str]]) -> None:
        super().__init__()
        self.links = links  # link id -> (local NIC, remote NIC)
        self.columns = ()
        self.readers = []
        for lid in links:
            for direction in ("send", "receive"):
                self.limits[f"{lid}/{direction}"] = context.limit(lid, direction)

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        missing = np.full(len(t), np.nan)
        for lid, (local, remote) in self.links.items():
            # send: what left our NIC towards the host and what its NIC took in
            for direction, ours, theirs in (
                ("send", "tx_bytes_per_s", "rx_bytes_per_s"),
                ("receive", "rx_bytes_per_s", "tx_bytes_per_s"),
            ):
                a = metrics.get(f"{local}/{ours}", missing)
                b = metrics.get(f"{remote}/{theirs}", missing)
                with np.errstate(invalid="ignore"):
                    rate = np.fmin(a, b)  # either bound where the other is missing
                out[f"{lid}/{direction}_bytes_per_s"] = rate
                util = utilization(rate, self.limits[f"{lid}/{direction}"])
                if util is not None:
                    out[f"{lid}/util_{direction}"] = util
        return out

    def interval_metric(self, key: str) -> bool:
        return True


class HostLinksPlugin:
    """A dynamic plug-in object: the links to the declared hosts whose two NICs are known."""

    KIND = KIND
    NAME = "host-links"

    def __init__(self, hosts: list[str]) -> None:
        self.hosts = hosts

    def open_probe(self, context: ProbeContext) -> HostLinkProbe | None:
        graph = context.graph
        if graph is None:
            return None
        links: dict[str, tuple[str, str]] = {}
        for host in self.hosts:
            lid = link_id(LOCAL_HOST, host)
            if lid not in graph:
                continue
            nics = graph.component(lid).attrs.get("nics") or []
            if len(nics) == 2 and all(nics):
                links[lid] = (str(nics[0]), str(nics[1]))
            else:
                context.notes.append(
                    f"{lid}: not judged (which NIC carries the traffic at one end is unknown)"
                )
        return HostLinkProbe(context, links) if links else None


def host_plugins(hosts: list[RemoteHost], rate_hz: float) -> list[Any]:
    """The dynamic plug-in objects for the declared hosts: one source each, and their links."""
    if not hosts:
        return []
    prepare(hosts)
    return [
        *(RemoteHostPlugin(host, rate_hz) for host in hosts),
        HostLinksPlugin([h.name for h in hosts]),
    ]
