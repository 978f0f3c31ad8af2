"""`pilot-sys phases RESULT_DIR` reads each round's rounds/NNNN/monitor.json, as the README
says (issue 15 item 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.live  # a monitored session, then the CLI


def test_phases_reads_the_rounds_of_a_result_directory(tmp_path: Path) -> None:
    out = tmp_path / "res"
    r = run_cli(
        "run", "-o", str(out), "--no-plots", "--max-rounds", "3", "--quiet", "--", "sleep", "1"
    )
    assert r.returncode in (0, 3, 4), r.stderr
    assert (out / "rounds" / "0001" / "monitor.json").is_file()
    ph = run_cli("phases", str(out), "--json")
    assert ph.returncode == 0, ph.stderr
    report = json.loads(ph.stdout)
    assert report["baseline"]["source"] == f"{out}/rounds/0001/monitor.json (round 1)"
    assert [m["signature"]["source"] for m in report["runs"]] == [
        f"{out}/rounds/{i:04d}/monitor.json (round {i})" for i in (2, 3)
    ]
    base = run_cli("phases", str(out / "rounds" / "0002" / "monitor.json"), "--baseline", str(out))
    assert (
        base.returncode == 0 and f"baseline {out}/rounds/0001/monitor.json (round 1)" in base.stdout
    )


def test_an_unmonitored_result_directory_says_so(tmp_path: Path) -> None:
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "--max-rounds",
        "1",
        "--quiet",
        "--",
        "true",
    )
    assert r.returncode in (0, 4), r.stderr
    ph = run_cli("phases", str(out))
    assert ph.returncode == 2
    expected = "no round of this session has a usable rounds/NNNN/monitor.json"
    assert f"{expected} (was it run with --no-monitor?)" in ph.stderr
