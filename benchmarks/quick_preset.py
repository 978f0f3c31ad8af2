"""How often `pilot-sys run --preset quick` reaches its target under a moderate background load.

Runs the quick preset N times, quiet, each into its own result directory, while a background
load runs (``--load``):

- ``none``: nothing added (other work on the machine still counts: the load average is printed
  beside every run);
- ``cpu``: ``stress-ng --cpu 1`` (one busy worker: one of two cores on this machine);
- ``disk``: ``dd`` writing 256 MiB with O_DIRECT to the same directory, over and over.

For each run it prints the status, the verdict's reason code, whether the CI target was met
(whatever the bottleneck verdict says), the rounds (run, analysed, excluded), the session time,
the 1-minute load average when the run started, and the headline; then the share of valid /
limit reached / invalid / other, with the reasons, and the share that met the CI target.

    python3 benchmarks/quick_preset.py --runs 10 --load cpu --dir /tmp/qp
    python3 benchmarks/quick_preset.py --runs 10 --load disk -- -- fio ...   (your own workload)

Everything after ``--`` is passed to `pilot-sys run` (e.g. a COMMAND); without it, the built-in
workload runs on ``--dir``. Set ``PYTHONPATH`` to the checkout to measure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any


def start_load(kind: str, directory: Path) -> subprocess.Popen[bytes] | None:
    """The background load, in its own process group (stopped by ``stop_load``)."""
    if kind == "none":
        return None
    if kind == "cpu":
        if shutil.which("stress-ng") is None:
            sys.exit("quick_preset: --load cpu needs stress-ng")
        argv = ["stress-ng", "--cpu", "1", "--quiet"]
    elif kind == "disk":
        target = directory / "background.dat"
        argv = [
            "sh",
            "-c",
            f"while :; do dd if=/dev/zero of={target} bs=1M count=256 oflag=direct "
            "status=none; done",
        ]
    else:
        sys.exit(f"quick_preset: unknown --load {kind!r}")
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    time.sleep(2.0)  # let it reach its steady state before the first run
    return proc


def stop_load(proc: subprocess.Popen[bytes] | None, directory: Path) -> None:
    if proc is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (directory / "background.dat").unlink(missing_ok=True)


def one_run(out: Path, data: Path, extra: list[str]) -> dict[str, Any]:
    """One quiet quick session; what its result.json says."""
    argv = [
        sys.executable,
        "-m",
        "pilot_sys",
        "run",
        "--preset",
        "quick",
        "-q",
        "--no-plots",
        "-o",
        str(out),
    ]
    argv += extra if extra else ["--dir", str(data)]
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t0
    row: dict[str, Any] = {"exit": proc.returncode, "load": load, "wall": wall}
    try:
        result = json.loads((out / "result.json").read_text())
    except (OSError, json.JSONDecodeError):
        row.update(status="error", reason="no result.json", headline=proc.stderr.strip()[-200:])
        return row
    verdict = result.get("verdict") or {}
    w = result["workloads"][0]["rounds"] if result.get("workloads") else {}
    row.update(
        status=result["status"],
        reason=verdict.get("reason", "?"),
        headline=verdict.get("headline", ""),
        target_met=result.get("stop_reason", "").startswith("every CI target met"),
        why=verdict.get("why"),
        rounds=w.get("total"),
        analysed=w.get("analysed"),
        excluded=w.get("excluded", 0),
        session=result.get("elapsed_seconds"),
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--load", choices=["none", "cpu", "disk"], default="none")
    parser.add_argument("--dir", type=Path, default=None, help="where the built-in workload writes")
    parser.add_argument("--keep", action="store_true", help="keep the result directories")
    parser.add_argument("extra", nargs="*", help="after --: passed to `pilot-sys run`")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="quick-preset-", dir=args.dir))
    data = base / "data"
    data.mkdir()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; load {args.load}; {args.runs} runs; "
        f"pilot-sys run --preset quick {' '.join(args.extra) or f'--dir {data}'}"
    )
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    proc = start_load(args.load, data)
    rows: list[dict[str, Any]] = []
    try:
        for i in range(args.runs):
            row = one_run(base / f"run-{i + 1:02d}", data, args.extra)
            rows.append(row)
            met = "met" if row.get("target_met") else "missed"
            print(
                f"{i + 1:2d} load {row['load']:4.1f}  {row['status']:<13} {row['reason']:<17} "
                f"target {met:<6} "
                f"rounds {row.get('rounds')}/{row.get('analysed')}/{row.get('excluded')} "
                f"session {row.get('session') or 0:5.1f} s  | {row['headline']}",
                flush=True,
            )
            if row.get("why"):
                print(f"{'':>4}why: {row['why']}", flush=True)
    finally:
        stop_load(proc, data)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    n = len(rows)
    statuses = Counter(r["status"] for r in rows)
    reasons = Counter(f"{r['status']}/{r['reason']}" for r in rows)
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("# rounds shown as run/analysed/excluded")
    for status in ("valid", "limit_reached", "invalid"):
        print(f"{status}: {statuses.get(status, 0)}/{n}")
    other = n - sum(statuses.get(s, 0) for s in ("valid", "limit_reached", "invalid"))
    print(f"other: {other}/{n}")
    met = sum(bool(r.get("target_met")) for r in rows)
    print(f"CI target met (whatever the bottleneck verdict): {met}/{n}")
    print("reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))


if __name__ == "__main__":
    main()
