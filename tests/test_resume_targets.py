"""`run --resume DIR` with new targets and limits (issue 15 item 3): they apply from now on, the
rounds continue until the new target is met, and the change is recorded in session.json; an
option that cannot apply to rounds already measured is refused with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI and a workload

# 200 readings a round around 100 (sd 5): the unit readings give a narrow interval quickly
SCRIPT = "import random\nfor _ in range(200): print(random.gauss(100, 5))\n"


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished quick session (20 % target met), copied by each test that changes it."""
    tmp = tmp_path_factory.mktemp("measured")
    bench = tmp / "bench.py"
    bench.write_text(SCRIPT)
    out = tmp / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "--parser",
        "lines",
        "--preset",
        "quick",
        "--quiet",
        "--",
        "python3",
        str(bench),
    )
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture()
def session(measured: Path, tmp_path: Path) -> Path:
    out = tmp_path / "res"
    shutil.copytree(measured, out)
    return out


def _rounds(out: Path) -> int:
    return len((out / "rounds.jsonl").read_text().splitlines())


def test_a_stricter_target_on_resume_runs_rounds_until_it_is_met(session: Path) -> None:
    out = session
    before = _rounds(out)
    # a target stricter than what the first invocation reached (its rounds alone cannot meet
    # it), rounded to a value the option takes as written
    first = json.loads((out / "result.json").read_text())["workloads"][0]["pis"]["value"]
    reached = (first["ci_high"] - first["ci_low"]) / first["mean"]
    strict = round(reached / 2, 5)
    r = run_cli(
        "run",
        "--resume",
        str(out),
        "--ci-perc",
        f"{100 * strict:g}%",
        "-s",
        "120",
        "--no-plots",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    pi = result["workloads"][0]["pis"]["value"]
    assert result["config"]["ci_perc"] == pytest.approx(strict)
    assert pi["target"] == pytest.approx(strict) and pi["ci_reached"]
    assert (pi["ci_high"] - pi["ci_low"]) / pi["mean"] <= strict
    assert _rounds(out) > before  # new rounds ran: the old 10 % target did not end it
    manifest = json.loads((out / "session.json").read_text())
    last = manifest["invocations"][-1]
    assert last["first_round"] == before + 1
    assert last["config_changes"]["ci_perc"] == [pytest.approx(0.2), pytest.approx(strict)]
    assert last["config_changes"]["session_limit"][1] == 120
    assert manifest["config"]["ci_perc"] == pytest.approx(strict)
    assert f"resumed with new targets and limits: ci_perc 0.2 -> {strict:g}" in r.stderr


def test_a_preset_on_resume_sets_its_targets(session: Path) -> None:
    out = session
    r = run_cli(
        "run",
        "--resume",
        str(out),
        "--preset",
        "strict",
        "-s",
        "60",
        "--max-rounds",
        "200",
        "--no-plots",
        "--json",
    )
    assert r.returncode in (0, 4), r.stderr
    result = json.loads(r.stdout)
    assert result["config"]["preset"] == "strict"
    assert (
        result["config"]["ci_perc"] == pytest.approx(0.05)
        and result["config"]["confidence"] == 0.99
    )
    assert result["config"]["max_rounds"] == 200 and result["config"]["session_limit"] == 60
    changes = json.loads((out / "session.json").read_text())["invocations"][-1]["config_changes"]
    assert changes["preset"] == ["quick", "strict"] and changes["confidence"] == [0.95, 0.99]


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["-o", "OTHER"], "-o/--output-dir: --resume continues the session in"),
        (["--", "true"], "--resume: continues the session's own workload"),
        (["--parser", "csv"], "--parser: configures what the session measures"),
        (["--no-monitor"], "--no-monitor: configures what the session measures"),
        (["--accept-rc", "0,1"], "--accept-rc: configures what the session measures"),
        (["--ci-perc", "0"], "--ci-perc: 0 must be > 0"),
    ],
)
def test_options_that_cannot_apply_are_refused(
    measured: Path, tmp_path: Path, args: list[str], where: str
) -> None:
    out = measured
    before = (out / "rounds.jsonl").read_bytes(), (out / "session.json").read_bytes()
    args = [str(tmp_path / "other") if a == "OTHER" else a for a in args]
    r = run_cli("run", "--resume", str(out), *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and where in lines[0], r.stderr
    assert ((out / "rounds.jsonl").read_bytes(), (out / "session.json").read_bytes()) == before
    assert not (tmp_path / "other").exists()
