"""Phase checks over recorded monitor traces: the series chosen and the trace -> matrix step.

``pilot_sys.stats.phases`` takes metric matrices only; ``pilot_sys.monitor.phase_traces`` feeds
it from traces (tests/fixtures/traces: fio, stress-ng recorded on a real machine).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.monitor.phase_traces import (
    WORKLOAD_SERIES,
    compare_phase_behaviour,
    consistent_rounds,
    phase_matrix,
)
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.monitor.trace_io import load_traces, metric_matrix
from pilot_sys.stats import phases

TRACES = FIXTURES / "traces"


def _traces(scenario: str, count: int) -> list[MonitorTrace]:
    return [load_traces(f)[0].trace for f in sorted((TRACES / scenario).glob("*.json"))[:count]]


def test_the_workload_series_are_chosen_when_a_trace_has_them() -> None:
    trace = _traces("fio_mix", 1)[0]
    own = metric_matrix(
        trace,
        [
            "process:workload/busy",
            "process:workload/read_bytes_per_s",
            "process:workload/write_bytes_per_s",
        ],
    )
    assert own.columns == metric_matrix(trace, WORKLOAD_SERIES).columns
    np.testing.assert_array_equal(phase_matrix(trace), own.values)
    # explicit globs win over the default
    host = metric_matrix(trace, ["*/util*", "*/busy"])
    assert any(not c.startswith("process:") for c in host.columns)
    np.testing.assert_array_equal(phase_matrix(trace, ["*/util*", "*/busy"]), host.values)


def test_without_process_series_the_host_utilizations_are_used() -> None:
    trace = _traces("fio_mix", 1)[0]
    host_only = trace.model_copy(
        update={"series": {k: v for k, v in trace.series.items() if not k.startswith("process:")}}
    )
    matrix = phase_matrix(host_only)
    np.testing.assert_array_equal(matrix, metric_matrix(host_only).values)
    assert matrix.shape[1] != phase_matrix(trace).shape[1]


def test_a_matrix_passes_through_unchanged() -> None:
    x = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(phase_matrix(x), x)
    np.testing.assert_array_equal(phase_matrix(x.tolist()), x)


def test_trace_helpers_equal_the_detector_on_the_matrices() -> None:
    traces = _traces("fio_mix", 3)
    matrices = [metric_matrix(t, WORKLOAD_SERIES).values for t in traces]
    assert consistent_rounds(traces) == phases.consistent_rounds(matrices)
    assert compare_phase_behaviour(traces[:2], traces[2:]) == phases.compare_phase_behaviour(
        matrices[:2], matrices[2:]
    )
    host = [metric_matrix(t, ["*/util*", "*/busy"]).values for t in traces]
    by_globs = consistent_rounds(traces, metrics=["*/util*", "*/busy"])
    assert by_globs == phases.consistent_rounds(host)


def test_real_rounds_of_one_workload_agree_and_a_foreign_round_stands_out() -> None:
    fio = _traces("fio_mix", 4)
    pulses = _traces("stress_pulses", 1)[0]
    checks = consistent_rounds([*fio[:2], pulses, *fio[2:]])
    assert [c.consistent for c in checks] == [True, True, False, True, True]
    assert compare_phase_behaviour(fio[:2], fio[2:]) is None
    assert compare_phase_behaviour(fio[:2], [pulses]) is not None


def test_the_detector_itself_takes_no_traces() -> None:
    """The statistics layer has no notion of a trace: passing one fails instead of guessing."""
    trace = _traces("fio_mix", 1)[0]
    with pytest.raises((TypeError, ValueError)):
        phases.consistent_rounds([trace, trace])
    assert not hasattr(phases, "WORKLOAD_SERIES")
