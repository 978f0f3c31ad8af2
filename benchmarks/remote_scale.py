"""Many remote hosts at 10 Hz, simulated: what one monitoring host pays, and what breaks first.

    PYTHONPATH=. python3 benchmarks/remote_scale.py [--hosts 25,50,100,200] [--seconds 10]
        [--engine node_exporter|pcp] [--latency-ms 1]

A real ``Sampler`` with every local dynamic plug-in runs at 10 Hz with N remote-host sources
(``monitor.remote.source``: one thread each, as in a session). Each source's client is
simulated: a call sleeps ``--latency-ms`` (the network and the far end, which cost this host
nothing) and then does this host's real work on a captured answer (tests/fixtures/remote): the
prometheus-client parse of a filtered node_exporter scrape, or the JSON parse of a pmproxy
fetch, into counters. So the CPU here, the GIL contention with the sampler's tick and the
threads are real; the remote engines are not (one per host, each serving 10 scrapes a second,
is what benchmarks/remote_cost.py measures).

Reported per N: this host's CPU per remote sample (sources' threads), the cores the sources
use, the share of remote calls skipped because a call overran its interval (``missed``), the
sampler's late ticks and worst lateness (the tick waits for the GIL the parses hold), the
samples on the grid, how long ``stop()`` takes (every source's samples derived and placed on the
grid: the pause between two rounds) and the process's resident memory and thread count.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import threading
import time
from pathlib import Path

from pilot_sys.monitor.remote import node_exporter, pcp
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import Response
from pilot_sys.monitor.remote.source import RemoteHostPlugin
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.plugin_loader import load_plugins
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.remote_hosts import RemoteHost, parse_host_spec

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "remote"


class SimulatedClient:
    """A host's engine: a wait for the network, then this host's real parse of a real answer."""

    def __init__(self, host: RemoteHost, engine: str, latency: float) -> None:
        self.host = host
        self.latency = latency
        self.engine = engine
        if engine == "pcp":  # descriptors and instance names: asked once, as the real client does
            self.raw = (FIXTURES / "pmproxy_fetch_counters_after.json").read_bytes()
            self.descs = pcp.descriptors(json.loads((FIXTURES / "pmproxy_metric.json").read_text()))
            indoms = json.loads((FIXTURES / "pmproxy_indom.json").read_text())
            self.names = {
                m: pcp.instance_names(indoms[d.indom]) for m, d in self.descs.items() if d.indom
            }
        else:
            self.raw = (FIXTURES / "node_exporter_counters_after.prom").read_bytes()

    def counters(self) -> RemoteCounters:
        sent = time.time()
        time.sleep(self.latency)
        response = Response("sim", self.raw, sent, time.time())
        if self.engine == "pcp":
            fetch = pcp.parse_fetch(json.loads(response.body), self.names)
            counters = pcp.counters_from_fetch(self.host.name, fetch, self.descs, response)
            return counters.model_copy(update={"remote_time": None})
        samples = node_exporter.parse(response.body.decode(), node_exporter.COUNTER_SAMPLES)
        counters = node_exporter.counters_from_samples(self.host.name, samples, response)
        return counters.model_copy(update={"remote_time": None})  # a captured time never moves

    def inventory(self) -> object:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _graph(hosts: list[RemoteHost]) -> ComponentGraph:
    graph = ComponentGraph()
    two = Limit(value=2.0, unit="cores", source=LimitSource.NODE_EXPORTER, detail="2 CPUs")
    for host in hosts:
        graph.add_component(
            Component(
                id=f"cpu:{host.name}",
                kind=ComponentKind.CPU,
                name=host.name,
                limits={"compute": two},
                attrs={"cpus": 2},
            )
        )
        for cid in (f"nic:{host.name}/eth0", f"block:{host.name}/vda"):
            kind = ComponentKind.NIC if cid.startswith("nic") else ComponentKind.BLOCK
            graph.add_component(Component(id=cid, kind=kind, name=cid))
    return graph


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(n: int, seconds: float, engine: str, latency: float) -> dict[str, object]:
    hosts = [parse_host_spec(f"h{i}=http://10.0.{i // 250}.{i % 250 + 1}:9100") for i in range(n)]
    plugins = [
        RemoteHostPlugin(
            h, 10.0, client_factory=lambda host, timeout: SimulatedClient(host, engine, latency)
        )
        for h in hosts
    ]
    sampler = Sampler(_graph(hosts), rate_hz=10.0, plugins=[*load_plugins("dynamic"), *plugins])
    sampler.start()
    time.sleep(1.0)
    threads = threading.active_count()
    time.sleep(max(seconds - 1.0, 0.0))
    stopping = time.monotonic()
    trace = sampler.stop()
    stop_s = time.monotonic() - stopping  # the sources' samples derived and placed on the grid
    cost = sampler.cost()
    calls = sum(s.cost.calls for s in trace.sources.values())
    missed = sum(s.cost.missed_calls for s in trace.sources.values())
    return {
        "hosts": n,
        "engine": engine,
        "remote_samples": calls,
        "us_per_remote_sample_here": cost.source_cpu_seconds / calls * 1e6 if calls else None,
        "source_cores": cost.source_cpu_seconds / cost.seconds,
        "missed_share": missed / (calls + missed) if calls + missed else 0.0,
        "sampler_cores": cost.cpu_seconds_per_second,
        "sampler_late_ticks": cost.late_ticks,
        "sampler_skipped_ticks": cost.skipped_ticks,
        "sampler_max_lateness_ms": cost.max_lateness_s * 1e3,
        "ticks": cost.samples,
        "stop_s": stop_s,
        "threads": threads,
        "max_rss_mib": _rss_mib(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", default="25,50,100,200")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--engine", choices=["node_exporter", "pcp"], default="node_exporter")
    ap.add_argument("--latency-ms", type=float, default=1.0)
    args = ap.parse_args()
    for n in (int(x) for x in args.hosts.split(",")):
        print(json.dumps(run(n, args.seconds, args.engine, args.latency_ms / 1e3)), flush=True)
    load = open("/proc/loadavg").read().split()[0]
    print(f"load average: {load} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
