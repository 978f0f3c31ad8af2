"""`pilot-sys report`: rebuilds everything from a result directory alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pilot_sys
from conftest import run_cli
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import JOURNAL, WorkloadSpec
from pilot_sys.session.session import Session
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload


class Steady:
    name = "steady"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(7)

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="bw", unit="B/s", pi_type=PIType.HARMONIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        units = 1e8 * (1 + 0.02 * self.rng.standard_normal(300))
        units[:30] *= 0.6
        return RoundOutput(
            work_amount=work_amount,
            duration=0.01,
            readings={"bw": float(np.mean(units))},
            unit_readings={"bw": units},
        )

    def data_path_args(self) -> list[str]:
        return []


def _session_dir(tmp_path: Path) -> Path:
    cfg = SessionConfig.from_preset(
        "quick", monitor=False, work_min=1.0, work_max=1.0, min_rounds=4
    )
    wl = Steady()
    s = Session.create(
        tmp_path / "res",
        cfg,
        [WorkloadSpec(name="steady", kind="function", pis=wl.pi_specs())],
        [wl],
        ["test"],
    )
    pilot_sys.run_session(s, plots=False)  # the Python API: the session, then report.md
    return s.journal.root


@pytest.mark.slow
def test_report_rebuilds_result_report_and_plots(tmp_path: Path) -> None:
    root = _session_dir(tmp_path)
    live = json.loads((root / "result.json").read_text())
    (root / "result.json").unlink()
    (root / "report.md").unlink()
    r = run_cli("report", str(root), "--json")
    assert r.returncode == 0, r.stderr
    rebuilt = json.loads(r.stdout)
    assert rebuilt == json.loads((root / "result.json").read_text())
    # the same numbers as the live session computed
    for key in ("mean", "ci_low", "ci_high", "sample_size"):
        assert rebuilt["workloads"][0]["pis"]["bw"][key] == live["workloads"][0]["pis"]["bw"][key]
    assert rebuilt["status"] == live["status"] == "valid"
    md = (root / "report.md").read_text()
    assert "## Results: steady" in md and "EDM on unit readings" in md
    assert (root / "plots" / "bw-units.png").stat().st_size > 1000
    assert (root / "plots" / "bw-rounds.png").stat().st_size > 1000


def test_report_schema() -> None:
    r = run_cli("report", "--schema")
    assert r.returncode == 0
    schema = json.loads(r.stdout)
    assert schema["title"] == "SessionResult"
    pi = schema["$defs"]["PIResult"]["properties"]
    assert {"mean", "ci_low", "ci_high"} <= set(pi)


@pytest.mark.slow
def test_report_bad_inputs(tmp_path: Path) -> None:
    r = run_cli("report", str(tmp_path / "missing"))
    assert (
        r.returncode == 2
        and r.stderr.strip() == f"pilot-sys: error: {tmp_path / 'missing'}: no such directory"
    )
    r = run_cli("report", str(tmp_path))
    assert r.returncode == 2 and "not a pilot-sys result directory" in r.stderr
    root = _session_dir(tmp_path)
    lines = (root / JOURNAL).read_text().splitlines(keepends=True)
    lines.insert(1, '{"index": "two"}\n')  # damage in the middle, not a torn tail
    (root / JOURNAL).write_text("".join(lines))
    r = run_cli("report", str(root))
    assert r.returncode == 2
    assert r.stderr.strip().startswith(
        f"pilot-sys: error: {root / JOURNAL}:2: damaged journal line"
    )
    assert "Traceback" not in r.stderr
