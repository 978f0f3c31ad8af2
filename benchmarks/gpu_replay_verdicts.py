"""The verdict on each shared H200 recording, replayed (tests/fixtures/gpu-h200), against the
ground truth of its README: one line per case and signal source (GPM, or NVML without GPM).

    PYTHONPATH=. python3 benchmarks/gpu_replay_verdicts.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pilot_sys.monitor.bottleneck import assess  # noqa: E402
from tests.gpu_replay import replay_trace  # noqa: E402
from tests.nvml_standin import CASES  # noqa: E402

TRUTH = {
    "h2d_pinned": "the GPU's PCIe link, host to device",
    "matmul": "the GPU's tensor cores, SM clock held by the software power cap",
    "membw": "the GPU's memory bandwidth",
    "starved": "one CPU core",
    "cpu_only": "one CPU core",
}


def main() -> None:
    print(
        "| case | signals | verdict: governing (direction), share of the judged run | "
        "start-up judged apart | ground truth |"
    )
    print("|---|---|---|---|---|")
    for case in CASES:
        for gpm in (True, False):
            v = assess(replay_trace(case, gpm=gpm))
            hidden = ", ".join(
                f"{h.component} ({h.direction}) {h.time_above_fraction:.0%}"
                for h in v.hidden_bottlenecks
            )
            startup = next(
                (n.split("the first ")[1].split(",")[0] for n in v.notes if "judged apart" in n),
                "none",
            )
            capped = " + power-cap warning" if any("power cap" in n for n in v.notes) else ""
            print(
                f"| {case} | {'GPM' if gpm else 'no GPM'} | {hidden}{capped} | {startup} | "
                f"{TRUTH[case]} |"
            )


if __name__ == "__main__":
    main()
