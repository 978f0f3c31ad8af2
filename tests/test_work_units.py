"""A work amount gets the unit it was given or that the command states, or none, and a derived
figure says what it adds up (issue 22, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pilot_sys.cli.present.progress import round_head
from pilot_sys.cli.present.summary import summary_lines
from pilot_sys.report.markdown import render
from pilot_sys.report.rebuild import rebuild
from pilot_sys.session.journal import RoundRecord, WorkloadSpec
from pilot_sys.session.work_done import work_done_text
from pilot_sys.workload.macros import work_unit_of
from tests.session_dirs import make_session


@pytest.mark.parametrize(
    ("argv", "unit"),
    [
        (["fio", "--name=a", "--size=%WORK_AMOUNT%M"], "MiB"),
        (["fio", "--size=%WORK_AMOUNT%m", "--io_size=%WORK_AMOUNT%MiB"], "MiB"),
        (["iperf3", "-c", "h", "-n", "%WORK_AMOUNT%G"], "GiB"),
        (["dd", "bs=%WORK_AMOUNT%k", "count=1"], "KiB"),
        (["./bench", "%WORK_AMOUNT%"], ""),  # no suffix: the amount has no unit to know
        (["dd", "bs=%WORK_AMOUNT%MB"], ""),  # 10^6 to dd, 2^20 to fio: not knowable
        (["x", "%WORK_AMOUNT%M", "%WORK_AMOUNT%G"], ""),  # two units: no one unit
    ],
)
def test_the_unit_a_command_states_after_the_macro(argv: list[str], unit: str) -> None:
    assert work_unit_of(argv) == unit


def test_a_work_amount_without_a_unit_is_a_bare_number_everywhere() -> None:
    rec = RoundRecord(
        index=3, workload="w", workload_round=3, dir="r", started_at=0.0,
        work_amount=276.0, duration=0.5, phase="measure",
    )  # fmt: skip
    assert round_head(rec, "work") == "round 3 [w] work=276 500 ms"
    assert round_head(rec, "MiB") == "round 3 [w] work=276 MiB 500 ms"


def test_wps_says_what_it_adds_up(tmp_path: Path) -> None:
    # the fixture's fio rounds report the bytes they moved: wps is a rate of those bytes, over
    # the rounds' time beyond alpha, and the summary and the report say so beside the figure
    result = rebuild(make_session(tmp_path / "s"), plots=False)
    wps = result.workloads[0].pis["wps"]
    assert wps.unit == "B/s" and wps.description is not None
    assert "w = bytes fio read and wrote" in wps.description
    assert "not a sum of the other PIs" in wps.description
    assert f"    (wps: {wps.description})" in summary_lines(result)
    assert f"- `wps`: {wps.description}" in render(result, {})


def test_what_each_workload_counts_as_work_done() -> None:
    builtin = WorkloadSpec(name="b", kind="builtin", pis=[])
    assert work_done_text(builtin) == "bytes of the round's file, each written and then read back"
    write_only = WorkloadSpec(name="b", kind="builtin", pis=[], options={"read_back": False})
    assert work_done_text(write_only) == "bytes of the round's file, written"
    plain = WorkloadSpec(name="c", kind="command", argv=["./x"], parser="none", pis=[])
    assert work_done_text(plain) is None


@pytest.mark.live
def test_a_session_takes_the_unit_its_command_states(tmp_path: Path) -> None:
    # no --work-unit: "%WORK_AMOUNT%M" makes the work amount MiB, in result.json and the report
    from conftest import run_cli

    out = tmp_path / "res"
    r = run_cli(
        "run", "-o", str(out), "--no-monitor", "--no-plots", "--parser", "lines", "-s", "2",
        "-w", "1,4", "--json", "--", "sh", "-c", "echo %WORK_AMOUNT%M >/dev/null; echo 5",
    )  # fmt: skip
    assert r.returncode in (0, 4), r.stderr
    result = json.loads(r.stdout)
    assert result["config"]["work_unit"] == "MiB"
    assert result["workloads"][0]["work_unit"] == "MiB"
    # a range that narrowed to one amount is not a fixed work amount (the command has the macro)
    report = (out / "report.md").read_text()
    assert "4 MiB" in report and "(no %WORK_AMOUNT%)" not in report
