"""`pilot-sys run` through the real console entry point, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli, sigint_as_in_a_terminal

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload

# coreutils, not a Python interpreter per round: the tests stay fast on a busy machine
VALUE = ["shuf", "-i", "990-1010", "-n", "1"]
SLOW_VALUE = ["sh", "-c", "sleep 0.05; shuf -i 990-1010 -n 1"]


def _lines(directory: Path) -> list[dict[str, object]]:
    path = directory / "rounds.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


@pytest.mark.slow
def test_a_command_until_the_target(tmp_path: Path) -> None:
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--parser",
        "lines",
        "--ci-perc",
        "5%",
        "--json",
        "--",
        *VALUE,
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    pi = result["workloads"][0]["pis"]["value"]
    assert result["status"] == "valid" and pi["ci_reached"]
    assert pi["ci_low"] < pi["mean"] < pi["ci_high"] and 990 < pi["mean"] < 1010
    assert len(_lines(out)) == result["workloads"][0]["rounds"]["total"]
    # every round keeps the workload's own output
    assert (out / "rounds" / "0001" / "stdout.txt").read_text().strip()
    assert (out / "report.md").read_text().startswith("# pilot-sys session report")
    assert (out / "plots" / "value-rounds.png").stat().st_size > 1000
    # progress went to stderr as plain lines (not a terminal)
    assert "round 1 [" in r.stderr


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["-w", "5", "--", "echo", "%WORK_AMOUNT%"], "-w/--work-amount: expected MIN,MAX"),
        (["--", "echo", "%WORK_AMOUNT%"], "-w/--work-amount: the command uses %WORK_AMOUNT%"),
        (["-w", "1,10", "--", "echo", "1"], "-w/--work-amount: the command has no %WORK_AMOUNT%"),
        (["--ci-perc", "lots", "--", "echo", "1"], "--ci-perc: expected a percentage"),
        (
            ["--resume", "/nonexistent/pilot"],
            "/nonexistent/pilot: not a pilot-sys result directory",
        ),
        (["--dir", "/nonexistent/dir"], "/nonexistent/dir: not a directory"),
        (
            ["--cut", "block:vda", "--", "echo", "1"],
            "--cut: names the component the monitor judges",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], where: str) -> None:
    r = run_cli("run", "-o", str(tmp_path / "res"), "--no-monitor", *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("pilot-sys: error: ") and where in lines[-1], r.stderr
    assert "Traceback" not in r.stderr


def test_an_unknown_cut_is_refused_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "res"
    r = run_cli("run", "-o", str(out), "--cut", "block:nope", "--parser", "lines", "--", *VALUE)
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith("pilot-sys: error: --cut: no component 'block:nope' on this host")
    )
    assert not out.exists()  # no empty result directory left behind


def test_workload_failing_at_round_3(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    script = (
        'n=$(($(cat "$1" 2>/dev/null || echo 0) + 1)); echo $n > "$1"; '
        "echo $((100 + n)); [ $n -ne 3 ] || exit 7"
    )
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--parser",
        "lines",
        "--quiet",
        "--no-plots",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        str(counter),
    )
    assert r.returncode == 5, r.stderr
    assert (
        "exited with code 7" in r.stderr or "exited with code 7" in (out / "report.md").read_text()
    )
    # --quiet: the one-line status, the verdict's headline and where the result is, nothing else
    status, headline, where = r.stdout.splitlines()
    assert status.startswith("status: workload_failed (the workload failed); ")
    assert headline.startswith("the workload failed: ") and "exited with code 7" in headline
    assert where == f"result directory: {out}"
    recs = _lines(out)
    assert [rec["index"] for rec in recs] == [1, 2, 3] and recs[2]["failed"] is True
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "workload_failed" and result["exit_code"] == 5
    assert "workload failed" in (out / "report.md").read_text()


def _start(out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pilot_sys",
            "run",
            "-o",
            str(out),
            "--no-monitor",
            "--parser",
            "lines",
            "--min-rounds",
            "5",
            "--ci-perc",
            "50%",
            "--no-plots",
            *extra,
            "--",
            *SLOW_VALUE,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,
    )


def _wait_rounds(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(_lines(out)) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.slow
def test_kill_9_then_report_then_resume(tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = _start(out)
    _wait_rounds(out, 3, proc)
    time.sleep(0.1)  # inside a round
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = _lines(out)
    assert len(kept) >= 3

    rep = run_cli("report", str(out), "--no-plots")
    assert rep.returncode == 0, rep.stderr
    assert "status: interrupted" in rep.stdout
    assert "stopped without a clean stop" in (out / "report.md").read_text()
    assert _lines(out) == kept  # report never changes the journal

    res = run_cli("run", "--resume", str(out), "--quiet", "--json", "--no-plots")
    assert res.returncode == 0, res.stderr
    recs = _lines(out)
    assert [r["index"] for r in recs] == list(range(1, len(recs) + 1))
    assert recs[: len(kept)] == kept and len(recs) >= 50  # the stats need 50 effective samples
    manifest = json.loads((out / "session.json").read_text())
    assert len(manifest["invocations"]) == 2 and manifest["invocations"][0]["ended_at"] is None
    assert json.loads(res.stdout)["status"] == "valid"


def test_ctrl_c_keeps_everything_and_exits_130(tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = _start(out)
    _wait_rounds(out, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "interrupted"
    assert result["workloads"][0]["rounds"]["total"] == len(_lines(out)) >= 2
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_readme_first_command_on_a_small_range(tmp_path: Path) -> None:
    """The built-in workload against a directory, monitored, short: a real result in seconds."""
    out = tmp_path / "res"
    data = tmp_path / "data"
    data.mkdir()
    r = run_cli(
        "run",
        "--preset",
        "quick",
        "--dir",
        str(data),
        "-w",
        "4,64",
        "-s",
        "6",
        "-o",
        str(out),
        "--json",
        "--no-plots",
    )
    assert r.returncode in (0, 3, 4), (
        r.stderr
    )  # 3: this shared VM's CPU may be busy (a true verdict)
    result = json.loads(r.stdout)
    w = result["workloads"][0]
    assert w["pis"]["write_bw"]["source"] == "unit_readings"
    assert w["pis"]["write_bw"]["mean"] > 1e6  # bytes/s
    assert result["bottleneck"]["monitored"] is True
    assert result["bottleneck"]["cut"] is not None
    assert (out / "graph.json").is_file()
    assert (out / "rounds" / "0001" / "monitor.json").is_file()
    assert not list(data.iterdir())  # the workload's file is removed


def test_a_command_without_a_parser_reports_its_round_time(tmp_path: Path) -> None:
    """`sleep 0.05` timed: "round_time: 5x ms ± ...", never "work_rate: 19.6 work/s"; -q prints
    the status, the verdict's headline and the result directory, and nothing else."""
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "-q",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "--max-rounds",
        "12",
        "--min-round-seconds",
        "0",
        "--",
        "sleep",
        "0.05",
    )
    assert r.returncode in (0, 4), r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("status: ")
    assert lines[2] == f"result directory: {out}"
    assert "round_time" in lines[1] and " ms" in lines[1] and "work_rate" not in r.stdout
    result = json.loads((out / "result.json").read_text())
    pi = result["workloads"][0]["pis"]["round_time"]
    assert pi["unit"] == "s" and 0.05 <= pi["mean"] < 0.5 and pi["higher_is_better"] is False
    assert result["verdict"]["headline"] == lines[1]
