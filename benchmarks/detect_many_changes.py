"""``changepoint.detect`` on series with many change points, this checkout against another tree.

Times ``detect`` alone (CPU seconds of a fresh process, after the series is built) on shapes of
``series_shapes_speed`` at ``--size`` readings, as generated and rounded to ``%.6g`` (what the
CLI reads back from a file: tied readings), alternating this checkout and ``--old`` (a checkout
of another commit), ``--repeat`` pairs; ``--instructions`` also counts each one's instructions
once under valgrind's callgrind (the run with ``detect`` minus the same run without it), a
figure the other jobs of a shared machine do not move::

    python3 benchmarks/detect_many_changes.py --old /path/to/other/checkout \\
        [--only sine,walk,ramp] [--size 1000000] [--repeat 3] [--instructions]

Results: ``benchmarks/results/detect22-detector.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a child with the tree first on sys.path: build the series, warm up, time detect.
CHILD = r"""
import sys, time
tree, name, size, rounded, run = sys.argv[1:6]
sys.path[:0] = [tree + "/benchmarks", tree]
import numpy as np
from series_shapes_speed import shape
from pilot_sys.stats.changepoint import detect
x = shape(name, int(size))
if rounded == "1":
    x = np.array([float(f"{v:.6g}") for v in x.tolist()])
detect(x[:5000])
start = time.process_time()
if run == "1":
    detect(x)
print(time.process_time() - start)
"""


def _child(tree: Path, name: str, size: int, rounded: bool, run: bool) -> list[str]:
    args = [str(tree), name, str(size), "1" if rounded else "0", "1" if run else "0"]
    return [sys.executable, "-c", CHILD, *args]


def cpu_seconds(tree: Path, name: str, size: int, rounded: bool) -> float:
    done = subprocess.run(
        _child(tree, name, size, rounded, True), capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[-1])


def instructions(tree: Path, name: str, size: int, rounded: bool) -> int | None:
    """``detect``'s instructions: callgrind's count with it minus the count without it."""
    if shutil.which("valgrind") is None:
        return None
    counts = []
    for run in (True, False):
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
            + _child(tree, name, size, rounded, run),
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if found is None:
            return None
        counts.append(int(found.group(1).replace(",", "")))
    return counts[0] - counts[1]


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--only", default="sine,walk,ramp")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instructions", action="store_true")
    args = parser.parse_args(argv)
    trees = {"old": args.old.resolve(), "new": ROOT}
    print(f"# load {os.getloadavg()}; CPU s of detect, median (min-max) of {args.repeat} pairs")
    for name in args.only.split(","):
        for rounded in (False, True):
            label = f"{name}{' %.6g' if rounded else ''}"
            seconds: dict[str, list[float]] = {k: [] for k in trees}
            for _ in range(args.repeat):
                for key, tree in trees.items():
                    seconds[key].append(cpu_seconds(tree, name, args.size, rounded))
            line = f"{label:12} old {_spread(seconds['old'])}  new {_spread(seconds['new'])}"
            if args.instructions:
                ir = {k: instructions(t, name, args.size, rounded) for k, t in trees.items()}
                if ir["old"] and ir["new"]:
                    change = 100.0 * (ir["new"] - ir["old"]) / ir["old"]
                    line += f"  instructions {ir['old']:.3e} -> {ir['new']:.3e} ({change:+.1f} %)"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
