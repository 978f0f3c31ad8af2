"""`pilot-sys compare --run ...` (interleaved live runs) and `pilot-sys compare DIR_A DIR_B`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload

SLOW = "shuf -i 1000-1020 -n 1"
FAST = "shuf -i 1015-1035 -n 1"


@pytest.mark.slow
def test_live_runs_are_interleaved_until_separated(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    r = run_cli(
        "compare",
        "-o",
        str(out),
        "--no-monitor",
        "--parser",
        "lines",
        "--ci-perc",
        "5%",
        "--run",
        f"slow={SLOW}",
        "--run",
        f"fast={FAST}",
    )
    assert r.returncode == 0, r.stderr
    assert "ranking by value (best first): fast > slow" in r.stdout
    assert "all adjacent pairs separated" in r.stdout
    assert "every PI both report, slow against fast:" in r.stdout  # the table saved results get
    table = json.loads((out / "result.json").read_text())["comparison"]["tables"][0]
    assert (table["a"], table["b"], table["primary"]) == ("slow", "fast", "value")
    assert table["rows"][0]["verdict"] == "b_faster"
    recs = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert [x["workload"] for x in recs[:4]] == ["slow", "fast", "slow", "fast"]
    result = json.loads((out / "result.json").read_text())
    pair = result["comparison"]["pairs"][0]
    assert pair["better"] == "fast" and pair["separated"] and 5 < pair["difference"] < 25
    assert "## Comparison (value)" in (out / "report.md").read_text()


@pytest.mark.slow
def test_saved_result_directories(tmp_path: Path) -> None:
    dirs = []
    for name, cmd in (("a", SLOW), ("b", FAST)):
        d = tmp_path / name
        r = run_cli(
            "run",
            "-o",
            str(d),
            "--no-monitor",
            "--parser",
            "lines",
            "--ci-perc",
            "5%",
            "--quiet",
            "--no-plots",
            "--",
            *cmd.split(),
        )
        assert r.returncode == 0, r.stderr
        dirs.append(str(d))
    r = run_cli("compare", *dirs, "--json")
    assert r.returncode == 0, r.stderr
    cmp_ = json.loads(r.stdout)
    assert [s["directory"] for s in cmp_["sides"]] == dirs and cmp_["pi"] == "value"
    row = cmp_["table"]["rows"][0]
    assert row["pi"] == "value" and row["verdict"] == "b_faster" and -25 < row["difference"] < -5
    r = run_cli("compare", *dirs, "--pi", "nope")
    assert r.returncode == 2
    assert "--pi: 'nope' is not a PI both results report (shared: value)" in r.stderr


@pytest.mark.slow
def test_compare_bad_inputs(tmp_path: Path) -> None:
    r = run_cli("compare", "--run", "only='echo 1'")
    assert r.returncode == 2 and "--run: give at least two" in r.stderr
    r = run_cli("compare", "--run", "a=echo 1", "--run", "a=echo 2")
    assert r.returncode == 2 and "the name 'a' is used twice" in r.stderr
    r = run_cli("compare", "just-one")
    assert r.returncode == 2 and "A B: give two data files or two result directories" in r.stderr
    r = run_cli("compare", str(tmp_path), str(tmp_path / "x.csv"))
    assert r.returncode == 2 and "is not a result directory like the other input" in r.stderr
    assert all("Traceback" not in x for x in (r.stderr,))
