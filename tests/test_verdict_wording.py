"""The summary, report.md and report.html say the same about the same session, and the advice
they give works when followed (issue 22, item 3).

The sessions are result directories written by hand (``tests/session_dirs.py``) and rebuilt as
``pilot-sys report DIR`` does; the verdicts of the stop reasons are decided from hand-built
results."""

from __future__ import annotations

from pathlib import Path

from pilot_sys.cli.present.summary import summary_lines
from pilot_sys.report.rebuild import rebuild
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.result import (
    BottleneckSection,
    PIResult,
    Reason,
    RoundCounts,
    Status,
    StopReason,
    WorkloadResult,
)
from pilot_sys.session.verdict import decide
from tests.session_dirs import make_session


def test_with_every_round_excluded_summary_and_reports_name_the_same_rounds(
    tmp_path: Path,
) -> None:
    # every judged round saw the CPU above the threshold: none was included, so the check ran
    # over the excluded rounds; no output may say it ran over the included ones
    root = make_session(tmp_path / "s", hidden=True)
    result = rebuild(root)
    assert result.workloads[0].rounds.analysed == 0
    summary = "\n".join(summary_lines(result))
    over = "over the 10 excluded rounds taken together (none was included)"
    assert over in summary
    md = (root / "report.md").read_text(encoding="utf-8")
    html = (root / "report.html").read_text(encoding="utf-8")
    for page in (md, html):
        # the glossary defines the rule in general ("... over the included rounds taken
        # together, makes the session invalid"); the verdict itself names the rounds it read
        verdict = page.split("Bottleneck verdict", 1)[1].split("Monitoring overhead", 1)[0]
        assert "included rounds" not in verdict
        assert over in verdict
    assert "Judged over the excluded rounds' 110 samples together" in md


def test_a_pi_without_an_analysed_round_does_not_say_no_reading(tmp_path: Path) -> None:
    # the rounds plot draws the excluded rounds' readings: its title may not say there are none
    root = make_session(tmp_path / "s", hidden=True)
    result = rebuild(root)
    texts = "\n".join(summary_lines(result)) + (root / "report.md").read_text(encoding="utf-8")
    assert "no reading" not in texts
    assert "bw: no estimate yet (no round analysed)" in texts


def _workload(rounds: int = 10) -> WorkloadResult:
    p = PIResult(
        name="bw",
        unit="B/s",
        source="unit_readings",
        mean=1.5e8,
        ci_low=1.2e8,
        ci_high=1.8e8,
        target=0.1,
        sample_size=400,
        ci_width_rel=0.4,
        gates_stop=True,
    )
    return WorkloadResult(
        name="w", pis={"bw": p}, rounds=RoundCounts(total=rounds, analysed=rounds)
    )


def _decide(stop: str, cfg: SessionConfig, **kw: object) -> object:
    return decide(
        stop_reason=str(stop),
        workloads=[_workload()],
        bsec=BottleneckSection(monitored=True, valid=True, cut="block:vda"),
        excluded=[],
        judged_rounds=0,
        cfg=cfg,
        result_dir="/r",
        **kw,
    )  # type: ignore[arg-type]


def test_a_full_disk_under_the_workload_is_a_disk_full_stop_not_a_failed_workload() -> None:
    cfg = SessionConfig.from_preset("quick")
    failure = (
        "fio: exited with code 1 (accepted: 0): fio: io_u error on file /mnt/x: No space left "
        "on device: write offset=0, buflen=4096 [output kept in /r/rounds/0007]"
    )
    v = _decide(StopReason.WORKLOAD_FAILED, cfg, failure=failure)
    assert v.status is Status.INCOMPLETE and v.reason is Reason.DISK_FULL  # type: ignore[attr-defined]
    assert "the disk filled up" in v.headline and "fix the workload" not in v.next_step  # type: ignore[attr-defined]
    assert v.next_step.startswith("free space where the workload writes, or lower -w MAX")  # type: ignore[attr-defined]
    # a workload that failed for its own reasons is still a failed workload
    v = _decide(StopReason.WORKLOAD_FAILED, cfg, failure="fio: exited with code 1: bad option")
    assert v.status is Status.WORKLOAD_FAILED and v.next_step.startswith("fix the workload")  # type: ignore[attr-defined]


def test_after_a_max_rounds_stop_the_advice_raises_max_rounds() -> None:
    cfg = SessionConfig.from_preset("quick").model_copy(update={"max_rounds": 10})
    v = _decide(StopReason.MAX_ROUNDS, cfg, needed_seconds=700.0, more_rounds=15)
    # a longer -s or another preset adds no round to a session stopped by --max-rounds
    assert "-s" not in v.next_step and "preset" not in v.next_step  # type: ignore[attr-defined]
    assert v.next_step == "raise --max-rounds to 25 (about 15 more round(s) a workload)"  # type: ignore[attr-defined]
    v = _decide(StopReason.MAX_ROUNDS, cfg)
    assert v.next_step.startswith("raise --max-rounds above 10")  # type: ignore[attr-defined]
    v = _decide(StopReason.SESSION_LIMIT, cfg, needed_seconds=700.0, more_rounds=15)
    assert v.next_step == "use -s 900 or --preset normal"  # type: ignore[attr-defined]
