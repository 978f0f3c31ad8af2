"""Synthetic validation of the Newton's-method sampling-rate tuner.

Workloads whose overhead is a known function of the rate (linear: the sampler's CPU time taken
from a shared core; convex: contention growing faster than the rate) plus Gaussian per-round
noise, with fixed seeds. For each true optimum r* (overhead(r*) = budget), prior quality and
noise level it reports the workload measurements the tuner used and its error against r*
(for the `upper` target, against the rate whose CI upper bound meets the budget on average).

    python benchmarks/tuner_synthetic.py [--seeds 20] [--json]

The anchor of every ratio is the true optimum of the same run; nothing here is timed.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from pilot_sys.monitor.overhead import SimulatedProbe
from pilot_sys.monitor.tuner import RateBounds, TuneStatus, TuneTarget, newton_tune

BUDGET = 0.01
PAIRS = 10
BOUNDS = RateBounds(
    min_hz=20.0, max_hz=100.0, min_reason="2 per 100 ms spike", max_reason="USER_HZ 100"
)


def expected_halfwidth(noise: float, pairs: int) -> float:
    """The CI half-width of one measurement: t * noise * sqrt(2 / pairs)."""
    return float(stats.t.ppf(0.975, 2 * pairs - 2)) * noise * math.sqrt(2.0 / pairs)


def true_rate(fn: Callable[[float], float], level: float) -> float:
    """The rate where fn reaches ``level`` (bisection on the known function), capped at the
    bounds."""
    lo, hi = 1e-3, 1e4
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fn(mid) < level else (lo, mid)
    return float(min(max(lo, BOUNDS.min_hz), BOUNDS.max_hz))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = []
    for target in (TuneTarget.ESTIMATE, TuneTarget.UPPER):
        for noise in (0.001, 0.0015, 0.003):
            hw = expected_halfwidth(noise, PAIRS)
            for shape in ("linear", "convex"):
                for optimum in (25.0, 40.0, 60.0, 85.0, 150.0):
                    if shape == "linear":
                        fn = (lambda c: lambda r: c * r)(BUDGET / optimum)
                    else:
                        fn = (lambda o: lambda r: BUDGET * (r / o) ** 1.6)(optimum)
                    level = BUDGET if target is TuneTarget.ESTIMATE else BUDGET - hw
                    r_star = true_rate(fn, level)
                    errors, used, over = [], [], 0
                    for prior_factor in (0.3, 1.0, 3.0):
                        slope = fn(optimum) / optimum * prior_factor
                        for seed in range(args.seeds):
                            probe = SimulatedProbe(fn, noise=noise, pairs=PAIRS, seed=seed)
                            res = newton_tune(
                                probe,
                                budget=BUDGET,
                                bounds=BOUNDS,
                                prior_slope=slope,
                                target=target,
                            )
                            errors.append(res.rate_hz / r_star - 1)
                            used.append(len(res.iterations))
                            over += int(
                                fn(res.rate_hz) > BUDGET
                                and res.status not in (TuneStatus.UNDECIDED, TuneStatus.OVER_BUDGET)
                            )
                    e = np.abs(np.array(errors))
                    rows.append(
                        dict(
                            target=target.value,
                            noise=noise,
                            halfwidth=hw,
                            shape=shape,
                            optimum=optimum,
                            reference_hz=r_star,
                            runs=len(errors),
                            within_20=float(np.mean(e <= 0.2)),
                            median_abs_err=float(np.median(e)),
                            p95_abs_err=float(np.quantile(e, 0.95)),
                            max_abs_err=float(e.max()),
                            mean_measurements=float(np.mean(used)),
                            max_measurements=int(max(used)),
                            true_overhead_over_budget=over,
                        )
                    )
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(
        f"budget {BUDGET:.0%}, {PAIRS} pairs per measurement, bounds "
        f"{BOUNDS.min_hz:g}-{BOUNDS.max_hz:g} Hz, "
        f"{args.seeds} seeds x 3 prior slopes (0.3x, 1x, 3x the truth) per row"
    )
    print(
        f"{'target':<8} {'noise':>6} {'CI hw':>6} {'shape':<7} {'r* Hz':>6} {'ref Hz':>6} "
        f"{'<=20%':>6} "
        f"{'med|e|':>7} {'p95|e|':>7} {'max|e|':>7} {'meas':>5} {'max':>4} {'over':>4}"
    )
    for r in rows:
        print(
            f"{r['target']:<8} {r['noise']:>6.2%} {r['halfwidth']:>6.2%} {r['shape']:<7} "
            f"{r['optimum']:>6.0f} "
            f"{r['reference_hz']:>6.1f} {r['within_20']:>6.0%} {r['median_abs_err']:>7.1%} "
            f"{r['p95_abs_err']:>7.1%} "
            f"{r['max_abs_err']:>7.1%} {r['mean_measurements']:>5.2f} {r['max_measurements']:>4d} "
            f"{r['true_overhead_over_budget']:>4d}"
        )


if __name__ == "__main__":
    main()
