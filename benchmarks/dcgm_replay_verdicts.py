"""The verdict on each shared H200 recording seen as a remote GPU host through Prometheus
(tests/dcgm_replay.py: what node_exporter and dcgm-exporter would have served, read at the
engine's scrape interval through the backend's functions), against the local replay's verdict
(tests/gpu_replay.py) and the README's ground truth: one line per case, signals (dcgm-exporter
with or without its profiling fields) and scrape interval.

    PYTHONPATH=. python3 benchmarks/dcgm_replay_verdicts.py [--scrape 0.5,1,2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gpu_replay_verdicts import TRUTH  # noqa: E402
from pilot_sys.monitor.bottleneck import assess  # noqa: E402
from tests.dcgm_replay import engine_trace  # noqa: E402
from tests.gpu_replay import replay_trace  # noqa: E402
from tests.nvml_standin import CASES  # noqa: E402


def hidden(verdict: object) -> str:
    return ", ".join(
        f"{h.component} ({h.direction}) {h.time_above_fraction:.0%}"
        for h in verdict.hidden_bottlenecks  # type: ignore[attr-defined]
    ) + (" + power-cap warning" if any("power cap" in n for n in verdict.notes) else "")  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrape", default="0.5,1,2")
    args = parser.parse_args()
    print(
        "| case | dcgm-exporter fields | scrape | remote verdict | local replay (GPM / no GPM) "
        "| ground truth |"
    )
    print("|---|---|---|---|---|---|")
    for case in CASES:
        local = {gpm: hidden(assess(replay_trace(case, gpm=gpm))) for gpm in (True, False)}
        for profiling in (True, False):
            for scrape in (float(x) for x in args.scrape.split(",")):
                remote = hidden(assess(engine_trace(case, profiling=profiling, scrape_s=scrape)))
                print(
                    f"| {case} | {'with profiling' if profiling else 'defaults only'} "
                    f"| {scrape:g} s | {remote or 'nothing'} | {local[profiling]} "
                    f"| {TRUTH[case]} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
