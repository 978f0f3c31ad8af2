"""The one model of a series at 1e6 readings, over shapes other than the ramp (issue 22, item 8).

``series_speed.py`` times the ramp-then-flat series the issue names. Users bring other shapes,
and what a series costs depends on its shape more than on its length: the detection tests
every segment it cuts and the kinds are judged at every change point, so a random walk (a
change point every few hundred readings) costs more than a flat series of the same length, and
a series with no steady part runs the fallback (settle's CROPS path over block means). This
script times ``changepoints`` and ``analyze`` in fresh processes on eight seeded shapes of
``--size`` readings: flat noise, a step in the middle, the ramp, an exponential decay, a slow
sine, a random walk, four tied values, heavy-tailed (Cauchy) noise and log-normal latencies.

Each timing is CPU seconds (user + system) of a fresh ``python3 -m pilot_sys`` process, the
median of ``--repeat`` runs with the range, and a multiple of the read anchor of
``series_speed.py`` (a fresh Python reading the file with pandas and sorting it once) measured
in the same run; the number of change points found and the CPU per thousand of them say where
a shape's cost comes from.

``--dump OUT.json`` writes the cuts and kinds of each shape (EDM, kinds, the model's steady
part); ``--against OLD.json`` compares them with a dump made under another commit (as in
``series_speed.py``): a speed-up must leave them unchanged at this size too::

    python3 benchmarks/series_shapes_speed.py [--size 1000000] [--repeat 3] [--only walk,sine]
    python3 benchmarks/series_shapes_speed.py --dump new.json [--against old.json]

Target (issue 22): 1e6 readings end to end in under 2 s. Results:
``benchmarks/results/series-shapes.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import checkout_first  # noqa: E402, F401  (the checkout before an installed copy)
from series_speed import READ_ANCHOR, _timed, ramp_then_flat  # noqa: E402

TARGET_SECONDS = 2.0


def _noise(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.normal(100.0, 1.0, n)


def _step(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.where(np.arange(n) < n // 2, 100.0, 110.0) + rng.normal(0.0, 1.0, n)


def _ramp(n: int, rng: np.random.Generator) -> np.ndarray:
    return ramp_then_flat(n, seed=int(rng.integers(1 << 30)))


def _decay(n: int, rng: np.random.Generator) -> np.ndarray:
    return 100.0 + 50.0 * np.exp(-np.arange(n) / (n / 20)) + rng.normal(0.0, 1.0, n)


def _sine(n: int, rng: np.random.Generator) -> np.ndarray:
    return 100.0 + 5.0 * np.sin(np.arange(n) / (n / 200)) + rng.normal(0.0, 1.0, n)


def _walk(n: int, rng: np.random.Generator) -> np.ndarray:
    return 100.0 + np.cumsum(rng.normal(0.0, 0.01, n))


def _ties(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 4, n).astype(np.float64)


def _cauchy(n: int, rng: np.random.Generator) -> np.ndarray:
    return 100.0 + rng.standard_cauchy(n)


def _latency(n: int, rng: np.random.Generator) -> np.ndarray:
    return 1000.0 * rng.lognormal(0.0, 0.5, n)


SHAPES: dict[str, Callable[[int, np.random.Generator], np.ndarray]] = {
    "noise": _noise,
    "step": _step,
    "ramp": _ramp,
    "decay": _decay,
    "sine": _sine,
    "walk": _walk,
    "ties": _ties,
    "cauchy": _cauchy,
    "latency": _latency,
}


def shape(name: str, n: int) -> np.ndarray:
    return SHAPES[name](n, np.random.default_rng(7))


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def timings(names: list[str], n: int, repeat: int, folder: Path) -> list[dict[str, object]]:
    py = sys.executable
    rows = []
    print(
        f"{'shape':8} {'changes':>7} {'read s':>17} {'changepoints s':>17} {'analyze s':>17} "
        f"{'cp/read':>7} {'an/read':>7} {'an s/1k changes':>15}"
    )
    for name in names:
        path = folder / f"{name}.txt"
        np.savetxt(path, shape(name, n), fmt="%.6g")
        _timed([py, "-c", READ_ANCHOR, str(path)])  # page cache warm
        runs: dict[str, list[float]] = {"read": [], "changepoints": [], "analyze": []}
        changes = 0
        for _ in range(repeat):
            runs["read"].append(_timed([py, "-c", READ_ANCHOR, str(path)])[0])
            seconds, out = _timed([py, "-m", "pilot_sys", "changepoints", str(path), "--json"])
            runs["changepoints"].append(seconds)
            changes = len(json.loads(out)["changepoints"])
            runs["analyze"].append(_timed([py, "-m", "pilot_sys", "analyze", str(path)])[0])
        read = statistics.median(runs["read"])
        cp, an = statistics.median(runs["changepoints"]), statistics.median(runs["analyze"])
        row = {
            "shape": name,
            "n": n,
            "changes": changes,
            **{k: _med(v) for k, v in runs.items()},
            "changepoints / read": round(cp / read, 1),
            "analyze / read": round(an / read, 1),
            "analyze s per 1k changes": round(1000 * an / changes, 2) if changes else None,
            "under target": max(cp, an) < TARGET_SECONDS,
        }
        rows.append(row)
        per_k = row["analyze s per 1k changes"]
        print(
            f"{name:8} {changes:7d} {row['read']:>17} {row['changepoints']:>17} "
            f"{row['analyze']:>17} {cp / read:7.1f} {an / read:7.1f} "
            f"{'-' if per_k is None else per_k:>15}",
            flush=True,
        )
    return rows


def dump(names: list[str], n: int) -> dict[str, object]:
    from pilot_sys.stats.series_model import series_model

    out: dict[str, object] = {}
    for name in names:
        model = series_model(shape(name, n))
        out[name] = {
            "cuts": list(model.changepoints),
            "kinds": [[k.index, k.kind] for k in model.kinds],
            "steady": list(model.steady) if model.steady is not None else None,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(SHAPES), help="comma-separated shapes")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--dump", type=Path, default=None)
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args(argv)
    names = [s for s in args.only.split(",") if s]
    unknown = [s for s in names if s not in SHAPES]
    if unknown:
        parser.error(f"--only: unknown shape(s) {', '.join(unknown)}; known: {', '.join(SHAPES)}")
    if args.dump is not None:
        new = dump(names, args.size)
        args.dump.write_text(json.dumps(new, indent=1, sort_keys=True))
        if args.against is None:
            print(f"{len(new)} shapes dumped to {args.dump}")
            return 0
        old = json.loads(args.against.read_text())
        differ = sorted(k for k in new if old.get(k) != new.get(k))
        print(f"{len(new)} shapes, {len(differ)} differ in cuts, kinds or the steady part")
        for k in differ:
            print(f"  {k}: cuts {len(old.get(k, {}).get('cuts', []))} -> {len(new[k]['cuts'])}")
        return 1 if differ else 0
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"# {time.strftime('%Y-%m-%d')} cpus={os.cpu_count()} load={os.getloadavg()}")
        rows = timings(names, args.size, args.repeat, Path(tmp))
    missed = [r["shape"] for r in rows if not r["under target"]]
    print(f"target {TARGET_SECONDS:g} s CPU: missed by {', '.join(missed) or 'none'}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
