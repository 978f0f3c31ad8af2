"""Detection of kernel-imposed limits on the issue's real cases, over repeated runs.

    sudo python benchmarks/kernel_limits_detection.py [--runs 3] [--cases cpu-quota,memory]

Each case (tests/limit_cases.py: a CPU quota, a blkio write throttle, a tbf qdisc, a memory
limit) runs as a short ``pilot-sys run`` session, limited and unlimited, ``--runs`` times,
interleaved. Printed per run: the session's status and exit code, its hidden bottlenecks, the
load average when it started, and the limiter's evidence; then the counts: limited runs whose
limiter was named, unlimited runs flagged for a limiter of that kind. Every cgroup and network
namespace made is removed, also after a failure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from limit_cases import CASES, CaseResult  # noqa: E402 - the cases live beside the tests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES)
    )
    ap.add_argument("--work", type=Path, default=Path("/var/tmp"), help="where the files go")
    args = ap.parse_args()
    chosen = [c for c in args.cases.split(",") if c]
    results: list[CaseResult] = []
    for run in range(1, args.runs + 1):
        for case in chosen:
            for limited in (True, False):
                with tempfile.TemporaryDirectory(
                    prefix=f"pilot-limits-{case}-", dir=args.work
                ) as work:
                    r = CASES[case](limited, Path(work))
                results.append(r)
                print(
                    f"run {run} {case:12s} {'limited  ' if limited else 'unlimited'} "
                    f"load {r.load:5.1f}  {r.seconds:5.1f} s  exit {r.exit_code} {r.status:14s} "
                    f"{'OK  ' if r.ok else 'MISS'} hidden: {', '.join(r.hidden) or '-'}",
                    flush=True,
                )
                for key, text in r.evidence.items():
                    if key.startswith(r.limiter):
                        print(f"      {text}", flush=True)
    print("\ncase          limited runs named   unlimited runs flagged")
    for case in chosen:
        limited = [r for r in results if r.case == case and r.limited]
        free = [r for r in results if r.case == case and not r.limited]
        print(
            f"{case:13s} {sum(r.named for r in limited)}/{len(limited):<18d} "
            f"{sum(r.flagged_for_limit for r in free)}/{len(free)}"
        )


if __name__ == "__main__":
    main()
