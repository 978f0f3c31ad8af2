"""The tuner on a real workload of this machine, with an independent check at the chosen rate.

A CPU-bound command runs once per round (``--workload``): ``stress-ng --cpu 1 --cpu-method
int64 --cpu-ops N`` (default when installed: compiled code, ~1.4% CV per round here) or a Python
loop in a fresh interpreter (``loop``: each new process lands on a different memory layout, which
alone spreads its speed by ~7% CV on this VM; measured 2026-11-21, load 0.8). The scenarios:

* ``shared``: the loop and the sampler thread pinned to one core, the worst case, where every
  CPU cycle of the sampler is taken from the workload (the expected overhead is then the
  sampler's own share of the core, printed as the anchor);
* ``free``: nothing pinned (2 cores here), the usual case;
* ``fio``: sequential direct 1 MiB writes of ``--fio-size`` MiB to a file under ``--dir``,
  compared on fio's write bandwidth (higher is better).

The sampler measured is the one ``pilot-sys run -- CMD`` runs (every dynamic plug-in over the
component graph, plus the round's own processes). For each scenario: tune (``--target upper``:
the CI upper bound must stay within the budget), then measure again at the chosen rate with
``--verify-pairs`` fresh pairs of rounds and print the overhead with its CI, whether the CI
upper bound is within the budget, the noise of the unmonitored rounds (the precision this
machine allows) and the monitor's own cost.

    python benchmarks/tuner_real.py [--budget 1%] [--pairs 10] [--verify-pairs 20] [--trim 0.2]
                                    [--scenario shared|free|fio|all] [--workload stress-ng|loop]
                                    [--loop 1000000] [--stress-ops 3000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from pilot_sys.cli.tune import parse_budget
from pilot_sys.monitor.overhead import WorkloadProbe
from pilot_sys.monitor.tuner import TuneTarget, tune_for_workload
from pilot_sys.session.monitoring import session_sampler_factory
from pilot_sys.workload.runner import CommandWorkload


def make_workload(name: str, args: argparse.Namespace) -> tuple[CommandWorkload, str]:
    """The scenario's workload and the PI it is compared on."""
    if name == "fio":
        target = Path(args.dir) / "pilot-sys-tuner-real.fio"
        argv = [
            "fio",
            "--name=tuner",
            f"--filename={target}",
            f"--size={args.fio_size}M",
            "--rw=write",
            "--bs=1M",
            "--direct=1",
            "--ioengine=psync",
        ]
        return CommandWorkload(argv), "write_bw"
    if args.workload == "stress-ng":
        return CommandWorkload(
            [
                "stress-ng",
                "--cpu",
                "1",
                "--cpu-method",
                "int64",
                "--cpu-ops",
                str(args.stress_ops),
                "--quiet",
            ]
        ), "duration"
    loop = f"n = 0\nfor i in range({args.loop}):\n    n += i"
    return CommandWorkload([sys.executable, "-S", "-c", loop]), "duration"


def run_scenario(name: str, args: argparse.Namespace, budget: float) -> dict[str, object]:
    before = os.sched_getaffinity(0)
    if name == "shared":
        os.sched_setaffinity(0, {min(before)})  # the sampler thread and the workload inherit it
    try:
        workload, pi = make_workload(name, args)
        # what `pilot-sys run -- CMD` samples with
        factory = session_sampler_factory(workload.data_path_args())
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="tuner-real-") as tmp:
            result = tune_for_workload(
                workload,
                budget,
                pi=pi,
                pairs=args.pairs,
                trim=args.trim,
                target=TuneTarget.UPPER,
                max_measurements=args.max_measurements,
                workdir=Path(tmp) / "tune",
                seed=args.seed,
                allow_unreachable=True,
                sampler_factory=factory,
            )
            verify = WorkloadProbe(
                workload,
                pi=pi,
                pairs=args.verify_pairs,
                trim=args.trim,
                workdir=Path(tmp) / "verify",
                seed=args.seed + 1,
                sampler_factory=factory,
            ).measure(result.rate_hz)
        off = np.array(verify.readings_off)
        est = verify.estimate
        cost = verify.monitor_cost
        return {
            "scenario": name,
            "pi": pi,
            "budget": budget,
            "status": result.status.value,
            "rate_hz": result.rate_hz,
            "measurements": len(result.iterations),
            "iterations": [
                (round(i.rate_hz, 1), i.step.value, round(i.overhead, 4), round(i.ci_high, 4))
                for i in result.iterations
            ],
            "tuning_overhead": result.overhead.model_dump() if result.overhead else None,
            "verify_overhead": est.overhead,
            "verify_ci": [est.ci_low, est.ci_high],
            "verify_p": est.p_value,
            "verify_within_budget": est.ci_high <= budget,
            "round_s_mean": float(off.mean()),  # of the PI (seconds for duration)
            "round_cv": float(off.std(ddof=1) / off.mean()),
            "monitor_cpu_share": cost.cpu_seconds_per_second if cost else None,
            "monitor_us_per_sample": cost.cpu_seconds_per_sample * 1e6 if cost else None,
            "monitor_wakeups_per_s": cost.wakeups_per_second if cost else None,
            "monitor_mib": cost.memory_bytes / 2**20 if cost else None,
            "elapsed_s": time.monotonic() - started,
        }
    finally:
        os.sched_setaffinity(0, before)
        (Path(args.dir) / "pilot-sys-tuner-real.fio").unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budget", default="1%")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--verify-pairs", type=int, default=20)
    parser.add_argument("--max-measurements", type=int, default=6)
    parser.add_argument("--trim", type=float, default=0.2)
    parser.add_argument(
        "--loop", type=int, default=1_000_000, help="loop iterations per round (~0.1 s per 1e6)"
    )
    parser.add_argument(
        "--workload",
        choices=["stress-ng", "loop"],
        default="stress-ng" if shutil.which("stress-ng") else "loop",
        help="the CPU-bound command of the shared and free scenarios",
    )
    parser.add_argument(
        "--stress-ops", type=int, default=3000, help="stress-ng bogo ops per round (~1.3 s here)"
    )
    parser.add_argument("--scenario", choices=["shared", "free", "fio", "all"], default="all")
    parser.add_argument("--fio-size", type=int, default=256, help="MiB written per fio round")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="directory of the fio file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    budget = parse_budget(args.budget)
    names = ["shared", "free", "fio"] if args.scenario == "all" else [args.scenario]
    load = os.getloadavg()
    rows = [run_scenario(n, args, budget) for n in names]
    if args.json:
        print(
            json.dumps(
                {
                    "date": datetime.now(UTC).isoformat(timespec="seconds"),
                    "loadavg": load,
                    "rows": rows,
                }
            )
        )
        return
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load[0]:.1f} {load[1]:.1f} "
        f"{load[2]:.1f}, "
        f"budget {budget:.2%}, workload {args.workload}, {args.pairs} pairs per tuning "
        f"measurement, {args.verify_pairs} to verify, "
        f"trim {args.trim:g}"
    )
    for r in rows:
        lo, hi = r["verify_ci"]
        print(
            f"[{r['scenario']}] tuner: {r['status']} at {r['rate_hz']:.1f} Hz after "
            f"{r['measurements']} "
            f"measurement(s) {r['iterations']}"
        )
        print(
            f"[{r['scenario']}] verify at {r['rate_hz']:.1f} Hz: overhead "
            f"{r['verify_overhead']:+.2%} "
            f"[{lo:+.2%}, {hi:+.2%}] p={r['verify_p']:.3g}; CI upper bound within {budget:.2%}: "
            f"{'yes' if r['verify_within_budget'] else 'NO'}"
        )
        share = r["monitor_cpu_share"]
        anchor = (
            f"{share:.2%} of a core ({r['monitor_us_per_sample']:.0f} us/sample)"
            if share is not None
            else "n/a"
        )
        print(
            f"[{r['scenario']}] anchor: sampler's own CPU share {anchor}; unmonitored {r['pi']} "
            "mean "
            f"{r['round_s_mean']:.4g}, CV {r['round_cv']:.1%}; {r['elapsed_s']:.0f} s"
        )


if __name__ == "__main__":
    main()
