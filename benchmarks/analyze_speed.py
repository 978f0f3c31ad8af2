"""``pilot-sys analyze`` on ten million numbers, end to end, beside reading the same file.

Writes N readings (seeded) as one column of text and times ``python3 -m pilot_sys analyze FILE``
in a fresh process: wall seconds, CPU seconds (user + system) and peak resident memory
(``ru_maxrss``). The anchor, measured in the same run and interleaved with it, is the least any
analysis of the file must do: a fresh Python that imports numpy and pandas, reads the column
with ``pandas.read_csv`` into a float64 array and sorts it once (``np.sort``). Every timing is
printed as seconds and as a multiple of the anchor's, so runs on a busy shared machine compare.

Kinds of data (``--kinds``):
* ``warmup`` (default): latency-like readings, lognormal with AR(1) dependence (phi 0.5) around
  5 ms, and a warm-up: the first ~5% start three times slower and decay (time constant 1% of the
  series). ``analyze`` removes the warm-up (EDM), then summarises the stable part and the raw
  series, whose trend makes the subsession search go to large sizes.
* ``iid``: lognormal readings without dependence or warm-up (the file of
  ``benchmarks/read_speed.py``).

``--old REV`` also times the package at git revision REV (its ``pilot_sys`` extracted to a
temporary directory), interleaved, for a before/after in one run. The first run of each command
is a warm-up (page cache, imports) and is not counted.

    python3 benchmarks/analyze_speed.py [--numbers 10000000] [--repeat 3] [--kinds warmup,iid]
        [--old REV] [--dir DIR]

Target (issue 15, item 23): ``analyze`` on 10M numbers under 5 s end to end. Exit status 1 when
it is missed. Results: ``benchmarks/results/analyze_speed.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from child_usage import run_child
from git_tree import extract

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 5.0

ANCHOR = r"""
import sys
import numpy as np
import pandas as pd
values = pd.read_csv(sys.argv[1], dtype=np.float64).iloc[:, 0].to_numpy()
np.sort(values)
print(values.size)
"""


def write_data(path: Path, kind: str, n: int) -> None:
    """N readings of ``kind`` in ms, one per line under a header, six decimals."""
    rng = np.random.default_rng(15023)
    if kind == "iid":
        values = rng.lognormal(0.0, 0.3, n) * 5.0
    else:
        from scipy.signal import lfilter

        noise = lfilter([1.0], [1.0, -0.5], rng.standard_normal(n)) * np.sqrt(1.0 - 0.25)
        values = 5.0 * np.exp(0.3 * noise) * (1.0 + 2.0 * np.exp(-np.arange(n) / (n / 100)))
    with path.open("w") as out:
        out.write("latency (ms)\n")
        np.savetxt(out, values, fmt="%.6f")


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS in bytes, and stdout of one process."""
    done = run_child(command, env, cwd)
    if done.code != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.code}): {done.stderr[-800:]}")
    return done.wall_s, done.cpu_s, done.peak_rss_bytes, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--numbers", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", default="warmup")
    parser.add_argument("--old", metavar="REV", help="also time the package at this revision")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the data")
    args = parser.parse_args()
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    ok = True
    with tempfile.TemporaryDirectory(prefix="pilot-analyze-", dir=args.dir) as scratch:
        trees = {"analyze": ROOT}
        if args.old:
            trees[f"analyze@{args.old}"] = extract(args.old, Path(scratch))
        for label, tree in trees.items():  # which package each command really runs
            where = subprocess.run(
                [sys.executable, "-c", "import pilot_sys; print(pilot_sys.__file__)"],
                env={**os.environ, "PYTHONPATH": str(tree)},
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            print(f"{label}: {where}")
        for kind in args.kinds.split(","):
            path = Path(scratch) / f"{kind}.txt"
            write_data(path, kind, args.numbers)
            commands = {"anchor (pandas read + np.sort)": [sys.executable, "-c", ANCHOR, str(path)]}
            envs = {"anchor (pandas read + np.sort)": dict(os.environ)}
            dirs = {"anchor (pandas read + np.sort)": Path(scratch)}
            for label, tree in trees.items():
                commands[label] = [sys.executable, "-m", "pilot_sys", "analyze", str(path)]
                # `-m` puts the working directory first on the path: run in the tree itself
                envs[label] = {**os.environ, "PYTHONPATH": str(tree)}
                dirs[label] = tree
            print(
                f"\n{kind}: {args.numbers:,} numbers, {path.stat().st_size / 1e6:.0f} MB of text; "
                f"best and median of {args.repeat} after one warm-up run each, interleaved "
                f"(load average {os.getloadavg()[0]:.1f})"
            )
            runs: dict[str, list[tuple[float, float, int]]] = {label: [] for label in commands}
            outputs: dict[str, str] = {}
            for attempt in range(args.repeat + 1):
                for label, command in commands.items():
                    wall, cpu, peak, out = run(command, envs[label], dirs[label])
                    if attempt:
                        runs[label].append((wall, cpu, peak))
                    outputs[label] = out
            anchor = min(r[0] for r in runs["anchor (pandas read + np.sort)"])
            anchor_cpu = min(r[1] for r in runs["anchor (pandas read + np.sort)"])
            print(
                f"{'command':34} {'wall s':>7} {'median':>7} {'x anchor':>8} {'CPU s':>6} "
                f"{'x anchor':>8} {'peak MB':>8}"
            )
            for label, results in runs.items():
                best = min(r[0] for r in results)
                cpu = min(r[1] for r in results)
                print(
                    f"{label:34} {best:7.2f} {statistics.median(r[0] for r in results):7.2f} "
                    f"{best / anchor:8.2f} {cpu:6.2f} {cpu / anchor_cpu:8.2f} "
                    f"{max(r[2] for r in results) / 1e6:8.0f}"
                )
            best = min(r[0] for r in runs["analyze"])
            verdict = "met" if best <= TARGET_SECONDS else "MISSED"
            ok &= best <= TARGET_SECONDS
            print(f"  target analyze <= {TARGET_SECONDS:g} s end to end: {best:.2f} s {verdict}")
            if args.old and outputs[f"analyze@{args.old}"] != outputs["analyze"]:
                print(f"  output differs from {args.old}:")
                print(outputs[f"analyze@{args.old}"])
            print(outputs["analyze"].rstrip())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
