"""`pilot-sys tune` as a user runs it: bad input, a real short tuning, an unreachable budget."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from pilot_sys.cli.tune import parse_budget, parse_duration
from pilot_sys.errors import BadInput


def test_budget_and_duration_parsing() -> None:
    assert parse_budget("1%") == pytest.approx(0.01)
    assert parse_budget("0.5 %") == pytest.approx(0.005)
    assert parse_budget("0.02") == pytest.approx(0.02)
    assert parse_duration("100ms", "--min-spike") == pytest.approx(0.1)
    assert parse_duration("0.5s", "--min-spike") == pytest.approx(0.5)
    assert parse_duration("250us", "--min-spike") == pytest.approx(250e-6)
    assert parse_duration("2", "--min-spike") == pytest.approx(2.0)
    for bad in ("1", "abc", "0%", "100%", "-1%"):
        with pytest.raises(BadInput, match="--budget"):
            parse_budget(bad)
    for bad in ("fast", "0ms", "10 parsecs"):
        with pytest.raises(BadInput, match="--min-spike"):
            parse_duration(bad, "--min-spike")


@pytest.mark.live
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--budget", "2"],
            "pilot-sys: error: --budget: 2 would be 200 % of the PI; write 2% for 2 percent",
        ),
        (["--budget", "lots"], "pilot-sys: error: --budget: 'lots' is not a budget"),
        (
            ["--min-spike", "5ms"],
            "pilot-sys: error: --min-spike: 5 ms spikes need 400 Hz, above the counters' "
            "resolution",
        ),
        (["--min-spike", "soon"], "pilot-sys: error: --min-spike: 'soon' is not a duration"),
        (
            ["--max-rate", "10"],
            "pilot-sys: error: --max-rate: 10 Hz is below the slowest useful rate 20 Hz",
        ),
        (["--pairs", "1"], "pilot-sys: error: --pairs: need at least 2 pairs"),
        (["--trim", "0.6"], "pilot-sys: error: --trim: must be at least 0 and below 0.5"),
        (
            ["--confidence", "1.5"],
            "pilot-sys: error: --confidence: must be at least 0.5 and below 1",
        ),
        (["--max-measurements", "0"], "pilot-sys: error: --max-measurements: must be at least 1"),
        (["--plot", "out.jpg"], "pilot-sys: error: --plot: out.jpg must end in .png"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = run_cli("tune", *args, "--", "true", timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.live
def test_missing_command_and_unknown_program() -> None:
    proc = run_cli("tune", "--budget", "1%", timeout=60)
    assert proc.returncode == 2 and "Missing argument" in proc.stderr
    proc = run_cli("tune", "--", "/nonexistent/benchmark", timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        proc.stderr.strip().splitlines()[-1].startswith("pilot-sys: error: /nonexistent/benchmark")
    )


@pytest.mark.live
def test_help_has_an_example() -> None:
    proc = run_cli("tune", "--help", timeout=60)
    assert proc.returncode == 0
    assert "pilot-sys tune --budget 1% --" in proc.stdout and "--min-spike" in proc.stdout


@pytest.mark.serial  # measures the monitor's overhead
@pytest.mark.slow
@pytest.mark.live
def test_generous_budget_is_met_at_the_counter_resolution_cap(tmp_path: Path) -> None:
    # 90% cannot be exceeded by a sampler that costs ~0.3 ms per sample at 100 Hz (3% of a core),
    # nor by the noise of 5 pairs of rounds on a busy machine (40% per round: sd of the estimate
    # ~25%).
    plot = tmp_path / "tune.png"
    proc = run_cli(
        "tune",
        "--budget",
        "90%",
        "--pairs",
        "5",
        "--seed",
        "1",
        "--json",
        "--plot",
        str(plot),
        "--",
        sys.executable,
        "-S",
        "-c",
        "sum(range(200_000))",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "at_max_rate" and out["converged"] is True
    assert out["met"] is True and out["exit_code"] == 0 and out["overhead"]["ci_high"] <= 0.9
    assert out["rate_hz"] == out["bounds"]["max_hz"] == 100.0
    assert len(out["iterations"]) == 1 and out["iterations"][0]["step"] == "prior"
    ov = out["overhead"]
    assert ov["ci_low"] <= ov["overhead"] <= ov["ci_high"] and 0 <= ov["p_value"] <= 1
    assert ov["n_on"] == ov["n_off"] == 5 and ov["pi"] == "duration"
    assert out["elapsed_s"] > 0
    cost = out["monitor_cost"]
    assert (
        50 <= cost["wakeups_per_second"] <= 110
    )  # about one per period (a busy core may skip some)
    assert 0 < cost["cpu_seconds_per_sample"] < 0.01
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.serial  # measures the monitor's overhead
@pytest.mark.slow
@pytest.mark.live
def test_a_budget_the_measurement_cannot_show_is_an_outcome_not_bad_input() -> None:
    # 0.001% cannot be *shown* with 3 pairs of ~30 ms rounds: the CI upper bound is far above it
    # (at 99.9% confidence the chance that noise alone puts it below is 0.05%). Whether the
    # interval straddles the budget (6) or lies above it (7) is the machine's to say.
    proc = run_cli(
        "tune",
        "--budget",
        "0.001%",
        "--pairs",
        "3",
        "--confidence",
        "0.999",
        "--seed",
        "2",
        "--json",
        "--",
        sys.executable,
        "-S",
        "-c",
        "pass",
        timeout=120,
    )
    assert proc.returncode in (6, 7), proc.stderr
    out = json.loads(proc.stdout)
    ov = out["overhead"]
    assert out["met"] is False and out["exit_code"] == proc.returncode and out["rate_hz"] == 20.0
    if proc.returncode == 6:
        assert out["status"] == "undecided" and ov["ci_low"] <= 1e-5 < ov["ci_high"]
        assert proc.stderr.startswith(
            "pilot-sys: undecided: at the slowest useful rate 20 Hz the overhead is "
        )
    else:
        assert out["status"] == "over_budget" and ov["ci_low"] > 1e-5
        assert proc.stderr.startswith(
            "pilot-sys: the budget 0.001 % cannot be met: even at the slowest "
        )
    assert len(proc.stderr.strip().splitlines()) == 1 and "error" not in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.serial  # measures the monitor's overhead
@pytest.mark.slow
@pytest.mark.live
def test_the_text_output_says_whether_the_budget_is_met() -> None:
    proc = run_cli(
        "tune",
        "--budget",
        "0.001%",
        "--pairs",
        "3",
        "--confidence",
        "0.999",
        "--seed",
        "2",
        "--",
        sys.executable,
        "-S",
        "-c",
        "pass",
        timeout=120,
    )
    assert proc.returncode in (6, 7), proc.stderr
    assert " 1  prior" in proc.stdout
    word = "undecided" if proc.returncode == 6 else "over_budget"
    assert f"rate:      20.0 Hz ({word})" in proc.stdout
    budget = next(line for line in proc.stdout.splitlines() if line.startswith("budget:    "))
    assert budget.startswith("budget:    0.001 %: ") and budget.endswith(f"exit {proc.returncode})")


def test_help_documents_every_exit_code() -> None:
    from click.testing import CliRunner

    from pilot_sys.cli.tune import tune

    text = CliRunner().invoke(tune, ["--help"], terminal_width=100).output
    for code, word in (
        ("0", "met"),
        ("2", "bad input"),
        ("4", "out of measurements"),
        ("5", "the workload failed"),
        ("6", "undecided"),
        ("7", "over budget"),
    ):
        assert re.search(rf"^\s+{code}\s+{word}", text, re.MULTILINE), (code, text)
    assert "--target" not in text  # the estimate target is not a verdict a user can rely on
