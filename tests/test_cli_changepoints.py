"""`pilot-sys changepoints` as a user runs it: output, plot and every bad-input path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.stats.change_kind import explain_changes
from pilot_sys.stats.changepoint import detect
from tests.conftest import run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload


@pytest.fixture(scope="module")
def series() -> np.ndarray:
    rng = np.random.default_rng(42)
    return np.concatenate(
        [
            np.linspace(40, 12, 300) + rng.normal(0, 1, 300),
            rng.normal(10, 1, 3000),
            rng.normal(15, 1, 300),
        ]
    )


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory: pytest.TempPathFactory, series: np.ndarray) -> Path:
    path = tmp_path_factory.mktemp("cp") / "readings.csv"
    path.write_text(
        "iteration,latency_ms\n" + "".join(f"{i},{v:.6f}\n" for i, v in enumerate(series))
    )
    return path


def test_json_output_matches_the_library(csv_file: Path) -> None:
    proc = run_cli("changepoints", str(csv_file), "--column", "latency_ms", "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    values = np.loadtxt(csv_file, delimiter=",", skiprows=1, usecols=1)
    want, kinds = explain_changes(values, detect(values))
    assert body["n"] == 3600
    assert body["changepoints"] == want.changepoints == [300, 3300]  # EDM's cuts inside the ramp go
    assert len(detect(values).changepoints) > 2
    assert [k["kind"] for k in body["kinds"]] == [k.kind for k in kinds] == ["level", "level"]
    assert body["stable_segment"] == list(want.stable_segment or [])
    begin, end = body["stable_segment"]
    assert 250 <= begin <= 360 and abs(end - 3300) <= 10
    assert [s["median"] for s in body["segments"]] == pytest.approx(
        [s.median for s in want.segments]
    )


def test_readable_output_lists_segments_and_stable_mark_from_stdin(series: np.ndarray) -> None:
    text = "\n".join(f"{v:.6f}" for v in series) + "\n"
    proc = run_cli("changepoints", "-", input=text)
    assert proc.returncode == 0, proc.stderr
    assert "<- steady" in proc.stdout
    assert "steady part: readings [" in proc.stdout
    assert proc.stdout.startswith("<stdin>: 3600 readings")


def test_the_evidence_shown_is_that_of_the_kind(series: np.ndarray) -> None:
    text = "\n".join(f"{v:.6f}" for v in series) + "\n"
    _, kinds = explain_changes(series.round(6), detect(series.round(6)))
    for args in ((), ("--no-trend",)):
        proc = run_cli("changepoints", "-", *args, input=text)
        assert proc.returncode == 0, proc.stderr
        rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("  ")][1:]
        shown = {int(r[1]): " ".join(r[6:]).replace("<- steady", "").strip() for r in rows}
        for k in kinds:  # the level test's own p-value, not EDM's
            assert shown[k.index] == f"{k.kind}, p={k.p_value:.2g}"
        if args:  # the cuts a line explains, shown without a p-value
            assert "none" in shown.values() and len(shown) > len(kinds) + 1


def test_plot_is_written(csv_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "cp.png"
    proc = run_cli(
        "changepoints", str(csv_file), "-c", "1", "--plot", str(out), "--min-size", "100"
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert "min segment 100" in proc.stdout


def test_help_has_an_example() -> None:
    proc = run_cli("changepoints", "--help")
    assert proc.returncode == 0 and "Examples:" in proc.stdout and "--json" in proc.stdout


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (None, ("/nonexistent/readings.csv",), "/nonexistent/readings.csv: no such file"),
        ("1\n2\nabc\n4\n", (), ":3:1: 'abc' in column 0 is not a number"),
        ("1\n2\nnan\n4\n", (), ":3:1: 'nan' in column 0 is not a finite number"),
        ("1\ninf\n", (), ":2:1: 'inf' in column 0 is not a finite number"),
        ("", (), "no data"),
        ("\n".join(["1"] * 100), ("--min-size", "1"), "--min-size: 1 is too small"),
        (
            "\n".join(["1"] * 100),
            ("--significance", "2"),
            "--significance: 2.0 must be between 0 and 1",
        ),
        ("\n".join(["1"] * 100), ("--plot", "out.jpeg"), "--plot: 'out.jpeg'"),
        ("\n".join(["1"] * 100), ("--plot", "/no/such/dir/x.png"), "does not exist"),
        ("a,b\n1,2\n", (), "has 2 columns"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, args: tuple[str, ...], message: str
) -> None:
    if content is None:
        proc = run_cli("changepoints", *args)
    else:
        path = tmp_path / "data.txt"
        path.write_text(content)
        proc = run_cli("changepoints", str(path), *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pilot-sys: error: ")
    assert message in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("values", [[1.0, 2.0], [3.0, 3.0, 3.0, 3.0, 3.0], list(np.arange(19.0))])
def test_a_short_series_is_too_short_to_show_a_change_with_exit_0(values: list[float]) -> None:
    text = "".join(f"{v}\n" for v in values)
    proc = run_cli("changepoints", "-", input=text)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"<stdin>: too short to show a change: {len(values)} readings, "
        "two segments of 10 needed (--min-size)"
    )
    body = json.loads(run_cli("changepoints", "-", "--json", input=text).stdout)
    assert body["too_short"] is True and body["changepoints"] == [] and body["n"] == len(values)


def test_a_smooth_trend_is_not_cut_into_level_shifts() -> None:
    rng = np.random.default_rng(7)
    trend = 0.05 * np.arange(600) + rng.normal(0, 1, 600)
    text = "".join(f"{v:.5f}\n" for v in trend)
    assert len(detect(trend).changepoints) >= 5  # EDM alone: a staircase
    body = json.loads(run_cli("changepoints", "-", "--json", input=text).stdout)
    assert body["changepoints"] == []
    assert body["segments"] == [
        {"begin": 0, "end": 600, "n": 600, "median": pytest.approx(np.median(trend))}
    ]
    raw = json.loads(run_cli("changepoints", "-", "--json", "--no-trend", input=text).stdout)
    assert raw["changepoints"] == detect(trend).changepoints


def test_analyze_changepoints_and_a_session_round_remove_the_same_warm_up(tmp_path: Path) -> None:
    """One rule for 'the stable part' across commands: analyze --warmup edm keeps what a session
    round keeps, and changepoints says what that is beside its own segments."""
    from pilot_sys.session.statsapi import stable_segment

    rng = np.random.default_rng(7)
    x = np.concatenate([np.linspace(50.0, 100.0, 300), 100.0 + rng.standard_normal(1700)])
    path = tmp_path / "ramp.txt"
    np.savetxt(path, x)
    begin, end, _, found = stable_segment(x)
    assert found and begin >= 250  # the ramp is removed
    cp = json.loads(run_cli("changepoints", str(path), "--json").stdout)
    assert cp["warmup_removal"] == {"begin": begin, "end": end, "found": True}
    an = json.loads(run_cli("analyze", str(path), "--json").stdout)
    assert an["sample_size"] == end - begin
