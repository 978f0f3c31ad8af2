"""``pilot-sys compare A B`` on data files: verdicts, JSON, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from tests.conftest import run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload


def write(path: Path, x: np.ndarray, header: str = "lat (ms)") -> str:
    path.write_text(f"{header}\n" + "\n".join(f"{v:.6f}" for v in x) + "\n")
    return str(path)


def test_json_matches_scipy_for_independent_samples(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(10.0, 1.0, 400), rng.normal(10.4, 1.5, 300)
    res = run_cli("compare", write(tmp_path / "a.csv", a), write(tmp_path / "b.csv", b), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert (
        out["verdict"] == "a_lower" and out["a_faster"] is True
    )  # lower latency is better by default
    assert out["unit"] == "ms"
    if out["a"]["subsession_size"] == 1 and out["b"]["subsession_size"] == 1:
        ref = sps.ttest_ind(a, b, equal_var=False)
        # the stats module takes the larger of two variance estimates, so p can only be larger
        assert out["p_value"] >= ref.pvalue * 0.999
    assert out["difference_ci_low"] < -0.4 < out["difference_ci_high"]


def test_undecided_says_how_many_more(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(10.0, 1.0, 200), rng.normal(10.05, 1.0, 200)
    res = run_cli("compare", write(tmp_path / "a.csv", a), write(tmp_path / "b.csv", b))
    assert res.returncode == 0, res.stderr
    assert "no significant difference" in res.stdout and "more samples of A" in res.stdout


@pytest.mark.parametrize(
    ("b_content", "args", "expected"),
    [
        (None, [], "b.csv: no such file"),
        ("x\n1\nabc\n", [], "b.csv:3:1: 'abc' in column 'x' is not a number"),
        ("x\n1\n2\n", [], "b.csv: 2 sample(s); at least 8 are needed"),
        ("1\n2\n", ["--threshold", "2"], "--threshold: 2 must be between 0 and 1"),
        ("x\n1\n", ["--column", "y"], "no column named 'y'"),
    ],
)
def test_bad_input(tmp_path: Path, b_content: str | None, args: list[str], expected: str) -> None:
    a = write(tmp_path / "a.csv", np.random.default_rng(2).normal(size=100), header="x")
    b = tmp_path / "b.csv"
    if b_content is not None:
        b.write_text(b_content)
    res = run_cli("compare", a, str(b), *args)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert expected in res.stderr


# -- --run's session options shared with `pilot-sys run` ------------------------------------------
TINY = "shuf -i 1-10 -n 1"  # coreutils, no interpreter start-up per round


@pytest.mark.slow
def test_run_names_the_work_unit_in_the_result_and_report(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    res = run_cli(
        "compare",
        "-o",
        str(out),
        "--no-monitor",
        "--max-rounds",
        "9",
        "--parser",
        "none",
        "--work-unit",
        "requests",
        "--run",
        f"a={TINY}",
        "--run",
        f"b={TINY}",
    )
    assert res.returncode == 4, (
        res.stderr
    )  # 9 rounds cannot separate equal workloads: limit reached
    result = json.loads((out / "result.json").read_text())
    assert [w["work_unit"] for w in result["workloads"]] == ["requests", "requests"]
    assert {w["pis"]["work_rate"]["unit"] for w in result["workloads"]} == {"requests/s"}
    assert result["workloads"][0]["pis"]["work_rate"]["mean"] > 0
    assert "requests/s" in res.stdout  # the summary's means
    assert (
        "| work_rate | " in (out / "report.md").read_text()
        and " requests/s |" in (out / "report.md").read_text()
    )


@pytest.mark.slow
def test_run_refuses_an_unknown_cut_like_run_does(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    res = run_cli(
        "compare",
        "-o",
        str(out),
        "--max-rounds",
        "2",
        "--parser",
        "none",
        "--cut",
        "block:nope",
        "--run",
        f"a={TINY}",
        "--run",
        f"b={TINY}",
    )
    assert res.returncode == 2, res.stderr
    errors = [line for line in res.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0] == res.stderr.strip().splitlines()[-1]
    assert errors[0].startswith("pilot-sys: error: --cut: no component 'block:nope' on this host")
    assert (
        "Traceback" not in res.stderr and not out.exists()
    )  # refused before any round: nothing left behind


def test_run_cut_needs_monitoring(tmp_path: Path) -> None:
    res = run_cli(
        "compare",
        "-o",
        str(tmp_path / "cmp"),
        "--no-monitor",
        "--cut",
        "block:vda",
        "--run",
        f"a={TINY}",
        "--run",
        f"b={TINY}",
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "pilot-sys: error: --cut: names the component the monitor judges; "
        "it needs monitoring (drop --no-monitor)"
    ]
    assert not (tmp_path / "cmp").exists()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--work-unit", "MiB"], "--work-unit"),
        (["--cut", "block:vda"], "--cut"),
        (["--max-rounds", "3"], "--max-rounds"),
        (["--preset", "quick"], "--preset"),
    ],
)
def test_session_options_without_run_are_refused(
    tmp_path: Path, args: list[str], option: str
) -> None:
    a = write(tmp_path / "a.csv", np.random.default_rng(3).normal(size=50), header="x")
    b = write(tmp_path / "b.csv", np.random.default_rng(4).normal(size=50), header="x")
    res = run_cli("compare", a, b, *args)
    assert res.returncode == 2, res.stdout
    assert res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"pilot-sys: error: {option}: configures a live session: "
        "it needs --run NAME='CMD' (at least two); "
        "files and result directories were measured already"
    ]
