"""Early stop: every judged round excluded for one cause, and a required sample size that runs
away with the samples (issue: sessions spent their whole limit on both).

The engine runs here on hand-built workloads and a monitor stand-in: no process starts and
nothing of this host is read.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from session_dirs import make_session

from conftest import run_cli
from pilot_sys.cli.present.progress import eta_text
from pilot_sys.errors import ExitCode
from pilot_sys.report.rebuild import rebuild
from pilot_sys.session import early_stop, statsapi
from pilot_sys.session import engine as engine_module
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.early_stop import (
    NeedTrend,
    all_excluded_same_cause,
    excluded_rounds_to_be_sure,
)
from pilot_sys.session.engine import Engine, make_track
from pilot_sys.session.journal import (
    Journal,
    MonitorSummary,
    RoundRecord,
    SessionManifest,
    SyncBatch,
    WorkloadSpec,
)
from pilot_sys.session.progress import Note, RoundDone
from pilot_sys.session.result import PIResult, Reason, Status, StopReason
from pilot_sys.session.summary import build_result
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput

CPU = "cpu:host (compute)"


def level_and_noise(n: int, seed: int, phi: float = 0.995, mean: float = 3.0) -> np.ndarray:
    """A slowly wandering level (AR(1) at ``phi``, variance 1.5) plus white noise (variance 1):
    the autocorrelation stays near 0.5-0.6 from lag 1 to lag 10 and beyond, which no AR(1)
    forecast of the statistics allows for."""
    rng = np.random.default_rng(seed)
    level = np.empty(n)
    level[0] = rng.normal(0.0, math.sqrt(1.5))
    shocks = rng.normal(0.0, math.sqrt(1.5 * (1.0 - phi * phi)), n)
    for i in range(1, n):
        level[i] = phi * level[i - 1] + shocks[i]
    return mean + level + rng.normal(0.0, 1.0, n)


def ar1(n: int, seed: int, phi: float = 0.95) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.empty(n)
    x[0] = 0.0
    e = rng.normal(0.0, 1.0, n)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return 100.0 + x


def acf(x: np.ndarray, lag: int) -> float:
    return float(np.corrcoef(x[:-lag], x[lag:])[0, 1])


def _trend_until(x: np.ndarray, target: float = 0.1) -> tuple[int, str]:
    """Feed growing prefixes' real summaries to a NeedTrend at 2 % steps, as the engine's paced
    analysis does: (samples, 'met' | 'runaway' | 'neither')."""
    trend = NeedTrend()
    n = 10
    while n <= x.size:
        v = statsapi.summarize(x[:n], "arithmetic", 0.95, target, 0.1)
        met = v.ci_low is not None and v.ci_high is not None and v.mean is not None
        met = met and (v.ci_high - v.ci_low) / abs(v.mean) <= target
        pi = PIResult(
            name="v",
            unit="s",
            source="readings",
            target=target,
            mean=v.mean,
            ci_low=v.ci_low,
            ci_high=v.ci_high,
            ci_reached=met,
            sample_size=n,
            required_sample_size=v.required_sample_size,
        )
        trend.observe({"v": pi})
        if met:
            return n, "met"
        if trend.runaway() is not None:
            return n, "runaway"
        n = max(n + 1, math.ceil(n * 1.02))
    return n, "neither"


# -- how many excluded rounds are enough ---------------------------------------------------------
def test_excluded_rounds_to_be_sure_hand_computed() -> None:
    # 2 log2(1 / 0.05) = 8.64 -> 9; 2 log2(1 / 0.01) = 13.3 -> 14; never below min_rounds
    assert excluded_rounds_to_be_sure(0.95, 8) == 9
    assert excluded_rounds_to_be_sure(0.99, 10) == 14
    assert excluded_rounds_to_be_sure(0.95, 12) == 12


def _record(i: int, *, valid: bool | None, hidden: list[str], samples: int = 11) -> RoundRecord:
    return RoundRecord(
        index=i,
        workload="w",
        workload_round=i,
        dir=f"rounds/{i:04d}",
        started_at=float(i),
        work_amount=1.0,
        duration=1.0,
        phase="fixed",
        readings={"bw": 100.0 + i},
        monitor=MonitorSummary(samples=samples, valid=valid, hidden_bottlenecks=hidden),
    )


def test_all_excluded_needs_enough_judged_rounds_and_one_cause() -> None:
    nine = [_record(i, valid=False, hidden=[CPU, "memory:host (bandwidth)"]) for i in range(1, 10)]
    streak = all_excluded_same_cause(nine, "block:vda", 9)
    assert streak is not None and streak.rounds == 9 and streak.cause == CPU
    assert all_excluded_same_cause(nine[:8], "block:vda", 9) is None  # not enough yet
    assert all_excluded_same_cause(nine, None, 9) is None  # no CUT: nothing is excluded
    one_fine = [*nine, _record(10, valid=True, hidden=[])]
    assert all_excluded_same_cause(one_fine, "block:vda", 9) is None
    other = [*nine[:5], *(_record(i, valid=False, hidden=["nic:eth0 (rx)"]) for i in range(6, 11))]
    assert all_excluded_same_cause(other, "block:vda", 9) is None  # no common cause
    # rounds too short to judge do not count either way
    unjudged = [*nine[:8], _record(9, valid=False, hidden=[CPU], samples=3)]
    assert all_excluded_same_cause(unjudged, "block:vda", 9) is None


# -- the runaway, on the real statistics -------------------------------------------------------
def test_a_wandering_level_runs_away_and_is_called_early() -> None:
    x = level_and_noise(3000, seed=0)
    # the premise: autocorrelation near 0.6 out to lag 10
    assert 0.4 < acf(x, 1) < 0.7 and 0.4 < acf(x, 10) < 0.7
    n, outcome = _trend_until(x)
    assert outcome == "runaway" and n < 1000


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_series_that_only_needs_many_samples_is_not_called_a_runaway(seed: int) -> None:
    # AR(1) at 0.95 (0.6 at lag 10): about 2000 samples, then an interval
    x = ar1(4000, seed)
    assert acf(x, 10) > 0.4
    n, outcome = _trend_until(x)
    assert outcome == "met", n


def test_white_noise_is_never_a_runaway() -> None:
    x = 100.0 + np.random.default_rng(5).normal(0.0, 5.0, 600)
    assert _trend_until(x)[1] == "met"


# -- the engine ------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def analysis_every_round_it_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine paces its re-analysis by what the last one cost in wall time
    (``engine.cost_floor``); on a loaded machine it analyses less often, and the round at which
    a runaway is seen moves. These tests are about the decisions, not the pacing (tested in
    test_session_planner.py), so the cost floor is the unloaded one."""
    monkeypatch.setattr(engine_module, "cost_floor", lambda analysis_s, mean_round_s: 1)


class Series:
    """Readings from a fixed series, one per round; an optional monitor stand-in verdict."""

    name = "w"

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.calls = 0

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="bw", unit="s", pi_type=PIType.ARITHMETIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        value = float(self.values[self.calls % self.values.size])
        self.calls += 1
        # a round's time grows with its work (a fixed start-up plus the work part), as the
        # planner's calibration expects of a real workload
        duration = 0.05 + 0.001 * work_amount
        return RoundOutput(work_amount=work_amount, duration=duration, readings={"bw": value})

    def data_path_args(self) -> list[str]:
        return []


class HotCpu:
    """The monitor's per-round verdict, always: the CPU was a hidden bottleneck."""

    def start(self) -> None:
        pass

    def stop(self, round_dir: Path, batch: SyncBatch | None = None) -> MonitorSummary:
        return MonitorSummary(samples=11, valid=False, hidden_bottlenecks=[CPU])

    def abort(self) -> None:
        pass


class Notes:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.etas: list[str] = []  # each progress line's "rounds needed" part

    def emit(self, event: object) -> None:
        if isinstance(event, Note):
            self.notes.append(event.text)
        elif isinstance(event, RoundDone):
            self.etas.append(eta_text(event.forecast, event.budget))


def _engine(tmp_path: Path, values: np.ndarray, **cfg: object) -> tuple[Engine, Notes]:
    base: dict[str, object] = dict(
        monitor=False,
        min_rounds=8,
        session_limit=3600.0,
        max_rounds=3000,
        work_min=1.0,
        work_max=1.0,
        min_round_seconds=0.0,
        ci_perc=0.1,
    )
    base.update(cfg)
    config = SessionConfig.from_preset("quick", **base)
    workload = Series(values)
    spec = WorkloadSpec(name="w", kind="function", pis=workload.pi_specs())
    manifest = SessionManifest(config=config, workloads=[spec], cut="block:vda")
    journal = Journal.create(tmp_path / "res", manifest)
    notes = Notes()
    track = make_track(spec, workload, config, workload.pi_specs())
    monitor = HotCpu() if cfg.get("monitor") else None
    return Engine(journal, config, [track], progress=notes, monitor=monitor), notes


def test_every_judged_round_excluded_stops_at_nine_rounds(tmp_path: Path) -> None:
    engine, notes = _engine(tmp_path, np.full(50, 2.0), monitor=True)
    outcome = engine.run()
    assert outcome.stop_reason is StopReason.ALL_EXCLUDED
    assert len(engine.journal.records) == 9  # not max_rounds
    assert any("all 9 judged rounds were excluded" in n and CPU in n for n in notes.notes)


def test_a_runaway_with_a_fixed_work_amount_stops_with_its_best_estimate(tmp_path: Path) -> None:
    values = level_and_noise(3000, seed=0)
    engine, notes = _engine(tmp_path, values)
    outcome = engine.run()
    assert outcome.stop_reason is StopReason.RUNAWAY
    rounds = len(engine.journal.records)
    assert rounds < 1000  # not max_rounds (3000)
    assert engine.early_stop is not None and "cannot be lengthened" in engine.early_stop
    # while it ran away, the progress line said why no forecast, not "not known yet"
    pace = [e for e in notes.etas if "keep pace with the samples" in e]
    assert len(pace) > 100 and pace[-1].startswith("rounds needed: not known: bw needs about")
    engine.finalize()
    result = build_result(
        engine.journal,
        {t.name: t.analysis for t in engine.tracks},
        str(outcome.stop_reason),
        outcome.elapsed,
        notes=["stopped early: " + engine.early_stop],
    )
    v = result.verdict
    assert v is not None and v.reason is Reason.DEPENDENCE
    assert result.exit_code == ExitCode.LIMIT_REACHED
    assert result.status in (Status.LIMIT_REACHED, Status.INCOMPLETE)
    assert v.headline.startswith("stopped early") and "bw" in v.headline
    assert v.why is not None and "grow with the samples" in v.why
    assert result.workloads[0].pis["bw"].mean is not None  # the best estimate is kept


def test_a_runaway_first_lengthens_rounds_where_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lengthen (here straight to the largest work amount: twice the last round's), then stop;
    # called over a 2-fold growth from 50 samples, so
    # that it takes hundreds of rounds, not thousands (the thresholds are tested above)
    monkeypatch.setattr(early_stop, "GROWTH", 2.0)
    monkeypatch.setattr(early_stop, "MIN_SAMPLES", 50)
    values = level_and_noise(6000, seed=0)
    engine, notes = _engine(tmp_path, values, work_min=1.0, work_max=1024.0, max_rounds=2000)
    outcome = engine.run()
    lengthened = [n for n in notes.notes if "rounds lengthened" in n]
    assert lengthened, notes.notes
    assert engine.tracks[0].planner.a == 1024.0
    assert outcome.stop_reason is StopReason.RUNAWAY
    assert engine.early_stop is not None and "even after lengthening" in engine.early_stop
    assert len(lengthened) == 1 and len(engine.journal.records) < 2000
    later = [r.work_amount for r in engine.journal.records[-20:]]
    assert min(later) == 1024.0  # every round since is the longest allowed


def test_the_verdict_of_an_all_excluded_stop_shows_the_excluded_rounds_own_estimate(
    tmp_path: Path,
) -> None:
    root = make_session(tmp_path / "s", rounds=12, hidden=True, stop_reason=StopReason.ALL_EXCLUDED)
    result = rebuild(root, plots=False, html=False)
    v = result.verdict
    assert v is not None and v.status is Status.INVALID and v.reason is Reason.TOO_MANY_EXCLUDED
    assert "stopped early" in v.headline
    assert v.excluded_estimate is not None and v.excluded_estimate.startswith("bw ")
    assert "over 10 excluded rounds" in v.excluded_estimate
    assert any("own estimate (not a result)" in line for line in v.lines())


@pytest.mark.live
def test_a_real_command_whose_readings_run_away_stops_early(tmp_path: Path) -> None:
    """Through the CLI: each round a shell prints the next value of the wandering series (one
    reading a round, a fixed work amount); the session stops early with reason dependence
    and exit 4 instead of spending its limit."""
    series = tmp_path / "series.txt"
    series.write_text("\n".join(f"{v:.6f}" for v in level_and_noise(3000, seed=0)) + "\n")
    (tmp_path / "n").write_text("1\n")
    script = 'n=$(cat n); echo $((n + 1)) > n; sed -n "${n}p" series.txt'
    out = tmp_path / "res"
    done = run_cli(
        "run", "--preset", "quick", "--ci-perc", "10%", "-s", "300", "--no-monitor", "--no-plots",
        "--parser", "lines", "-o", str(out), "--", "sh", "-c", f"cd {tmp_path} && {script}",
    )  # fmt: skip
    result = json.loads((out / "result.json").read_text())
    assert done.returncode == ExitCode.LIMIT_REACHED, done.stdout + done.stderr
    assert result["verdict"]["reason"] == "dependence"
    assert result["stop_reason"] == str(StopReason.RUNAWAY)
    assert result["workloads"][0]["rounds"]["total"] < 1000
    assert "stopped early" in done.stdout and "grow with the samples" in done.stdout
