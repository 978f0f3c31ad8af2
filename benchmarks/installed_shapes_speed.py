"""``changepoints`` and ``analyze`` end to end on 1e6-reading shapes, installed copies compared.

``series_shapes_speed.py`` runs the checkout with ``python3 -m pilot_sys``; without byte-code
caches (``PYTHONDONTWRITEBYTECODE``) and through a version manager's shim that adds compiling
and start-up time a user never pays. This script times what a user runs: the console module of
two or more installed copies (virtual environments made with ``pip install``, one per commit),
alternating them run by run so that a change in the machine's load falls on both, on the shapes
of ``series_shapes_speed`` written with ``%.6g`` (what a file read back holds). Each figure is the
CPU (user + system) and wall seconds of a fresh process, median and range; the runs under the
issue's 2 s are counted, and the outputs of all copies are checked to be the same bytes::

    python3 benchmarks/installed_shapes_speed.py --venv /tmp/old --venv /tmp/new \\
        [--shapes sine,walk,ramp,decay] [--size 1000000] [--repeat 5]

The first ``--venv`` is the anchor: each other copy's medians are also given as a ratio to it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from series_shapes_speed import SHAPES, TARGET_SECONDS, shape  # noqa: E402

COMMANDS = ("changepoints", "analyze")


def _one(venv: Path, command: str, path: Path) -> tuple[float, float, int, bytes]:
    """CPU and wall seconds, exit status and output of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pilot_sys", command, str(path)],
        capture_output=True,
        cwd=tempfile.gettempdir(),  # never a checkout: the installed copy is what is timed
        timeout=600,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, wall, done.returncode, done.stdout


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, action="append", required=True)
    parser.add_argument("--shapes", default="sine,walk,ramp,decay")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    venvs: list[Path] = args.venv
    names = args.shapes.split(",")
    if unknown := [name for name in names if name not in SHAPES]:
        parser.error(f"--shapes: no shape {', '.join(unknown)}; the shapes are {', '.join(SHAPES)}")
    runs: dict[tuple[str, str, Path], list[tuple[float, float, int, bytes]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for name in names:
            files[name] = Path(folder) / f"{name}.txt"
            np.savetxt(files[name], shape(name, args.size), fmt="%.6g")
        for r in range(args.repeat):
            for name in names:
                for command in COMMANDS:
                    for venv in venvs if r % 2 == 0 else venvs[::-1]:
                        runs.setdefault((name, command, venv), []).append(
                            _one(venv, command, files[name])
                        )
    print(f"{args.size} readings, {args.repeat} runs each, alternating; CPU and wall seconds")
    print("shape  command       copy                       CPU s              wall s   <2 s  x1st")
    same = True
    for name in names:
        for command in COMMANDS:
            anchor = statistics.median(x[1] for x in runs[(name, command, venvs[0])])
            outputs = set()
            for venv in venvs:
                got = runs[(name, command, venv)]
                walls = [x[1] for x in got]
                outputs |= {x[3] for x in got}
                under = sum(w < TARGET_SECONDS for w in walls)
                codes = sorted({x[2] for x in got})
                print(
                    f"{name:6s} {command:13s} {str(venv):24s} {_spread([x[0] for x in got]):>17s} "
                    f"{_spread(walls):>17s} {under}/{len(walls)} "
                    f"{statistics.median(walls) / anchor:5.2f}  exit {codes}"
                )
            same = same and len(outputs) == 1
    print("outputs identical across copies and runs:", same)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
