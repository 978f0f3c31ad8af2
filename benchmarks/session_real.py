"""Real sessions on this machine with fio and dd: does pilot-sys agree with the tools' own numbers?

1. ``pilot-sys run`` with fio (sequential 1 MiB direct writes, size = %WORK_AMOUNT% MiB). The
   session's ``write_bw`` comes from fio's windowed bandwidth log (unit readings, warm-up removed
   by EDM); fio's own per-round bandwidth (its JSON summary) is the reference: averaged over the
   analysed rounds it must lie inside the session's CI (report.md shows this cross-check).
   Then, as an independent reference measured after the session, five standalone fio runs of
   4 GiB (the largest work amount) overwriting the same file: their harmonic-mean bandwidth,
   inside or outside the session's CI.
2. ``pilot-sys run`` with dd (``oflag=direct conv=fsync``): readings only, so the stable rate is
   the WPS regression's v; dd's own reported rate of the largest rounds (where the fixed cost
   alpha matters least) is compared with v's CI.

    python benchmarks/session_real.py [--dir DIR] [--limit SECONDS]

DIR must be on the disk to measure (default: the current directory); the files are removed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def pilot(args: list[str]) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "pilot_sys", "run", "--json", "--quiet", *args],
        capture_output=True,
        text=True,
    )
    if r.returncode not in (0, 3, 4):
        raise SystemExit(f"pilot-sys run failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def mib(x: float | None) -> str:
    return "?" if x is None else f"{x / 2**20:.1f} MiB/s"


def fio_reference(path: Path, size_mib: int, runs: int = 5) -> float:
    """fio's own bandwidth over ``runs`` standalone runs that overwrite an existing file, as the
    session's rounds after the first do (writing a new file allocates blocks: a slower case)."""
    rates = []
    for i in range(runs + 1):
        r = subprocess.run(
            [
                "fio",
                "--name=ref",
                "--rw=write",
                "--bs=1M",
                f"--size={size_mib}M",
                f"--filename={path}",
                "--direct=1",
                "--ioengine=psync",
                "--end_fsync=1",
                "--output-format=json",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        if i:  # the first run only creates the file
            rates.append(
                json.loads(r.stdout[r.stdout.index("{") :])["jobs"][0]["write"]["bw_bytes"]
            )
    path.unlink(missing_ok=True)
    return float(len(rates) / np.sum(1.0 / np.asarray(rates)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("."))
    ap.add_argument("--limit", type=float, default=90.0)
    ap.add_argument("--keep", type=Path, help="keep the result directories here")
    ap.add_argument("--only", choices=["fio", "dd"], help="run one of the two sessions")
    args = ap.parse_args()
    for tool in ("fio", "dd"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed")
    work = Path(tempfile.mkdtemp(prefix="pilot-real-", dir=args.dir))
    results = args.keep or work
    try:
        if args.only != "dd":
            run_fio(work, results, args.limit)
        if args.only != "fio":
            run_dd(work, results, args.limit)
        if args.keep:
            print(f"result directories kept in {args.keep}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_fio(work: Path, results: Path, limit: float) -> None:
    data = work / "fio.dat"
    # rounds of 1-4 GiB with 20 ms bandwidth windows: every round gives the 20+ unit readings
    # EDM needs, even on a fast virtual disk (2 GB/s here)
    fio = pilot(
        [
            "-o",
            str(results / "fio"),
            "--preset",
            "normal",
            "-s",
            str(limit),
            "-w",
            "1024,4096",
            "--",
            "fio",
            "--name=seqw",
            "--rw=write",
            "--bs=1M",
            "--size=%WORK_AMOUNT%M",
            f"--filename={data}",
            "--direct=1",
            "--ioengine=psync",
            "--end_fsync=1",
            "--log_avg_msec=20",
        ]
    )
    w = fio["workloads"][0]
    bw = w["pis"]["write_bw"]
    print(
        f"fio session: status {fio['status']} ({fio['stop_reason']}), {w['rounds']['total']} "
        "rounds, "
        f"{w['rounds']['analysed']} analysed, {fio['elapsed_seconds']:.0f} s; bottleneck verdict "
        f"{fio['bottleneck']['valid']} {fio['bottleneck']['hidden_bottlenecks']}"
    )
    print(
        f"  session write_bw ({bw['source']}): {mib(bw['mean'])}, 95% CI [{mib(bw['ci_low'])}, "
        f"{mib(bw['ci_high'])}], "
        f"width {100 * (bw['ci_width_rel'] or 0):.1f}%"
    )
    print(
        "  fio's own per-round bandwidth, harmonic mean over analysed rounds: "
        f"{mib(bw['readings_mean'])} -> "
        f"{'INSIDE' if bw['readings_in_ci'] else 'OUTSIDE'} the CI"
    )
    ref = fio_reference(data, 4096)
    inside = bw["ci_low"] is not None and bw["ci_low"] <= ref <= bw["ci_high"]
    print(
        f"  5 standalone fio runs of 4 GiB (overwriting) after the session: {mib(ref)} -> "
        f"{'INSIDE' if inside else 'OUTSIDE'} the CI"
    )


def run_dd(work: Path, results: Path, limit: float) -> None:
    dd = pilot(
        [
            "-o",
            str(results / "dd"),
            "--preset",
            "normal",
            "-s",
            str(limit),
            "-w",
            "64,2048",
            "--",
            "dd",
            "if=/dev/zero",
            f"of={work / 'dd.dat'}",
            "bs=1M",
            "count=%WORK_AMOUNT%",
            "oflag=direct",
            "conv=fsync",
        ]
    )
    w = dd["workloads"][0]
    wps = w["wps"] or {}
    print(
        f"dd session: status {dd['status']} ({dd['stop_reason']}), {w['rounds']['total']} rounds, "
        f"{w['rounds']['analysed']} analysed, {dd['elapsed_seconds']:.0f} s"
    )
    print(
        f"  WPS v: {mib(wps.get('v'))}, CI [{mib(wps.get('v_ci_low'))}, "
        f"{mib(wps.get('v_ci_high'))}], "
        f"alpha {1e3 * (wps.get('alpha') or 0):.1f} ms"
    )
    recs = [json.loads(line) for line in (results / "dd" / "rounds.jsonl").read_text().splitlines()]
    ok = [r for r in recs if not r["failed"] and not r["short"] and "bw" in r["readings"]]
    top = sorted(ok, key=lambda r: r["work_amount"])[-max(1, len(ok) // 4) :]
    own = float(len(top) / sum(1.0 / r["readings"]["bw"] for r in top)) if top else None
    inside = (
        own is not None
        and wps.get("v_ci_low") is not None
        and wps["v_ci_low"] <= own <= (wps.get("v_ci_high") or float("inf"))
    )
    print(
        f"  dd's own rate, largest quarter of rounds ({len(top)}): {mib(own)} -> "
        f"{'INSIDE' if inside else 'OUTSIDE'} v's CI"
    )
    print(
        f"  session bw (dd's per-round figures incl. setup): {mib(w['pis']['bw']['mean'])}, "
        f"CI [{mib(w['pis']['bw']['ci_low'])}, {mib(w['pis']['bw']['ci_high'])}]"
    )


if __name__ == "__main__":
    main()
