"""The built-in workload's range is checked before anything runs; a failed round says why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload


def test_a_range_too_big_for_the_free_space_is_refused_at_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "res"
    free_mib = shutil.disk_usage(data).free // 2**20
    too_big = free_mib * 2
    r = run_cli("run", "--dir", str(data), "-w", f"16,{too_big}", "-o", str(out))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"pilot-sys: error: -w/--work-amount: a {too_big} MiB round needs")
    assert "lower MAX" in lines[0]
    assert not out.exists() and not list(data.iterdir())  # nothing ran, nothing was written


def test_a_range_below_one_mib_is_refused(tmp_path: Path) -> None:
    r = run_cli("run", "--dir", str(tmp_path), "-w", "0,16", "-o", str(tmp_path / "res"))
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == "pilot-sys: error: -w/--work-amount: needs 1 <= MIN <= MAX MiB, got 0,16"
    )


def test_a_failed_round_says_why_in_the_progress(tmp_path: Path) -> None:
    """Plain progress (stderr is not a terminal here) carries the WorkloadFailed message."""
    counter = tmp_path / "count"
    script = (
        'n=$(($(cat "$1" 2>/dev/null || echo 0) + 1)); echo $n > "$1"; echo $((100 + n)); '
        '[ $n -ne 2 ] || { echo "disk on fire" >&2; exit 7; }'
    )
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--parser",
        "lines",
        "--no-plots",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        str(counter),
    )
    assert r.returncode == 5, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("round 2 "))
    assert " FAILED: sh: exited with code 7 (accepted: 0): disk on fire [output kept in " in line
    assert line.split(" | ")[0].endswith(
        "]"
    )  # the message sits in the round's head, before the PIs
