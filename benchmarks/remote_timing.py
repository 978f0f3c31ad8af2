"""Timing error of remote samples against local ones, on namespace hosts where the clock is
shared, so the true offset between the two ends is 0 (needs root, prometheus-node-exporter,
pcp, iperf3):

    PYTHONPATH=.:tests python3 benchmarks/remote_timing.py [--seconds 20] [--rate 10]

A real sampler runs with one namespace host as a source (node_exporter, then PCP) while iperf3
sends bursts into the host (on for ``--burst`` seconds, off as long). Reported per engine:

* the clock offset the source runner recovers (NTP's rule: from the fastest call) and its
  stated uncertainty: the true value is 0, so the recovered value is the error;
* per sample, the error of placing it at the middle of its call instead (the rule without a
  backend time): midpoint - the backend's own time, both on this clock; and the call latency;
* the lag between the same traffic seen at both ends: our veth's transmitted bytes (a local
  probe, on the sampler's ticks) against the host's eth0 received bytes (the source, at its own
  placed times), as the shift that best aligns the two rate series (cross-correlation on a 1 ms
  grid, within +-2 sampling periods). Where the placement is right it is near 0; its spread is
  bounded by the sampling period.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from typing import Any

import numpy as np
from netns import netns_host

from pilot_sys.monitor.remote.source import host_plugins
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.plugin_loader import load_plugins
from pilot_sys.topology.discover import discover
from pilot_sys.topology.remote_hosts import parse_host_spec


def _bursts(address: str, seconds: float, burst: float) -> None:
    """iperf3 on for ``burst`` s, off for ``burst`` s, until ``seconds`` have passed."""
    end = time.monotonic() + seconds
    while time.monotonic() + 2 * burst < end:
        subprocess.run(
            ["iperf3", "-c", address, "-t", f"{burst:g}", "-b", "400M"],
            capture_output=True,
            timeout=burst + 30,
            check=False,
        )
        time.sleep(burst)


def _lag(
    t_local: np.ndarray, local: np.ndarray, t_remote: np.ndarray, remote: np.ndarray, period: float
) -> float:
    """The shift (s) to add to the remote times that best aligns the two series."""
    ok_l, ok_r = np.isfinite(local), np.isfinite(remote)
    grid = np.arange(
        max(t_local[ok_l][0], t_remote[ok_r][0]), min(t_local[ok_l][-1], t_remote[ok_r][-1]), 0.001
    )
    a = np.interp(grid, t_local[ok_l], local[ok_l])
    a = (a - a.mean()) / (a.std() or 1.0)
    best, best_score = 0.0, -np.inf
    for shift in np.arange(-2 * period, 2 * period + 1e-9, 0.001):
        b = np.interp(grid, t_remote[ok_r] + shift, remote[ok_r])
        b = (b - b.mean()) / (b.std() or 1.0)
        score = float(np.dot(a, b))
        if score > best_score:
            best, best_score = float(shift), score
    return best


def measure(spec: str, host: Any, rate: float, seconds: float, burst: float) -> dict[str, Any]:
    declared = parse_host_spec(spec)
    from pilot_sys.monitor.data_path import find_data_path

    found = find_data_path([f"host:{host.address}"], hosts=[declared], graph=discover("/"))
    sampler = Sampler(
        found.graph,
        rate_hz=rate,
        plugins=[*load_plugins("dynamic"), *host_plugins([declared], rate)],
    )
    sampler.start()
    _bursts(host.address, seconds, burst)
    trace = sampler.stop()
    runner = sampler._runners[0]  # the raw call record: requested/answered/taken_at per call
    record = runner.recording()
    times = record.sample_times()
    wall_minus_mono = trace.start_time - sampler._t0_mono
    midpoint = (record.calls[:, 0] + record.calls[:, 1]) / 2 + wall_minus_mono
    taken = record.calls[:, 2]
    source = trace.sources[f"remote:{declared.name}"]
    t_local = np.array(trace.timestamps)
    local = np.array(
        [np.nan if v is None else v for v in trace.series[f"nic:{host.root_if}/tx_bytes_per_s"]]
    )
    t_remote = np.array(source.times)
    remote = np.array(
        [np.nan if v is None else v for v in source.series["nic:srv/eth0/rx_bytes_per_s"]]
    )
    # a rate belongs to the interval ending at its sample: compare interval midpoints
    t_local_mid = t_local - np.diff(t_local, prepend=np.nan) / 2
    t_remote_mid = t_remote - np.diff(t_remote, prepend=np.nan) / 2
    lag = _lag(t_local_mid[1:], local[1:], t_remote_mid[1:], remote[1:], 1 / rate)
    latency = record.latency
    return {
        "engine": declared.backend.value,
        "samples": int(len(times.times)),
        "recovered_offset_ms": source.clock_offset_s * 1e3
        if source.clock_offset_s is not None
        else None,
        "offset_uncertainty_ms": (source.clock_offset_uncertainty_s or 0) * 1e3,
        "midpoint_error_ms_median": float(np.median(midpoint - taken) * 1e3),
        "midpoint_error_ms_p95_abs": float(np.percentile(np.abs(midpoint - taken), 95) * 1e3),
        "latency_ms_median": float(np.median(latency) * 1e3),
        "latency_ms_p95": float(np.percentile(latency, 95) * 1e3),
        "local_remote_lag_ms": lag * 1e3,
        "gaps": source.gaps,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=10.0)
    ap.add_argument("--burst", type=float, default=1.0)
    args = ap.parse_args()
    with netns_host("srv") as host:
        host.node_exporter()
        host.pcp()
        host.iperf3_server()
        host.shape("200mbit")  # steady bursts: the NIC counters follow the shaper, not the CPU
        for spec in (f"srv=http://{host.address}:9100", f"srv=pcp://{host.address}:44322"):
            print(json.dumps(measure(spec, host, args.rate, args.seconds, args.burst)))
    load = open("/proc/loadavg").read().split()[0]
    print(f"load average: {load} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
