"""Figures that read as what they measure (issue 22, item 4): an excluded round states the share
of its time above the threshold (what excluded it), not a mean that reads as idle; the busiest
core is one figure in the peak table, the graph boxes and the plot."""

from __future__ import annotations

import numpy as np

from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.plot import usage_lines, usage_of
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.session.journal import MonitorSummary, RoundRecord
from pilot_sys.session.summary import OWN_CORE, utilization_peaks
from pilot_sys.session.verdict import excluded_round


def _record(hidden: list[str]) -> RoundRecord:
    return RoundRecord(
        index=100, workload="w", workload_round=100, dir="r", started_at=0.0,
        work_amount=1.0, duration=1.0, phase="measure",
        monitor=MonitorSummary(file="monitor.json", samples=50, valid=False,
                               hidden_bottlenecks=hidden),
    )  # fmt: skip


def test_an_excluded_round_states_its_time_above_the_threshold_not_a_mean_that_reads_idle() -> None:
    # a single core above 80 % for 34 % of the round, 20 % on average: "20 % busy" read as the
    # opposite of a bottleneck
    verdict = {
        "threshold": 0.8,
        "hidden_bottlenecks": [
            {"component": "cpu:host", "direction": "single core", "mean": 0.2,
             "time_above_fraction": 0.34},
        ],
    }  # fmt: skip
    e = excluded_round(_record(["cpu:host (single core)"]), verdict)
    assert e.text == (
        "round 100 excluded: hidden bottleneck at cpu:host (single core): above 80 % for 34 % "
        "of the round (mean 20 %)"
    )
    assert "% busy" not in e.text
    assert e.time_above == {"cpu:host (single core)": 0.34} and e.threshold == 0.8
    # a trace that cannot be read: the component alone, no figure invented
    e = excluded_round(_record(["cpu:host (single core)"]), None)
    assert e.text == "round 100 excluded: hidden bottleneck at cpu:host (single core)"


def test_the_busiest_core_is_one_figure_in_the_peak_table_the_graph_box_and_the_plot() -> None:
    # one core kept at 100 % by another process while the workload's own processes used 0.24
    # cores: the busiest core peaked at 100 %; the verdict's single-core signal, the workload's
    # own share of it, at 24 %
    n = 21
    t = [0.1 * i for i in range(n)]

    def flat(v: float) -> list[float | None]:
        return [None] + [v] * (n - 1)

    series = {
        "cpu:host/util_compute": flat(0.55),
        "cpu:host/busy": flat(0.55),
        "cpu:host/busiest_core": flat(1.0),
        "process:workload/cpu_cores": flat(0.24),
        "block:vda/util_write": flat(0.3),
    }
    trace = MonitorTrace(
        rate_hz=10.0, start_time=0.0, timestamps=t, series=series,
        component_under_test="block:vda",
    )  # fmt: skip
    verdict = assess(trace, None, "block:vda", threshold=0.8)
    judged = next(s for s in verdict.per_component if s.direction == "single core")
    assert judged.peak is not None and abs(judged.peak - 0.24) < 1e-9
    peaks = utilization_peaks(trace, verdict)
    arrays = {k: np.array([np.nan if x is None else x for x in v]) for k, v in series.items()}
    box = usage_of(arrays)["cpu:host"]
    assert peaks["cpu:host/busiest_core"] == box.peaks["busiest core"] == 1.0  # one figure
    assert "peak 55 %, 1 core 100 %" in usage_lines(box)
    # the judged share is shown too, under its own name, never as "the busiest core"
    assert abs(peaks["cpu:host/busiest_core" + OWN_CORE] - 0.24) < 1e-9
    assert list(peaks)[0] == "cpu:host/busiest_core"  # highest first
