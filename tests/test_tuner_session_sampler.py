"""The tuner measures the sampler a session round runs (`run --overhead-budget`, `tune`): the
same plug-ins over the same discovered graph, and the round's own processes (process:workload).

Every sampler is built by ``monitoring.round_sampler``; the tests wrap it to keep what each one
was and what it recorded, then run the real tuner on a real short command.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pilot_sys.monitor import overhead
from pilot_sys.monitor.overhead import WorkloadProbe
from pilot_sys.session import monitoring
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.monitoring import WORKLOAD_COMPONENT, RoundMonitoring, round_sampler_factory
from pilot_sys.workload.runner import CommandWorkload

RATE_HZ = 50.0
SLEEPY = ["sleep", "0.12"]  # longer than a few sampling periods: every monitored round sees it
PROCESSES = f"{WORKLOAD_COMPONENT}/processes"


class _Kept:
    """A sampler that keeps the trace its ``stop()`` returns (the tuner drops it)."""

    def __init__(self, sampler: Any, thread: int) -> None:
        self.sampler = sampler
        self.thread = thread
        self.trace: Any = None

    def start(self) -> None:
        self.sampler.start()

    def stop(self, *args: Any, **kwargs: Any) -> Any:
        self.trace = self.sampler.stop(*args, **kwargs)
        return self.trace

    def cost(self) -> Any:
        return self.sampler.cost()


@pytest.fixture()
def made(monkeypatch: pytest.MonkeyPatch) -> list[_Kept]:
    """Every sampler built through ``round_sampler`` from now on."""
    kept: list[_Kept] = []
    real = monitoring.round_sampler

    def recording(graph: Any, rate_hz: float, hosts: Any = (), extra: Any = ()) -> _Kept:
        kept.append(_Kept(real(graph, rate_hz, hosts, extra), threading.get_native_id()))
        return kept[-1]

    monkeypatch.setattr(monitoring, "round_sampler", recording)
    return kept


def _seen_processes(kept: _Kept) -> float:
    return max((v for v in kept.trace.series[PROCESSES] if v is not None), default=0.0)


def _check_tuning_samplers(made: list[_Kept]) -> None:
    """The calibration (nothing running) first, then one sampler per monitored round, each
    following the round's command."""
    assert len(made) >= 3
    for kept in made:
        assert f"{WORKLOAD_COMPONENT}/cpu_ticks" in kept.sampler.columns
        assert kept.sampler.graph is not None  # the session's discovered graph, not none
        assert kept.thread == threading.get_native_id()  # built in the thread that ran the round
    assert _seen_processes(made[0]) == 0  # the calibration: the sampler alone
    assert all(_seen_processes(k) >= 1 for k in made[1:])


@pytest.mark.live
def test_the_session_and_the_tuner_build_the_same_sampler(
    tmp_path: Path, made: list[_Kept]
) -> None:
    """RoundMonitoring and the tuner's factory give samplers with the same columns, the
    per-process ones included; the bare default sampler has no per-process columns."""
    mon = RoundMonitoring(RATE_HZ, 0.8, None, [str(tmp_path)], tmp_path)
    if not mon.active:
        pytest.skip(f"monitoring is not available here: {mon.error}")
    mon.start()
    mon.abort()
    factory = monitoring.session_sampler_factory([str(tmp_path)])
    factory(RATE_HZ)
    session, tuner = made
    assert tuner.sampler.columns == session.sampler.columns
    assert [p.name for p in tuner.sampler.probes] == [p.name for p in session.sampler.probes]
    assert any(c.startswith(WORKLOAD_COMPONENT + "/") for c in session.sampler.columns)
    assert sorted(c.id for c in tuner.sampler.graph.components()) == sorted(
        c.id for c in mon.graph.components()
    )
    bare = overhead.default_sampler_factory(RATE_HZ)
    assert not any(c.startswith(WORKLOAD_COMPONENT + "/") for c in bare.columns)


@pytest.mark.live
def test_the_probe_follows_each_monitored_rounds_command(tmp_path: Path, made: list[_Kept]) -> None:
    """WorkloadProbe builds the sampler in the thread that then runs the round: the sampler of
    every monitored round saw that round's command, and no unmonitored round built one."""
    factory = round_sampler_factory(None)
    probe = WorkloadProbe(
        CommandWorkload(SLEEPY),
        pairs=2,
        warmup_rounds=0,
        sampler_factory=factory,
        workdir=tmp_path,
        seed=1,
    )
    measured = probe.measure(RATE_HZ)
    assert len(made) == measured.schedule.count(True) == 2
    assert all(_seen_processes(k) == 1 for k in made)  # the one process of the round
    cpu = [
        v for k in made for v in k.trace.series[f"{WORKLOAD_COMPONENT}/cpu_cores"] if v is not None
    ]
    assert cpu and all(0.0 <= v < 1.0 for v in cpu)  # a sleeping command: well under a core


@pytest.mark.live
def test_overhead_budget_tunes_with_the_session_sampler(
    made: list[_Kept], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --overhead-budget`'s tuning (one short measurement here) runs round_sampler."""
    from pilot_sys.monitor import tuner
    from pilot_sys.session.tuning import tune_session_rate

    real = tuner.tune_for_workload
    monkeypatch.setattr(
        tuner,
        "tune_for_workload",
        lambda *a, **k: real(*a, **{**k, "pairs": 2, "max_measurements": 1}),
    )
    cfg = SessionConfig(work_min=1, work_max=1)
    notes: list[str] = []
    section = tune_session_rate(CommandWorkload(SLEEPY), cfg, 0.5, note=notes.append)
    assert section["rate_chosen_by"] == "tuner" and notes[0].startswith(
        "tuning the sampling rate first"
    )
    _check_tuning_samplers(made)
    assert len(made) == 1 + 2  # the calibration, then the 2 monitored rounds of the one measurement


@pytest.mark.live
def test_tune_command_measures_the_run_sampler(tmp_path: Path, made: list[_Kept]) -> None:
    """`pilot-sys tune -- CMD` builds its samplers the way `run -- CMD` does."""
    from pilot_sys.cli.tune import tune

    result = CliRunner().invoke(
        tune,
        [
            "--budget",
            "50%",
            "--pairs",
            "2",
            "--max-measurements",
            "1",
            "--seed",
            "2",
            "--keep",
            str(tmp_path),
            "--json",
            "--",
            *SLEEPY,
        ],
    )
    assert result.exit_code in (0, 4), (
        result.output
    )  # 4: one measurement was not enough to converge
    _check_tuning_samplers(made)
    assert len(made) == 1 + 2
