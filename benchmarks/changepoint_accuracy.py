"""Accuracy of pilot-sys's EDM change points beside ruptures on synthetic series with known truth.

Scenarios (each ``--reps`` series, different seeds): warm-up ramp, level shifts, variance change,
cool-down tail, heavy-tailed noise (Student t with 2 d.o.f., Pareto, lognormal) with shifts, a
burst inside the stable phase, a 5-round session whose rounds each start cold, isolated
outliers without a change, no change at all (Gaussian, Cauchy, quantised) and autocorrelated
noise without a change (AR(1), phi = 0.6); then a short warm-up and a short cool-down (2% of
the series each: 40 readings at n = 2000, below 2 sqrt(n)), which "ALL but short edges" leaves
out so that the total stays comparable with earlier runs.

Scoring, per method and scenario (summed over the reps):

* A detected change point is a true positive when it lies within ``margin = max(10, n / 100)``
  of a true change point not yet matched (each truth matched once); otherwise a false positive.
  A gradual transition (ramp) is a "don't care" zone: detections inside it count as neither,
  and its end is the truth to find.
* precision = TP / (TP + FP), recall = TP / (number of true change points), F1 their harmonic
  mean; "fp/series" = false positives per series (the number that matters on no-change data).
* "stable ok" = fraction of series where the reported stable segment overlaps the true stable
  phase with Jaccard >= 0.9 (pilot-sys only: ruptures has no such notion).

Baselines: ruptures Pelt with the L2 cost and a BIC penalty 2 sigma^2 log n (sigma from the
MAD of first differences, robust to the shifts), ruptures Binseg with the L1 (median) cost and
penalty 2 sigma log n, and the exact quadratic EDM (literal median form) at n <= 2000.

Edge grid (issue 3/6 gap: a warm-up shorter than ~2 sqrt(m) at the start of a round): one
round of m unit readings, the first w ramp linearly from 50% to 100% of the stable level, the
rest stable, for m in 100/200/500/1000, w = 5/10/20% of m, noise Gaussian CV 5% and 10% and
AR(1) phi = 0.5 with a marginal CV of 5%. "found" = the stable segment starts within
max(3, w/4) readings of w (the last quarter of the ramp, 87-100% of the level, is within the
noise); "missed" = it starts before w/2 (most of the warm-up kept); "bias" = mean of the kept
segment vs the stable level, in percent. The last column, "null alarms", is the share of the
same rounds *without* a warm-up (same noise) where any change point was reported.
``--no-edges`` runs pilot-sys without the edge intervals (the behaviour before them).

Usage: python benchmarks/changepoint_accuracy.py [--reps 20] [--n 2000] [--seed 0] [--no-edges]
       [--grid-reps 50 | --grid-reps 0 to skip the edge grid]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pilot_sys.stats.changepoint import detect, detect_exact


@dataclass
class Truth:
    values: np.ndarray
    changepoints: list[int]
    dont_care: list[tuple[int, int]] = field(default_factory=list)
    stable: tuple[int, int] | None = None


Scenario = Callable[[np.random.Generator, int], Truth]


def warm_up_ramp(rng: np.random.Generator, n: int) -> Truth:
    w = n // 8
    x = rng.normal(10, 1, n)
    x[:w] += np.linspace(15, 0, w)
    return Truth(x, [w], [(0, w)], (w, n))


def level_shifts(rng: np.random.Generator, n: int) -> Truth:
    cps = [n // 5, n // 2, 4 * n // 5]
    levels = [0.0, 1.5, 0.5, 2.0]
    x = rng.normal(0, 1, n)
    for (a, b), level in zip(zip([0, *cps], [*cps, n], strict=True), levels, strict=True):
        x[a:b] += level
    return Truth(x, cps, stable=None)


def variance_change(rng: np.random.Generator, n: int) -> Truth:
    c = n // 3
    x = np.concatenate([rng.normal(5, 1, c), rng.normal(5, 3, n - c)])
    return Truth(x, [c], stable=(c, n))


def cool_down_tail(rng: np.random.Generator, n: int) -> Truth:
    c = n - n // 10
    x = rng.normal(10, 1, n)
    x[c:] += np.linspace(0, 6, n - c)
    return Truth(x, [c], [(c, n)], (0, c))


def heavy_t(rng: np.random.Generator, n: int) -> Truth:
    c = n // 4
    x = rng.standard_t(2, n)
    x[:c] += 3.0
    return Truth(x, [c], stable=(c, n))


def heavy_pareto(rng: np.random.Generator, n: int) -> Truth:
    c = 3 * n // 4
    x = rng.pareto(1.5, n) + 1.0
    x[c:] *= 1.8  # throughput drop = latency x 1.8
    return Truth(x, [c], stable=(0, c))


def heavy_lognormal(rng: np.random.Generator, n: int) -> Truth:
    c1, c2 = n // 10, n - n // 10
    x = rng.lognormal(0, 1, n)
    x[:c1] *= 3.0
    x[c2:] *= 2.0
    return Truth(x, [c1, c2], stable=(c1, c2))


def burst(rng: np.random.Generator, n: int) -> Truth:
    a, b = n // 2, n // 2 + n // 10
    x = rng.normal(0, 1, n)
    x[a:b] += 2.0
    return Truth(x, [a, b], stable=None)


def rounds_with_warm_up(rng: np.random.Generator, n: int) -> Truth:
    """A 5-round session's unit readings: every round restarts cold and ramps down to stable."""
    rounds, length = 5, n // 5
    warm = length // 6
    x = rng.normal(10, 1, n)
    cps: list[int] = []
    ramps: list[tuple[int, int]] = []
    for r in range(rounds):
        start = r * length
        x[start : start + warm] += np.linspace(5, 0, warm)
        if r:
            cps.append(start)
        cps.append(start + warm)
        ramps.append((start, start + warm))
    return Truth(x, sorted(cps), ramps, stable=None)


def outliers_no_change(rng: np.random.Generator, n: int) -> Truth:
    x = rng.normal(0, 1, n)
    x[rng.choice(n, max(1, n // 200), replace=False)] = 1e4
    return Truth(x, [], stable=(0, n))


def no_change_normal(rng: np.random.Generator, n: int) -> Truth:
    return Truth(rng.normal(0, 1, n), [], stable=(0, n))


def no_change_cauchy(rng: np.random.Generator, n: int) -> Truth:
    return Truth(rng.standard_cauchy(n), [], stable=(0, n))


def no_change_quantised(rng: np.random.Generator, n: int) -> Truth:
    return Truth(rng.poisson(3, n).astype(float), [], stable=(0, n))


def short_warm_up(rng: np.random.Generator, n: int) -> Truth:
    """A warm-up of 2% (40 readings at n = 2000, below 2 sqrt(n)): 50% -> 100% of the level,
    CV 10%."""
    w = n // 50
    level = np.ones(n)
    level[:w] = np.linspace(0.5, 1.0, w, endpoint=False)
    x = 100.0 * level * (1.0 + rng.normal(0, 0.10, n))
    return Truth(x, [w], [(0, w)], (w, n))


def short_cool_down(rng: np.random.Generator, n: int) -> Truth:
    """The last 2% fall linearly to 60% of the level (a draining queue), CV 10%."""
    c = n - n // 50
    level = np.ones(n)
    level[c:] = np.linspace(1.0, 0.6, n - c)
    x = 100.0 * level * (1.0 + rng.normal(0, 0.10, n))
    return Truth(x, [c], [(c, n)], (0, c))


def no_change_ar1(rng: np.random.Generator, n: int) -> Truth:
    e = rng.normal(0, 1, n)
    x = np.empty(n)
    x[0] = e[0] / math.sqrt(1 - 0.36)
    for i in range(1, n):
        x[i] = 0.6 * x[i - 1] + e[i]
    return Truth(x, [], stable=(0, n))


SCENARIOS: dict[str, Scenario] = {
    "warm-up ramp": warm_up_ramp,
    "level shifts (3)": level_shifts,
    "variance change": variance_change,
    "cool-down tail": cool_down_tail,
    "student-t(2) shift": heavy_t,
    "pareto scale change": heavy_pareto,
    "lognormal warm+cool": heavy_lognormal,
    "burst in stable": burst,
    "5 rounds, warm-up each": rounds_with_warm_up,
    "outliers, no change": outliers_no_change,
    "no change, normal": no_change_normal,
    "no change, cauchy": no_change_cauchy,
    "no change, quantised": no_change_quantised,
    "no change, AR(1) 0.6": no_change_ar1,
    # Appended, so that the other scenarios keep their seeds (s_index) and their numbers.
    "short warm-up (2%)": short_warm_up,
    "short cool-down (2%)": short_cool_down,
}


def _sigma(x: np.ndarray) -> float:
    d = np.diff(x)
    return max(1e-12, 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2))


EDGE_SCENARIOS = ("short warm-up (2%)", "short cool-down (2%)")


Method = Callable[[np.ndarray], tuple[list[int], tuple[int, int] | None]]


def methods(n: int, edges: bool = True) -> dict[str, Method]:
    out: dict[str, Method] = {
        "pilot-sys (sign)": lambda x: _ours(detect(x, edges=edges)),
        "pilot-sys (median)": lambda x: _ours(detect(x, statistic="median")),
    }
    if n <= 2000:
        out["exact quadratic EDM"] = lambda x: _ours(detect_exact(x))
    try:
        import ruptures as rpt
    except ImportError:
        return out
    out["ruptures Pelt l2 BIC"] = lambda x: (
        rpt.Pelt(model="l2", min_size=10)
        .fit(x)
        .predict(pen=2 * _sigma(x) ** 2 * math.log(x.size))[:-1],
        None,
    )
    out["ruptures Binseg l1"] = lambda x: (
        rpt.Binseg(model="l1", min_size=10)
        .fit(x)
        .predict(pen=2 * _sigma(x) * math.log(x.size))[:-1],
        None,
    )
    return out


def _ours(result) -> tuple[list[int], tuple[int, int] | None]:  # type: ignore[no-untyped-def]
    return result.changepoints, result.stable_segment


def score(found: list[int], truth: Truth, margin: int) -> tuple[int, int]:
    """(true positives, false positives) with one-to-one matching within the margin."""
    unmatched = list(truth.changepoints)
    tp = fp = 0
    for cp in sorted(found):
        near = [t for t in unmatched if abs(cp - t) <= margin]
        if near:
            unmatched.remove(min(near, key=lambda t: abs(cp - t)))
            tp += 1
        elif any(a <= cp < b for a, b in truth.dont_care):
            continue
        else:
            fp += 1
    return tp, fp


def jaccard(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


GRID_SIZES = (100, 200, 500, 1000)
GRID_WARM = (0.05, 0.10, 0.20)
GRID_NOISE = ("gauss CV 5%", "gauss CV 10%", "AR(1) 0.5 CV 5%")


def _noise(rng: np.random.Generator, m: int, kind: str) -> np.ndarray:
    if kind == "gauss CV 5%":
        return rng.normal(0, 0.05, m)
    if kind == "gauss CV 10%":
        return rng.normal(0, 0.10, m)
    z = rng.normal(0, math.sqrt(1 - 0.25), m)  # AR(1) 0.5 with unit marginal variance
    a = np.empty(m)
    a[0] = rng.normal()
    for i in range(1, m):
        a[i] = 0.5 * a[i - 1] + z[i]
    return 0.05 * a


def edge_grid(reps: int, seed: int, edges: bool) -> None:
    """Detection of a short warm-up at the start of one round, and alarms on the same noise
    alone."""
    print(
        "\n# edge grid: one round of m readings, warm-up ramp 50% -> 100% over the first w, "
        f"{reps} rounds per cell"
    )
    print(
        f"{'noise':<16} {'m':>5} {'w':>4} {'found':>6} {'missed':>6} {'bias %':>7} "
        f"{'null alarms':>11}"
    )
    found_all = trials = 0
    for n_index, kind in enumerate(GRID_NOISE):
        for m in GRID_SIZES:
            alarms = 0
            for r in range(reps):
                plain = 100.0 * (
                    1.0 + _noise(np.random.default_rng([seed, 99, n_index, m, r]), m, kind)
                )
                alarms += bool(detect(plain, edges=edges).changepoints)
            for w_index, frac in enumerate(GRID_WARM):
                w = round(frac * m)
                tol = max(3, math.ceil(w / 4))
                found = missed = 0
                bias = 0.0
                for r in range(reps):
                    rng = np.random.default_rng([seed, n_index, m, w_index, r])
                    level = np.ones(m)
                    level[:w] = np.linspace(0.5, 1.0, w, endpoint=False)
                    x = 100.0 * level * (1.0 + _noise(rng, m, kind))
                    result = detect(x, edges=edges)
                    begin, end = result.stable_segment or (0, m)
                    found += abs(begin - w) <= tol
                    missed += begin < w / 2
                    bias += 100.0 * (float(np.mean(level[begin:end])) - 1.0)
                found_all += found
                trials += reps
                print(
                    f"{kind:<16} {m:>5} {w:>4} {found / reps:>6.2f} {missed / reps:>6.2f} "
                    f"{bias / reps:>7.2f} "
                    f"{alarms / reps if w_index == 0 else float('nan'):>11.2f}"
                )
    print(f"{'ALL':<16} {'':>5} {'':>4} {found_all / trials:>6.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-edges", action="store_true", help="pilot-sys without the edge intervals"
    )
    parser.add_argument(
        "--grid-reps", type=int, default=50, help="rounds per edge-grid cell (0: skip the grid)"
    )
    args = parser.parse_args()
    n = args.n
    margin = max(10, n // 100)
    table = methods(n, edges=not args.no_edges)
    print(
        f"# changepoint accuracy: n = {n}, {args.reps} series per scenario, margin = {margin} "
        "readings"
    )
    print(
        f"{'scenario':<22} {'method':<22} {'prec':>6} {'recall':>6} {'F1':>6} {'fp/series':>9} "
        f"{'stable ok':>9}"
    )
    totals = {name: [0, 0, 0] for name in table}
    without_edge = {name: [0, 0, 0] for name in table}
    for s_index, (label, make) in enumerate(SCENARIOS.items()):
        truths = [make(np.random.default_rng([args.seed, s_index, r]), n) for r in range(args.reps)]
        for name, run in table.items():
            tp = fp = stable_hits = stable_total = 0
            n_true = sum(len(t.changepoints) for t in truths)
            for truth in truths:
                found, stable = run(truth.values)
                a, b = score(found, truth, margin)
                tp += a
                fp += b
                if truth.stable is not None and name.startswith("pilot-sys"):
                    stable_total += 1
                    stable_hits += stable is not None and jaccard(stable, truth.stable) >= 0.9
            totals[name][0] += tp
            totals[name][1] += fp
            totals[name][2] += n_true
            if label not in EDGE_SCENARIOS:
                for i, v in enumerate((tp, fp, n_true)):
                    without_edge[name][i] += v
            precision = tp / (tp + fp) if tp + fp else (1.0 if n_true == 0 else 0.0)
            recall = tp / n_true if n_true else float("nan")
            f1 = (
                2 * precision * recall / (precision + recall)
                if n_true and precision + recall
                else float("nan")
            )
            stable_text = f"{stable_hits / stable_total:.2f}" if stable_total else "-"
            print(
                f"{label:<22} {name:<22} {precision:>6.2f} {recall:>6.2f} {f1:>6.2f} "
                f"{fp / args.reps:>9.2f} {stable_text:>9}"
            )
    print()
    for label, sums in (("ALL", totals), ("ALL but short edges", without_edge)):
        for name, (tp, fp, n_true) in sums.items():
            precision = tp / (tp + fp) if tp + fp else 1.0
            recall = tp / n_true
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            print(f"{label:<22} {name:<22} {precision:>6.2f} {recall:>6.2f} {f1:>6.2f}")
    if args.grid_reps > 0:
        edge_grid(args.grid_reps, args.seed, edges=not args.no_edges)
    return 0


if __name__ == "__main__":
    sys.exit(main())
