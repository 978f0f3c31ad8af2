"""A session's rounds of a GPU workload: over the rounds taken together each round's start-up
is judged apart (not only the first), and the processes a round starts are recognised as the
workload's on the GPU (live H200 run: every round had called its own process "another process"
and the session "limited by one core")."""

from __future__ import annotations

import os
import subprocess
import threading
from types import SimpleNamespace

import pytest

from pilot_sys.monitor import bottleneck_gpu_startup as gpu_startup
from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.plugins.dynamic import gpu
from pilot_sys.session.monitoring import RoundProcessesPlugin
from pilot_sys.session.summary import combined_trace
from tests.gpu_replay import replay_trace

GPU = "accelerator:0000:00:06.0"
ROUNDS = 3


class _Journal:
    """What ``combined_trace`` reads of a journal: its records and each one's trace."""

    def __init__(self, traces: list) -> None:
        self.records = [SimpleNamespace(index=i + 1) for i in range(len(traces))]
        self._traces = {i + 1: t for i, t in enumerate(traces)}

    def load_monitor(self, record: SimpleNamespace):
        return self._traces[record.index]


def _rounds(case: str) -> list:
    one = replay_trace(case)
    gap = one.timestamps[-1] + 1.0  # each round starts a second after the last one ended
    return [one.model_copy(update={"start_time": i * gap}) for i in range(ROUNDS)]


@pytest.mark.parametrize(("case", "part"), [("matmul", "tensor"), ("h2d_pinned", "receive")])
def test_each_round_start_up_is_judged_apart(case: str, part: str) -> None:
    rounds = _rounds(case)
    together = combined_trace(_Journal(rounds), set(range(1, ROUNDS + 1)))
    found = gpu_startup.startup(together)
    alone = gpu_startup.startup(rounds[0])
    assert found is not None and alone is not None
    assert found.launches == ROUNDS and len(found.stretches) == ROUNDS
    (begin, end, _), *_ = alone.stretches
    for b, e, which in found.stretches:  # each round's stretch is the one round's own
        assert which == GPU and e - b == pytest.approx(end - begin)
    assert int(found.apart.sum()) == ROUNDS * int(alone.apart.sum())
    verdict = assess(together)
    hidden = {(h.component, h.direction) for h in verdict.hidden_bottlenecks}
    assert (GPU, part) in hidden
    assert not any(direction == "single core" for _, direction in hidden)
    note = next(n for n in verdict.notes if n.startswith("start-up judged apart"))
    assert f"in {ROUNDS} of {ROUNDS} rounds" in note


def test_a_cpu_workload_has_no_start_up_in_any_round() -> None:
    together = combined_trace(_Journal(_rounds("cpu_only")), set(range(1, ROUNDS + 1)))
    assert gpu_startup.startup(together) is None
    hidden = {(h.component, h.direction) for h in assess(together).hidden_bottlenecks}
    assert ("cpu:host", "single core") in hidden


def test_a_trace_without_launches_is_one_launch() -> None:
    trace = replay_trace("membw")
    found = gpu_startup.startup(trace)
    assert found is not None and found.launches == 1 and len(found.stretches) == 1
    note = gpu_startup.startup_note(trace, found)
    assert note.startswith("start-up judged apart: the first ")


@pytest.mark.live
def test_a_rounds_processes_are_the_workload_for_the_gpu_plugin() -> None:
    context = ProbeContext()
    before = subprocess.Popen(["sleep", "30"])  # started before the round: not its
    probe = RoundProcessesPlugin(threading.get_native_id()).open_probe(context)
    assert probe is not None
    child = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    grandchild = None
    try:
        is_workload = gpu.workload_test(context)
        for _ in range(200):  # bounded: the shell starts its child within milliseconds
            kids = (
                open(f"/proc/{child.pid}/task/{child.pid}/children").read().split()
                if os.path.exists(f"/proc/{child.pid}")
                else []
            )
            if kids:
                grandchild = int(kids[0])
                break
            threading.Event().wait(0.01)
        assert grandchild is not None
        assert context.workload_pids() == [child.pid]
        assert is_workload(child.pid) and is_workload(grandchild)
        assert not is_workload(before.pid) and not is_workload(os.getpid())
    finally:
        if grandchild is not None:
            try:
                os.kill(grandchild, 9)
            except ProcessLookupError:
                pass
        for p in (before, child):
            p.kill()
            p.wait(timeout=10)
        probe.close()
    assert context.workload_pids() == []  # the round is over


def test_each_round_shut_down_is_judged_apart_too() -> None:
    rounds = _rounds("matmul")
    alone = gpu_startup.startup(rounds[0])
    together = gpu_startup.startup(combined_trace(_Journal(rounds), set(range(1, ROUNDS + 1))))
    assert alone is not None and together is not None
    assert len(alone.shutdowns) == 1 and 0 < alone.shutdowns[0] < 1.0
    assert together.shutdowns == pytest.approx(alone.shutdowns * ROUNDS)


def test_a_cpu_phase_after_the_last_kernel_longer_than_the_start_up_stays_judged() -> None:
    trace = replay_trace("matmul")
    keep = len(trace.timestamps) - 30  # the last 6 s: no kernel, one core busy
    series = dict(trace.series)
    for key in series:
        if key.startswith(GPU) and (key.endswith("/busy") or "/util_" in key):
            series[key] = [*series[key][:keep], *([0.0] * 30)]
    series["cpu:host/busiest_core"] = [*series["cpu:host/busiest_core"][:keep], *([1.0] * 30)]
    trace = trace.model_copy(update={"series": series})
    found = gpu_startup.startup(trace)
    assert found is not None and found.shutdowns == []
    hidden = {(h.component, h.direction) for h in assess(trace).hidden_bottlenecks}
    assert ("cpu:host", "single core") in hidden
