"""Memory of a round whose workload prints a lot: the runner's peak RSS against the output's size.

Each measurement runs one ``CommandWorkload.run_round`` in a fresh process and reports that
process's peak resident memory (``ru_maxrss``; the workload itself is a separate process and is
not counted) above the RSS it had before the round. Cases:

- ``none``: ``yes | head -c SIZE`` with ``--parser none`` (the round's only reading is its rate);
- ``failed``: the same output, then ``exit 3`` (the failure message quotes the last line);
- ``lines``: SIZE bytes of numbers, one a line, with ``--parser lines`` (every number is a unit
  reading, so the numbers themselves must be held: 8 bytes each).

``--old REV`` runs the same cases with the workload package of a git revision, for the
before/after.

    python3 benchmarks/runner_output.py --mb 300 --old e64a5cb
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys
from pathlib import Path
from pilot_sys.errors import WorkloadFailed
from pilot_sys.workload.runner import CommandWorkload

case, size, folder = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])

def rss_kib():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0])

chatty = f"yes 0123456789abcdef | head -c {size}"
numbers = f"seq 1 1000000000 | head -c {size} | head -n -1"
argv, parser = {
    "none": (["sh", "-c", chatty], "none"),
    "failed": (["sh", "-c", f"{chatty}; echo; echo last words; exit 3"], "none"),
    "lines": (["sh", "-c", numbers], "lines"),
}[case]
workload = CommandWorkload(argv, parser=parser)
before = rss_kib()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the high-water mark starts from here
try:
    out = workload.run_round(1, folder)
    units = sum(v.size for v in out.unit_readings.values())
    result = f"{len(out.readings)} reading(s), {units} units"
except WorkloadFailed as exc:
    result = f"failed: {str(exc)[:60]}"
fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
peak = int(fields["VmHWM"].split()[0])
output_mb = (folder / "stdout.txt").stat().st_size / 1e6
print(json.dumps({"peak_mib": (peak - before) / 1024, "output_mb": output_mb, "result": result}))
"""


def measure(tree: Path, case: str, size: int, scratch: Path) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(dir=scratch))
    # cwd: with -c, the current directory comes first on sys.path and would shadow ``tree``
    out = subprocess.run(
        [sys.executable, "-c", CHILD, case, str(size), str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=scratch,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{case} failed: {out.stderr[-800:]}")
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=300, help="output size in MB (10^6 bytes)")
    parser.add_argument("--cases", default="none,failed,lines")
    parser.add_argument("--old", metavar="REV", help="also measure the workload package of REV")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the rounds write their output"
    )
    args = parser.parse_args()
    size = args.mb * 1_000_000
    with tempfile.TemporaryDirectory(prefix="pilot-runner-", dir=args.dir) as scratch:
        trees = {"this tree": ROOT}
        if args.old:
            old = Path(scratch) / "old"
            old.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.old, "pilot_sys", "plugins"],
                check=True,
                capture_output=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            trees[args.old] = old
        print(f"{'case':8} {'tree':10} {'output MB':>9} {'peak MiB':>9}  result")
        for case in args.cases.split(","):
            for label, tree in trees.items():
                got = measure(tree, case, size, Path(scratch))
                print(
                    f"{case:8} {label:10} {got['output_mb']:9.0f} {got['peak_mib']:9.0f}  "
                    f"{got['result']}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
