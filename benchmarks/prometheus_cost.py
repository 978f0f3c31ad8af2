"""What judging a fleet through its Prometheus server costs, and what the engine's resolution
costs the verdict.

    PYTHONPATH=. python3 benchmarks/prometheus_cost.py cost [--hosts 10,100,1000] [--polls 5]
    PYTHONPATH=. python3 benchmarks/prometheus_cost.py sweep [--hosts 100] [--windows 10,...,200]
    PYTHONPATH=. python3 benchmarks/prometheus_cost.py before-after [--hosts 10,100,1000]
    PYTHONPATH=. python3 benchmarks/prometheus_cost.py error [--seconds 80] [--scrape 1,5] (root)

``cost``: a real Prometheus server (Debian's ``prometheus``) scrapes N simulated hosts every 5
s: one small exporter process serves a node_exporter-shaped answer (16 CPU-time series, 5 disk
and 8 network counters, the exporter's CPU time and the two start times: the families the
backend asks for, counters growing with time) for every target; the targets differ by a URL
parameter and are relabelled ``instance="sim-K:9100"``, so to the server and to pilot-sys they
are N hosts. Once every target has 13 scrapes (65 s), pilot-sys's fleet client
(``monitor.remote.prometheus.Fleet``) polls all N hosts: one query per metric family (12), raw
samples of two scrape intervals. Per N: queries, bytes, wall time and this side's CPU (the
calling thread's clock) per poll; the server's CPU per poll (its /proc utime+stime over the
polls less the same span idle, when it only scrapes); the same for a 60 s window of every host,
fetched three ways: ``raw`` (every raw sample, the design replaced), ``two`` (two values per
series, ``Fleet.window(points=2)``) and ``points`` (``Fleet.window``'s default, at most 21
points per series); and, for N <= 100, one query per family *per host* (the design not taken)
for comparison. Every row carries the load average and an anchor (this side's CPU for parsing
one fixed answer, before and after), so that figures taken under different load can be compared
as ratios to it.

``before-after``: the poll as it was before (its matchers built in hosts^2 and escaped so that
Prometheus cannot look them up as a set) against now, interleaved poll by poll on one server,
at 10, 100 and 1,000 hosts.

``sweep``: one fleet (100 hosts scraped every second) and windows of growing length (10 to
200 s: 10 to 200 scrapes per series), each fetched the three ways: the raw answer grows with
the window, the bounded ones do not.

``error``: one namespace host (tests/netns.py) with node_exporter and an iperf3 server behind a
link shaped to 50 Mbit/s, a Prometheus server scraping it every 1 s (then 5 s), and iperf3
bursts into it of 0.5-4 s with 0.5-4 s pauses; ``pilot-sys monitor`` samples the host both ways
at once, under two names (``srvd=http://...`` direct at 10 Hz, ``srvp=prom://...`` through the
server). The host's received rate as a share of the link (its own NIC's counter: no other
tenant of a shared machine moves it, unlike its CPU, which is the machine's) is compared window
by window: the mean's error, and whether both call the window hot (above 80 % for more than 10 %
of it, the verdict's rule) over windows of 2 to 40 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # netns, prometheus_server, exposition_http

from exposition_http import exposition_handler  # noqa: E402

from pilot_sys.monitor.remote import prometheus  # noqa: E402
from pilot_sys.monitor.remote.counters import RemoteCounters as RC  # noqa: E402
from pilot_sys.monitor.remote.http import Response  # noqa: E402
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations  # noqa: E402
from pilot_sys.topology.remote_hosts import parse_host_spec  # noqa: E402

SCRAPE_S = 5.0
STARTED = time.time()  # the simulated exporters' start, and their hosts' boot a day before
MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def exposition(host: int, now: float) -> bytes:
    """A node_exporter-shaped answer for simulated host ``host`` at time ``now``."""
    lines = []
    for cpu in range(2):
        for k, mode in enumerate(MODES):
            value = now * (0.3 if mode == "idle" else 0.1) + host + k
            lines.append(f'node_cpu_seconds_total{{cpu="{cpu}",mode="{mode}"}} {value:.3f}')
    for name in (
        "node_disk_read_bytes_total",
        "node_disk_written_bytes_total",
        "node_disk_reads_completed_total",
        "node_disk_writes_completed_total",
        "node_disk_io_time_seconds_total",
    ):
        lines.append(f'{name}{{device="vda"}} {now * 1000 + host:.0f}')
    for name in (
        "node_network_receive_bytes_total",
        "node_network_transmit_bytes_total",
        "node_network_receive_packets_total",
        "node_network_transmit_packets_total",
    ):
        for device in ("eth0", "lo"):
            lines.append(f'{name}{{device="{device}"}} {now * 5000 + host:.0f}')
    lines.append(f"process_cpu_seconds_total {now * 0.001:.3f}")
    lines.append(f"process_start_time_seconds {STARTED:.3f}")
    lines.append(f"node_boot_time_seconds {STARTED - 86400:.0f}")
    lines.append(f"node_time_seconds {now:.3f}")
    return ("\n".join(lines) + "\n").encode()


def serve_exporter(port_queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    def body_for(path: str) -> bytes:
        host = int(parse_qs(urlsplit(path).query).get("h", ["0"])[0])
        return exposition(host, time.time())

    Handler = exposition_handler(body_for, protocol="HTTP/1.1")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.handle_error = lambda *args: None  # type: ignore[method-assign]  # a closed scrape
    port_queue.put(httpd.server_address[1])
    httpd.serve_forever()


def config(port: int, n: int, scrape_s: float = SCRAPE_S) -> str:
    groups = [{"targets": [f"127.0.0.1:{port}"], "labels": {"__param_h": str(i)}} for i in range(n)]
    timeout_ms = int(min(4.0, 0.8 * scrape_s) * 1000)
    return json.dumps(
        {
            "global": {"scrape_interval": f"{scrape_s:g}s", "scrape_timeout": f"{timeout_ms}ms"},
            "scrape_configs": [
                {
                    "job_name": "node",
                    "static_configs": groups,
                    "relabel_configs": [
                        {
                            "source_labels": ["__param_h"],
                            "target_label": "instance",
                            "replacement": "sim-$1:9100",
                        }
                    ],
                }
            ],
        }
    )  # JSON is YAML


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def anchor_cpu_s(repeats: int = 5) -> float:
    """This side's CPU seconds for a fixed piece of the same kind of work (parsing one fixed
    answer: 100 hosts' CPU series, two points each), measured in the same run as the figures it
    is set against: ratios to it cancel much of what the machine's load and clock do to CPU
    times."""
    result = [
        {"metric": {"__name__": "node_cpu_seconds_total", "instance": f"sim-{h}:9100",
                    "job": "node", "cpu": str(c), "mode": m},
         "values": [[1.7e9, f"{h + c:.3f}"], [1.7e9 + 5, f"{h + c + 1:.3f}"]]}
        for h in range(100) for c in range(2) for m in MODES
    ]  # fmt: skip
    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
    start = time.thread_time()
    for _ in range(repeats):
        prometheus.parse_answer(body.encode(), "anchor")
    return (time.thread_time() - start) / repeats


def load() -> float:
    return os.getloadavg()[0]


def server_busy(pid: int, work: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    """The server's CPU seconds per call of ``work`` (its /proc utime+stime over the calls less
    the same span idle, when it only scrapes) and this side's CPU seconds of each call."""
    server0 = cpu_seconds(pid)
    cpus = []
    t0 = time.monotonic()
    for _ in range(repeats):
        cpu = time.thread_time()
        work()
        cpus.append(time.thread_time() - cpu)
    span = time.monotonic() - t0
    busy = cpu_seconds(pid) - server0
    time.sleep(span)
    idle = cpu_seconds(pid) - (server0 + busy)
    return max(busy - idle, 0.0) / repeats, cpus


def measure_polls(fleet: prometheus.Fleet, polls: int, pid: int) -> dict[str, float]:
    hosts = fleet.hosts
    walls, sizes = [], []
    queries0 = fleet.queries

    def poll() -> None:
        wall = time.perf_counter()
        fleet.counters(hosts[0], max_age=0.0)  # one poll: every family, split into hosts
        walls.append(time.perf_counter() - wall)
        sizes.append(fleet.last_poll_bytes)
        unanswered = [h.name for h in hosts if not isinstance(fleet._readings.get(h.name), RC)]
        if unanswered:
            raise RuntimeError(f"{len(unanswered)} hosts without a reading: {unanswered[:3]}")

    server, cpus = server_busy(pid, poll, polls)
    return {
        "queries": (fleet.queries - queries0) / polls,
        "bytes": statistics.median(sizes),
        "wall_s": statistics.median(walls),
        "wall_s_max": max(walls),
        "cpu_s": statistics.median(cpus),
        "cpu_s_max": max(cpus),
        "server_cpu_s": server,
    }


def one_poll_cost(fleet: prometheus.Fleet, exprs: list[str]) -> tuple[float, float, int]:
    """Asking ``exprs`` one by one and parsing the answers (not split into hosts)."""
    wall, cpu, size = time.perf_counter(), time.thread_time(), 0
    for expr in exprs:
        size += len(fleet._query(expr)[1].body)
    return time.perf_counter() - wall, time.thread_time() - cpu, size


def raw_window(fleet: prometheus.Fleet, seconds: float) -> dict[str, list[RC]]:
    """The design replaced: every raw sample of the window (``family{...}[Ws]``), split into
    hosts, one reading per scrape."""
    fleet.last_answer_bytes = 0
    hosts = fleet.hosts
    families = {
        f: fleet._query(prometheus.range_query(f, hosts, seconds))[0]
        for f in prometheus.WINDOW_FAMILIES
    }
    split = prometheus.split_by_host(families, hosts)
    whole = Response(fleet.base_url, b"", 0.0, 0.0)
    return {h.name: prometheus.window_readings(h, split[h.name], whole) for h in hosts}


WINDOW_KINDS = {  # name -> how a window is fetched
    "raw": lambda fleet, seconds: raw_window(fleet, seconds),
    "two": lambda fleet, seconds: fleet.window(fleet.hosts, seconds, points=2),
    "points": lambda fleet, seconds: fleet.window(fleet.hosts, seconds),
}


def window_cost(
    fleet: prometheus.Fleet, kind: str, seconds: float, pid: int, repeats: int
) -> dict[str, float]:
    """One window for every host, fetched ``repeats`` times the ``kind`` way."""
    walls: list[float] = []
    found: list[dict[str, list[RC]]] = []

    def fetch() -> None:
        wall = time.perf_counter()
        found.append(WINDOW_KINDS[kind](fleet, seconds))
        walls.append(time.perf_counter() - wall)

    queries0 = fleet.queries
    server, cpus = server_busy(pid, fetch, repeats)
    readings = found[-1]
    series = [CounterSeries.from_readings(r) for r in readings.values() if len(r) >= 2]
    busy = [np.nanmean(utilizations(s)[f"cpu:{s.host}/busy"]) for s in series[:50]]
    return {
        f"{kind}_queries": (fleet.queries - queries0) / repeats,
        f"{kind}_bytes": fleet.last_answer_bytes,
        f"{kind}_wall_s": statistics.median(walls),
        f"{kind}_cpu_s": statistics.median(cpus),
        f"{kind}_server_cpu_s": server,
        f"{kind}_readings": min(len(r) for r in readings.values()),
        f"{kind}_hosts_judged": len(series),
        f"{kind}_mean_busy": float(np.mean(busy)) if busy else math.nan,
    }


@contextlib.contextmanager
def simulated_fleet(n: int, scrape_s: float, history_s: float) -> Iterator[tuple[Any, list]]:
    """A real Prometheus scraping ``n`` simulated hosts every ``scrape_s``, once every target
    has ``history_s`` of scrapes."""
    from prometheus_server import prometheus_server

    queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    exporter = multiprocessing.Process(target=serve_exporter, args=(queue,), daemon=True)
    exporter.start()
    try:
        port = queue.get(timeout=10)
        with prometheus_server([], config_text=config(port, n, scrape_s)) as server:
            scrapes = int(history_s / scrape_s)
            deadline = time.monotonic() + history_s + 120
            probe = f"count(count_over_time(up[{history_s + scrape_s:g}s]) >= {scrapes})"
            while time.monotonic() < deadline:
                found = server.query(probe)
                if found and int(float(found[0]["value"][1])) >= n:
                    break
                time.sleep(1.0)
            else:
                raise TimeoutError(f"{n} targets without {scrapes} scrapes in time")
            hosts = [
                parse_host_spec(f"h{i}=prom://{server.url[7:]}?instance=sim-{i}:9100")
                for i in range(n)
            ]
            yield server, hosts
    finally:
        exporter.terminate()
        exporter.join(5)


def cost(sizes: list[int], polls: int, repeats: int) -> list[dict[str, float]]:
    rows = []
    for n in sizes:
        with simulated_fleet(n, SCRAPE_S, 13 * SCRAPE_S) as (server, hosts):
            fleet = prometheus.Fleet(f"{server.url}", list(hosts), timeout=60.0)
            fleet.scrape_interval(hosts[0])
            pid = server.process.pid
            row: dict[str, float] = {"hosts": n, "load": load(), "anchor_cpu_s": anchor_cpu_s()}
            row.update(measure_polls(fleet, polls, pid))
            for kind in WINDOW_KINDS:
                row.update(window_cost(fleet, kind, 60.0, pid, repeats))
            if n <= 100:
                exprs = [
                    prometheus.range_query(f, [h], fleet._window())
                    for h in hosts
                    for f in prometheus.COUNTER_FAMILIES
                ]
                wall, cpu, size = one_poll_cost(fleet, exprs)
                row.update({"per_host_wall_s": wall, "per_host_cpu_s": cpu})
            row.update({"anchor_cpu_s_after": anchor_cpu_s(), "load_after": load()})
            fleet.close()
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def sweep(n: int, scrape_s: float, windows: list[float], repeats: int) -> list[dict[str, float]]:
    """Windows of growing length over the same fleet: raw samples against the bounded form."""
    rows = []
    with simulated_fleet(n, scrape_s, max(windows)) as (server, hosts):
        fleet = prometheus.Fleet(f"{server.url}", list(hosts), timeout=60.0)
        fleet.scrape_interval(hosts[0])
        for seconds in windows:
            row: dict[str, float] = {
                "hosts": n, "scrape_s": scrape_s, "window_s": seconds,
                "load": load(), "anchor_cpu_s": anchor_cpu_s(),
            }  # fmt: skip
            for kind in ("raw", "points", "two"):
                row.update(window_cost(fleet, kind, seconds, server.process.pid, repeats))
            rows.append(row)
            print(json.dumps(row), flush=True)
        fleet.close()
    return rows


class BeforeFleet(prometheus.Fleet):
    """The poll as it was before this branch, for an A/B on one server: the matchers collected
    in lists (``value not in list``: hosts^2 / 2 comparisons per query), escaped by
    ``re.escape`` (``sim\\-1``, which Prometheus's set lookup refuses: it then runs the regex
    over every value of ``instance``), and every host's reading split again from its part."""

    def _poll(self) -> None:
        hosts = list(self.hosts)
        window = self._window()
        sent = time.time()
        families: dict[str, list] = {}
        size = 0
        self._polled_at = time.monotonic()
        for family in prometheus.COUNTER_FAMILIES:
            ms = max(int(round(window * 1000)), 1)
            families[family], response = self._query(f"{family}{_selector_before(hosts)}[{ms}ms]")
            size += len(response.body)
        self._error = None
        whole = Response(self.base_url, b"", sent, time.time())
        split = _split_before(families, hosts)
        self._readings = {h.name: prometheus.host_reading(h, split[h.name], whole) for h in hosts}
        self.last_poll_bytes = size


def _selector_before(hosts: list) -> str:
    values: dict[str, list[str]] = {}
    for host in hosts:
        for name, value in host.labels:
            values.setdefault(name, [])
            if value not in values[name]:
                values[name].append(value)
    matchers = []
    for name in sorted(values):
        options = values[name]
        if len(options) == 1 and all(name in dict(h.labels) for h in hosts):
            matchers.append(f'{name}="{options[0]}"')
        else:
            alternation = "|".join(re.escape(v) for v in options).replace("\\", "\\\\")
            matchers.append(f'{name}=~"{alternation}"')
    return "{" + ",".join(matchers) + "}"


def _split_before(families: dict[str, list], hosts: list) -> dict[str, dict[str, list]]:
    groups: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}
    for host in hosts:
        names = tuple(name for name, _ in host.labels)
        groups.setdefault(names, {})[tuple(value for _, value in host.labels)] = host.name
    out: dict[str, dict[str, list]] = {h.name: {} for h in hosts}
    for family, series in families.items():
        for item in series:
            for names, index in groups.items():
                name = index.get(tuple(item[0].get(n, "") for n in names))
                if name is not None:
                    out[name].setdefault(family, []).append(item)
    return out


def before_after(sizes: list[int], polls: int) -> list[dict[str, float]]:
    """Polls of the code before this branch and of now, interleaved on one server: this side's
    CPU and the server's per poll (its /proc clock around each poll, 10 ms ticks)."""
    rows = []
    for n in sizes:
        with simulated_fleet(n, SCRAPE_S, 3 * SCRAPE_S) as (server, hosts):
            pid = server.process.pid
            fleets = {
                "before": BeforeFleet(server.url, list(hosts), timeout=60.0),
                "after": prometheus.Fleet(server.url, list(hosts), timeout=60.0),
            }
            cpu: dict[str, list[float]] = {k: [] for k in fleets}
            served: dict[str, list[float]] = {k: [] for k in fleets}
            for fleet in fleets.values():
                fleet.scrape_interval(hosts[0])
            anchors = [anchor_cpu_s()]
            for _ in range(polls):
                for name, fleet in fleets.items():
                    server0, start = cpu_seconds(pid), time.thread_time()
                    fleet.counters(hosts[0], max_age=0.0)
                    cpu[name].append(time.thread_time() - start)
                    served[name].append(cpu_seconds(pid) - server0)
                    missing = [h for h in hosts if not isinstance(fleet._readings.get(h.name), RC)]
                    assert not missing, f"{name}: {len(missing)} hosts without a reading"
            anchors.append(anchor_cpu_s())
            row: dict[str, float] = {"hosts": n, "load": load(), "anchor_cpu_s": min(anchors)}
            for name in fleets:
                row[f"{name}_cpu_s"] = statistics.median(cpu[name])
                row[f"{name}_cpu_s_range"] = [min(cpu[name]), max(cpu[name])]  # type: ignore[assignment]
                row[f"{name}_server_cpu_s"] = statistics.mean(served[name])
            for fleet in fleets.values():
                fleet.close()
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


RATE_BPS = 50e6 / 8  # the shaped link into the host: 50 Mbit/s


def _rx(trace: dict, name: str) -> np.ndarray:
    values = trace["series"].get(f"nic:{name}/eth0/rx_bytes_per_s", [])
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _traffic(address: str, seconds: float, seed: int) -> None:
    """iperf3 bursts of 0.5-4 s at the shaped rate, with 0.5-4 s pauses, for ``seconds``."""
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        size = int(RATE_BPS * rng.uniform(0.5, 4.0))
        subprocess.run(
            ["iperf3", "-c", address, "-n", str(size), "-J"],
            capture_output=True, timeout=30, check=False,
        )  # fmt: skip
        time.sleep(rng.uniform(0.5, 4.0))


def error(seconds: float, scrape_s: float) -> list[dict[str, float]]:
    """The host's received rate (its own NIC: no other tenant moves it) through both backends
    at once, compared window by window as a utilization of the shaped link."""
    import threading

    from netns import netns_host
    from prometheus_server import prometheus_server

    rows = []
    out = Path(tempfile.mkdtemp()) / "trace.json"
    with netns_host("srv") as srv:
        srv.node_exporter()
        srv.iperf3_server()
        srv.shape("50mbit")
        with prometheus_server([f"{srv.address}:9100"], interval_s=scrape_s) as server:
            server.wait_for_samples("up[30s]", 3)
            traffic = threading.Thread(target=_traffic, args=(srv.address, seconds, 7))
            monitor = subprocess.Popen(
                [sys.executable, "-m", "pilot_sys", "monitor", "--json", str(out),
                 "--host", f"srvd=http://{srv.address}:9100",
                 "--host", f"srvp=prom://{server.url[7:]}?instance={srv.address}:9100",
                 "--", "sleep", str(seconds)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            traffic.start()
            try:
                monitor.wait(seconds + 120)
            finally:
                traffic.join(60)
                if monitor.poll() is None:
                    monitor.kill()
    trace = json.loads(out.read_text())
    t = np.asarray(trace["timestamps"], dtype=float)
    direct, engine = _rx(trace, "srvd") / RATE_BPS, _rx(trace, "srvp") / RATE_BPS
    print(
        json.dumps(
            {
                "scrape_s": scrape_s,
                "mean_util_direct": float(np.nanmean(direct)),
                "mean_util_engine": float(np.nanmean(engine)),
            }
        ),
        flush=True,
    )
    for window in (2.0, 5.0, 10.0, 20.0, 40.0):
        diffs, agree, total = [], 0, 0
        for start in np.arange(t[0], t[-1] - window + 1e-9, window):
            inside = (t >= start) & (t < start + window)
            d, e = direct[inside], engine[inside]
            if not np.isfinite(d).any() or not np.isfinite(e).any():
                continue
            diffs.append(abs(float(np.nanmean(d)) - float(np.nanmean(e))))
            hot_d = float(np.nanmean(d > 0.8)) > 0.1
            hot_e = float(np.nanmean(e > 0.8)) > 0.1
            agree += hot_d == hot_e
            total += 1
        rows.append(
            {
                "scrape_s": scrape_s,
                "window_s": window,
                "windows": total,
                "mean_abs_error": statistics.mean(diffs) if diffs else math.nan,
                "max_abs_error": max(diffs) if diffs else math.nan,
                "verdicts_agree": agree / total if total else math.nan,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("cost", "sweep", "before-after", "error"))
    parser.add_argument("--hosts", default="10,100,1000", help="cost: fleet sizes; sweep: one")
    parser.add_argument("--polls", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="fetches of each window")
    parser.add_argument("--windows", default="10,20,50,100,200", help="sweep: window lengths (s)")
    parser.add_argument("--sweep-scrape", type=float, default=1.0, help="sweep: scrape interval")
    parser.add_argument("--seconds", type=float, default=80.0)
    parser.add_argument("--scrape", default="1,5", help="error: scrape intervals (s)")
    args = parser.parse_args()
    if args.what == "cost":
        cost([int(n) for n in args.hosts.split(",")], args.polls, args.repeats)
    elif args.what == "before-after":
        before_after([int(n) for n in args.hosts.split(",")], args.polls)
    elif args.what == "sweep":
        windows = [float(w) for w in args.windows.split(",")]
        sweep(int(args.hosts.split(",")[0]), args.sweep_scrape, windows, args.repeats)
    else:
        for scrape in args.scrape.split(","):
            error(args.seconds, float(scrape))


if __name__ == "__main__":
    main()
