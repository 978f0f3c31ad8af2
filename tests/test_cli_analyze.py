"""``pilot-sys analyze`` as a user runs it: real output, JSON fields, and every bad-input path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import lfilter

from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload

JSON_FIELDS = {
    "sample_size",
    "mean",
    "ci_low",
    "ci_high",
    "ci_width",
    "subsession_size",
    "subsession_variance",
    "autocorrelation",
    "required_sample_size",
    "ci_reached",
    "warnings",
}


@pytest.fixture()
def warm_series(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A ramp-up of 150 samples, then 1850 stable AR(0.5) samples around 100."""
    rng = np.random.default_rng(0)
    x = np.r_[
        np.linspace(20, 95, 150) + rng.normal(0, 1, 150),
        100 + lfilter([1.0], [1.0, -0.5], rng.normal(0, 1, 1850)),
    ]
    path = tmp_path / "tput.csv"
    path.write_text(
        "# synthetic\nidx,throughput (MiB/s)\n" + "".join(f"{i},{v:.5f}\n" for i, v in enumerate(x))
    )
    return path, x


def test_json_with_edm_warmup_removal(warm_series: tuple[Path, np.ndarray]) -> None:
    path, x = warm_series
    res = run_cli("analyze", str(path), "--column", "throughput (MiB/s)", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert JSON_FIELDS <= out.keys()
    assert out["unit"] == "MiB/s"
    begin, end = out["stable_part"]["begin"], out["stable_part"]["end"]
    assert 100 <= begin <= 400 and end == x.size
    assert out["stable_part"]["removed"] == [[0, begin]]
    assert out["sample_size"] == x.size - begin
    assert out["ci_low"] < 100 < out["ci_high"]
    assert out["raw"]["sample_size"] == x.size and out["raw"]["mean"] < out["mean"]
    assert out["ci_reached"] is True


def test_readable_output_and_stdin(warm_series: tuple[Path, np.ndarray]) -> None:
    path, x = warm_series
    stable = "\n".join(f"{v:.5f}" for v in x[150:])
    res = run_cli("analyze", "-", "--warmup", "none", "--ci-abs", "0.01", input=stable)
    assert res.returncode == 0, res.stderr
    assert "<stdin>" in res.stdout and "±" in res.stdout
    assert "not reached" in res.stdout and "more" in res.stdout


def test_shipped_example_runs() -> None:
    res = run_cli(
        "analyze",
        str(REPO / "data" / "throughput-example.csv"),
        "--column",
        "throughput (MiB/s)",
        "--pi-type",
        "harmonic",
        "--json",
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["pi_type"] == "harmonic" and out["raw"] is None or out["raw"]["sample_size"] == 3000


def test_no_interval_is_said_not_printed(tmp_path: Path) -> None:
    x = lfilter([1.0], [1.0, -0.97], np.random.default_rng(1).normal(size=300))
    path = tmp_path / "corr.txt"
    path.write_text("\n".join(map(str, x)))
    res = run_cli("analyze", str(path), "--warmup", "none", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["ci_low"] is None and out["ci_width"] is None and out["ci_reached"] is False
    assert any("too few effective samples" in w for w in out["warnings"])


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        (None, [], "missing.csv: no such file"),
        (
            "a,b\n1,2\n3,oops\n",
            ["--column", "b"],
            "bad.csv:3:3: 'oops' in column 'b' is not a number",
        ),
        ("1\n2\nnan\n", [], "bad.csv:3:1: 'nan' in column 0 is not a finite number"),
        ("1\ninf\n", [], "bad.csv:2:1: 'inf' in column 0 is not a finite number"),
        ("# nothing here\n\n", [], "bad.csv: no data"),
        ("a,b\n1,2\n", ["--column", "c"], "bad.csv: no column named 'c'"),
        ("1\n2\n", ["--confidence", "95"], "--confidence: 95 must be between 0 and 1"),
        ("1\n2\n", ["--ci-perc", "-1"], "--ci-perc: -1 must be > 0"),
        (
            "\n".join(["1", "-2"] * 10),
            ["--pi-type", "harmonic", "--warmup", "none"],
            "needs values > 0",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, args: list[str], expected: str
) -> None:
    path = tmp_path / ("missing.csv" if content is None else "bad.csv")
    if content is not None:
        path.write_text(content)
    res = run_cli("analyze", str(path), *args)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert expected in res.stderr
    assert res.stderr.startswith("pilot-sys: error: ")


def test_help_has_an_example() -> None:
    res = run_cli("analyze", "--help")
    assert res.returncode == 0 and "Examples:" in res.stdout and "--pi-type" in res.stdout
