"""How a session ends (issue 15 items 12, 18, 20, 22): a hanging round is bounded by the session
limit, a closed progress stream never stops the measurement, Ctrl-C after the last round lets
the result and the reports be finished, and library warnings never reach stderr."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import JOURNAL, WorkloadSpec
from pilot_sys.session.progress import Note
from pilot_sys.session.session import Session
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput
from tests.conftest import run_cli

pytestmark = pytest.mark.live  # sessions collect the host's context; most tests start the CLI

VALUE = ["shuf", "-i", "990-1010", "-n", "1"]


# -- item 12: the session limit bounds a hanging round ------------------------------------------
def test_a_hanging_round_ends_at_the_session_limit(tmp_path: Path) -> None:
    out = tmp_path / "res"
    t0 = time.monotonic()
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "-s",
        "3",
        "--json",
        "--",
        "sleep",
        "15",
    )
    took = time.monotonic() - t0
    assert took < 12, f"{took:.1f} s"  # 3 s + 5 %, then start-up and reports on a busy host
    assert r.returncode == 4, r.stderr
    result = json.loads(r.stdout)
    assert result["stop_reason"] == "session time limit reached"
    assert any(
        n.startswith("round cut at the session limit: sleep: still running at the session limit")
        for n in result["notes"]
    ), result["notes"]
    (rec,) = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]
    # cut at the session's deadline plus the 5 % grace: the round's timeout is what was left of
    # 3.15 s when it started (the session's own start-up comes off it)
    cut = re.search(r"cut after ([0-9.]+) s", rec["failure"])
    assert rec["failed"] and cut is not None, rec["failure"]
    assert 2.0 <= float(cut[1]) <= 3.15 and float(cut[1]) - 0.01 <= rec["duration"] < 4
    assert (out / "rounds" / "0001" / "stdout.txt").exists()  # the round's files are kept
    rep = run_cli("report", str(out), "--json", "--no-plots")  # and the rebuilt result agrees
    assert json.loads(rep.stdout)["status"] == result["status"]


def test_the_round_timeout_still_applies_before_the_limit(tmp_path: Path) -> None:
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "-s",
        "30",
        "--timeout",
        "1",
        "--",
        "sleep",
        "15",
    )
    assert r.returncode == 5, r.stderr  # a workload failure, as before
    assert "round timed out after 1 s" in (out / JOURNAL).read_text()


# -- item 18: progress piped into a reader that goes away ---------------------------------------
def test_a_closed_progress_stream_does_not_stop_the_measurement(tmp_path: Path) -> None:
    out = tmp_path / "res"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pilot_sys",
            "run",
            "-o",
            str(out),
            "--no-monitor",
            "--no-plots",
            "--parser",
            "lines",
            "--ci-perc",
            "5%",
            "--",
            *VALUE,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None and proc.stdout is not None
    first = proc.stderr.readline()  # `2>&1 | head -1`: one line, then the reader is gone
    proc.stderr.close()
    stdout = proc.stdout.read()
    code = proc.wait(timeout=240)
    assert first.startswith("pilot-sys: result directory:"), first
    result = json.loads((out / "result.json").read_text())
    assert code == result["exit_code"] == 0, stdout
    rounds = result["workloads"][0]["rounds"]["total"]
    assert rounds == len((out / JOURNAL).read_text().splitlines()) > 8
    assert stdout.startswith("status: valid")


# -- item 20: Ctrl-C while the result and the reports are written ------------------------------
class Steady:
    name = "steady"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(5)

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="bw", unit="B/s", pi_type=PIType.HARMONIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        units = 1e8 * (1 + 0.01 * self.rng.standard_normal(200))
        return RoundOutput(
            work_amount=work_amount,
            duration=0.01,
            readings={"bw": float(np.mean(units))},
            unit_readings={"bw": units},
        )

    def data_path_args(self) -> list[str]:
        return []


class Notes:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def emit(self, event: object) -> None:
        if isinstance(event, Note):
            self.texts.append(event.text)


def _session(root: Path, notes: Notes) -> Session:
    cfg = SessionConfig.from_preset(
        "quick", monitor=False, work_min=1.0, work_max=1.0, min_rounds=8, max_rounds=10
    )
    wl = Steady()
    return Session.create(
        root,
        cfg,
        [WorkloadSpec(name="steady", kind="function", pis=wl.pi_specs())],
        [wl],
        ["t"],
        progress=notes,
    )


def _ctrl_c(times: int) -> None:
    for _ in range(times):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs here, in the main thread


def _finish(session: Session) -> object:
    """run_and_report, with a Ctrl-C that escapes it turned into this test's failure (not the
    end of the whole test run)."""
    from pilot_sys.report import writer

    try:
        return writer.run_and_report(session, plots=False)
    except KeyboardInterrupt:
        pytest.fail("a Ctrl-C after the last round stopped the session")


@pytest.mark.parametrize("where", ["reports", "result"])
def test_one_ctrl_c_after_the_rounds_lets_everything_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    from pilot_sys.report import writer
    from pilot_sys.session.engine import Engine

    if where == "reports":
        real = writer.write_reports
        monkeypatch.setattr(writer, "write_reports", lambda *a, **k: (_ctrl_c(1), real(*a, **k))[1])
    else:
        finalize = Engine.finalize
        monkeypatch.setattr(Engine, "finalize", lambda self: (_ctrl_c(1), finalize(self))[1])
    notes = Notes()
    session = _session(tmp_path / "res", notes)
    # the handler in effect before: Python's own, or SIG_IGN when the tests were started as a
    # background job of a non-interactive shell (which starts its children ignoring Ctrl-C)
    before = signal.getsignal(signal.SIGINT)
    result = _finish(session)
    assert result.status != "interrupted" and result.exit_code != 130  # type: ignore[attr-defined]
    assert any(
        t.startswith("finishing the result and the reports (Ctrl-C again") for t in notes.texts
    )
    root = session.journal.root
    assert json.loads((root / "result.json").read_text())["status"] == result.status  # type: ignore[attr-defined]
    assert (root / "report.md").read_text().startswith("# pilot-sys session report")
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_a_second_ctrl_c_stops_the_reports_and_report_finishes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pilot_sys.report import writer
    from pilot_sys.report.rebuild import rebuild

    real = writer.write_reports
    monkeypatch.setattr(writer, "write_reports", lambda *a, **k: (_ctrl_c(2), real(*a, **k))[1])
    notes = Notes()
    session = _session(tmp_path / "res", notes)
    result: Any = _finish(session)  # returns: the measurement was not interrupted
    root = session.journal.root
    assert any(
        "the reports were not finished (interrupted); result.json is complete" in t
        for t in notes.texts
    )
    saved = json.loads((root / "result.json").read_text())
    assert saved["status"] == result.status != "interrupted"
    assert not (root / "report.md").exists() and not list(root.glob("*.tmp"))
    monkeypatch.setattr(writer, "write_reports", real)
    again = rebuild(root, plots=False)
    assert again.status == result.status and (root / "report.md").is_file()


def test_a_second_ctrl_c_in_the_final_analysis_leaves_a_directory_report_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pilot_sys.report.rebuild import rebuild
    from pilot_sys.session.engine import Engine

    finalize = Engine.finalize
    monkeypatch.setattr(Engine, "finalize", lambda self: (_ctrl_c(2), finalize(self))[1])
    session = _session(tmp_path / "res", Notes())
    try:
        session.run()
    except KeyboardInterrupt:
        pass  # the second Ctrl-C stops it at once
    else:
        pytest.fail("the second Ctrl-C did not stop the session")
    root = session.journal.root
    last = json.loads((root / "session.json").read_text())["invocations"][-1]
    assert last["stop_reason"] and last["ended_at"]  # how the rounds ended was saved first
    monkeypatch.setattr(Engine, "finalize", finalize)
    rebuilt = rebuild(root, plots=False)
    assert rebuilt.status != "interrupted" and "killed" not in " ".join(rebuilt.notes)


# -- item 22: library warnings ------------------------------------------------------------------
def test_library_warnings_do_not_reach_stderr(tmp_path: Path) -> None:
    from pilot_sys.monitor.trace import MonitorTrace

    session = _session(tmp_path / "res", Notes())
    session.run()
    root = session.journal.root
    lines = (root / JOURNAL).read_text().splitlines()
    for i, line in enumerate(lines):  # every round's trace: a utilization with no value at all
        rec = json.loads(line)
        trace = MonitorTrace(
            rate_hz=10.0,
            start_time=rec["started_at"],
            timestamps=[0.0, 0.1, 0.2],
            series={"cpu:host/util": [None, None, None]},
        )
        (root / rec["dir"]).mkdir(parents=True, exist_ok=True)
        (root / rec["dir"] / "monitor.json").write_text(trace.model_dump_json())
        rec["monitor"] = {"file": "monitor.json", "samples": 3}
        lines[i] = json.dumps(rec)
    (root / JOURNAL).write_text("\n".join(lines) + "\n")
    r = run_cli("report", str(root))
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr and "warn" not in r.stderr.lower(), r.stderr
