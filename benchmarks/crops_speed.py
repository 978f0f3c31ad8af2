"""Settle's CROPS fallback at 1e6 readings, against another tree, interleaved (issue 22, item 8).

When no run of equal segments holds half of a series (a slow sine, a random walk), the steady
part is where the level settles for good (``settle``): PELT segments of the series' 3,000
block means at the elbow of their CROPS path, 9-10 passes of a many-penalty PELT. This script
times that step (``settle.elbow_segmentation`` on the block means, CPU seconds inside a fresh
process, so the imports are not counted) and, with ``--end-to-end``, ``changepoints`` and
``analyze`` on the whole file (CPU seconds of the fresh process), for this checkout and for
``--base`` alternately, ``--repeat`` times; medians with their ranges. Both trees must give
the same CROPS path, float for float (penalties, costs and change points of every step), and
the same elbow cuts: any difference is printed and makes the exit status 1::

    python3 benchmarks/crops_speed.py --base /path/to/other/checkout [--shapes sine,walk]
        [--size 1000000] [--repeat 5] [--end-to-end]

Shapes are ``series_shapes_speed``'s (seeded). Results: ``benchmarks/results/pelt22-crops.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from series_shapes_speed import shape  # noqa: E402

# run in a fresh process with the tree under test first on sys.path
CHILD = """
import hashlib, json, math, sys, time
import numpy as np
from pilot_sys.stats import settle
from pilot_sys.stats.crops import crops
x = np.load(sys.argv[1])
block = max(1, math.ceil(x.size / settle.MAX_POINTS))
y = settle._block_means(x, block) if block > 1 else x
began = time.process_time()
cuts = settle.elbow_segmentation(y)
seconds = time.process_time() - began
log_n = math.log(y.size)
path = crops(y, settle.CROPS_LOW * log_n, settle.CROPS_HIGH * log_n)
steps = [[s.penalty.hex(), s.cost.hex(), s.changepoints] for s in path]
digest = hashlib.sha256(json.dumps([steps, cuts]).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "steps": len(steps), "cuts": len(cuts), "digest": digest}))
"""


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], tree: Path) -> tuple[float, str]:
    """CPU seconds (user + system) of a fresh process run in ``tree``, and its output."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    began = _cpu_children()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tree, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} in {tree}: exit {proc.returncode}: {proc.stderr}")
    return _cpu_children() - began, proc.stdout


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--shapes", default="sine,walk")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--end-to-end", action="store_true")
    args = parser.parse_args()
    trees = {"this": ROOT, "base": args.base.resolve()}
    py = sys.executable
    status = 0
    with tempfile.TemporaryDirectory() as folder:
        for name in args.shapes.split(","):
            x = shape(name, args.size)
            data = Path(folder) / f"{name}.npy"
            text = Path(folder) / f"{name}.txt"
            np.save(data, x)
            np.savetxt(text, x, fmt="%.6g")
            times: dict[str, list[float]] = {}
            seen: dict[str, dict[str, object]] = {}
            for _ in range(args.repeat):
                for label, tree in trees.items():
                    _, out = _run([py, "-c", CHILD, str(data)], tree)
                    got = json.loads(out)
                    times.setdefault(f"fallback {label}", []).append(got.pop("seconds"))
                    if seen.setdefault(label, got) != got:
                        raise RuntimeError(f"{name}: {label} changed between runs")
                    if args.end_to_end:
                        for command in ("changepoints", "analyze"):
                            cmd = [py, "-m", "pilot_sys", command, str(text)]
                            times.setdefault(f"{command} {label}", []).append(_run(cmd, tree)[0])
            same = seen["this"] == seen["base"]
            status |= not same
            print(
                f"{name} (n={args.size}): {seen['this']['steps']} CROPS steps, "
                f"{seen['this']['cuts']} elbow cuts; path and cuts "
                f"{'identical' if same else 'DIFFER: ' + json.dumps(seen)}"
            )
            for key, xs in times.items():
                print(f"  {key:22} CPU s {_med(xs)}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
