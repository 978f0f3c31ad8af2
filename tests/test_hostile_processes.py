"""Hostile workloads and signals (issue 24 items 7, 8, 14, 15): what a workload prints, how much,
what it leaves running, and how pilot-sys itself is stopped. Real processes: live."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pilot_sys.session.journal import JOURNAL
from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.live


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def _records(root: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (root / JOURNAL).read_text().splitlines()]


def _marked_sleeps(tag: str) -> list[psutil.Process]:
    return [
        p
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"] and p.info["cmdline"][:2] == ["sleep", tag]
    ]


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pilot_sys", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a signal to the test's group does not reach it
    )


def _wait_for(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


# -- item 15 -----------------------------------------------------------------------------------
def test_kill_9_of_run_leaves_nothing_of_the_round_running(tmp_path: Path) -> None:
    tag = f"{700 + os.getpid() % 97}.{os.getpid()}"  # a sleep length no one else uses
    script = f"sleep {tag} & setsid sleep {tag} & (setsid sh -c 'sleep {tag}' &) ; sleep {tag}"
    proc = _start("run", "--no-monitor", "-o", str(tmp_path / "r"), "--", "sh", "-c", script)
    try:
        assert _wait_for(lambda: len(_marked_sleeps(tag)) == 4, 60), "the round never started"
        proc.kill()  # SIGKILL: none of pilot-sys's own code runs
        proc.wait(timeout=10)
        assert _wait_for(lambda: not _marked_sleeps(tag), 10), _marked_sleeps(tag)
    finally:
        for p in _marked_sleeps(tag):
            p.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_process_that_left_the_round_is_ended_and_named(tmp_path: Path) -> None:
    tag = f"{800 + os.getpid() % 97}.{os.getpid()}"
    out = tmp_path / "r"
    r = run_cli(
        "run", "--no-monitor", "--max-rounds", "2", "-o", str(out), "--", "sh", "-c",
        f"setsid sleep {tag} & sleep 0.05",
    )  # fmt: skip
    assert r.returncode in (0, 4), r.stderr
    assert not _marked_sleeps(tag)
    for record in _records(out):
        said = [w for w in record["warnings"] if "left the round's process group" in w]  # type: ignore[union-attr]
        assert said and " sleep" in said[0], record["warnings"]


def test_sighup_saves_the_result_like_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "r"
    proc = _start("run", "--no-monitor", "-o", str(out), "--", "sleep", "0.2")
    try:
        assert _wait_for(lambda: (out / JOURNAL).is_file() and len(_records(out)) >= 2, 60)
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    result = json.loads((out / "result.json").read_text())
    assert result["stop_reason"].startswith("interrupted"), result["stop_reason"]


# -- items 7 and 8 -----------------------------------------------------------------------------
def test_readings_no_statistics_can_use_fail_their_round_and_name_it(tmp_path: Path) -> None:
    out = tmp_path / "h"
    script = "for i in $(seq 100); do echo 1e300; done"
    r = run_cli(
        "run", "--no-monitor", "--parser", "lines", "-o", str(out), "--", "sh", "-c", script
    )
    assert r.returncode == 5, r.stderr
    assert "rounds/0001/stdout.txt:1:1" in r.stderr and "1e300" in r.stderr
    assert (out / "result.json").is_file()
    for again in (run_cli("report", str(out)), run_cli("run", "--resume", str(out))):
        assert again.returncode in (0, 5), again.stderr
        assert "internal error" not in again.stderr and "rescale" not in again.stderr


def test_parsing_stops_at_the_value_limit(tmp_path: Path) -> None:
    out = tmp_path / "s"
    env = _env(PILOT_SYS_LIMIT_PARSED_VALUES="50000")
    r = subprocess.run(
        [sys.executable, "-m", "pilot_sys", "run", "--no-monitor", "--max-rounds", "1",
         "--parser", "lines", "-o", str(out), "--", "seq", "1", "300000"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert r.returncode == 5, r.stderr
    assert "stdout.txt:50001" in r.stderr and "PILOT_SYS_LIMIT_PARSED_VALUES" in r.stderr


def test_stored_output_is_cut_at_its_limit(tmp_path: Path) -> None:
    out = tmp_path / "o"
    env = _env(PILOT_SYS_LIMIT_OUTPUT_BYTES="4096")
    r = subprocess.run(
        [sys.executable, "-m", "pilot_sys", "run", "--no-monitor", "--max-rounds", "1",
         "-o", str(out), "--", "sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x >&2"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert r.returncode in (0, 4), r.stderr
    assert (out / "rounds" / "0001" / "stderr.txt").stat().st_size == 4096
    (record,) = _records(out)
    assert any("stderr.txt: 100,000 bytes of output" in w for w in record["warnings"])  # type: ignore[union-attr]


# -- item 14 -----------------------------------------------------------------------------------
def test_phases_reads_a_quick_run_of_the_builtin_workload(tmp_path: Path) -> None:
    out = tmp_path / "q1"
    r = run_cli("run", "--preset", "quick", "--dir", str(tmp_path), "-o", str(out), timeout=600)
    assert r.returncode in (0, 3, 4), r.stderr
    p = run_cli("phases", str(out))
    assert p.returncode == 0, p.stderr
