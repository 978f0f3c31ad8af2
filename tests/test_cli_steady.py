"""`pilot-sys steady` as a user runs it: output, units, timestamps, plot and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload


@pytest.fixture(scope="module")
def run_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(9)
    n = 20_000
    i = np.arange(n)
    lat = 4.0 + 300.0 * np.exp(-i / 150.0) + 0.5 * rng.lognormal(0.0, 0.3, n)
    starts = np.concatenate([[0.0], np.cumsum(lat[:-1]) * 1e-3])
    path = tmp_path_factory.mktemp("steady") / "run.csv"
    path.write_text(
        "start_s,latency (ms)\n"
        + "".join(f"{s:.6f},{v:.6f}\n" for s, v in zip(starts, lat, strict=True))
    )
    return (
        path,
        np.loadtxt(path, delimiter=",", skiprows=1, usecols=1),
        np.loadtxt(path, delimiter=",", skiprows=1, usecols=0),
    )


def test_json_report_with_timestamps_and_header_unit(
    run_file: tuple[Path, np.ndarray, np.ndarray],
) -> None:
    path, lat, starts = run_file
    proc = run_cli(
        "steady", str(path), "-c", "1", "--timestamps", "start_s", "--json", "--method", "dual-gate"
    )
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["unit"] == "ms"
    start = body["steady_state_start"]
    assert start == 2000 and body["warmup_iterations"] == start  # windows of 2000 (n / 10)
    assert body["time_to_steady_state"] == pytest.approx(starts[start] - starts[0])
    assert body["cold_start_cost"] == pytest.approx(lat[:start].sum())
    steady = lat[start:]
    assert body["steady"]["median"] == pytest.approx(np.median(steady))
    assert body["steady"]["p99"] == pytest.approx(np.percentile(steady, 99))
    assert body["steady"]["p999"] == pytest.approx(np.percentile(steady, 99.9))
    assert body["steady"]["max"] == pytest.approx(steady.max())
    assert body["steady"]["n"] == steady.size


def test_readable_report_and_plot(
    run_file: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    path, lat, _ = run_file
    out = tmp_path / "warmup.png"
    args = ("-c", "1", "--method", "dual-gate", "--window", "1000", "--plot", str(out))
    proc = run_cli("steady", str(path), *args)
    assert proc.returncode == 0, proc.stderr
    assert "steady state     : from iteration 1000" in proc.stdout
    assert "time to steady   : 1000 iterations" in proc.stdout
    seconds = lat[:1000].sum() * 1e-3  # no timestamps: latencies in ms summed
    assert f"{seconds:.6g} s" in proc.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_steady_state_is_exit_0_with_a_reason_from_stdin() -> None:
    values = np.linspace(10.0, 1.0, 2000)
    proc = run_cli("steady", "-", "--json", input="\n".join(f"{v:.5f}" for v in values) + "\n")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["steady_state_start"] is None and body["steady"] is None
    assert body["reason"].startswith("no steady part")
    assert body["unit"] is None and body["time_to_steady_state"] is None  # no seconds invented


@pytest.mark.parametrize(
    ("content", "args", "reason"),
    [
        ("1\n2\n", (), "2 readings, at least 20 needed"),
        ("1\n2\n3\n", ("--method", "dual-gate"), "3 readings, at least 100 needed"),
        (
            "\n".join(["1"] * 200),
            ("--method", "dual-gate", "--window", "100"),
            "200 readings, at least 500 needed",
        ),
    ],
)
def test_too_short_is_exit_0_with_a_reason(
    tmp_path: Path, content: str, args: tuple[str, ...], reason: str
) -> None:
    path = tmp_path / "lat.txt"
    path.write_text(content)
    proc = run_cli("steady", str(path), *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{path}: too short to show a steady state: {reason}"
    body = json.loads(run_cli("steady", str(path), "--json", *args).stdout)
    assert body["too_short"] is True and body["steady_state_start"] is None
    assert body["reason"].startswith("too short to show a steady state")


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (None, ("/nonexistent/lat.txt",), "/nonexistent/lat.txt: no such file"),
        ("1\n2\nfast\n", (), ":3:1: 'fast' in column 0 is not a number"),
        ("1\n-inf\n", (), ":2:1: '-inf' in column 0 is not a finite number"),
        ("# only a comment\n", (), "no data"),
        ("\n".join(["1"] * 200), ("--tolerance", "0"), "--tolerance: 0.0 must be between 0 and 1"),
        ("\n".join(["1"] * 200), ("--window", "1"), "--window: 1 is too small"),
        ("\n".join(["1"] * 200), ("--history", "1"), "--history: 1 is too small"),
        ("t,l\n2,1\n1,1\n", ("-c", "l", "--timestamps", "t"), "timestamps go backwards"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, args: tuple[str, ...], message: str
) -> None:
    if content is None:
        proc = run_cli("steady", *args)
    else:
        path = tmp_path / "lat.txt"
        path.write_text(content)
        proc = run_cli("steady", str(path), *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pilot-sys: error: ")
    assert message in lines[0]


def test_unit_is_read_from_a_header_suffix(tmp_path: Path) -> None:
    path = tmp_path / "lat.csv"
    path.write_text("latency_us\n" + "\n".join(["250"] * 200) + "\n")
    proc = run_cli("steady", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["unit"] == "us"
    assert body["steady_state_start"] == 0 and body["steady"]["median"] == 250.0
