"""Speed of phase matching on long runs, as a ratio against an anchor measured in the same run.

Target (issue 8): matching a 10^5-sample run against a baseline well under a second. The anchor
is a plain ``np.correlate`` of the same two signatures at one shift (``mode="valid"`` on equal
lengths: one O(n) dot product), measured in the same run, so the ratio says how many single
shifts the whole match costs, whatever the host's speed. ``--full-anchor`` also times the direct
``np.correlate`` over every shift (O(n^2); minutes at 10^5), what correlation would cost without
the FFT. Timings are the best of ``--repeat`` runs, so a noisy shared host inflates neither side
much.

Example::

    python benchmarks/phases_speed.py                 # 10^5 samples, 8 metrics
    python benchmarks/phases_speed.py --samples 20000 --append benchmarks/results/phases.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pilot_sys.stats.phases import (
    PhaseParams,
    blur,
    match_runs,
    match_signatures,
    transition_signature,
)


def synthetic_run(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Phases of random length (5-60 samples) and random utilization levels, plus noise."""
    lengths = rng.integers(5, 60, size=n // 5)
    levels = rng.random((lengths.size, d))
    X = np.repeat(levels, lengths, axis=0)[:n]
    return np.clip(X + rng.normal(0.0, 0.02, X.shape), 0.0, 1.0)


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--metrics", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--full-anchor", action="store_true", help="also time direct np.correlate over every shift"
    )
    parser.add_argument(
        "--append", type=Path, default=None, help="append a Markdown section to this file"
    )
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    base = synthetic_run(args.samples, args.metrics, rng)
    run = np.roll(base, 37, axis=0)  # the same workload, started 37 samples later
    params = PhaseParams()
    sig_b = transition_signature(base, params).refined
    sig_r = transition_signature(run, params).refined

    full = best_of(lambda: match_runs(base, run, params), args.repeat)
    signature = best_of(lambda: transition_signature(run, params), args.repeat)
    matching = best_of(lambda: match_signatures(sig_b, sig_r, params.tolerance), args.repeat)
    blurred = blur(sig_b, params.tolerance)
    run_f = sig_r.astype(float)
    anchor = best_of(lambda: np.correlate(run_f, blurred, mode="valid"), max(args.repeat, 20))
    m = match_runs(base, run, params)

    lines = [
        f"samples {args.samples} x {args.metrics} metrics (baseline and run), tolerance "
        f"{params.tolerance}, "
        f"{int(sig_b.sum())} baseline transitions; best shift found {m.best_shift} (true 37), "
        f"score {m.matching_score:.2f}",
        f"full match (2 signatures + blur + FFT correlation + score): {full * 1e3:.1f} ms",
        f"  one signature (similarity, glitch/gradient filter): {signature * 1e3:.1f} ms",
        f"  matching given signatures (blur + FFT correlation + score): {matching * 1e3:.1f} ms",
        f"anchor: np.correlate of the same signatures at one shift: {anchor * 1e3:.3f} ms",
        f"ratios: full match = {full / anchor:.0f} x anchor; matching over all "
        f"{2 * args.samples - 1} shifts = "
        f"{matching / anchor:.0f} x anchor; full match {full:.3f} s (target: well under 1 s)",
    ]
    if args.full_anchor:
        direct = best_of(lambda: np.correlate(run_f, blurred, mode="full"), 1)
        lines.append(
            f"direct np.correlate over every shift: {direct:.1f} s = {direct / matching:.0f} x the "
            "FFT matching"
        )
    text = "\n".join(lines)
    print(text)
    if args.append is not None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        cmd = "python benchmarks/phases_speed.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        with args.append.open("a") as f:
            f.write(f"\n### Speed ({stamp})\n\n`{cmd}`\n\n```\n{text}\n```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
