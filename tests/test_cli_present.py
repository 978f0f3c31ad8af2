"""What the terminal shows at the end of a session and after each round, from hand-built results;
and the layering that keeps printing out of the session."""

from __future__ import annotations

import ast
import io
from pathlib import Path

from pilot_sys.cli.present.comparison import comparison_lines
from pilot_sys.cli.present.progress import PlainProgress, QuietProgress
from pilot_sys.cli.present.summary import alarm_lines, quiet_lines, summary_lines
from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.progress import Forecast, Note, RoundDone, RoundExcluded
from pilot_sys.session.result import (
    BottleneckSection,
    Comparison,
    ExcludedRound,
    PairComparison,
    PIResult,
    RoundCounts,
    SessionResult,
    Status,
    WorkloadResult,
)

GIB = 2**30
SESSION = Path(__file__).resolve().parent.parent / "pilot_sys" / "session"


def _bw(**kw: object) -> PIResult:
    base: dict[str, object] = dict(
        name="write_bw",
        unit="B/s",
        source="unit_readings",
        mean=2.17 * GIB,
        ci_low=2.10 * GIB,
        ci_high=2.24 * GIB,
        ci_width_rel=0.14 / 2.17,
        ci_reached=True,
        target=0.1,
        sample_size=900,
    )
    base.update(kw)
    return PIResult.model_validate(base)


def _result(
    status: Status, command: list[str], pis: list[PIResult], cut: str = "block:vda"
) -> SessionResult:
    w = WorkloadResult(
        name="w",
        command=command,
        pis={p.name: p for p in pis},
        rounds=RoundCounts(total=12, analysed=10, short=2),
    )
    return SessionResult(
        status=status,
        exit_code=0,
        stop_reason="every CI target met",
        elapsed_seconds=31.24,
        result_dir="/r/1",
        workloads=[w],
        bottleneck=BottleneckSection(
            monitored=True,
            valid=status is not Status.INVALID,
            cut=cut,
            hidden_bottlenecks=["cpu:host (compute)"] if status is Status.INVALID else [],
        ),
    )


def test_the_summary_states_each_pi_with_its_half_width_and_target_the_same_way() -> None:
    iops = _bw(
        name="write_iops",
        unit="IOPS",
        mean=15310.0,
        ci_low=14900.0,
        ci_high=15720.0,
        ci_width_rel=820 / 15310,
        ci_reached=False,
    )
    lat = _bw(
        name="lat_p99",
        unit="s",
        mean=3.237e-4,
        ci_low=None,
        ci_high=None,
        ci_width_rel=None,
        required_sample_size=400,
        sample_size=89,
    )
    lines = summary_lines(_result(Status.VALID, ["fio"], [_bw(), iops, lat]))
    assert lines[0] == "status: valid (every CI target met); 31.2 s session time"
    assert lines[1].startswith(
        "valid: every CI target met over 10 analysed rounds; write_bw 2.17 GiB/s"
    )
    assert lines[2] == "w: 12 rounds, 10 analysed, 2 short"
    # 0.07 / 2.17 = 3.2 %; the 10 % full-width target is ± 5 %
    assert lines[3] == (
        "  write_bw: 2.17 GiB/s ± 3.2 %, 95% CI [2.10 GiB/s, 2.24 GiB/s] "
        "(target ± 5 % met; unit_readings)"
    )
    # 15310 IOPS, never 1.531e+04; half width 410 / 15310 = 2.7 %
    assert lines[4] == (
        "  write_iops: 15.3 k IOPS ± 2.7 %, 95% CI [14.9 k IOPS, 15.7 k IOPS] "
        "(target ± 5 % NOT met; unit_readings)"
    )
    assert lines[5] == (
        "  lat_p99: 324 µs so far, no interval yet: needs about 400 samples "
        "(50 effective), has 89 (unit_readings)"
    )
    assert lines[-2:] == [
        "bottleneck check: passed over the 10 included rounds taken together "
        "(component under test: block:vda)",
        "report: /r/1/report.md",
    ]


def test_network_traffic_is_in_bit_per_second() -> None:
    bw = _bw(name="bw", mean=1.175e9, ci_low=1.15e9, ci_high=1.2e9, ci_width_rel=0.05e9 / 1.175e9)
    lines = summary_lines(
        _result(Status.VALID, ["iperf3", "-c", "10.0.0.5", "-J"], [bw], cut="nic:eth0")
    )
    # 1.175e9 B/s x 8 = 9.40 Gbit/s
    assert lines[3].startswith("  bw: 9.40 Gbit/s ± 2.1 %, 95% CI [9.20 Gbit/s, 9.60 Gbit/s]")


def test_quiet_prints_the_status_and_the_directory_and_alarms_still_reach_stderr() -> None:
    result = _result(Status.INVALID, ["fio"], [_bw()])
    assert quiet_lines(result) == [
        "status: invalid (every CI target met); 31.2 s session time",
        "INVALID: hidden bottleneck at cpu:host (compute) over the included rounds taken together: "
        "the numbers may describe it, not the component under test (block:vda)",
        "result directory: /r/1",
    ]
    assert alarm_lines(result) == [
        "INVALID RESULT: hidden bottleneck at cpu:host (compute) over the included rounds taken "
        "together: the numbers may describe it, not the component under test (block:vda)"
    ]


def test_a_ranking_with_the_difference_in_the_pi_unit() -> None:
    result = _result(Status.VALID, ["fio"], [_bw()])
    cmp_ = Comparison(
        pi="write_bw",
        ranking=["a", "b"],
        all_separated=True,
        pairs=[
            PairComparison(
                better="a",
                worse="b",
                pi="write_bw",
                difference=0.25 * GIB,
                difference_rel=0.1234,
                ci_low=0.2 * GIB,
                ci_high=0.3 * GIB,
                p_value=0.0004,
                cis_overlap=False,
                separated=True,
            )
        ],
    )
    assert comparison_lines(cmp_, result) == [
        "ranking by write_bw (best first): a > b",
        "  a vs b: 256 MiB/s (+12.34 %), CI of the difference [205 MiB/s, 307 MiB/s], "
        "Welch p = 0.0004 "
        "-> CIs do not overlap",
        "all adjacent pairs separated",
    ]
    assert comparison_lines(None) == ["comparison: the workloads share no PI to compare yet"]


def _record(index: int, **kw: object) -> RoundRecord:
    return RoundRecord(
        index=index,
        workload="w",
        workload_round=index,
        dir=f"rounds/{index:04d}",
        started_at=0.0,
        work_amount=568.0,
        duration=0.406,
        phase="test",
        **kw,
    )


def test_a_progress_line_per_round_and_the_events_it_renders() -> None:
    stream = io.StringIO()
    progress = PlainProgress(stream, work_unit="MiB")
    progress.emit(RoundDone(_record(37), [_bw()], Forecast(3, 6.0), 14.5))
    progress.emit(Note("WPS alpha raises the smallest work amount"))
    progress.emit(
        RoundExcluded(
            ExcludedRound(
                index=20,
                workload="w",
                components=["cpu:host (compute)"],
                busy={"cpu:host (compute)": 0.94},
                text="round 20 excluded: hidden bottleneck at cpu:host (compute), 94 % busy",
            )
        )
    )
    progress.emit(
        RoundDone(
            _record(38, failed=True, failure="exited\nwith code 7"), [], Forecast(None, None), 15.0
        )
    )
    assert stream.getvalue().splitlines() == [
        "round 37 [w] work=568 MiB 406 ms | t=14.5s | "
        "write_bw 2.17 GiB/s ± 3.2 % (target ± 5 %, ok) "
        "| ~3 more round(s), ETA 6 s",
        "pilot-sys: WPS alpha raises the smallest work amount",
        "pilot-sys: WARNING: round 20 excluded: hidden bottleneck at cpu:host (compute), 94 % busy",
        "round 38 [w] work=568 MiB 406 ms FAILED: exited with code 7 | t=15.0s |  "
        "| rounds needed: not known yet",
    ]
    quiet = io.StringIO()
    q = QuietProgress(quiet)
    q.emit(RoundDone(_record(1), [_bw()], Forecast(1, 1.0), 1.0))
    q.emit(Note("said only without --quiet"))
    q.emit(Note("the journal cannot be written", loud=True))
    assert quiet.getvalue() == "pilot-sys: the journal cannot be written\n"


def test_the_session_never_prints_nor_imports_the_layers_above_it() -> None:
    """Function-level imports included: the session computes and returns, the CLI renders."""
    for path in sorted(SESSION.glob("*.py")):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        upward = sorted(
            m
            for m in names
            if m == "click" or m.startswith(("pilot_sys.cli", "pilot_sys.report", "rich"))
        )
        assert not upward, f"{path.name} imports {upward}"
        calls = [
            n.func.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        ]
        assert "print" not in calls, f"{path.name} prints"
