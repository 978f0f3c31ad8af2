"""The round loop and its stop rules, with in-process simulated workloads (fast, deterministic)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from pilot_sys.errors import ExitCode, WorkloadFailed
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.engine import Engine, make_track
from pilot_sys.session.interleave import compare_results
from pilot_sys.session.journal import Journal, WorkloadSpec
from pilot_sys.session.result import PIResult, Status, load_result
from pilot_sys.session.session import Session
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput


class Sim:
    """Readings ~ N(mean, sd); optionally unit readings with a warm-up; optionally WPS timing."""

    def __init__(
        self,
        name: str = "sim",
        mean: float = 100.0,
        sd: float = 1.0,
        seed: int = 0,
        units: int = 0,
        warmup: int = 0,
        fail_at: int | None = None,
        sleep: float = 0.0,
        alpha: float | None = None,
        v: float | None = None,
    ) -> None:
        self.name, self.mean, self.sd = name, mean, sd
        self.rng = np.random.default_rng(seed)
        self.units, self.warmup, self.fail_at, self.sleep = units, warmup, fail_at, sleep
        self.alpha, self.v = alpha, v
        self.calls = 0

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="value", unit="s", pi_type=PIType.ARITHMETIC, higher_is_better=True)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            raise WorkloadFailed(f"{self.name}: exited with code 1 (accepted: 0): boom")
        if self.sleep:
            time.sleep(self.sleep)
        units: dict[str, np.ndarray] = {}
        if self.units:
            u = self.mean + self.sd * self.rng.standard_normal(self.units)
            u[: self.warmup] *= 0.5  # warm-up at half speed
            units["value"] = u
        duration = 0.01
        if self.alpha is not None and self.v is not None:
            duration = self.alpha + work_amount / self.v * (1 + 0.01 * self.rng.standard_normal())
        reading = float(self.mean + self.sd * self.rng.standard_normal())
        return RoundOutput(
            work_amount=work_amount,
            duration=duration,
            readings={"value": reading},
            unit_readings=units,
            work_done=None,
        )

    def data_path_args(self) -> list[str]:
        return []


def _session(tmp_path: Path, workloads: list[Sim], **cfg: object) -> Session:
    base: dict[str, object] = dict(
        monitor=False,
        min_rounds=3,
        session_limit=30.0,
        work_min=1.0,
        work_max=1.0,
        min_round_seconds=0.0,
    )
    base.update(cfg)
    config = SessionConfig.from_preset("normal", **base)
    specs = [WorkloadSpec(name=w.name, kind="function", pis=w.pi_specs()) for w in workloads]
    return Session.create(tmp_path / "res", config, specs, workloads, ["test"])  # type: ignore[arg-type]


@pytest.mark.live
def test_stops_when_the_target_is_met(tmp_path: Path) -> None:
    s = _session(tmp_path, [Sim(sd=1.0)], ci_perc=0.05)
    result = s.run()
    assert result.status is Status.VALID and result.exit_code == ExitCode.OK
    pi = result.workloads[0].pis["value"]
    assert pi.ci_reached and pi.ci_width_rel is not None and pi.ci_width_rel <= 0.05
    assert pi.ci_low is not None and pi.ci_high is not None and pi.ci_low < 100 < pi.ci_high
    # it stopped at the first analysis that met the target: one round fewer would not have
    n = result.workloads[0].rounds.analysed
    assert n == len(s.journal.records) and n >= 8  # the stats module needs 8 subsessions
    assert load_result(s.journal.root).workloads[0].pis["value"].mean == pytest.approx(pi.mean)


@pytest.mark.live
def test_session_limit(tmp_path: Path) -> None:
    s = _session(tmp_path, [Sim(sd=80.0, sleep=0.02)], ci_perc=0.001, session_limit=0.6)
    t0 = time.monotonic()
    result = s.run()
    assert time.monotonic() - t0 < 5
    assert result.status is Status.LIMIT_REACHED and result.exit_code == ExitCode.LIMIT_REACHED
    assert "time limit" in result.stop_reason
    assert 3 <= len(s.journal.records) <= 40


@pytest.mark.live
def test_max_rounds(tmp_path: Path) -> None:
    s = _session(tmp_path, [Sim(sd=80.0)], ci_perc=0.001, max_rounds=10)
    result = s.run()
    assert len(s.journal.records) == 10
    assert (
        result.status is Status.LIMIT_REACHED and result.workloads[0].pis["value"].mean is not None
    )
    # too few rounds for any interval (the stats need 8): incomplete, same exit code
    few = _session(tmp_path / "few", [Sim(sd=80.0)], ci_perc=0.001, max_rounds=5).run()
    assert few.status is Status.INCOMPLETE and few.exit_code == ExitCode.LIMIT_REACHED


@pytest.mark.live
def test_a_workload_failing_at_round_3_keeps_rounds_1_and_2(tmp_path: Path) -> None:
    s = _session(tmp_path, [Sim(fail_at=3)], ci_perc=0.001)
    result = s.run()
    assert result.status is Status.WORKLOAD_FAILED and result.exit_code == ExitCode.WORKLOAD_FAILED
    recs = Journal.open(s.journal.root, repair=False).records
    assert [r.index for r in recs] == [1, 2, 3]
    assert [r.failed for r in recs] == [False, False, True]
    assert "boom" in (recs[2].failure or "")
    assert result.workloads[0].rounds.failed == 1
    assert any("boom" in n for n in result.notes)


@pytest.mark.live
def test_resume_continues_the_numbering_and_the_plan(tmp_path: Path) -> None:
    s = _session(tmp_path, [Sim(sd=80.0)], ci_perc=0.001, max_rounds=4, work_min=0.0, work_max=64.0)
    s.run()
    first = [r.work_amount for r in s.journal.records]
    journal = Journal.open(s.journal.root)
    assert journal.manifest is not None
    cfg = journal.manifest.config.model_copy(update={"max_rounds": 9})
    wl = Sim(sd=80.0, seed=1)
    engine = Engine(
        journal, cfg, [make_track(journal.manifest.workloads[0], wl, cfg, wl.pi_specs())]
    )
    engine.replay()
    track = engine.tracks[0]
    assert track.rounds == 4 and track.planner.last_work == first[-1]
    engine.run()
    journal.unlock()
    again = Journal.open(s.journal.root, repair=False)
    assert [r.index for r in again.records] == list(range(1, 10))
    assert [r.workload_round for r in again.records] == list(range(1, 10))
    assert [r.work_amount for r in again.records[:4]] == first


@pytest.mark.live
def test_edm_removes_the_warm_up_of_every_round(tmp_path: Path) -> None:
    s = _session(tmp_path, [Sim(units=400, warmup=80, sd=2.0)], ci_perc=0.02)
    result = s.run()
    pi = result.workloads[0].pis["value"]
    assert pi.source == "unit_readings"
    edm = next(r for r in pi.removed if r.method == "edm")
    rounds = result.workloads[0].rounds.analysed
    # about 80 warm-up readings per round go; the stable level (100) is what remains
    assert edm.samples_removed == pytest.approx(80 * rounds, rel=0.15)
    assert pi.mean == pytest.approx(100, rel=0.01)
    assert (
        pi.ci_low is not None
        and pi.ci_high is not None
        and pi.ci_low <= 100.5
        and pi.ci_high >= 99.5
    )


@pytest.mark.live
def test_wps_fit_recovers_alpha_and_v(tmp_path: Path) -> None:
    """Durations t = 0.2 s + w / 1000: v's CI holds 1000 and the alpha bound is in work units."""
    s = _session(
        tmp_path,
        [Sim(alpha=0.2, v=1000.0, sd=0.5)],
        work_min=10.0,
        work_max=5000.0,
        ci_perc=0.02,
        min_rounds=12,
        max_rounds=60,
        first_result_seconds=5.0,
        max_round_seconds=10.0,
    )
    result = s.run()
    w = result.workloads[0]
    assert w.wps is not None and w.wps.v is not None
    assert w.wps.v_ci_low is not None and w.wps.v_ci_high is not None
    assert w.wps.v_ci_low <= 1000 <= w.wps.v_ci_high
    assert w.wps.alpha == pytest.approx(0.2, abs=0.05)
    # smallest useful work = v alpha (1 - 0.1) / 0.1 = 1800 work units, compared with work amounts
    assert w.wps.alpha_work_amount == pytest.approx(1800, rel=0.2)
    assert w.work_range[0] >= 0.8 * 1800
    assert w.rounds.below_alpha > 0  # the early, short rounds are not analysed
    assert w.pis["wps"].gates_stop is True  # readings-only workload: WPS is its non-stable removal


@pytest.mark.live
def test_interleaved_rounds_rank_and_separate(tmp_path: Path) -> None:
    a, b = Sim(name="a", mean=100.0, sd=2.0, seed=3), Sim(name="b", mean=104.0, sd=2.0, seed=4)
    from pilot_sys.session.interleave import compare_analyses

    config_kw = dict(ci_perc=0.05, compare_p_threshold=0.01)
    s = _session(tmp_path, [a, b], **config_kw)
    s.extra_stop = lambda tracks: bool(
        (c := compare_analyses({t.name: t.analysis for t in tracks}, s.manifest.config))
        and c.all_separated
    )
    s.comparison = lambda tracks: compare_analyses(
        {t.name: t.analysis for t in tracks}, s.manifest.config
    )
    result = s.run()
    assert result.status is Status.VALID
    order = [r.workload for r in s.journal.records]
    assert order[:4] == ["a", "b", "a", "b"]  # seeds/002 Fig. 6
    assert result.comparison is not None and result.comparison.ranking == ["b", "a"]
    pair = result.comparison.pairs[0]
    assert pair.separated and pair.difference == pytest.approx(4, abs=2)


def test_welch_p_value_matches_scipy() -> None:
    def pi(mean: float, var: float, k: int) -> PIResult:
        half = 2.0 * np.sqrt(var / k)
        return PIResult(
            name="x",
            unit="s",
            source="readings",
            mean=mean,
            ci_low=mean - half,
            ci_high=mean + half,
            target=0.1,
            subsession_variance=var,
            subsession_count=k,
            pi_type="arithmetic",
        )

    results = {"slow": pi(10.0, 4.0, 12), "fast": pi(11.0, 9.0, 20)}
    cmp_ = compare_results(results, 0.95, 0.01, "x")
    assert cmp_ is not None and cmp_.ranking == ["fast", "slow"]
    ref = sps.ttest_ind_from_stats(11.0, 3.0, 20, 10.0, 2.0, 12, equal_var=False)
    assert cmp_.pairs[0].p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert cmp_.pairs[0].cis_overlap is True
    assert cmp_.pairs[0].separated is bool(ref.pvalue < 0.01)
    # far apart: no overlap, separated whatever the p-value
    results["fast"] = pi(30.0, 1.0, 20)
    far = compare_results(results, 0.95, 0.01, "x")
    assert far is not None and far.pairs[0].cis_overlap is False and far.all_separated


class FewWindows(Sim):
    """Unit readings whose count follows the round's speed: slow rounds log more windows."""

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        super().run_round(work_amount, round_dir)  # counts the call; its output is replaced
        fast = self.calls % 2 == 0
        n = 3 if fast else 40
        level = 200.0 if fast else 100.0
        units = level + self.rng.standard_normal(n)
        return RoundOutput(
            work_amount=work_amount,
            duration=0.01,
            readings={"value": level},
            unit_readings={"value": units},
        )


@pytest.mark.live
def test_unit_readings_only_when_every_round_has_enough(tmp_path: Path) -> None:
    """Taking units only from the rounds that logged many would keep only the slow ones."""
    s = _session(tmp_path, [FewWindows()], ci_perc=0.5, max_rounds=12)
    result = s.run()
    pi = result.workloads[0].pis["value"]
    assert pi.source == "readings"
    assert any("unit readings not used: 6 of 12" in w for w in pi.warnings)
    assert pi.mean == pytest.approx(150, rel=0.01)  # both kinds of round count alike


class Crashes(Sim):
    """Round 1 works, round 2 raises: a bug in an in-process benchmark."""

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        if self.calls == 1:
            raise ValueError("division by zero in the benchmark")
        return super().run_round(work_amount, round_dir)


@pytest.mark.live
def test_an_in_process_workload_that_crashes_is_a_failed_round(tmp_path: Path) -> None:
    s = _session(tmp_path, [Crashes()], ci_perc=0.001)
    result = s.run()
    assert result.status is Status.WORKLOAD_FAILED
    assert [r.failed for r in s.journal.records] == [False, True]
    assert s.journal.records[-1].failure == "sim: ValueError: division by zero in the benchmark"


class Windows(Sim):
    """fio-like: rates over equal 20 ms windows alternating 100 and 300
    (total work / time = 200)."""

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="bw", unit="B/s", pi_type=PIType.HARMONIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        self.calls += 1
        rates = np.tile([100.0, 300.0], 50) * (1 + 0.01 * self.rng.standard_normal(100))
        times = 0.02 * np.arange(1, 101)
        return RoundOutput(
            work_amount=work_amount,
            duration=2.0,
            readings={"bw": 200.0},
            unit_readings={"bw": rates},
            unit_timestamps={"bw": times},
        )


@pytest.mark.live
def test_equal_time_windows_average_to_total_work_over_time(tmp_path: Path) -> None:
    from pilot_sys.session.analysis import equal_time_windows

    assert equal_time_windows(0.02 * np.arange(1, 50))
    assert not equal_time_windows(np.cumsum(np.tile([0.01, 0.03], 20)))  # equal work at two speeds
    result = _session(tmp_path, [Windows()], ci_perc=0.05).run()
    pi = result.workloads[0].pis["bw"]
    assert pi.source == "unit_readings" and pi.pi_type == "arithmetic"
    assert pi.mean == pytest.approx(200, rel=0.02)  # the harmonic mean would say 150
    assert pi.readings_in_ci is True


@pytest.mark.live
def test_targets_met_only_at_the_final_analysis_is_a_valid_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit stops the rounds before a paced analysis sees the last ones; the final analysis
    meets every target: the result is valid (exit 0), and the stop reason says how it ended."""
    import pilot_sys.session.engine as engine_module

    # analyse once, then only at the end
    monkeypatch.setattr(engine_module, "analysis_step", lambda *args, **kwargs: 10_000)
    s = _session(tmp_path, [Sim(sd=1.0)], ci_perc=0.05, min_rounds=8, max_rounds=150)
    result = s.run()
    pi = result.workloads[0].pis["value"]
    assert result.workloads[0].rounds.total == 150  # the limit stopped the rounds
    assert pi.ci_reached
    assert result.status is Status.VALID and result.exit_code == ExitCode.OK
    assert result.stop_reason == "every CI target met at the final analysis (the limit came first)"
    # the same on a workload whose 150 rounds cannot meet the target: still limit_reached
    s = _session(tmp_path / "b", [Sim(sd=30.0)], ci_perc=0.05, min_rounds=8, max_rounds=150)
    result = s.run()
    assert not result.workloads[0].pis["value"].ci_reached
    assert result.status is Status.LIMIT_REACHED and result.exit_code == ExitCode.LIMIT_REACHED


@pytest.mark.live
def test_a_stop_on_met_targets_is_confirmed_on_the_latest_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An analysis paced some rounds back may still say "met" after the rounds since have undone
    it (an interleaved comparison once stopped as valid and then reported a PI without a CI):
    the stop must be decided on an analysis of every round."""
    from concurrent.futures import ThreadPoolExecutor

    import pilot_sys.session.engine as engine_module
    from pilot_sys.session.journal import SyncBatch

    s = _session(tmp_path, [Sim(sd=1.0)], ci_perc=0.05)
    assert s.run().status is Status.VALID
    s.journal.unlock()
    journal = Journal.open(s.journal.root)
    assert journal.manifest is not None
    cfg = journal.manifest.config.model_copy(update={"max_rounds": 10_000, "session_limit": None})
    # no paced analysis
    monkeypatch.setattr(engine_module, "analysis_step", lambda *args, **kwargs: 10_000)
    wild = Sim(sd=400.0, seed=3)
    engine = Engine(
        journal, cfg, [make_track(journal.manifest.workloads[0], wild, cfg, wild.pi_specs())]
    )
    engine.replay()
    assert engine.targets_met()
    track = engine.tracks[0]
    engine._batch = SyncBatch(ThreadPoolExecutor(max_workers=1))
    engine._workload_end, engine._excluded = None, 0.0  # what run() sets up before its first round
    for _ in range(60):
        engine._one_round(track, time.monotonic())
        engine._batch.wait()
    assert track.analysed_index < journal.records[-1].index
    assert engine.targets_met()  # the stale analysis still says so
    assert engine._should_stop(0.0) is None  # but the confirmed one does not
    assert not engine.targets_met() and track.analysed_index == journal.records[-1].index
    journal.unlock()


class BytesSim(Sim):
    """A Sim whose rounds report the bytes they moved (4 KiB per work unit), as fio and dd do."""

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        out = super().run_round(work_amount, round_dir)
        return out.model_copy(update={"work_done": work_amount * 4096.0})


@pytest.mark.live
def test_the_planner_predicts_in_work_amount_units_when_rounds_report_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The WPS fit's v is in bytes per second here; the planner caps work *amounts*, so it must
    get v / 4096 (about 1000 work units per second), not v."""
    from pilot_sys.session.planner import Planner

    rates: list[float | None] = []
    real = Planner.set_rate
    monkeypatch.setattr(Planner, "set_rate", lambda self, r: (rates.append(r), real(self, r))[1])
    s = _session(
        tmp_path,
        [BytesSim(alpha=0.05, v=1000.0, sd=0.5)],
        work_min=10.0,
        work_max=5000.0,
        ci_perc=0.02,
        min_rounds=12,
        max_rounds=40,
        first_result_seconds=5.0,
        max_round_seconds=10.0,
    )
    result = s.run()
    w = result.workloads[0]
    assert w.wps is not None and w.wps.v is not None
    assert w.wps.v == pytest.approx(4096.0 * 1000.0, rel=0.1)  # bytes per second
    given = [r for r in rates if r is not None]
    # work units per second: every fit within 2x (bytes would be 4096x), the last within 5 %
    assert given and all(500.0 < r < 2000.0 for r in given), given
    assert given[-1] == pytest.approx(1000.0, rel=0.05)
