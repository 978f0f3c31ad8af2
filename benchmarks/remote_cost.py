"""What one remote sample costs, on this machine and on the remote host, against a local anchor
measured in the same run (needs root, prometheus-node-exporter, pcp):

    PYTHONPATH=.:tests python3 benchmarks/remote_cost.py [--samples 300] [--repeats 5]
        [--threads 10,50] [--seconds 3]

The remote host is a network namespace on this machine (tests/netns.py) running the real
daemons, so both ends are measured here. Per sample, medians of interleaved repeats:

* anchor       - ``os.pread`` of /proc/stat on a kept-open descriptor (one local CPU reading);
* ne filtered  - node_exporter ``/metrics?collect[]=cpu&collect[]=diskstats&collect[]=netdev
                 &collect[]=time`` over a kept-alive connection, parsed with prometheus-client;
* ne filt/all  - the same scrape with every line handed to the parser (no line pre-filter);
* ne full      - the same without ``collect[]`` (every default collector);
* pcp          - pmproxy ``/pmapi/fetch`` of the counter metrics in one context, JSON parsed.

For each: this process's CPU per sample split into request (HTTP) and parse, the answer's
size, the wall latency, and the remote CPU per sample from /proc/PID/stat of the serving
processes (node_exporter; pmcd + pmproxy) next to what the engine says of itself
(``process_cpu_seconds_total``; ``pmcd.cputime.total``, which leaves pmproxy out). Then the
scale check: T client threads (one connection each) sampling at 10 Hz for ``--seconds``,
this process's CPU per sample and the share of samples that came more than half a period late.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

from netns import NetnsHost, netns_host

from pilot_sys.monitor.remote import node_exporter, pcp
from pilot_sys.monitor.remote.http import HttpConnection, RemoteUnavailable, Response
from pilot_sys.topology.remote_hosts import parse_host_spec

TICK = os.sysconf("SC_CLK_TCK")
WIDTHS = (12, 7, 9, 8, 9, 8, 9, 10, 9, 15)


def process_cpu(pid: int) -> float:
    """utime + stime of a process, seconds (clock ticks: 10 ms steps)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Method:
    """One way to take a sample: ``request`` fetches, ``parse`` turns the body into counters,
    ``own_cpu`` reads the engine's self-reported CPU seconds from the parsed result."""

    def __init__(
        self,
        name: str,
        request: Callable[[], bytes],
        parse: Callable[[bytes], object],
        own_cpu: Callable[[object], float | None],
        pids: list[int],
    ) -> None:
        self.name, self.request, self.parse, self.own_cpu, self.pids = (
            name,
            request,
            parse,
            own_cpu,
            pids,
        )
        self.rows: list[dict[str, float]] = []

    def run(self, n: int) -> None:
        http_cpu = parse_cpu = 0.0
        latencies, sizes = [], []
        remote_before = sum(process_cpu(p) for p in self.pids)
        own_first = own_last = None
        for _ in range(n):
            c0, w0 = time.thread_time(), time.perf_counter()
            body = self.request()
            c1, w1 = time.thread_time(), time.perf_counter()
            parsed = self.parse(body)
            c2 = time.thread_time()
            http_cpu += c1 - c0
            parse_cpu += c2 - c1
            latencies.append(w1 - w0)
            sizes.append(len(body))
            own = self.own_cpu(parsed)
            own_first = own if own_first is None else own_first
            own_last = own
        remote = sum(process_cpu(p) for p in self.pids) - remote_before
        self.rows.append(
            {
                "http": http_cpu / n,
                "parse": parse_cpu / n,
                "latency": statistics.median(latencies),
                "bytes": statistics.median(sizes),
                "remote": remote / n,
                "own": (own_last - own_first) / (n - 1)
                if own_first is not None and own_last is not None
                else float("nan"),
            }
        )

    def median(self, key: str) -> float:
        return statistics.median(r[key] for r in self.rows)


def anchor(n: int) -> float:
    fd = os.open("/proc/stat", os.O_RDONLY)
    try:
        begin = time.thread_time()
        for _ in range(n):
            os.pread(fd, 1 << 16, 0)
        return (time.thread_time() - begin) / n
    finally:
        os.close(fd)


def methods(host: NetnsHost) -> list[Method]:
    ne_base = f"http://{host.address}:9100/metrics"
    ne_conn = HttpConnection(ne_base, timeout=5)
    ne_pid = next(d.process.pid for d in host.daemons if d.name == "node_exporter")
    pcp_pids = [d.process.pid for d in host.daemons if d.name in ("pmcd", "pmproxy")]
    filtered = node_exporter.scrape_url(ne_base, node_exporter.COUNTER_COLLECTORS)

    def ne_parse_all(body: bytes) -> object:
        return node_exporter.counters_from_samples(
            "srv", node_exporter.parse(body.decode()), _fake_response(body)
        )

    def ne_parse(body: bytes) -> object:
        return node_exporter.counters_from_samples(
            "srv",
            node_exporter.parse(body.decode(), node_exporter.COUNTER_SAMPLES),
            _fake_response(body),
        )

    client = pcp.PmproxyClient(parse_host_spec(f"srv=pcp://{host.address}:44322"), timeout=5)
    client.fetch(pcp.COUNTER_METRICS)  # context, descriptors and instance names, once
    names = list(pcp.COUNTER_METRICS)
    fetch_path = f"/pmapi/fetch?context={client._context}&names={','.join(names)}"
    tables = {n: client._instance_table(n) for n in names}

    def pcp_request() -> bytes:
        return client.connection.get(f"{client.host.base_url}{fetch_path}").body

    def pcp_parse(body: bytes) -> object:
        fetch = pcp.parse_fetch(json.loads(body), tables)
        return pcp.counters_from_fetch("srv", fetch, client._descs, _fake_response(body))

    def own(parsed: object) -> float | None:
        return getattr(parsed, "exporter_cpu_s", None)

    return [
        Method("ne filtered", lambda: ne_conn.get(filtered).body, ne_parse, own, [ne_pid]),
        Method("ne filt/all", lambda: ne_conn.get(filtered).body, ne_parse_all, own, [ne_pid]),
        Method("ne full", lambda: ne_conn.get(ne_base).body, ne_parse, own, [ne_pid]),
        Method("pcp", pcp_request, pcp_parse, own, pcp_pids),
    ]


def _fake_response(body: bytes) -> Response:
    """A Response for the parse step (its times do not enter the counters' values)."""
    return Response("bench", body, 0.0, 0.0)


def threaded(
    host: NetnsHost, kind: str, threads: int, seconds: float, rate: float = 10.0
) -> dict[str, float]:
    """``threads`` clients at ``rate`` Hz each for ``seconds``: this process's CPU per sample,
    the share of samples started more than half a period late, and the failed requests. The
    clients connect (and, for PCP, make their context) one after another before the clock runs."""
    clients: list[pcp.PmproxyClient | node_exporter.NodeExporterClient] = []
    setup_errors: list[str] = []
    for _ in range(threads):
        if kind == "pcp":
            client = pcp.PmproxyClient(
                parse_host_spec(f"srv=pcp://{host.address}:44322"), timeout=5
            )
        else:
            spec = parse_host_spec(f"srv=http://{host.address}:9100")
            client = node_exporter.NodeExporterClient(spec, timeout=5)
        try:
            client.counters()
        except RemoteUnavailable as exc:
            setup_errors.append(exc.problem)
            continue
        clients.append(client)
    late = [0] * len(clients)
    done = [0] * len(clients)
    failed = [0] * len(clients)
    start = time.monotonic() + 0.2
    period = 1.0 / rate

    def body(i: int) -> None:
        phase = start + i * period / max(len(clients), 1)  # spread the clients over the period
        k = 0
        while (due := phase + k * period) <= start + seconds:
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            elif -wait > period / 2:
                late[i] += 1
            try:
                clients[i].counters()
                done[i] += 1
            except RemoteUnavailable:
                failed[i] += 1
            k += 1

    cpu0 = time.process_time()
    workers = [threading.Thread(target=body, args=(i,)) for i in range(len(clients))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    cpu = time.process_time() - cpu0
    for client in clients:
        client.close()
    total = sum(done)
    return {
        "clients": len(clients),
        "setup_errors": len(setup_errors),
        "setup_error": setup_errors[0] if setup_errors else "",
        "samples": total,
        "failed": sum(failed),
        "cpu_per_sample": cpu / max(total, 1),
        "late": sum(late) / max(total, 1),
        "cores": cpu / seconds,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", default="10,50", help="client thread counts for the 10 Hz runs")
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    with netns_host("srv") as host:
        host.node_exporter()
        host.pcp()
        ms = methods(host)
        for m in ms:  # warm-up: connections, caches
            m.run(20)
            m.rows.clear()
        anchors = []
        for _ in range(args.repeats):
            anchors.append(anchor(args.samples * 10))
            for m in ms:
                m.run(args.samples)
        base = statistics.median(anchors)
        print(
            f"anchor: pread /proc/stat {base * 1e6:.1f} us CPU per read "
            f"(min {min(anchors) * 1e6:.1f}, max {max(anchors) * 1e6:.1f})"
        )
        header = (
            "method",
            "bytes",
            "latency",
            "http us",
            "parse us",
            "here us",
            "x anchor",
            "remote us",
            "x anchor",
            "self-report us",
        )
        print(" ".join(f"{h:>{w}}" for h, w in zip(header, WIDTHS, strict=True)))
        for m in ms:
            here = m.median("http") + m.median("parse")
            cells = (
                m.name,
                f"{m.median('bytes'):.0f}",
                f"{m.median('latency') * 1e3:.2f}ms",
                f"{m.median('http') * 1e6:.0f}",
                f"{m.median('parse') * 1e6:.0f}",
                f"{here * 1e6:.0f}",
                f"{here / base:.0f}",
                f"{m.median('remote') * 1e6:.0f}",
                f"{m.median('remote') / base:.0f}",
                f"{m.median('own') * 1e6:.0f}",
            )
            print(" ".join(f"{c:>{w}}" for c, w in zip(cells, WIDTHS, strict=True)))
        filtered, full = ms[0], ms[2]

        def ratio(key: str) -> float:
            return filtered.median(key) / full.median(key)

        here_ratio = (filtered.median("http") + filtered.median("parse")) / (
            full.median("http") + full.median("parse")
        )
        print(
            f"filtered / full: here {here_ratio:.2f}, remote {ratio('remote'):.2f}, "
            f"bytes {ratio('bytes'):.2f}"
        )
        for kind in ("pcp", "ne filtered"):
            for threads in (int(t) for t in args.threads.split(",") if t):
                r = threaded(host, "pcp" if kind == "pcp" else "ne", threads, args.seconds)
                print(
                    f"{kind:<12} {threads:>3} threads x 10 Hz for {args.seconds:g} s: "
                    f"{r['samples']:.0f} samples, {r['cpu_per_sample'] * 1e6:.0f} us CPU/sample "
                    f"here, {r['cores']:.2f} cores, {r['late'] * 100:.1f} % late"
                )
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
