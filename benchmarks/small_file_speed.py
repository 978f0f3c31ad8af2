"""Small inputs: what ``pilot-sys`` costs when the data are few (issue 22, item 8).

A 10-number file is analysed in well under a second only if the command imports what it uses
and no more: the statistics on a few numbers take microseconds, the rest is the interpreter,
numpy, click, pydantic and the project's own modules. This script times fresh processes of

* the floors: ``python3 -c pass``, ``import numpy``, ``import numpy, click``, that with
  pydantic's ``BaseModel`` imported and with one pydantic model built (what every command's
  output model needs), and
* ``pilot-sys --help``, ``analyze``, ``steady`` and ``changepoints`` on 10 numbers and on a few
  hundred (which do get an interval, so scipy's Student-t quantile is loaded there),

as CPU seconds (user + system of the child: on a shared machine the wall time also measures the
other jobs), the median of ``--repeat`` runs with the range, and as a multiple of
``import numpy`` measured in the same run, interleaved, so runs on a busy machine compare.
``--old REV`` also times the package at git revision REV (extracted to a temporary directory),
interleaved, and checks that both print the same output.

Every process finds the bytecode of what it imports already compiled (a cache folder written by
the uncounted first round), as an installed package does; ``--compile`` times the checkout
compiled from source on every start instead (``PYTHONDONTWRITEBYTECODE=1`` without a cache:
the project's own modules then cost about 0.1 s more).

``--python PATH`` times the tool as a user runs it: the ``pilot-sys`` console script installed
beside the interpreter PATH (a virtual environment's ``bin/python``, the package installed with
``pip install``, not editable, bytecode compiled by pip), and the floors with that interpreter.
Repeat it to interleave several environments (e.g. one with main installed, one with a
branch): the first is the one under test, the others are labelled ``@<environment folder>``
and their output is checked against the first's. The checkout itself is then not timed.

    python3 benchmarks/small_file_speed.py [--repeat 7] [--old REV] [--only analyze-10,...]
        [--compile]
    python3 benchmarks/small_file_speed.py --python /tmp/v_new/bin/python \
        --python /tmp/v_old/bin/python [--repeat 9] [--only analyze-10] [--instructions]

``--instructions`` also runs every command once under valgrind's callgrind and prints the
instructions it executed: a figure the other jobs of a shared machine do not move (a process
that waits for memory or the disk takes longer for the same count: it ranks, it does not time).

Target: a 10-number file analysed in under 0.3 s (an absolute figure: it holds on an idle core
only, so the ratio to ``import numpy`` is what carries over). Exit status 1 when the median
CPU time of ``analyze`` on 10 numbers misses it (CPU, not wall: on a shared machine the wall
time also measures the other jobs; both are printed). Results: ``benchmarks/results/``
``smallfile.md`` (checkout) and ``smallfile2-installed.md`` (installed, ``--python``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child_usage import run_child
from git_tree import extract

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 0.3
ANCHOR = "import numpy"

FLOORS = {
    "python3 -c pass": "pass",
    ANCHOR: "import numpy",
    "import numpy, click": "import numpy, click",
    # pydantic's BaseModel imported, no model built: the first model's validator also loads
    # pydantic's plugin loader, which imports importlib.metadata
    "numpy, click, pydantic.BaseModel": "import numpy, click\nfrom pydantic import BaseModel",
    "numpy, click, 1 pydantic model": (
        "import numpy, click\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    x: int\n"
    ),
}


def write_inputs(folder: Path) -> dict[str, Path]:
    """Ten numbers, and 400 whose interval exists (independent, seeded)."""
    import random

    rng = random.Random(22)
    ten = folder / "ten.txt"
    ten.write_text("".join(f"{10 + rng.gauss(0, 0.2):.4f}\n" for _ in range(10)))
    some = folder / "four-hundred.txt"
    some.write_text("".join(f"{10 + rng.gauss(0, 0.2):.4f}\n" for _ in range(400)))
    return {"10": ten, "400": some}


def pilot_commands(inputs: dict[str, Path]) -> dict[str, list[str]]:
    commands = {"--help": ["--help"], "analyze --help": ["analyze", "--help"]}
    for size, path in inputs.items():
        commands[f"analyze-{size}"] = ["analyze", str(path)]
        commands[f"changepoints-{size}"] = ["changepoints", str(path)]
        commands[f"steady-{size}"] = ["steady", str(path)]
    return commands


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system), exit status and stdout of one process."""
    done = run_child(command, env, cwd)
    return done.wall_s, done.cpu_s, done.code, done.stdout


def instructions(command: list[str], env: dict[str, str], cwd: Path) -> int | None:
    """Instructions one process executes (valgrind's callgrind ``I refs``): unlike its time, the
    same on a busy machine; None when valgrind is missing or prints no count."""
    if shutil.which("valgrind") is None:
        return None
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    return int(found.group(1).replace(",", "")) if found else None


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--old", metavar="REV", help="also time the package at this revision")
    parser.add_argument(
        "--only", default=None, help="comma-separated command labels to time (and the floors)"
    )
    parser.add_argument(
        "--compile", action="store_true", help="no bytecode cache: compile the sources every start"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each command's instructions once under valgrind (load-independent)",
    )
    parser.add_argument(
        "--python",
        action="append",
        metavar="PATH",
        help="time the pilot-sys script installed beside this interpreter (repeatable)",
    )
    args = parser.parse_args()
    pythons = [Path(p).absolute() for p in args.python or []]
    if pythons and (args.old or args.compile):
        parser.error("--python times installed packages: --old and --compile time the checkout")
    for python in pythons:
        if not (python.parent / "pilot-sys").is_file():
            parser.error(f"--python {python}: no pilot-sys script beside it")
    py = str(pythons[0]) if pythons else sys.executable
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    version = subprocess.run(
        [py, "-c", "import sys; print(sys.version.split()[0])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(
        f"python {version} ({py}), {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}, {now}"
    )
    with tempfile.TemporaryDirectory(prefix="pilot-small-") as scratch:
        folder = Path(scratch)
        inputs = write_inputs(folder)
        trees = {"": ROOT}
        if args.old:
            old = folder / "old"
            old.mkdir()
            trees[f"@{args.old}"] = extract(args.old, old)
        base = dict(os.environ)
        if pythons:  # as installed: the bytecode pip compiled, nothing from the checkout
            for name in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
                base.pop(name, None)
        elif args.compile:
            base["PYTHONDONTWRITEBYTECODE"] = "1"
            base.pop("PYTHONPYCACHEPREFIX", None)
        else:
            base.pop("PYTHONDONTWRITEBYTECODE", None)
            base["PYTHONPYCACHEPREFIX"] = str(folder / "bytecode")
        jobs: dict[str, tuple[list[str], dict[str, str], Path]] = {}
        for label, code in FLOORS.items():
            jobs[label] = ([py, "-c", code], base, folder)
        for name, argv in pilot_commands(inputs).items():
            if pythons:
                for i, python in enumerate(pythons):
                    suffix = f"@{python.parent.parent.name}" if i else ""
                    jobs[name + suffix] = ([str(python.parent / "pilot-sys"), *argv], base, folder)
                continue
            for suffix, tree in trees.items():
                # `-m` puts the working directory first on the path: run in the tree itself
                env = {**base, "PYTHONPATH": str(tree)}
                jobs[name + suffix] = ([py, "-m", "pilot_sys", *argv], env, tree)
        if args.only:
            wanted = set(args.only.split(",")) | set(FLOORS)  # the floors are the reference
            jobs = {k: v for k, v in jobs.items() if k in wanted or k.split("@")[0] in wanted}
        cpu: dict[str, list[float]] = {label: [] for label in jobs}
        wall: dict[str, list[float]] = {label: [] for label in jobs}
        outputs: dict[str, tuple[int, str]] = {}
        for attempt in range(args.repeat + 1):  # the first round warms caches, not counted
            for label, (command, env, cwd) in jobs.items():
                seconds, cpu_seconds, code, out = run(command, env, cwd)
                outputs[label] = (code, out)
                if attempt:
                    wall[label].append(seconds)
                    cpu[label].append(cpu_seconds)
        anchor = statistics.median(cpu[ANCHOR])
        mode = (
            "installed"
            if pythons
            else "compiled at every start"
            if args.compile
            else "bytecode cached"
        )
        print(
            f"\nCPU s (user + system) and wall s of fresh processes, median (min-max) of "
            f"{args.repeat}, interleaved; x = CPU / `{ANCHOR}`; "
            f"{mode} "
            f"(load average now {os.getloadavg()[0]:.1f})"
        )
        print(f"{'command':34} {'CPU s':>21} {'x numpy':>8} {'wall s':>21} {'exit':>4}")
        for label in jobs:
            print(
                f"{label:34} {_spread(cpu[label]):>21} "
                f"{statistics.median(cpu[label]) / anchor:8.2f} {_spread(wall[label]):>21} "
                f"{outputs[label][0]:4d}"
            )
        for label in jobs:
            if "@" in label and outputs[label] != outputs[label.split("@")[0]]:
                print(f"  output of {label} differs from this tree's")
        if args.instructions:
            counts = {label: instructions(*job) for label, job in jobs.items()}
            base_count = counts[ANCHOR]
            print(f"\ninstructions executed (valgrind callgrind, one run each; x = / `{ANCHOR}`)")
            for label, count in counts.items():
                ratio = f"{count / base_count:8.2f}" if count and base_count else f"{'-':>8}"
                print(f"{label:34} {count or 0:>15,} {ratio}")
        if "analyze-10" not in cpu:
            return 0
        med = statistics.median(cpu["analyze-10"])
        med_wall = statistics.median(wall["analyze-10"])
        verdict = "met" if med <= TARGET_SECONDS else "MISSED"
        print(
            f"target: analyze on 10 numbers <= {TARGET_SECONDS:g} s CPU: {med:.3f} s {verdict} "
            f"({med / anchor:.2f}x `{ANCHOR}`, which took {anchor:.3f} s); wall {med_wall:.3f} s "
            f"{'met' if med_wall <= TARGET_SECONDS else 'MISSED'}"
        )
        return 0 if med <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
