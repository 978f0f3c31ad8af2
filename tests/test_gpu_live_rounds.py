"""Round traces that `pilot-sys run` wrote on a live H200 (tests/fixtures/gpu-h200-live): each
round, and the rounds taken together, judged as the ground truth says: the GPU-bound rounds by
their GPU (never by the core that waits on it), the starved ones by one core."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.session.summary import combined_trace

LIVE = Path(__file__).parent / "fixtures" / "gpu-h200-live"
GPU = "accelerator:0000:00:06.0"


def _rounds(run: str) -> list[MonitorTrace]:
    return [
        MonitorTrace.model_validate(json.loads(gzip.decompress(path.read_bytes())))
        for path in sorted(LIVE.glob(f"{run}_000?.json.gz"))
    ]


def _together(traces: list[MonitorTrace]) -> MonitorTrace:
    journal = SimpleNamespace(
        records=[SimpleNamespace(index=i + 1) for i in range(len(traces))],
        load_monitor=lambda record: traces[record.index - 1],
    )
    found = combined_trace(journal, set(range(1, len(traces) + 1)))
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("run", "count"), [("run_matmul", 3), ("run_matmul_cut", 3), ("run4_matmul_cut", 4)]
)
def test_gpu_bound_rounds_are_judged_by_the_gpu(run: str, count: int) -> None:
    rounds = _rounds(run)
    assert len(rounds) == count
    for trace in rounds:  # the GPU as the CUT: each round valid, its core only waited
        v = assess(trace, cut=GPU)
        assert v.valid and v.cut_saturated, [h.evidence for h in v.hidden_bottlenecks]
        assert any(n.startswith("start-up judged apart: the first ") for n in v.notes)
    together = _together(rounds)
    v = assess(together, cut=GPU)
    assert v.valid and v.cut_saturated, [h.evidence for h in v.hidden_bottlenecks]
    note = next(n for n in v.notes if n.startswith("start-up judged apart"))
    assert f"in {count} of {count} rounds" in note and "shut-down" in note
    # the GPU source's own record goes along: its interval is what "waiting" reads
    assert together.sources["gpu"].interval_s == rounds[0].sources["gpu"].interval_s
    assert len(together.sources["gpu"].times) == sum(len(r.sources["gpu"].times) for r in rounds)
    if together.component_under_test is None:  # no CUT: the saturated GPU is what is reported
        hidden = [(h.component, h.direction) for h in assess(together).hidden_bottlenecks]
        assert hidden == [(GPU, "tensor")]


def test_starved_rounds_stay_limited_by_one_core() -> None:
    rounds = _rounds("run_starved")
    for trace in [*rounds, _together(rounds)]:
        hidden = [(h.component, h.direction) for h in assess(trace).hidden_bottlenecks]
        assert hidden == [("cpu:host", "single core")]
