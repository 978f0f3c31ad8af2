"""Engine cost per round, excluding the workload: target < 5 ms (issue 6).

Runs the real engine (planner, journal with fsync, analysis through pilot_sys.stats, progress)
with an in-process no-op workload whose readings never meet the CI target, for a fixed number
of rounds, in a result directory on the disk under the current directory. The cost of a round
is the wall time from the end of one workload run to the start of the next (monitoring off:
the sampler's own cost is reported by the monitor's benchmarks).

The anchor, measured in the same run: one bare durable append (write one 500-byte line and
fsync it) to a file in the same directory, the least any journal that keeps every round can
pay. Printed: median, mean (amortised: includes the occasional full re-analysis) and p90
per-round cost, the final analysis (``final ms``: the rounds no paced analysis reached yet) and
``all ms``, everything amortised over the rounds (the number judged against the target), the
median wait for the round's fsyncs and the median cost without that wait in ms and as a ratio
to the anchor, for readings-only rounds and for rounds with 1000 unit readings each (EDM +
subsession analysis).

    python benchmarks/engine_cost.py [--rounds 200] [--dir .]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from pilot_sys.session import statsapi
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.engine import Engine, make_track
from pilot_sys.session.journal import Journal, SessionManifest, WorkloadSpec
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput


class NoopWorkload:
    """Returns at once with a noisy reading (and optional unit readings): 40% noise keeps a 10%
    target out of reach for a few hundred rounds, so every round goes through the whole loop."""

    name = "noop"

    def __init__(self, units: int, seed: int = 1) -> None:
        self.units = units
        self.rng = np.random.default_rng(seed)

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="rate", unit="B/s", pi_type=PIType.HARMONIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        value = 1e8 * (1 + 0.4 * self.rng.standard_normal())
        units = (
            {"rate": 1e8 * (1 + 0.4 * self.rng.standard_normal(self.units))} if self.units else {}
        )
        return RoundOutput(
            work_amount=work_amount,
            duration=0.001,
            readings={"rate": abs(value) + 1e6},
            unit_readings={k: np.abs(v) + 1e6 for k, v in units.items()},
        )

    def data_path_args(self) -> list[str]:
        return []


def anchor_ms(directory: Path, repeats: int = 200) -> float:
    path = directory / "anchor.jsonl"
    line = b"x" * 499 + b"\n"
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for _ in range(repeats):
            t = time.perf_counter()
            os.write(fd, line)
            os.fsync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
    return float(np.median(times)) * 1e3


def engine_ms(directory: Path, rounds: int, units: int) -> tuple[np.ndarray, np.ndarray]:
    # 1000 unit readings a round would meet 10% in a few rounds: ask for 0.1% to keep going
    cfg = SessionConfig.from_preset(
        "normal",
        monitor=False,
        max_rounds=rounds,
        ci_perc=0.001 if units else 0.10,
        min_round_seconds=0.0,
        work_min=1,
        work_max=1,
    )
    wl = NoopWorkload(units)
    spec = WorkloadSpec(name="noop", kind="function", pis=wl.pi_specs())
    journal = Journal.create(
        directory / f"session-{units}", SessionManifest(config=cfg, workloads=[spec])
    )
    engine = Engine(journal, cfg, [make_track(spec, wl, cfg, wl.pi_specs())])
    engine.run()
    # The final analysis a session makes for its result (``Session.run`` calls it) examines the
    # rounds no paced analysis reached yet: their EDM is engine work too, spread over the rounds.
    began = time.perf_counter()
    engine.finalize()
    final_ms = (time.perf_counter() - began) * 1e3
    return (
        np.asarray(engine.engine_seconds) * 1e3,
        np.asarray(engine.sync_wait_seconds[1:]) * 1e3,
        final_ms,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--dir", type=Path, default=Path("."))
    args = ap.parse_args()
    statsapi.preload()  # one-time scipy import, paid before any session starts
    work = Path(tempfile.mkdtemp(prefix="pilot-engine-cost-", dir=args.dir))
    try:
        before = anchor_ms(work)
        rows = [(units, engine_ms(work, args.rounds, units)) for units in (0, 1000)]
        after = anchor_ms(work)
        anchor = (before + after) / 2
        print(
            f"anchor: one fsync'd 500-byte append = {anchor:.2f} ms (before {before:.2f}, after "
            f"{after:.2f})"
        )
        print(
            f"{'unit readings/round':>20} {'rounds':>7} {'median ms':>10} {'mean ms':>8} "
            f"{'p90 ms':>8} "
            f"{'median/anchor':>14} {'mean/anchor':>12} {'fsync wait ms':>14} {'own ms':>7} "
            f"{'final ms':>9} "
            f"{'all ms':>7}  target (all < 5 ms)"
        )
        for units, (ms, wait, final) in rows:
            own = ms - wait[: ms.size]  # the same gap without the wait for the fsyncs
            med, mean, p90 = float(np.median(ms)), float(np.mean(ms)), float(np.percentile(ms, 90))
            total = (
                float(np.sum(ms)) + final
            ) / ms.size  # amortised: re-analyses and the final one included
            verdict = "PASS" if total < 5.0 else "FAIL"
            print(
                f"{units:>20} {ms.size:>7} {med:>10.2f} {mean:>8.2f} {p90:>8.2f} "
                f"{med / anchor:>14.2f} "
                f"{mean / anchor:>12.2f} {float(np.median(wait)):>14.2f} "
                f"{float(np.median(own)):>7.2f} "
                f"{final:>9.1f} {total:>7.2f}  {verdict}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
