"""Which warm-up/cool-down removal should a session use on each round's unit readings? (issue 18)

The session keeps, of each round's unit readings, the part ``pilot_sys.session.statsapi.
stable_segment`` returns. Candidates, all from one EDM segmentation unless said otherwise:

* ``edm-dominant``: EDM's dominant segment (the longest, if it holds more than half), today's;
* ``edm-run``: what ``stable_segment`` returns now: the longest EDM segment grown over its
  neighbours on both sides while a neighbour matches it (``pilot_sys.stats.settle.dominant_run``:
  no significant difference of the means, interquartile ranges within a factor 2), kept when
  the run holds more than half of the round;
* ``edm-walk``: the walk back of ``steady`` on EDM's segments (from the last segment, 5 %,
  normal interval), the round kept from there to its end when that is at least a sixth of it;
* ``steady``: ``pilot_sys.stats.settle`` itself (CROPS, bootstrap), from its start to the end;
  far too slow for a round (see the time column), shown as the reference.

Scored on (a) the JMH dev set's forks as rounds (the first steady iteration against the
study's labels: balanced accuracy of found / not found and the share within 50 iterations, as
in ``jmh_steady.py``), (b) the synthetic scenarios of ``changepoint_accuracy.py`` ("stable
ok": Jaccard >= 0.9 with the true stable phase) and its edge grid (a short warm-up at the start
of one round: found, missed, bias of the kept mean, alarms on the same noise without one), and
(c) the time of one call on 1,000 readings.

    nice -n 10 python3 benchmarks/session_warmup.py [--reps 20] [--grid-reps 20] [--jmh]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

Cut = tuple[int, int, bool]  # begin, end, found


def _module(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def edm_dominant(x: np.ndarray) -> Cut:
    from pilot_sys.stats.changepoint import detect

    stable = detect(x).stable_segment
    return (stable[0], stable[1], True) if stable is not None else (0, x.size, False)


def edm_run(x: np.ndarray) -> Cut:
    """What ``statsapi.stable_segment`` returns (the dominant run over EDM's segments)."""
    from pilot_sys.session.statsapi import stable_segment

    begin, end, _, found = stable_segment(x)
    return begin, end, found


def edm_walk(x: np.ndarray) -> Cut:
    from pilot_sys.stats.changepoint import detect
    from pilot_sys.stats.settle import normal_differs

    cuts = detect(x).changepoints
    bounds = [0, *cuts, x.size]
    begin = 0
    for k in range(len(bounds) - 3, -1, -1):
        if normal_differs(x[bounds[-2] :], x[bounds[k] : bounds[k + 1]]):
            begin = bounds[k + 1]
            break
    return begin, x.size, 6 * (x.size - begin) >= x.size


def steady(x: np.ndarray) -> Cut:
    from pilot_sys.stats.settle import settle

    start = settle(x).start
    return (start, x.size, True) if start is not None else (0, x.size, False)


METHODS: dict[str, Callable[[np.ndarray], Cut]] = {
    "edm-dominant": edm_dominant,
    "edm-run": edm_run,
    "edm-walk": edm_walk,
    "steady": steady,
}


def jmh(methods: list[str], limit: int) -> None:
    js = _module("jmh_steady")
    _, xs, truth, groups = js.load(js.DEFAULT_DATA)
    if limit:
        keep = groups < limit
        xs, truth = xs[keep], truth[keep]
    print(f"# (a) JMH forks as rounds: {truth.size} forks")
    print(
        f"{'method':<14} {'bal':>6} {'rec_s':>6} {'rec_n':>6} {'both':>5} {'w50':>6} {'w50lab':>7}"
    )
    for name in methods:
        answers = []
        for x in xs:
            begin, _, found = METHODS[name](x)
            answers.append(js.to_label(begin if found else None, x.size))
        m = js.metrics(np.array(answers), truth)
        print(
            f"{name:<14} {m['balanced']:>6.3f} {m['recall_steady']:>6.3f} {m['recall_not']:>6.3f} "
            f"{m['both']:>5d} {m['within50']:>6.3f} {m['within50_label']:>7.3f}"
        )


def synthetic(methods: list[str], reps: int, grid_reps: int, n: int = 2000, seed: int = 0) -> None:
    ca = _module("changepoint_accuracy")
    print(f"\n# (b) synthetic scenarios, n = {n}, {reps} series each: stable ok (Jaccard >= 0.9)")
    print(f"{'scenario':<24} " + " ".join(f"{m:>13}" for m in methods))
    hits = dict.fromkeys(methods, 0)
    total = 0
    for s_index, (label, make) in enumerate(ca.SCENARIOS.items()):
        truths = [make(np.random.default_rng([seed, s_index, r]), n) for r in range(reps)]
        truths = [t for t in truths if t.stable is not None]
        if not truths:
            continue
        total += len(truths)
        row = []
        for name in methods:
            ok = 0
            for t in truths:
                begin, end, found = METHODS[name](t.values)
                ok += found and ca.jaccard((begin, end), t.stable) >= 0.9
            hits[name] += ok
            row.append(f"{ok / len(truths):>13.2f}")
        print(f"{label:<24} " + " ".join(row))
    print(f"{'ALL':<24} " + " ".join(f"{hits[m] / total:>13.2f}" for m in methods))
    if grid_reps <= 0:
        return
    print(f"\n# edge grid ({grid_reps} rounds a cell): found / missed / bias % / null alarms")
    for name in methods:
        found_all = missed_all = alarms_all = trials = nulls = 0
        bias_all = 0.0
        for n_index, kind in enumerate(ca.GRID_NOISE):
            for m in ca.GRID_SIZES:
                for r in range(grid_reps):
                    plain = 100.0 * (
                        1.0 + ca._noise(np.random.default_rng([seed, 99, n_index, m, r]), m, kind)
                    )
                    b, e, f = METHODS[name](plain)
                    alarms_all += f and (b, e) != (0, m)
                    nulls += 1
                for w_index, frac in enumerate(ca.GRID_WARM):
                    w = round(frac * m)
                    tol = max(3, math.ceil(w / 4))
                    for r in range(grid_reps):
                        rng = np.random.default_rng([seed, n_index, m, w_index, r])
                        level = np.ones(m)
                        level[:w] = np.linspace(0.5, 1.0, w, endpoint=False)
                        x = 100.0 * level * (1.0 + ca._noise(rng, m, kind))
                        b, e, f = METHODS[name](x)
                        b, e = (b, e) if f else (0, m)
                        found_all += abs(b - w) <= tol
                        missed_all += b < w / 2
                        bias_all += 100.0 * (float(np.mean(level[b:e])) - 1.0)
                        trials += 1
        print(
            f"{name:<14} found {found_all / trials:.2f}  missed {missed_all / trials:.2f}  "
            f"bias {bias_all / trials:+.2f} %  null alarms {alarms_all / nulls:.2f}"
        )


def timing(methods: list[str]) -> None:
    rng = np.random.default_rng(5)
    x = 100 * (1 + 0.05 * rng.standard_normal(1000))
    x[:100] *= np.linspace(0.5, 1.0, 100)
    print("\n# (c) one call on 1,000 readings (best of 5)")
    for name in methods:
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            METHODS[name](x)
            best = min(best, time.perf_counter() - t0)
        print(f"{name:<14} {1e3 * best:8.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--grid-reps", type=int, default=20)
    parser.add_argument("--jmh", action="store_true", help="also (a), the JMH forks (slow)")
    parser.add_argument("--limit", type=int, default=0, help="JMH: first N benchmarks only")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    if args.jmh:
        jmh(methods, args.limit)
    synthetic(methods, args.reps, args.grid_reps)
    timing(methods)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
