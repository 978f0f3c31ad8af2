"""A command's rusage per round, summarised for the result and rendered by the summary and
report.md (hand-built journal lines: no process runs)."""

from __future__ import annotations

from pilot_sys.cli.present.summary import command_lines
from pilot_sys.report.markdown import rounds_line
from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.result import SessionResult, WorkloadResult
from pilot_sys.session.summary import command_usage
from pilot_sys.workload.base import ProcessUsage


def _rec(i: int, user: float, system: float, rss: int | None) -> RoundRecord:
    return RoundRecord(
        index=i,
        workload="w",
        workload_round=i,
        dir=f"rounds/{i:04d}",
        started_at=float(i),
        work_amount=1.0,
        duration=0.05,
        phase="fixed",
        usage=ProcessUsage(user_seconds=user, system_seconds=system, max_rss_bytes=rss),
    )


def test_usage_is_the_mean_cpu_and_the_largest_peak() -> None:
    recs = [
        _rec(1, 0.002, 0.001, None),
        _rec(2, 0.004, 0.003, 200 * 2**20),
        _rec(3, 0.0, 0.002, 100),
    ]
    u = command_usage(recs)
    assert u is not None and u.rounds == 3
    assert abs(u.user_seconds - 0.002) < 1e-12 and abs(u.system_seconds - 0.002) < 1e-12
    assert u.max_rss_bytes == 200 * 2**20
    assert command_usage([]) is None


def test_the_summary_and_report_show_it_beside_the_process_start() -> None:
    u = command_usage([_rec(1, 0.002, 0.001, 200 * 2**20)])
    w = WorkloadResult(name="w", usage=u, process_start_seconds=0.0005)
    lines = command_lines(w)
    assert lines[0].startswith("  per round: user 2") and "peak RSS 200 MiB" in lines[0]
    assert lines[1] == "  process start here: 500 µs (in every round's time)"
    text = rounds_line(SessionResult.model_construct(), w)[0]
    assert "user 2" in text and "Starting a process here takes 500 µs" in text
