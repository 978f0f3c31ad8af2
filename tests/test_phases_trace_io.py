"""Loading traces and turning them into metric matrices (pilot_sys.monitor.trace_io)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.errors import BadInput, InsufficientData
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.monitor.trace_io import is_fraction, load_traces, metric_matrix, select_series

TRACES = FIXTURES / "traces"


def _trace(
    series: dict[str, list[float | None]], timestamps: list[float] | None = None, rate: float = 10.0
) -> MonitorTrace:
    n = len(next(iter(series.values())))
    return MonitorTrace(
        rate_hz=rate,
        start_time=0.0,
        timestamps=timestamps or [i / rate for i in range(n)],
        series=series,
    )


def test_a_trace_file_and_the_two_result_directory_layouts(tmp_path: Path) -> None:
    src = TRACES / "fio_mix" / "run0.json"
    [one] = load_traces(src)
    assert one.path == src and len(one.trace.timestamps) > 50

    single = tmp_path / "session"
    single.mkdir()
    shutil.copy(src, single / "monitor.json")
    [found] = load_traces(single)
    assert found.path == single / "monitor.json"

    rounds = tmp_path / "rounds"
    (rounds / "monitor").mkdir(parents=True)
    shutil.copy(src, rounds / "monitor" / "round-002.json")
    shutil.copy(TRACES / "fio_mix" / "run1.json", rounds / "monitor" / "round-001.json")
    found2 = load_traces(rounds)
    assert [f.path.name for f in found2] == ["round-001.json", "round-002.json"]
    assert "1 of 2" in found2[0].origin


@pytest.mark.parametrize(
    ("content", "where", "problem"),
    [
        ('{"series": {}, ', ":1:", "not JSON"),
        ('{"hello": 1}', "", "not a monitor trace"),
        (
            '{"rate_hz": "fast", "start_time": 0, "timestamps": [0], "series": {"a/b": [1]}}',
            "",
            "rate_hz",
        ),
        ('{"rate_hz": 10, "start_time": 0, "timestamps": [], "series": {}}', "", "no samples"),
        (
            '{"rate_hz": 10, "start_time": 0, "timestamps": [0, 0.1], "series": {"a/busy": [1]}}',
            "",
            "1 samples but there are 2",
        ),
        (
            '{"rate_hz": 10, "start_time": 0, "timestamps": [0.1, 0.1], '
            '"series": {"a/busy": [1, 1]}}',
            "",
            "strictly increasing",
        ),
    ],
)
def test_bad_trace_files_name_the_file_and_the_problem(
    tmp_path: Path, content: str, where: str, problem: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(BadInput) as info:
        load_traces(bad)
    assert info.value.where.startswith(str(bad)) and where in info.value.where
    assert problem in info.value.problem


def test_missing_paths_and_directories_without_traces(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        load_traces(tmp_path / "nope.json")
    with pytest.raises(BadInput, match="no monitor.json or monitor/"):
        load_traces(tmp_path)


def test_default_series_are_the_named_utilizations() -> None:
    trace = _trace(
        {
            "cpu:host/busy": [0.1, 0.2, 0.3],
            "block:vda/util_read": [0.0, 0.5, 0.1],
            "block:vda/await_s": [0.001, 0.002, 0.001],  # in [0, 1] but a time
            "block:vda/read_bytes_per_s": [0.0, 0.0, 0.0],  # in [0, 1] but a rate
            "memory:host/psi_some": [0.0, 0.1, 0.0],  # a fraction, but not named as a utilization
        }
    )
    assert select_series(trace) == ["cpu:host/busy", "block:vda/util_read"]
    assert select_series(trace, ["block:*"]) == [
        "block:vda/util_read",
        "block:vda/await_s",
        "block:vda/read_bytes_per_s",
    ]
    with pytest.raises(BadInput, match="no series matches nic:"):
        select_series(trace, ["nic:*"])
    # without any named utilization, every fraction that is not named as a rate, amount or time
    unnamed = _trace(
        {
            "memory:host/psi_some": [0.0, 0.1, 0.0],
            "x:y/count": [0.0, 1.0, 0.0],
            "x:y/level": [3.0, 2.0, 1.0],
        }
    )
    assert select_series(unnamed) == ["memory:host/psi_some"]
    assert not is_fraction("x:y/level", np.array([3.0, 2.0]))


def test_gaps_are_held_and_empty_series_dropped() -> None:
    trace = _trace(
        {
            "a:x/busy": [None, 0.2, None, None, 0.5],
            "b:y/busy": [None] * 5,
            "c:z/busy": [0.1, 0.1, 0.1, 0.1, None],
        }
    )
    mm = metric_matrix(trace)
    assert mm.columns == ["a:x/busy", "c:z/busy"]
    assert mm.values[:, 0].tolist() == [0.2, 0.2, 0.2, 0.2, 0.5]
    assert mm.values[:, 1].tolist() == [0.1] * 5
    assert mm.filled == 4 and mm.dropped == ["b:y/busy"]


def test_rates_chosen_by_the_user_are_scaled_to_their_maximum() -> None:
    trace = _trace(
        {"nic:lo/rx_bytes_per_s": [0.0, 5e8, 1e9, 2.5e8], "cpu:host/busy": [0.1, 0.2, 0.3, 0.4]}
    )
    mm = metric_matrix(trace, ["nic:*", "cpu:*"])
    assert mm.values[:, 0].tolist() == [0.0, 0.5, 1.0, 0.25]
    assert mm.values[:, 1].tolist() == [0.1, 0.2, 0.3, 0.4]
    assert mm.scaled == ["nic:lo/rx_bytes_per_s"]


def test_uneven_timestamps_go_onto_a_uniform_grid_by_nearest_sample() -> None:
    # a sampler that fell behind: no sample near 0.3 s, two close to 0.45 s
    trace = _trace({"a:x/busy": [0.0, 0.1, 0.2, 0.3, 0.4]}, timestamps=[0.0, 0.1, 0.2, 0.42, 0.5])
    mm = metric_matrix(trace)
    # grid 0, 0.1, ..., 0.5; midpoints between samples 0.05, 0.15, 0.31, 0.46
    assert mm.values[:, 0].tolist() == [0.0, 0.1, 0.2, 0.2, 0.3, 0.4]
    half = metric_matrix(_trace({"a:x/busy": [i / 10 for i in range(10)]}, rate=20.0), rate_hz=10.0)
    assert half.values[:, 0].tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    assert half.rate_hz == 10.0


def test_too_short_a_trace_is_insufficient_data() -> None:
    with pytest.raises(InsufficientData, match="at least 3"):
        metric_matrix(_trace({"a:x/busy": [0.1, 0.2]}))


def test_fixture_traces_are_real_recordings() -> None:
    files = sorted(TRACES.glob("*/*.json"))
    assert len(files) >= 12
    for f in files:
        raw = json.loads(f.read_text())
        assert (
            raw["command"][0].startswith("scenario=") and "process:workload/busy" in raw["series"]
        )
