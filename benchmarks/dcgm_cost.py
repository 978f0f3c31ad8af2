"""What a fleet's GPUs cost the Prometheus backend on this side, per GPU series: the engine's
answer for every dcgm-exporter family of H hosts x G GPUs (one query), parsed
(``prometheus.parse_answer``), split by host (``dcgm.split``), placed at each host's scrape
(``dcgm.with_gpus`` for a poll, ``dcgm.with_gpus_over`` for a session's window) and turned
into signals (``dcgm.metrics``). The anchor, measured in the same run: the same number of
node_exporter series (``node_cpu_seconds_total``, same points per series) through the
backend's existing path (``parse_answer``, ``split_by_host``, ``host_reading`` /
``window_readings``), so the figure is a ratio that a shared machine's load moves less.

    PYTHONPATH=. python3 benchmarks/dcgm_cost.py [--hosts 10,100] [--gpus 8] [--repeat 5]

The answers are generated (dcgm-exporter's labels and families, values of the H200
recordings' orders of magnitude); nothing is asked of a server: the server's side is
``benchmarks/prometheus_cost.py``'s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pilot_sys.monitor.remote import dcgm, prometheus  # noqa: E402
from pilot_sys.monitor.remote.http import Response  # noqa: E402
from pilot_sys.monitor.remote.utilization import CounterSeries  # noqa: E402
from pilot_sys.topology.remote_hosts import parse_host_spec  # noqa: E402

SCRAPE_S = 15.0
FAMILIES = [f for f in dcgm.SAMPLED if f != "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"]


def answer(series: list[tuple[dict[str, str], list[tuple[float, float]]]]) -> bytes:
    return json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [
                    {"metric": m, "values": [[t, repr(v)] for t, v in pts]} for m, pts in series
                ],
            },
        }
    ).encode()


def gpu_series(hosts: int, gpus: int, points: int, t0: float) -> list:
    rng = np.random.default_rng(1)
    out = []
    for h in range(hosts):
        for g in range(gpus):
            labels = {
                "instance": f"10.1.{h // 250}.{h % 250}:9400",
                "job": "dcgm",
                "gpu": str(g),
                "UUID": f"GPU-{h:04d}-{g}",
                "device": f"nvidia{g}",
                "modelName": "NVIDIA H200",
                "pci_bus_id": f"00000000:{16 + g:02X}:00.0",
                "Hostname": f"gpu{h}",
            }
            for family in FAMILIES:
                values = rng.uniform(0, 100, points)
                out.append(
                    (
                        {**labels, "__name__": family},
                        [(t0 + i * SCRAPE_S - 3.0, float(v)) for i, v in enumerate(values)],
                    )
                )
    return out


def node_series(hosts: int, per_host: int, points: int, t0: float) -> list:
    out = []
    modes = ("user", "system", "idle", "iowait")
    for h in range(hosts):
        for k in range(per_host):
            labels = {
                "__name__": "node_cpu_seconds_total",
                "instance": f"10.1.{h // 250}.{h % 250}:9100",
                "job": "node",
                "cpu": str(k // len(modes)),
                "mode": modes[k % len(modes)],
            }
            out.append((labels, [(t0 + i * SCRAPE_S, 100.0 + i) for i in range(points)]))
    return out


def timed(function, repeat: int) -> float:  # type: ignore[no-untyped-def]
    """The median CPU seconds of ``repeat`` calls (process time: what this side spends)."""
    spent = []
    for _ in range(repeat):
        start = time.process_time()
        function()
        spent.append(time.process_time() - start)
    return statistics.median(spent)


def measure(n_hosts: int, gpus: int, points: int, repeat: int) -> dict[str, float]:
    hosts = [
        parse_host_spec(f"gpu{h}=prom://p:9090?instance=10.1.{h // 250}.{h % 250}:9100&job=node")
        for h in range(n_hosts)
    ]
    t0 = 1.7e9
    body_gpu = answer(gpu_series(n_hosts, gpus, points, t0))
    n_gpu = n_hosts * gpus * len(FAMILIES)
    per_host = gpus * len(FAMILIES)  # the anchor: as many node_exporter series per host
    body_node = answer(node_series(n_hosts, per_host, points, t0))
    whole = Response("", b"", 0.0, 0.0)
    times = [t0 + i * SCRAPE_S for i in range(points)]

    def node_path() -> None:
        series = prometheus.parse_answer(body_node, "node")
        split = prometheus.split_by_host({"node_cpu_seconds_total": series}, hosts)
        if points <= 2:
            for h in hosts:
                prometheus.host_reading(h, split[h.name], whole)
        else:
            for h in hosts:
                prometheus.window_readings(h, split[h.name], whole)

    def gpu_path() -> None:
        series = prometheus.parse_answer(body_gpu, "dcgm")
        split = dcgm.split(series, hosts)
        for h in hosts:
            readings = [
                prometheus.RemoteCounters(host=h.name, sent=0, received=0, remote_time=t)
                for t in times
            ]
            if points <= 2:
                dcgm.with_gpus(readings[-1], split[h.name])
            else:
                dcgm.with_gpus_over(readings, split[h.name])
                cs = CounterSeries.from_readings(readings)
                dcgm.metrics(h.name, cs.keys, cs.column)

    node_s = timed(node_path, repeat)
    gpu_s = timed(gpu_path, repeat)
    return {
        "gpu_series": n_gpu,
        "points": points,
        "bytes": len(body_gpu),
        "gpu_s": gpu_s,
        "node_s": node_s,
        "gpu_us_per_series": gpu_s / n_gpu * 1e6,
        "node_us_per_series": node_s / n_gpu * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", default="10,100")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        "| hosts x GPUs | GPU series | points/series | answer | GPU path CPU | per GPU series | "
        "anchor (node_exporter path, same count) per series | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.hosts.split(",")):
        for points, what in ((2, "poll"), (240, "window (1 h at 15 s)")):
            r = measure(n, args.gpus, points, args.repeat)
            print(
                f"| {n} x {args.gpus} | {r['gpu_series']} | {points} ({what}) | "
                f"{r['bytes'] / 1e6:.1f} MB | {r['gpu_s'] * 1e3:.0f} ms | "
                f"{r['gpu_us_per_series']:.0f} us | {r['node_us_per_series']:.0f} us | "
                f"{r['gpu_s'] / r['node_s']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
