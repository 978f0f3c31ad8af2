"""What following the workload's cgroups and ranking the other processes cost (issue 21, items
5 and 6), beside the cheapest read there is, measured in the same run.

* anchor: one raw read of ``/proc/self/stat`` (``os.open`` + ``os.read`` + ``os.close``), the
  per-file floor of any /proc scan;
* ``HostProcesses.scan()`` (``monitor.culprits``): CPU seconds per scan of every process on
  this host, per process, and as a multiple of two anchor reads (a scan reads ``stat`` and,
  for a process that ran, ``io``); at the default rate (one scan per second) the share of a
  core;
* ``FollowedCgroups.sample()`` (``monitor.cgroup_follow``): CPU seconds per call over a tree of
  ``--tree`` sleeping processes (their ``children``, ``cgroup`` and ``stat`` files), as a
  multiple of the anchor; at 10 Hz (the default sampling rate) the share of a core.

Each is timed on this thread's CPU clock, in ``--rounds`` interleaved rounds (anchor, scan,
follow), so a busy shared machine slows all three alike; the median and the range over the
rounds are printed.

    python3 benchmarks/culprits_cost.py [--rounds 7] [--tree 8]

Results: ``benchmarks/results/culprits-cost.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pilot_sys.monitor.cgroup_follow import FollowedCgroups  # noqa: E402
from pilot_sys.monitor.culprits import HostProcesses  # noqa: E402
from pilot_sys.monitor.probe import ProbeContext  # noqa: E402


def cpu_per_call(call: object, calls: int) -> float:
    begin = time.thread_time()
    for _ in range(calls):
        call()  # type: ignore[operator]
    return (time.thread_time() - begin) / calls


def anchor_read() -> None:
    fd = os.open("/proc/self/stat", os.O_RDONLY)
    try:
        os.read(fd, 4096)
    finally:
        os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tree", type=int, default=8, help="processes in the followed tree")
    args = parser.parse_args()

    # the followed tree: a shell with --tree - 1 sleeping children
    shell = " ".join(["sleep 600 &"] * (args.tree - 1)) + " wait"
    tree = subprocess.Popen(
        ["sh", "-c", shell] if args.tree > 1 else ["sleep", "600"], stdout=subprocess.DEVNULL
    )
    try:
        time.sleep(0.5)
        context = ProbeContext(root=Path("/"), graph=None)
        follow = FollowedCgroups(context, lambda: [tree.pid])
        follow.sample()
        scanner = HostProcesses(Path("/"))
        scanner.scan()
        rows = []
        for _ in range(args.rounds):
            anchor = cpu_per_call(anchor_read, 2000)
            scan = cpu_per_call(scanner.scan, 5)
            calls = cpu_per_call(follow.sample, 200)
            rows.append((anchor, scan, len(scanner.tracked), calls, len(follow.latest)))
            time.sleep(0.2)
    finally:
        children = Path(f"/proc/{tree.pid}/task/{tree.pid}/children").read_text().split()
        for child in children:  # its sleeps, by pid
            os.kill(int(child), 9)
        tree.kill()
        tree.wait()

    def show(values: list[float], scale: float = 1e6, unit: str = "us") -> str:
        return (
            f"median {statistics.median(values) * scale:.1f} {unit} "
            f"(range {min(values) * scale:.1f}-{max(values) * scale:.1f})"
        )

    anchors = [r[0] for r in rows]
    scans = [r[1] for r in rows]
    per_process = [r[1] / r[2] for r in rows]
    follows = [r[3] for r in rows]
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds, interleaved")
    print(f"anchor (one raw read of /proc/self/stat): {show(anchors)}")
    print(f"host scan: {show(scans, 1e3, 'ms')} over {rows[-1][2]} processes")
    print(
        f"  per process: {show(per_process)}; "
        f"{statistics.median([p / a for p, a in zip(per_process, anchors, strict=True)]):.2f}x "
        "the anchor (a process costs a stat read, and an io read when it ran)"
    )
    print(f"  at 1 scan/s: {statistics.median(scans) * 100:.2f} % of a core")
    print(
        f"cgroup follow call, tree of {rows[-1][4]} processes: {show(follows)}; "
        f"{statistics.median([f / a for f, a in zip(follows, anchors, strict=True)]):.1f}x the "
        "anchor"
    )
    print(f"  at 10 calls/s: {statistics.median(follows) * 10 * 100:.3f} % of a core")


if __name__ == "__main__":
    main()
