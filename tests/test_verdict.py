"""One verdict, rendered the same everywhere: the live warnings, the summary, result.json,
report.md and the exit code agree on which rounds were excluded for a hidden bottleneck, whether
the session is invalid and which component governs.

The sessions run in process: simulated readings, and a monitor that writes real traces (CPU hot
in chosen rounds) judged by the real bottleneck detector, as ``session.monitoring`` does."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.cli.present.progress import PlainProgress, QuietProgress, eta_text, pi_line
from pilot_sys.cli.present.summary import quiet_lines, summary_lines
from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.report.markdown import render
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.engine import Engine, make_track
from pilot_sys.session.journal import (
    MONITOR_FILE,
    Invocation,
    Journal,
    MonitorSummary,
    RoundRecord,
    SessionManifest,
    SyncBatch,
    WorkloadSpec,
)
from pilot_sys.session.progress import Budget, Forecast, RoundExcluded
from pilot_sys.session.result import (
    BottleneckSection,
    DriftingAverage,
    ExcludedRound,
    PIResult,
    Reason,
    RoundCounts,
    SessionResult,
    Status,
    StopReason,
    WorkloadResult,
    load_result,
)
from pilot_sys.session.summary import KILLED, analyse_journal, build_result, session_seconds
from pilot_sys.session.verdict import decide, estimate_text, needs_text, verdict_of
from pilot_sys.workload.base import PISpec, PIType, RoundOutput

TWO_CORES = {"value": 2.0, "unit": "cores", "source": "sysfs", "detail": "2 online CPUs"}
DISK = {"value": 1e9, "unit": "B/s", "source": "test", "detail": "rated"}


class Sim:
    """30 unit readings a round ~ N(100, sd): a target of ± 5 % is met after the minimum rounds."""

    name = "sim"

    def __init__(self, sd: float = 1.0, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.sd = sd

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="value", unit="B/s", pi_type=PIType.ARITHMETIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        units = 100 + self.sd * self.rng.standard_normal(30)
        return RoundOutput(
            work_amount=work_amount,
            duration=0.01,
            readings={"value": float(units.mean())},
            unit_readings={"value": units},
        )

    def data_path_args(self) -> list[str]:
        return []


class HotMonitor:
    """Writes a trace per round: ``samples`` samples, cpu:host at 95 % in the ``hot`` rounds
    (30 % otherwise), the CUT block:vda at ``cut_level`` of its limit; judged by ``assess``."""

    def __init__(
        self,
        hot: set[int],
        samples: int = 21,
        cut_level: float = 0.5,
        cut: str | None = "block:vda",
    ) -> None:
        self.hot, self.samples, self.cut_level, self.cut = hot, samples, cut_level, cut
        self.round = 0

    def start(self) -> None:
        self.round += 1

    def stop(self, round_dir: Path, batch: SyncBatch | None = None) -> MonitorSummary:
        n = self.samples
        cpu = 0.95 if self.round in self.hot else 0.3
        trace = MonitorTrace(
            rate_hz=10.0,
            start_time=time.time(),
            timestamps=[0.1 * i for i in range(n)],
            series={
                "cpu:host/util_compute": [None] + [cpu] * (n - 1),
                "block:vda/util_write": [None] + [self.cut_level] * (n - 1),
            },
            limits={"cpu:host/compute": TWO_CORES, "block:vda/write": DISK},
            component_under_test=self.cut,
        )
        verdict = assess(trace)
        trace.verdict = verdict.model_dump(mode="json")
        round_dir.mkdir(parents=True, exist_ok=True)
        (round_dir / MONITOR_FILE).write_text(trace.model_dump_json())
        return MonitorSummary(
            file=MONITOR_FILE,
            samples=n,
            valid=verdict.valid,
            hidden_bottlenecks=[
                f"{h.component} ({h.direction})" for h in verdict.hidden_bottlenecks
            ],
        )

    def abort(self) -> None:
        return None


OUTPUT: list[str] = []  # what the last ``run`` printed


def run(
    tmp_path: Path,
    monitor: HotMonitor,
    rounds: int = 20,
    stop: StopReason | None = None,
    **cfg: object,
) -> tuple[SessionResult, list[str], Journal]:
    """``rounds`` rounds under ``monitor``; the result, the warnings printed, the journal."""
    base: dict[str, object] = dict(
        monitor=True,
        min_rounds=8,
        session_limit=None,
        work_min=1.0,
        work_max=1.0,
        min_round_seconds=0.0,
        max_rounds=rounds,
        ci_perc=0.1,
        cut="block:vda",
    )
    base.update(cfg)
    config = SessionConfig.from_preset("normal", **base)
    workload = Sim()
    spec = WorkloadSpec(name="sim", kind="function", pis=workload.pi_specs())
    journal = Journal.create(tmp_path / "res", SessionManifest(config=config, workloads=[spec]))
    stream = io.StringIO()
    engine = Engine(
        journal,
        config,
        [make_track(spec, workload, config, workload.pi_specs())],  # type: ignore[arg-type]
        progress=PlainProgress(stream),
        monitor=monitor,
    )
    outcome = engine.run()
    engine.finalize()
    journal.unlock()
    reason = outcome.stop_reason
    if reason is StopReason.MAX_ROUNDS and engine.targets_met():  # as Session.run does
        reason = StopReason.TARGETS_MET_AT_END
    result = build_result(
        journal, {t.name: t.analysis for t in engine.tracks}, str(stop or reason), outcome.elapsed
    )
    OUTPUT[:] = stream.getvalue().splitlines()
    warnings = [line for line in OUTPUT if "WARNING" in line]
    return result, warnings, journal


def test_without_a_cut_no_round_is_excluded(tmp_path: Path) -> None:
    """A hot CPU may be what a CPU benchmark exercises: without a CUT no round is excluded, a
    note says so once, and the session's verdict over all rounds still names the component."""
    result, warnings, _ = run(
        tmp_path, HotMonitor(hot={2, 4, 6}, cut=None), ci_perc=0.0001, cut=None
    )
    v = result.verdict
    assert v is not None and warnings == [] and v.excluded_rounds == []
    assert result.workloads[0].rounds.excluded == 0 and result.workloads[0].rounds.analysed == 20
    assert result.bottleneck.rounds_invalid == []
    notes = [line for line in OUTPUT if "no component under test is known" in line]
    assert notes == [
        "pilot-sys: round 2 saw cpu:host (compute) above 80 %, but no component under "
        "test is known, so no round is excluded for it: name one with --cut"
    ]


def test_quiet_lists_no_excluded_round() -> None:
    stream = io.StringIO()
    event = RoundExcluded(ExcludedRound(index=3, workload="w", text="round 3 excluded"))
    QuietProgress(stream).emit(event)
    assert stream.getvalue() == ""


def excluded_in_warnings(warnings: list[str]) -> list[int]:
    return [int(w.split("round ")[1].split(" ")[0]) for w in warnings if " excluded: " in w]


def test_two_hot_rounds_are_excluded_and_every_output_says_so(tmp_path: Path) -> None:
    result, warnings, journal = run(tmp_path, HotMonitor(hot={3, 5}))
    n = len(journal.records)  # the targets are met after 8 included rounds or more
    assert n >= 10
    # the live warnings: one per excluded round, with the component and its mean utilization
    hot = "hidden bottleneck at cpu:host (compute): above 80 % for 100 % of the round (mean 95 %)"
    assert warnings == [
        f"pilot-sys: WARNING: round 3 excluded: {hot}",
        f"pilot-sys: WARNING: round 5 excluded: {hot}",
    ]
    v = result.verdict
    assert v is not None
    # result.json: the same rounds, counted; the included rounds decide the status
    assert [e.index for e in v.excluded_rounds] == excluded_in_warnings(warnings) == [3, 5]
    assert result.workloads[0].rounds.excluded == 2 and result.workloads[0].rounds.analysed == n - 2
    assert result.bottleneck.rounds_invalid == [3, 5]
    assert (
        result.status is Status.VALID and v.reason is Reason.TARGETS_MET and result.exit_code == 0
    )
    # -q prints no line per round; its headline counts them
    assert v.headline.startswith(
        f"valid: every CI target met over {n - 2} analysed rounds (2 excluded for a hidden "
        "bottleneck at cpu:host (compute)); value "
    )
    assert quiet_lines(result)[1] == v.headline
    # the summary: never a bare "passed" after a warning; the excluded line names the same rounds
    lines = summary_lines(result)
    assert (
        f"excluded: 2 of {n} judged rounds excluded (rounds 3, 5): hidden bottleneck at "
        "cpu:host (compute)"
    ) in lines
    assert (
        f"bottleneck check: passed over the {n - 2} included rounds taken together "
        "(component under test: block:vda)"
    ) in lines
    assert f"sim: {n} rounds, {n - 2} analysed, 2 excluded" in lines
    # report.md: the same two rounds, listed once each in the verdict and as excluded rounds
    md = render(result, {})
    assert md.count(f"excluded: {hot}") == 2
    assert (
        "Rounds excluded on their own verdict (a hidden bottleneck over enough samples to "
        "judge): 3, 5" in md
    )


def test_more_than_half_excluded_makes_the_session_invalid(tmp_path: Path) -> None:
    hot = set(range(2, 13))  # 11 of 20; round 1 is included, so no early stop
    result, warnings, _ = run(tmp_path, HotMonitor(hot=hot), ci_perc=0.0001)
    assert len(warnings) == 11
    v = result.verdict
    assert v is not None and result.status is Status.INVALID and result.exit_code == 3
    assert v.reason is Reason.TOO_MANY_EXCLUDED and v.governing == "cpu:host"
    assert v.headline.startswith(
        "INVALID: 11 of 20 judged rounds were excluded for a hidden bottleneck "
        "at cpu:host (compute), more than half"
    )
    # the included rounds alone pass: the invalidity comes from the share, and both are said
    assert result.bottleneck.valid is True
    lines = summary_lines(result)
    assert (
        lines[1] == v.headline
        and "excluded: 11 of 20 judged rounds excluded (rounds 2-12): "
        "hidden bottleneck at cpu:host (compute)"
        in lines
    )
    assert quiet_lines(result)[1] == v.headline


def test_every_round_excluded_names_what_governed_them_taken_together(tmp_path: Path) -> None:
    """No round is left to judge together: the excluded rounds are, so the bottleneck check and
    result.json name the hot component with its evidence instead of 'not done'. Nine judged
    rounds, all excluded, are enough to be sure (``early_stop``): the session stops there."""
    result, warnings, _ = run(tmp_path, HotMonitor(hot=set(range(1, 11))), rounds=10)
    v = result.verdict
    assert v is not None and len(warnings) == 10
    assert sum("excluded: hidden bottleneck" in w for w in warnings) == 9
    assert "all 9 judged rounds were excluded" in warnings[-1]
    assert result.stop_reason == StopReason.ALL_EXCLUDED
    assert result.status is Status.INVALID and v.reason is Reason.TOO_MANY_EXCLUDED
    assert result.bottleneck.hidden_bottlenecks == ["cpu:host (compute)"]
    assert result.bottleneck.detail["judged_over"] == "excluded rounds"
    assert "cpu:host (compute)" in result.bottleneck.detail["evidence"]
    assert v.bottleneck == (
        "bottleneck check: FAILED over the 9 excluded rounds taken together (none was "
        "included): hidden bottleneck at cpu:host (compute) (component under test: block:vda)"
    )
    assert v.next_step is not None and v.next_step.startswith("run on a quieter host")


def test_short_rounds_are_judged_together_not_one_by_one(tmp_path: Path) -> None:
    # 3 samples a round: too few to judge alone; CPU hot all along: no round is excluded, no
    # warning printed, and the rounds taken together make the session invalid
    result, warnings, _ = run(
        tmp_path, HotMonitor(hot=set(range(1, 21)), samples=3), ci_perc=0.0001
    )
    assert warnings == []
    v = result.verdict
    assert v is not None and v.excluded_rounds == [] and v.judged_rounds == 0
    assert result.status is Status.INVALID and v.reason is Reason.HIDDEN_BOTTLENECK
    assert result.bottleneck.rounds_invalid == [] and result.bottleneck.rounds_unjudged == list(
        range(1, 21)
    )
    md = render(result, {})
    assert (
        "Rounds excluded on their own verdict" not in md
    )  # 20 rounds, 0 warnings: none listed as excluded
    assert "too short to judge on their own (not excluded; judged together above): 1-20" in md
    assert (
        "bottleneck check: FAILED over the 20 included rounds taken together: hidden bottleneck at "
        "cpu:host (compute) (component under test: block:vda)"
    ) in summary_lines(result)


def test_a_saturated_cut_beside_a_hidden_bottleneck_says_which_governs(tmp_path: Path) -> None:
    result, _, _ = run(
        tmp_path, HotMonitor(hot=set(range(1, 21)), samples=3, cut_level=0.97), ci_perc=0.0001
    )
    v = result.verdict
    assert v is not None and v.cut_saturated and v.governing == "cpu:host"
    governs = (
        "CUT block:vda: saturated, but the hidden bottleneck governs the verdict: the number may "
        "be cpu:host's limit, not block:vda's"
    )
    assert v.governs == governs
    assert governs in summary_lines(result) and governs in render(result, {})


def test_interrupted_sessions_still_print_the_bottleneck_line(tmp_path: Path) -> None:
    """Issue 15 item 7: the status stays interrupted (exit 130), the bottleneck line is there."""
    result, _, _ = run(
        tmp_path,
        HotMonitor(hot=set(range(1, 21)), samples=3),
        rounds=12,
        stop=StopReason.INTERRUPTED,
        ci_perc=0.0001,
    )
    assert result.status is Status.INTERRUPTED and result.exit_code == 130
    lines = summary_lines(result)
    assert any(
        line.startswith("bottleneck check: FAILED over the 12 included rounds") for line in lines
    )
    assert lines[1].startswith("interrupted after 12 rounds (all kept); so far: value ")
    assert result.verdict is not None and result.verdict.next_step is not None
    assert "--resume" in result.verdict.next_step


def test_the_verdict_is_stored_in_result_json(tmp_path: Path) -> None:
    result, _, journal = run(tmp_path, HotMonitor(hot={3}))
    from pilot_sys.session.result import save_result

    save_result(result, journal.root)
    raw = json.loads((journal.root / "result.json").read_text())
    assert raw["verdict"]["status"] == raw["status"] == "valid"
    assert raw["verdict"]["excluded_rounds"][0]["text"] == (
        "round 3 excluded: hidden bottleneck at cpu:host (compute): above 80 % for 100 % of "
        "the round (mean 95 %)"
    )
    assert load_result(journal.root).verdict == result.verdict


@pytest.mark.parametrize(("hot", "invalid"), [(10, False), (11, True)])
def test_exactly_half_is_not_more_than_half(tmp_path: Path, hot: int, invalid: bool) -> None:
    # round 1 included: no early stop for a streak of excluded rounds
    result, _, _ = run(
        tmp_path, HotMonitor(hot=set(range(2, hot + 2))), rounds=20 + hot - 10, ci_perc=0.0001
    )
    assert result.verdict is not None and result.verdict.judged_rounds == 20 + hot - 10
    assert len(result.verdict.excluded_rounds) == hot
    assert (result.status is Status.INVALID) is invalid


# -- the words for one PI, the same wherever they are shown --------------------------------------
def _pi(**kw: object) -> PIResult:
    base: dict[str, object] = dict(
        name="bw",
        unit="B/s",
        source="unit_readings",
        mean=1.5e8,
        ci_low=1.2e8,
        ci_high=1.8e8,
        target=0.1,
        sample_size=400,
        ci_width_rel=0.4,
    )
    base.update(kw)
    return PIResult.model_validate(base)


def test_one_estimate_string_for_summary_report_and_plot_titles() -> None:
    # 1.5e8 B/s on a network is 1.20 Gbit/s; the half width 0.3e8 / 1.5e8 = 20 %
    assert (
        estimate_text(_pi(), network=True)
        == "1.20 Gbit/s ± 20.0 %, 95% CI [0.96 Gbit/s, 1.44 Gbit/s]"
    )
    none = _pi(
        ci_low=None, ci_high=None, ci_width_rel=None, required_sample_size=400, sample_size=12
    )
    assert estimate_text(none, network=True) == "1.20 Gbit/s so far, no interval yet"
    assert needs_text(none) == "needs about 400 samples (50 effective), has 12"
    # the live line says the same, in words a person reads (never "bw ? (n=12)")
    assert pi_line(none, network=True) == (
        "bw: 1.20 Gbit/s so far, no interval yet: needs about 400 samples (50 effective), has 12"
    )
    drift = none.model_copy(
        update={
            "drifting": DriftingAverage(
                ci_low=1.0e8,
                ci_high=2.0e8,
                rounds=12,
                reason="the round means drift (linear trend p = 0.003)",
            )
        }
    )
    assert estimate_text(drift) == (
        "143 MiB/s, 95% CI [95 MiB/s, 191 MiB/s] over 12 round means (the session's "
        "average over a drifting level, not a stable one)"
    )
    # a limit-reached result leads with that string in the summary, result.json and report.md
    w = WorkloadResult(
        name="w",
        command=["iperf3", "-c", "h"],
        pis={"bw": _pi()},
        rounds=RoundCounts(total=40, analysed=40),
    )
    result = SessionResult(
        status=Status.LIMIT_REACHED,
        exit_code=4,
        stop_reason=str(StopReason.SESSION_LIMIT),
        workloads=[w],
        config={"preset": "quick", "ci_perc": 0.1, "min_rounds": 8},
        bottleneck=BottleneckSection(monitored=True, valid=True, cut="nic:lo"),
    )
    v = verdict_of(result)
    headline = (
        "limit reached before the CI target; best estimate: bw 1.20 Gbit/s ± 20.0 %, "
        "95% CI [0.96 Gbit/s, 1.44 Gbit/s]"
    )
    assert v.headline == headline and v.reason is Reason.NOISE
    assert v.why is not None and v.why.startswith(
        "bw: the interval is ± 20.0 % for the target ± 5 %"
    )
    assert v.next_step == "use a longer -s or --preset normal"
    assert summary_lines(result)[1] == headline and f"**{headline}**" in render(result, {})


def test_why_a_target_was_missed_names_the_cause_and_one_thing_to_do() -> None:
    cfg = SessionConfig.from_preset("quick")
    cut = BottleneckSection(monitored=True, valid=True, cut="block:vda")

    def why(
        p: PIResult, analysed: int = 40, bsec: BottleneckSection = cut, **kw: object
    ) -> tuple[Reason, str, str]:
        w = WorkloadResult(
            name="w", pis={p.name: p}, rounds=RoundCounts(total=analysed, analysed=analysed)
        )
        v = decide(
            stop_reason=str(StopReason.SESSION_LIMIT),
            workloads=[w],
            bsec=bsec,
            excluded=[],
            judged_rounds=0,
            cfg=cfg,
            **kw,
        )  # type: ignore[arg-type]
        assert v.status is Status.LIMIT_REACHED and v.why is not None and v.next_step is not None
        return v.reason, v.why, v.next_step

    reason, text, todo = why(_pi(), needed_seconds=700.0, more_rounds=422)
    assert reason is Reason.NOISE and "about 422 more round(s) needed" in text
    assert (
        "at this rate it needs about 700 s in all" in text
        and todo == "use -s 900 or --preset normal"
    )
    reason, text, _ = why(_pi(), analysed=5)
    assert reason is Reason.TOO_FEW_ROUNDS and text.startswith(
        "only 5 round(s) could be analysed; a result needs at least 8"
    )
    drift = _pi(
        ci_low=None,
        ci_high=None,
        drifting=DriftingAverage(
            ci_low=1e8,
            ci_high=2e8,
            rounds=40,
            reason="the round means drift (linear trend p = 0.003)",
        ),
    )
    reason, text, todo = why(drift)
    assert (
        reason is Reason.DRIFT
        and "the round means drift (linear trend p = 0.003)" in text
        and "quieter host" in todo
    )
    busy = cut.model_copy(
        update={"detail": {"busy": {"cpu:host (compute)": 0.07}, "threshold": 0.8}}
    )
    reason, text, todo = why(_pi(), bsec=busy)
    assert (
        reason is Reason.BUSY_HOST
        and "cpu:host (compute) above 80 % for 7 % of the included rounds' time" in text
    )
    assert todo.startswith("run on a quieter host")


def test_the_eta_never_exceeds_the_limit_without_saying_so() -> None:
    budget = Budget(limit=30.0, used=25.0, preset="quick")
    assert eta_text(Forecast(3, 4.0), budget) == "~3 more round(s), ETA 4 s"
    assert eta_text(Forecast(422, 675.0), budget) == (
        "~422 more round(s): more than the 30 s limit allows; at this rate it needs about 700 s "
        "in all: use -s 900 or --preset normal"
    )
    assert (
        eta_text(Forecast(422, 675.0), Budget(limit=None, used=25.0))
        == "~422 more round(s), ETA 675 s"
    )


def test_alpha_and_its_bound_never_contradict(tmp_path: Path) -> None:
    """t = 0.256 s + w / 1000 over work amounts 10..100: alpha's CI is far above 0, so the report
    must not say it is not shown to be; the bound (2304) is above -w MAX, so it is not applied."""
    cfg = SessionConfig.from_preset("normal", work_min=10.0, work_max=100.0, monitor=False)
    ta = TrackAnalysis(config=cfg, pis=[PISpec(name="value", unit="s")], work_unit="items")
    rng = np.random.default_rng(1)
    recs = [
        RoundRecord(
            index=i + 1,
            workload="w",
            workload_round=i + 1,
            dir="",
            started_at=0.0,
            work_amount=w,
            duration=0.256 + w / 1000 * (1 + 0.01 * rng.standard_normal()),
            phase="test",
            readings={"value": 1.0},
        )
        for i, w in enumerate(np.linspace(10, 100, 30))
    ]
    ta.update(recs, lambda r: ({}, {}))
    assert ta.wps is not None and ta.wps.alpha_ci_low is not None and ta.wps.alpha_ci_low > 0.2
    assert ta.wps.alpha_bound == "above_range" and ta.alpha_work == 0.0
    w = WorkloadResult(name="w", work_unit="items", wps=ta.wps, pis=ta.results)
    md = render(
        SessionResult(
            status=Status.VALID, exit_code=0, stop_reason="every CI target met", workloads=[w]
        ),
        {},
    )
    assert "alpha = 256 ms, CI [" in md
    assert "not shown to be above 0" not in md and "above the largest work amount (-w MAX)" in md
    flat = ta.wps.model_copy(update={"alpha_ci_low": -0.01, "alpha_bound": "not_above_zero"})
    assert "alpha's CI reaches 0, so alpha is not shown to be above 0" in render(
        SessionResult(
            status=Status.VALID,
            exit_code=0,
            stop_reason="every CI target met",
            workloads=[w.model_copy(update={"wps": flat})],
        ),
        {},
    )


# -- session time ------------------------------------------------------------------------------
def test_session_time_counts_every_invocation_and_no_idle_gap(tmp_path: Path) -> None:
    """Issue 15 item 10: a killed invocation counts up to its last round; the hours between
    invocations do not; result.json gives that and the sum of round times separately."""
    config = SessionConfig.from_preset("normal", monitor=False, work_min=1.0, work_max=1.0)
    journal = Journal.create(
        tmp_path / "res",
        SessionManifest(config=config, workloads=[WorkloadSpec(name="w", kind="function")]),
    )
    assert journal.manifest is not None
    t0 = 1_000_000.0
    journal.manifest.invocations = [
        Invocation(started_at=t0, first_round=1),  # killed: no end
        Invocation(started_at=t0 + 3600, ended_at=t0 + 3600 + 10.0, first_round=3),
    ]
    for i, (start, dur) in enumerate([(t0 + 1, 2.0), (t0 + 4, 3.0), (t0 + 3601, 4.0)]):
        journal.records.append(
            RoundRecord(
                index=i + 1,
                workload="w",
                workload_round=i + 1,
                dir="",
                started_at=start,
                duration=dur,
                work_amount=1.0,
                phase="test",
            )
        )
    journal.unlock()
    assert session_seconds(journal) == pytest.approx(7.0 + 10.0)  # killed: up to round 2's end
    assert session_seconds(journal, current=12.5) == pytest.approx(7.0 + 12.5)
    result = build_result(journal, analyse_journal(journal), KILLED, session_seconds(journal))
    assert result.elapsed_seconds == pytest.approx(
        17.0
    ) and result.measured_seconds == pytest.approx(9.0)
    assert summary_lines(result)[0].endswith("17.0 s session time, 9.00 s of it in rounds")


def test_the_session_limit_counts_the_earlier_invocations(tmp_path: Path) -> None:
    config = SessionConfig.from_preset(
        "normal",
        monitor=False,
        work_min=1.0,
        work_max=1.0,
        session_limit=30.0,
        min_round_seconds=0.0,
    )
    workload = Sim()
    spec = WorkloadSpec(name="sim", kind="function", pis=workload.pi_specs())
    journal = Journal.create(tmp_path / "res", SessionManifest(config=config, workloads=[spec]))
    engine = Engine(
        journal,
        config,
        [make_track(spec, workload, config, workload.pi_specs())],  # type: ignore[arg-type]
        elapsed_before=30.5,
    )
    outcome = engine.run()
    journal.unlock()
    assert outcome.stop_reason is StopReason.SESSION_LIMIT and journal.records == []


@pytest.mark.live
def test_the_live_result_and_report_dir_count_the_same_session_time(tmp_path: Path) -> None:
    from pilot_sys.session.session import Session
    from pilot_sys.session.summary import offline_stop_reason

    config = SessionConfig.from_preset(
        "normal", monitor=False, work_min=1.0, work_max=1.0, min_round_seconds=0.0, max_rounds=12
    )
    workload = Sim()
    spec = WorkloadSpec(name="sim", kind="function", pis=workload.pi_specs())
    session = Session.create(tmp_path / "res", config, [spec], [workload], ["test"])  # type: ignore[list-item]
    result = session.run()
    journal = Journal.open(session.journal.root, repair=False)
    _, elapsed = offline_stop_reason(journal)
    assert elapsed == pytest.approx(result.elapsed_seconds, abs=1e-6)
    # the rounds' own times (simulated here: 10 ms each), not the wall clock
    assert result.measured_seconds == pytest.approx(0.01 * len(journal.records))


def test_a_kernel_limit_that_governs_is_to_be_lifted_not_quietened() -> None:
    from pilot_sys.session.verdict import _invalid_next_step

    assert _invalid_next_step("cgroup:/bench/io:vda").startswith(
        "raise or remove the limit cgroup:/bench/io:vda imposes"
    )
    assert _invalid_next_step("qdisc:eth0").startswith("raise or remove the limit qdisc:eth0")
    assert _invalid_next_step("cpu:host").startswith("run on a quieter host")


@pytest.mark.parametrize(("judged", "invalid"), [(1, False), (2, False), (3, True)])
def test_the_share_rule_needs_three_judged_rounds(judged: int, invalid: bool) -> None:
    """Every judged round excluded: with one or two judged rounds (the others too short to
    judge alone, and passing together) that is rounds excluded, not an invalid session."""
    from pilot_sys.session.verdict import MIN_JUDGED_FOR_SHARE

    assert MIN_JUDGED_FOR_SHARE == 3
    cfg = SessionConfig.from_preset("quick")
    p = PIResult(
        name="bw",
        unit="B/s",
        pi_type=PIType.HARMONIC,
        source="unit_readings",
        target=0.1,
        gates_stop=True,
        mean=100.0,
        ci_low=99.0,
        ci_high=101.0,
        ci_width_rel=0.02,
        ci_reached=True,
    )
    w = WorkloadResult(name="w", pis={"bw": p}, rounds=RoundCounts(total=12, analysed=12 - judged))
    excluded = [
        ExcludedRound(index=i, workload="w", components=["cpu:host (compute)"])
        for i in range(1, judged + 1)
    ]
    bsec = BottleneckSection(monitored=True, valid=True, cut="block:vda")
    v = decide(
        stop_reason=str(StopReason.TARGETS_MET),
        workloads=[w],
        bsec=bsec,
        excluded=excluded,
        judged_rounds=judged,
        cfg=cfg,
    )  # type: ignore[arg-type]
    assert (v.status is Status.INVALID) == invalid
    assert v.status is (Status.INVALID if invalid else Status.VALID)
