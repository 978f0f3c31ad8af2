"""The rate the tuner picks at a 1 % budget with two remote hosts monitored, against none
(needs root, prometheus-node-exporter, pcp):

    PYTHONPATH=.:tests python3 benchmarks/remote_tuner.py [--budget 0.01] [--repeats 1]
        [--pairs 10] [--trim 0.2]
        [--command "stress-ng --cpu 1 --cpu-method int64 --cpu-ops 3000 --quiet"]

Two namespace hosts (tests/netns.py): ``a`` with node_exporter, ``b`` with PCP's pmproxy. The
tuner (``monitor.tuner.tune_for_workload``) measures the sampler that ``pilot-sys run --host a=..
--host b=.. -- CMD`` would run (``session.monitoring.session_sampler_factory``: every local
plug-in, the round's processes, one source per host asking it at the sampling rate up to 10 Hz,
and the links), with interleaved monitored and unmonitored rounds of CMD, and Newton's method
on the measured overhead. Without hosts it measures the local sampler alone. Reported per run:
the rate, its status, the overhead measured there with its CI, and the calibration's cost per
tick here (sampler thread and the sources' threads) that seeds the first model.
"""

from __future__ import annotations

import argparse
import json
import shlex

from netns import netns_host

from pilot_sys.monitor.tuner import tune_for_workload
from pilot_sys.session.monitoring import session_sampler_factory
from pilot_sys.topology.remote_hosts import parse_host_spec
from pilot_sys.workload.runner import CommandWorkload


def tune(
    command: list[str], hosts: list, budget: float, pairs: int, trim: float
) -> dict[str, object]:
    workload = CommandWorkload(command)
    factory = session_sampler_factory(workload.data_path_args(), hosts)
    result = tune_for_workload(
        workload, budget, sampler_factory=factory, allow_unreachable=True, pairs=pairs, trim=trim
    )
    cal = result.calibration
    est = result.overhead
    return {
        "hosts": [h.spec for h in hosts],
        "rate_hz": round(result.rate_hz, 2),
        "status": result.status.value,
        "overhead": None if est is None else round(est.overhead, 5),
        "ci": None if est is None else [round(est.ci_low, 5), round(est.ci_high, 5)],
        "measurements": len(result.measurements),
        "calibration_us_per_tick_sampler": None
        if cal is None
        else cal.cpu_seconds_per_sample * 1e6,
        "calibration_us_per_tick_total": None
        if cal is None
        else cal.total_cpu_seconds_per_sample * 1e6,
        "calibration_rate_hz": None if cal is None else cal.rate_hz,
        "seconds": round(result.elapsed_s, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--trim", type=float, default=0.2)
    # the CPU-bound round of benchmarks/tuner_real.py: ~1 % CV per round on this VM when quiet
    ap.add_argument(
        "--command", default="stress-ng --cpu 1 --cpu-method int64 --cpu-ops 3000 --quiet"
    )
    args = ap.parse_args()
    command = shlex.split(args.command)
    with netns_host("a") as a, netns_host("b") as b:
        a.node_exporter()
        b.pcp()
        two = [
            parse_host_spec(f"a=http://{a.address}:9100"),
            parse_host_spec(f"b=pcp://{b.address}:44322"),
        ]
        for _ in range(args.repeats):  # interleaved, so that a change of load hits both alike
            for hosts in ([], two):
                print(
                    json.dumps(tune(command, hosts, args.budget, args.pairs, args.trim)), flush=True
                )
    print(f"load average: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
