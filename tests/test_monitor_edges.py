"""`pilot-sys monitor` on runs it cannot judge (issue 15 item 11): a command too short for the
sampling rate is not called valid or invalid from a few samples, and a command that leaves a
daemon running is said to have done so."""

from __future__ import annotations

import os
import re
import signal

import pytest

from tests.conftest import run_cli


def test_samples_to_judge_follow_the_hot_fraction() -> None:
    from pilot_sys.cli.monitor import samples_to_judge, too_short_text

    assert samples_to_judge(0.10) == 11  # one hot interval of ten is the 10 % allowed
    assert samples_to_judge(0.25) == 5
    assert samples_to_judge(0.0) == 3
    assert too_short_text(11, 10.0, 1.0, 0.10) is None
    text = too_short_text(4, 10.0, 0.3, 0.10)
    assert text == (
        "too short to judge: 4 samples at 10 Hz, 11 needed to judge a share of 10 % of the "
        "run; use --rate 34 or a longer command"
    )
    assert too_short_text(2, 10.0, 0.001, 0.10).endswith("use a longer command")  # type: ignore[union-attr]


@pytest.mark.live
def test_a_short_command_is_not_judged_from_a_few_samples() -> None:
    r = run_cli("monitor", "--strict", "--", "sleep", "0.3")
    assert re.search(r"too short to judge: [2-5] samples at 10 Hz, 11 needed", r.stderr), r.stderr
    assert r.returncode == 0, r.stderr  # CMD's own code: --strict's 3 needs a judged run


DAEMON = ["sleep", "59.73"]  # a duration no other process uses: the test ends exactly this one


@pytest.mark.live
def test_a_daemon_left_running_is_noted() -> None:
    import psutil

    r = run_cli("monitor", "--", "sh", "-c", f"setsid {' '.join(DAEMON)} >/dev/null 2>&1 & exit 0")
    try:
        found = re.search(
            r"CMD exited, but 1 process\(es\) it started still run \(pid (\d+) sleep\)", r.stderr
        )
        assert found, r.stderr
        assert "the trace covers CMD's own run only" in r.stderr
        assert r.returncode == 0
    finally:
        for proc in psutil.process_iter(["cmdline"]):
            if proc.info["cmdline"] == DAEMON:
                os.kill(proc.pid, signal.SIGTERM)
