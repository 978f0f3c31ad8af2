"""Timing a command: ``pilot-sys run`` against ``hyperfine -N``, interleaved in one run.

Three checks (issue 21, item 1):

1. **Per-round time.** For each command (``sleep 0.005`` ... ``sleep 1``), ``hyperfine -N
   --runs N --export-json`` and ``python3 -m pilot_sys run --no-monitor --max-rounds N``
   alternate, ``--repeat`` times; the median of each tool's per-run times (hyperfine's
   ``times``, the journal's round durations) is compared. Target: within 1 ms.
2. **Time to a result.** ``hyperfine -N 'sleep 0.04'`` with its defaults (at least 10 runs and
   3 s) against ``run --preset quick --no-monitor -- sleep 0.04`` (its interval honest about
   autocorrelation), each as a whole process, wall time from start to exit, interleaved.
   Target: the ratio of the medians at most 1.5.
3. **Separation.** ``compare --preset quick -s 20 --no-monitor --run a='sleep 0.05' --run
   b='sleep 0.06'`` must say the two are separated (exit 0).

The machine may be shared: every figure is printed with its spread (min-max over repeats), and
the two tools always run back to back.

    python3 benchmarks/command_timing.py [--repeat 3] [--commands 0.005,0.02,0.04,0.1,0.3,1]
        [--skip-compare] [--dir DIR]

Exit status 1 when a target is missed. Results: ``benchmarks/RESULTS.md`` (section ``timing``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
PILOT = [sys.executable, "-m", "pilot_sys"]


def runs_for(seconds: float) -> int:
    """Runs per tool per repeat: about 2 s of each command, 10 to 30 runs."""
    return max(10, min(30, round(2.0 / seconds)))


def hyperfine_times(command: str, runs: int, out: Path) -> list[float]:
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(runs), "--export-json", str(out), "--style", "none",
         command],
        check=True, capture_output=True, env=ENV,
    )  # fmt: skip
    return list(json.loads(out.read_text())["results"][0]["times"])


def pilot_times(command: str, runs: int, out: Path) -> list[float]:
    subprocess.run(
        [*PILOT, "run", "--no-monitor", "--no-plots", "-q", "--max-rounds", str(runs),
         "--min-round-seconds", "0", "-o", str(out), "--", *command.split()],
        check=False, capture_output=True, env=ENV, cwd=out.parent,
    )  # fmt: skip
    lines = (out / "rounds.jsonl").read_text().splitlines()
    return [json.loads(line)["duration"] for line in lines if line.strip()]


def wall(argv: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=ENV, cwd=cwd, check=False)
    return time.perf_counter() - t0, done


def spread(values: list[float], scale: float = 1e3, digits: int = 2) -> str:
    med, low, high = (v * scale for v in (statistics.median(values), min(values), max(values)))
    return f"{med:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def per_round(commands: list[float], repeat: int, work: Path) -> bool:
    print("## Per-round time: median per run, ms (min-max over repeats)\n")
    print("| command | runs | hyperfine -N | pilot-sys run | difference |")
    print("|---|---|---|---|---|")
    ok = True
    for seconds in commands:
        command = f"sleep {seconds:g}"
        runs = runs_for(seconds)
        hf, ps, diff = [], [], []
        for i in range(repeat):
            h = statistics.median(hyperfine_times(command, runs, work / f"hf-{seconds}-{i}.json"))
            p = statistics.median(pilot_times(command, runs, work / f"ps-{seconds}-{i}"))
            hf.append(h)
            ps.append(p)
            diff.append(p - h)
        ok &= abs(statistics.median(diff)) <= 1e-3
        print(f"| `{command}` | {runs} | {spread(hf)} | {spread(ps)} | {spread(diff)} |")
    return ok


def time_to_result(repeat: int, work: Path) -> bool:
    print("\n## Time to a result, `sleep 0.04`: wall seconds (min-max over repeats)\n")
    hf, ps, rounds, cis = [], [], [], []
    for i in range(repeat):
        h, _ = wall(["hyperfine", "-N", "--style", "none", "sleep 0.04"], work)
        out = work / f"quick-{i}"
        p, done = wall(
            [*PILOT, "run", "--preset", "quick", "--no-monitor", "--no-plots", "-q", "-o",
             str(out), "--", "sleep", "0.04"],
            work,
        )  # fmt: skip
        hf.append(h)
        ps.append(p)
        result = json.loads((out / "result.json").read_text())
        pi = result["workloads"][0]["pis"]["round_time"]
        rounds.append(result["workloads"][0]["rounds"]["total"])
        cis.append(f"{result['status']} {pi['mean'] * 1e3:.1f} ms [{pi['ci_low'] * 1e3:.1f}, "
                   f"{pi['ci_high'] * 1e3:.1f}]" if pi.get("ci_low") is not None else
                   result["status"])  # fmt: skip
    ratio = [p / h for p, h in zip(ps, hf, strict=True)]
    print("| tool | wall s | rounds |")
    print("|---|---|---|")
    print(f"| hyperfine -N (defaults) | {spread(hf, 1, 2)} | |")
    print(f"| pilot-sys run --preset quick --no-monitor | {spread(ps, 1, 2)} | "
          f"{', '.join(map(str, rounds))} |")  # fmt: skip
    print(f"\nratio pilot-sys / hyperfine: {spread(ratio, 1, 2)}; results: {'; '.join(cis)}")
    return statistics.median(ratio) <= 1.5


def separation(work: Path) -> bool:
    print("\n## compare --preset quick -s 20: sleep 0.05 against sleep 0.06\n")
    seconds, done = wall(
        [*PILOT, "compare", "--preset", "quick", "-s", "20", "--no-monitor", "-o",
         str(work / "compare"), "--run", "a=sleep 0.05", "--run", "b=sleep 0.06"],
        work,
    )  # fmt: skip
    lines = [ln for ln in done.stdout.splitlines() if " vs " in ln or "separated" in ln]
    print("```")
    print("\n".join(lines))
    print(f"exit {done.returncode}, {seconds:.1f} s")
    print("```")
    return done.returncode == 0 and "all adjacent pairs separated" in done.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--commands", default="0.005,0.02,0.04,0.1,0.3,1")
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    if shutil.which("hyperfine") is None:
        print("hyperfine is not installed", file=sys.stderr)
        return 2
    work = Path(args.dir or tempfile.mkdtemp(prefix="command-timing-"))
    work.mkdir(parents=True, exist_ok=True)
    commands = [float(c) for c in args.commands.split(",")]
    ok = per_round(commands, args.repeat, work)
    ok &= time_to_result(args.repeat, work)
    if not args.skip_compare:
        ok &= separation(work)
    print(f"\nall targets met: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
