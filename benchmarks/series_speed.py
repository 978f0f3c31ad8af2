"""The one model of a series at scale: `changepoints` and `analyze` end to end (issue 22, item 8).

Times ``python3 -m pilot_sys changepoints FILE`` and ``python3 -m pilot_sys analyze FILE`` in
fresh processes on a ramp-then-flat series (a ramp from 0 to 100 over the first 20 %, then flat
at 100, with unit normal noise throughout: the shape on which EDM cuts the ramp into a
staircase), against two anchors measured in the
same run and interleaved with it:

* **read**: a fresh Python that imports numpy and pandas, reads the column with
  ``pandas.read_csv`` and sorts it once (the least any analysis of the file must do);
* **EDM core**: ``pilot_sys.stats.changepoint.detect`` on the same values, in-process, after
  they are loaded (the detection alone, without reading, kinds or the steady part).

Each timing is CPU seconds (user + system: on a shared machine wall time also measures the
other jobs' load), the median of ``--repeat`` runs with its range (min-max), and a
multiple of the anchors, so runs on a busy shared machine compare. Also: seconds per million
readings at each size (cost linear in n when they stay flat), whether ``analyze`` gives an
interval at the largest size, and ``analyze`` on a 10-number file against a bare
``python3 -c "import numpy"``.

``--dump OUT.json`` writes the cuts and kinds of ``changepoints`` (EDM, then the trend step) on
the recorded synthetic cases (``changepoint_real.synthetic`` and the scenarios of
``changepoint_accuracy``); ``--against OLD.json`` compares them with a dump made under another
commit (``git worktree add /tmp/old main; cd /tmp/old; PYTHONPATH=. python3
$REPO/benchmarks/series_speed.py --dump /tmp/old.json``)::

    python3 benchmarks/series_speed.py [--sizes 1000000,10000000] [--repeat 3] [--dir DIR]
    python3 benchmarks/series_speed.py --dump new.json --against old.json

Targets: 1e6 readings under 2 s end to end, 1e7 under 15 s, an interval at 1e7, a 10-number
file under 0.3 s (on an idle core; the ratios are what carries over to a busy machine).
Results: ``benchmarks/results/onereading-series-speed.md``, ``benchmarks/results/speed-series.md``.
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
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import checkout_first  # noqa: E402, F401  (the checkout before an installed copy)

READ_ANCHOR = r"""
import sys
import numpy as np
import pandas as pd
values = pd.read_csv(sys.argv[1], header=None, dtype=np.float64).iloc[:, 0].to_numpy()
np.sort(values)
"""


def ramp_then_flat(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ramp = n // 5
    return np.concatenate([np.linspace(0.0, 100.0, ramp), np.full(n - ramp, 100.0)]) + rng.normal(
        0, 1, n
    )


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# The children keep compiled bytecode (in a folder of the run's own, not the checkout), as an
# installed package does: with PYTHONDONTWRITEBYTECODE set, every run would compile the
# project's modules again (~0.1-0.2 s), a cost no installed copy pays.
_CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed(cmd: list[str]) -> tuple[float, str]:
    """CPU seconds (user + system) of a fresh process, and its output. CPU rather than wall
    time: on a machine shared with other jobs the wall time measures their load as well."""
    began = _cpu_children()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, check=False, env=_CHILD_ENV
    )
    seconds = _cpu_children() - began
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr[-500:]}")
    return seconds, proc.stdout


def _edm_core(values: np.ndarray) -> float:
    from pilot_sys.stats.changepoint import detect

    began = time.process_time()
    detect(values)
    return time.process_time() - began


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def timings(sizes: list[int], repeat: int, folder: Path) -> dict[str, object]:
    py = sys.executable
    report: dict[str, object] = {}
    for n in sizes:
        values = ramp_then_flat(n)
        path = folder / f"ramp-{n}.txt"
        np.savetxt(path, values, fmt="%.5f")
        runs: dict[str, list[float]] = {"read": [], "edm": [], "changepoints": [], "analyze": []}
        interval = None
        _timed([py, "-c", READ_ANCHOR, str(path)])  # page cache and imports warm
        if n == sizes[0]:  # and the bytecode of both commands compiled
            for command in ("changepoints", "analyze"):
                _timed([py, "-m", "pilot_sys", command, str(path)])
        for _ in range(repeat):
            runs["read"].append(_timed([py, "-c", READ_ANCHOR, str(path)])[0])
            runs["edm"].append(_edm_core(values))
            cp = _timed([py, "-m", "pilot_sys", "changepoints", str(path)])
            runs["changepoints"].append(cp[0])
            seconds, out = _timed([py, "-m", "pilot_sys", "analyze", str(path), "--json"])
            runs["analyze"].append(seconds)
            body = json.loads(out)
            interval = body["ci_low"] is not None
        row = {k: _spread(v) for k, v in runs.items()}
        for k in ("changepoints", "analyze"):
            med = statistics.median(runs[k])
            row[f"{k} / read"] = f"{med / statistics.median(runs['read']):.1f}x"
            row[f"{k} / edm"] = f"{med / statistics.median(runs['edm']):.1f}x"
            row[f"{k} per 1e6"] = f"{1e6 * med / n:.2f} s"
        row["analyze interval"] = interval
        report[str(n)] = row
        print(n, json.dumps(row), flush=True)
    small = folder / "ten.txt"
    small.write_text("".join(f"{v}\n" for v in range(1, 11)))
    bare, tiny = [], []
    for _ in range(max(repeat, 5)):
        bare.append(_timed([py, "-c", "import numpy"])[0])
        tiny.append(_timed([py, "-m", "pilot_sys", "analyze", str(small)])[0])
    report["ten numbers"] = {
        "analyze": _spread(tiny),
        "import numpy": _spread(bare),
        "ratio": f"{statistics.median(tiny) / statistics.median(bare):.1f}x",
    }
    print("ten numbers", json.dumps(report["ten numbers"]), flush=True)
    return report


def recorded_cases() -> list[tuple[str, np.ndarray]]:
    """The synthetic series of changepoint_real and changepoint_accuracy's scenarios (seeded)."""
    from changepoint_accuracy import SCENARIOS
    from changepoint_real import synthetic

    cases = [(name, x) for name, x, _ in synthetic()]
    for name, make in SCENARIOS.items():
        rng = np.random.default_rng(0)
        for rep in range(5):
            cases.append((f"{name}-{rep}", np.asarray(make(rng, 2000).values)))
        # long enough for the rolling-window outlier path (outliers.ROLLING_MIN)
        cases.append((f"{name}-long", np.asarray(make(rng, 50_000).values)))
    return cases


def dump() -> dict[str, object]:
    from pilot_sys.stats.change_kind import explain_changes
    from pilot_sys.stats.changepoint import default_min_size, detect

    out: dict[str, object] = {}
    for name, x in recorded_cases():
        if x.size < 2 * default_min_size(x.size):
            out[name] = {"too_short": True}
            continue
        result, kinds = explain_changes(x, detect(x))
        out[name] = {
            "cuts": list(result.changepoints),
            "kinds": [[k.index, k.kind] for k in kinds],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--dump", type=Path, default=None)
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.dump is not None:
        new = dump()
        args.dump.write_text(json.dumps(new, indent=1, sort_keys=True))
        if args.against is not None:
            old = json.loads(args.against.read_text())
            differ = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            print(f"{len(new)} cases, {len(differ)} differ in cuts or kinds")
            for k in differ:
                print(f"  {k}: {old.get(k)} -> {new.get(k)}")
            return 1 if differ else 0
        print(f"{len(new)} cases dumped to {args.dump}")
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        _CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        print(f"# {time.strftime('%Y-%m-%d')} cpus={os.cpu_count()} load={os.getloadavg()}")
        timings(sizes, args.repeat, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
