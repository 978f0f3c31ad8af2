"""`pilot-sys phases` as a user runs it: real recorded traces, JSON, plot, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from pilot_sys.monitor.trace_io import load_traces, metric_matrix
from pilot_sys.stats.phases import PhaseParams, match_runs

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload

TRACES = FIXTURES / "traces"
DD = sorted((TRACES / "dd_write_read").glob("*.json"))
PULSES = sorted((TRACES / "stress_pulses").glob("*.json"))


def _one_error_line(proc) -> str:  # type: ignore[no-untyped-def]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("pilot-sys: error: ")
    return lines[0]


def test_text_report_names_signatures_shift_score_and_verdict_and_plots(tmp_path: Path) -> None:
    picture = tmp_path / "phases.png"
    proc = run_cli(
        "phases", str(DD[1]), str(PULSES[0]), "--baseline", str(DD[0]), "--plot", str(picture)
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"baseline {DD[0]}" in out
    assert out.count("matching score") == 2
    assert "transitions (" in out and "best shift" in out
    assert ": matches" in out or ": differs" in out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_json_report_agrees_with_the_python_api() -> None:
    proc = run_cli(
        "phases",
        *map(str, DD[1:3]),
        "--baseline",
        str(DD[0]),
        "--json",
        "--metrics",
        "process:workload/*",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["params"]["tolerance"] == PhaseParams().tolerance
    assert len(report["runs"]) == 2
    base = metric_matrix(load_traces(DD[0])[0].trace, ["process:workload/*"])
    for run, path in zip(report["runs"], DD[1:3], strict=True):
        sig = run["signature"]
        assert sig["metrics"] == [
            "process:workload/busy",
            "process:workload/read_bytes_per_s",
            "process:workload/write_bytes_per_s",
        ]
        assert (
            sig["transitions"] == len(sig["transition_samples"]) == len(sig["transition_times_s"])
        )
        expected = match_runs(
            base.values, metric_matrix(load_traces(path)[0].trace, ["process:workload/*"]).values
        )
        assert run["best_shift"] == expected.best_shift
        assert run["matching_score"] == pytest.approx(expected.matching_score)
        assert run["verdict"] == (
            "matches" if expected.matching_score >= PhaseParams().match_threshold else "differs"
        )


def test_result_directory_rounds_and_default_baseline(tmp_path: Path) -> None:
    session = tmp_path / "session"
    (session / "monitor").mkdir(parents=True)
    for i, src in enumerate(DD[:3]):
        shutil.copy(src, session / "monitor" / f"round-{i:03d}.json")
    proc = run_cli("phases", str(session), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert "1 of 3" in report["baseline"]["source"]
    assert "the first run is the baseline" in " ".join(report["baseline"]["notes"])
    assert [r["signature"]["source"].split(" ")[0].rsplit("/", 1)[1] for r in report["runs"]] == [
        "round-001.json",
        "round-002.json",
    ]


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    line = _one_error_line(
        run_cli("phases", str(tmp_path / "missing.json"), "--baseline", str(DD[0]))
    )
    assert "missing.json: no such file or directory" in line

    not_json = tmp_path / "notes.txt"
    not_json.write_text("fio finished\n  bw=1GiB/s\n")
    line = _one_error_line(run_cli("phases", str(not_json), "--baseline", str(DD[0])))
    assert f"{not_json}:1:1" in line and "not JSON" in line

    not_trace = tmp_path / "result.json"
    not_trace.write_text('{"mean": 1.0}')
    assert "not a monitor trace" in _one_error_line(
        run_cli("phases", str(not_trace), "--baseline", str(DD[0]))
    )

    empty = tmp_path / "empty.json"
    empty.write_text('{"rate_hz": 10, "start_time": 0, "timestamps": [], "series": {}}')
    assert "holds no samples" in _one_error_line(
        run_cli("phases", str(empty), "--baseline", str(DD[0]))
    )

    assert "no monitor.json" in _one_error_line(
        run_cli("phases", str(tmp_path), "--baseline", str(DD[0]))
    )
