"""The GPU verdicts on a live NVIDIA host: the five recorded workloads run again under
``pilot-sys monitor`` (and one under ``pilot-sys run``), each judged against its ground truth.

``gpu_replay_verdicts.py`` replays the H200 recordings through the verdict; this script is the
same check on a machine with a GPU, end to end: discovery through NVML (``graph --json``), the
dynamic plug-in as a source while the workload runs, the start-up judged apart, the waiting core
not blamed. The workloads are ``work2.py`` of the recordings (PyTorch; ``cpu_only`` needs numpy
only)::

    python3 benchmarks/gpu_live_verdicts.py --work PATH/work2.py --out DIR [--seconds 7]
        [--cases matmul,membw] [--run-cases matmul,starved --run-cut-gpu]
        [--run-rounds 3] [--sample-cost 50]

It prints one table row per case (what governed, its share of the judged run, the start-up
judged apart, the workload's own figure, the ground truth, agree yes/no) and writes
``DIR/summary.json`` beside each case's ``monitor_<case>.json``. Exit status: 0 when every case
agrees with its ground truth, 1 when one does not, 2 when no NVIDIA GPU is visible (nothing to
check). Results: ``benchmarks/results/gpu-live-verdicts.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import checkout_first  # noqa: F401  (the checkout before an installed copy)

# Which part of the host limited each workload, as the recordings' README states it: a
# component kind and the verdict's direction for it.
TRUTH: dict[str, tuple[str, str, str]] = {
    "h2d_pinned": ("accelerator:", "receive", "the GPU's PCIe link, host to device"),
    "matmul": ("accelerator:", "tensor", "the GPU's tensor cores"),
    "membw": ("accelerator:", "memory_bandwidth", "the GPU's memory bandwidth"),
    "starved": ("cpu:", "single core", "one CPU core (the GPU waits)"),
    "cpu_only": ("cpu:", "single core", "one CPU core (no GPU)"),
}
# A case's bound: start-up (imports, context) plus its seconds plus closing, with room.
STARTUP_ALLOWANCE_S = 60.0


def _pilot(*args: str) -> list[str]:
    return [sys.executable, "-m", "pilot_sys", *args]


def _discovery(out: Path) -> dict:
    """What ``graph --json`` says of each GPU: its limits, with their sources."""
    proc = subprocess.run(
        _pilot("graph", "--json"), capture_output=True, text=True, timeout=120, check=False
    )
    (out / "graph.json").write_text(proc.stdout)
    if proc.returncode != 0:
        return {"rc": proc.returncode, "stderr": proc.stderr[-2000:], "accelerators": []}
    graph = json.loads(proc.stdout)
    accelerators = [
        {
            "id": n["id"],
            "name": n.get("name"),
            "limits": {
                k: (v.get("value"), v.get("unit"), v.get("source"))
                for k, v in (n.get("limits") or {}).items()
            },
            "attrs": {
                k: n.get("attrs", {}).get(k)
                for k in ("model", "gpm_supported", "numa_node", "local_cpulist")
            },
        }
        for n in graph["nodes"]
        if str(n.get("id", "")).startswith("accelerator:")
    ]
    return {"rc": 0, "accelerators": accelerators, "notes": graph.get("notes", [])}


def _sample_cost(samples: int) -> dict:
    """CPU and wall time of one ``GpuSource.sample()`` against the real NVML on an idle GPU: the
    figure that ``gpu_plugin_cost.py`` can only estimate through its replaying stand-in."""
    import importlib

    from pilot_sys.monitor.probe import ProbeContext

    gpu = importlib.import_module("pilot_sys.plugins.dynamic.gpu")
    context = ProbeContext()
    source = gpu.open_probe(context)
    if source is None:
        return {"error": "no GPU source opened", "notes": context.notes}
    wall, cpu = [], []
    try:
        for _ in range(samples):
            w0, c0 = time.perf_counter(), time.thread_time()
            source.sample()
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
            time.sleep(0.2)  # the source's own period (GPM needs > 100 ms between samples)
        attrs = source.attrs()
    finally:
        source.close()
    ordered_wall, ordered_cpu = sorted(wall), sorted(cpu)
    return {
        "samples": samples,
        "wall_ms_median": 1e3 * ordered_wall[samples // 2],
        "wall_ms_max": 1e3 * ordered_wall[-1],
        "cpu_ms_median": 1e3 * ordered_cpu[samples // 2],
        "cpu_ms_max": 1e3 * ordered_cpu[-1],
        "attrs": attrs,
    }


def _notes(trace: dict) -> list[str]:
    verdict = trace.get("verdict") or {}
    return [str(n) for n in (trace.get("notes") or []) + (verdict.get("notes") or [])]


def _judge(case: str, trace: dict) -> dict:
    """The verdict's governing component and direction, against the ground truth."""
    prefix, direction, truth = TRUTH[case]
    hidden = (trace.get("verdict") or {}).get("hidden_bottlenecks") or []
    governing = [
        {
            "component": h["component"],
            "direction": h["direction"],
            "share": h.get("time_above_fraction"),
            "evidence": h.get("evidence", ""),
        }
        for h in hidden
    ]
    agree = any(
        g["component"].startswith(prefix) and g["direction"] == direction for g in governing
    )
    # A GPU case must not also blame the core that only waits on the GPU.
    if prefix == "accelerator:" and any(g["direction"] == "single core" for g in governing):
        agree = False
    notes = _notes(trace)
    startup = next((n for n in notes if "judged apart" in n), "")
    capped = next((n for n in notes if "power cap" in n or "thermal" in n), "")
    return {
        "governing": governing,
        "truth": truth,
        "agree": agree,
        "startup_note": startup,
        "cap_note": capped,
    }


def _monitor_case(case: str, work: Path, seconds: float, out: Path) -> dict:
    trace_path = out / f"monitor_{case}.json"
    cmd = _pilot("monitor", "--json", str(trace_path), "--", sys.executable, str(work), case)
    cmd.append(f"{seconds:g}")
    started = time.monotonic()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=seconds + STARTUP_ALLOWANCE_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"case": case, "rc": None, "error": "timed out", "agree": False}
    wall = time.monotonic() - started
    (out / f"monitor_{case}.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    figure = next(
        (line.strip() for line in proc.stdout.splitlines() if line.startswith(case + " ")), ""
    )
    if not trace_path.is_file():
        return {
            "case": case,
            "rc": proc.returncode,
            "wall_s": wall,
            "error": proc.stderr.strip()[-400:],
            "agree": False,
        }
    trace = json.loads(trace_path.read_text())
    judged = _judge(case, trace)
    return {"case": case, "rc": proc.returncode, "wall_s": wall, "figure": figure, **judged}


def _run_case(
    case: str, work: Path, seconds: float, rounds: int, out: Path, cut: str | None = None
) -> dict:
    """``pilot-sys run`` in rounds (a new process each): the session's verdict over the rounds
    taken together, and whether each round's start-up was judged apart."""
    name = f"run_{case}" + ("_cut" if cut else "")
    result_dir = out / name
    shutil.rmtree(result_dir, ignore_errors=True)
    options = ["-q", "--no-plots", "--max-rounds", str(rounds), "-o", str(result_dir)]
    if cut:
        options += ["--cut", cut]
    cmd = _pilot("run", *options, "--", sys.executable, str(work), case, f"{seconds:g}")
    bound = rounds * (seconds + STARTUP_ALLOWANCE_S)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=bound, check=False)
    except subprocess.TimeoutExpired:
        return {"run": name, "rc": None, "error": "timed out"}
    (out / f"{name}.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    result = result_dir / "result.json"
    if not result.is_file():
        return {"run": name, "rc": proc.returncode, "error": proc.stderr.strip()[-400:]}
    data = json.loads(result.read_text())
    section = data.get("bottleneck") or {}
    notes = (section.get("detail") or {}).get("notes") or []
    return {
        "run": name,
        "cut": cut,
        "rc": proc.returncode,
        "status": data.get("status"),
        "hidden_bottlenecks": section.get("hidden_bottlenecks"),
        "cut_saturated": section.get("cut_saturated"),
        "startup_note": next((n for n in notes if "judged apart" in n), ""),
        "stdout_tail": proc.stdout.strip()[-800:],
    }


def _row(r: dict) -> str:
    if "governing" not in r:
        return f"| {r['case']} | error: {r.get('error')} | | | | no |"
    governing = ", ".join(
        f"{g['component']} ({g['direction']}) {g['share']:.0%}" for g in r["governing"]
    )
    startup = r["startup_note"].split("the first ")[-1].split(",")[0] if r["startup_note"] else ""
    capped = " + power-cap note" if r["cap_note"] else ""
    return (
        f"| {r['case']} | {governing or 'nothing'}{capped} | {startup} | {r['figure']} | "
        f"{r['truth']} | {'yes' if r['agree'] else 'NO'} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="work2.py of the recordings")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=7.0)
    parser.add_argument("--cases", default=",".join(TRUTH))
    parser.add_argument("--run-cases", default="", help="cases also run under `pilot-sys run`")
    parser.add_argument(
        "--run-cut-gpu", action="store_true", help="the first run case again, --cut the GPU"
    )
    parser.add_argument("--run-rounds", type=int, default=3)
    parser.add_argument("--run-seconds", type=float, default=3.0)
    parser.add_argument("--sample-cost", type=int, default=0, help="time N real NVML samples")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in TRUTH]
    if unknown:
        print(f"gpu_live_verdicts: error: --cases: unknown {unknown}", file=sys.stderr)
        return 2
    discovery = _discovery(args.out)
    print(f"discovery: {json.dumps(discovery['accelerators'], default=str)}", flush=True)
    summary: dict = {"discovery": discovery, "cases": [], "python": sys.version.split()[0]}
    if not discovery["accelerators"] and any(TRUTH[c][0] == "accelerator:" for c in cases):
        print("gpu_live_verdicts: no accelerator discovered; nothing to check", file=sys.stderr)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
        return 2
    if args.sample_cost:
        summary["sample_cost"] = _sample_cost(args.sample_cost)
        print(f"sample cost: {json.dumps(summary['sample_cost'], default=str)}", flush=True)
    print(
        "| case | verdict: governing (direction), share of the judged run | start-up judged "
        "apart | workload's figure | ground truth | agree |"
    )
    print("|---|---|---|---|---|---|", flush=True)
    for case in cases:
        r = _monitor_case(case, args.work, args.seconds, args.out)
        summary["cases"].append(r)
        print(_row(r), flush=True)
    runs = [(c, None) for c in args.run_cases.split(",") if c]
    if args.run_cut_gpu and runs and discovery["accelerators"]:
        runs.append((runs[0][0], discovery["accelerators"][0]["id"]))
    summary["runs"] = []
    for case, cut in runs:
        r = _run_case(case, args.work, args.run_seconds, args.run_rounds, args.out, cut)
        summary["runs"].append(r)
        brief = {k: v for k, v in r.items() if k != "stdout_tail"}
        print(f"run: {json.dumps(brief)}")
        print(r.get("stdout_tail", ""), flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0 if all(r.get("agree") for r in summary["cases"]) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
