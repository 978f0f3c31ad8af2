"""The verdict on hand-built traces whose statistics are worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.trace import MonitorTrace

TWO_CORES = {"value": 2.0, "unit": "cores", "source": "sysfs", "detail": "2 online CPUs"}


def trace(t: list[float], series: dict[str, list[float | None]], **extra) -> MonitorTrace:
    return MonitorTrace(rate_hz=10.0, start_time=0.0, timestamps=t, series=series, **extra)


def steady(n: int, value: float) -> list[float | None]:
    return [None] + [value] * (n - 1)


def test_hidden_cpu_is_named_with_evidence_and_the_cut_is_not() -> None:
    n = 11  # 10 intervals of 1 s
    cpu = [None, 0.9, 0.95, 0.99, 0.9, 0.85, 0.2, 0.2, 0.2, 0.2, 0.2]  # hot for 5 of 10 s
    tr = trace(
        [float(i) for i in range(n)],
        {
            "cpu:host/util_compute": cpu,
            "cpu:host/busy_cores": [None if v is None else 2 * v for v in cpu],
            "cpu:host/busy": cpu,
            "block:vda/busy": steady(n, 0.97),
            "block:vda/write_bytes_per_s": steady(n, 100e6),
            "process:7/cpu_cores": steady(n, 0.25),
        },
        limits={"cpu:host/compute": TWO_CORES},
        component_under_test="block:vda",
    )
    v = assess(tr)
    assert not v.valid
    assert [h.component for h in v.hidden_bottlenecks] == ["cpu:host"]
    h = v.hidden_bottlenecks[0]
    assert h.time_above_fraction == pytest.approx(0.5)
    assert h.mean == pytest.approx(np.mean(cpu[1:]))  # equal intervals: the plain mean
    assert h.peak == pytest.approx(0.99)
    assert h.p95 == pytest.approx(np.percentile(cpu[1:], 95))
    # evidence names the numbers and who used the CPU: 0.25 cores the workload, the rest others
    assert "50 % of the run" in h.evidence and "0.25 cores" in h.evidence
    others = np.mean([2 * c for c in cpu[1:]]) - 0.25
    assert f"other processes {others:.2f}" in h.evidence
    assert v.cut_saturated  # vda busy 97% all along: the single-queue disk's busy time counts
    assert v.cut_limit_unknown
    assert any("no stated throughput limit" in note and "busy time" in note for note in v.notes)


def test_time_above_is_weighted_by_interval_not_by_sample_count() -> None:
    # four hot samples; each covers the interval that ends at it
    series = {"nic:eth0/util_send": [None, 0.9, 0.9, 0.9, 0.9, 0.1, 0.1]}
    short = trace([0.0, 0.1, 0.2, 0.3, 0.4, 5.0, 10.0], series, component_under_test="block:vda")
    long = trace([0.0, 1.0, 2.0, 3.0, 4.0, 4.5, 5.0], series, component_under_test="block:vda")
    v_short, v_long = assess(short), assess(long)
    # 0.4 s hot of 10 s = 4 %: within the 10 % allowance; 4 s of 5 s = 80 %: not
    assert v_short.per_component[0].time_above_fraction == pytest.approx(0.04)
    assert v_short.valid
    assert v_long.per_component[0].time_above_fraction == pytest.approx(0.8)
    assert not v_long.valid
    # time-weighted mean: (0.9 x 0.4 + 0.1 x 9.6) / 10
    assert v_short.per_component[0].mean == pytest.approx((0.9 * 0.4 + 0.1 * 9.6) / 10)


def test_the_allowance_boundary() -> None:
    # 20 intervals of 1 s, hot in exactly 2: 10 % is allowed, 15 % is not
    base = [None] + [0.5] * 20
    two = list(base)
    two[1] = two[2] = 0.95
    three = list(two)
    three[3] = 0.95
    t = [float(i) for i in range(21)]
    assert assess(
        trace(t, {"memory:host/util_capacity": two}, component_under_test="block:vda")
    ).valid
    assert not assess(
        trace(t, {"memory:host/util_capacity": three}, component_under_test="block:vda")
    ).valid
    assert assess(
        trace(t, {"memory:host/util_capacity": three}, component_under_test="block:vda"),
        max_hot_fraction=0.15,
    ).valid


def test_single_thread_saturating_one_core_is_flagged() -> None:
    n = 21
    tr = trace(
        [i * 0.1 for i in range(n)],
        {
            "cpu:host/util_compute": steady(n, 0.55),
            "cpu:host/busy": steady(n, 0.55),
            "cpu:host/busiest_core": steady(n, 1.0),
            "process:9/cpu_cores": steady(n, 1.0),
        },
        component_under_test="block:vda",
    )
    v = assess(tr)
    assert [(h.component, h.direction) for h in v.hidden_bottlenecks] == [
        ("cpu:host", "single core")
    ]
    assert "all cores together averaged 55 %" in v.hidden_bottlenecks[0].evidence


def test_a_core_kept_busy_by_another_process_is_not_the_workloads_limit() -> None:
    """One core saturated by background work (stress-ng --cpu 1 on two cores) while the
    workload uses a tenth of a core: the scheduler gives it the other core, nothing to name.
    The same busy core with the workload on it is its single-thread limit."""
    n = 21
    series = {
        "cpu:host/util_compute": steady(n, 0.55),
        "cpu:host/busy": steady(n, 0.55),
        "cpu:host/busiest_core": steady(n, 1.0),
    }
    t = [i * 0.1 for i in range(n)]
    light = trace(
        t,
        {**series, "process:workload/cpu_cores": steady(n, 0.1)},
        component_under_test="block:vda",
    )
    assert assess(light).valid
    heavy = trace(
        t,
        {**series, "process:workload/cpu_cores": steady(n, 0.97)},
        component_under_test="block:vda",
    )
    (named,) = assess(heavy).hidden_bottlenecks
    assert (named.component, named.direction) == ("cpu:host", "single core")
    assert named.evidence.startswith("the workload's own processes kept a core busy above 80 %")


def test_a_remote_busy_core_stays_named_beside_a_hot_local_cpu() -> None:
    """All local cores hot names cpu:host once (not its busiest core again); a remote host's
    single busy core is another component and stays named."""
    n = 21
    tr = trace(
        [i * 0.1 for i in range(n)],
        {
            "cpu:host/util_compute": steady(n, 0.95),
            "cpu:host/busiest_core": steady(n, 1.0),
            "cpu:srv/util_compute": steady(n, 0.6),
            "cpu:srv/busiest_core": steady(n, 1.0),
        },
        component_under_test="nic:eth0",
    )
    named = {(h.component, h.direction) for h in assess(tr).hidden_bottlenecks}
    assert named == {("cpu:host", "compute"), ("cpu:srv", "single core")}


def test_cpu_as_the_cut_covers_its_busiest_core() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {"cpu:host/util_compute": steady(n, 0.99), "cpu:host/busiest_core": steady(n, 1.0)},
    )
    v = assess(tr, cut="cpu:host")
    assert v.valid and v.cut_saturated and not v.cut_limit_unknown


def test_busy_time_of_a_parallel_device_is_reported_not_judged() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {"block:nvme0n1/busy": steady(n, 1.0), "block:vda/busy": steady(n, 0.3)},
        attrs={"block:nvme0n1": {"serves_in_parallel": True}},
        component_under_test="block:vda",
    )
    v = assess(tr)
    assert v.valid
    nvme = next(s for s in v.per_component if s.component == "block:nvme0n1")
    assert not nvme.judged and nvme.mean == 1.0
    assert any("in parallel" in note for note in v.notes)


def test_nothing_saturated_is_flagged() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {"cpu:host/util_compute": steady(n, 0.3), "block:vda/busy": steady(n, 0.2)},
        component_under_test="block:vda",
    )
    v = assess(tr)
    assert v.valid and v.nothing_saturated and not v.cut_saturated
    assert any("limit lies elsewhere" in note for note in v.notes)


def test_off_path_components_are_noted_not_blamed() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {"block:sdb/busy": steady(n, 1.0), "block:vda/busy": steady(n, 0.95)},
        component_under_test="block:vda",
    )
    v = assess(tr, data_path=["mount:/", "block:vda", "pci:0000:00:02.0"])
    assert v.valid
    assert any("block:sdb" in note and "not on the data path" in note for note in v.notes)
    assert not assess(tr).valid  # without a data path, every monitored component is a candidate


def test_a_known_limit_wins_over_busy_time() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {"block:vda/busy": steady(n, 1.0), "block:vda/util_write": steady(n, 0.4)},
        limits={"block:vda/write": {"value": 1e9, "unit": "B/s", "source": "user"}},
        component_under_test="nic:eth0",
    )
    v = assess(tr)
    assert v.valid  # 40 % of its stated limit; 100 % busy time is not judged then
    assert not any("understates" in note for note in v.notes)
    busy = next(s for s in v.per_component if s.metric == "block:vda/busy")
    assert not busy.judged and busy.mean == 1.0
    assert any("nothing was measured for the CUT nic:eth0" in note for note in v.notes)


def test_too_short_a_run_says_so() -> None:
    v = assess(
        trace([0.0, 0.1], {"cpu:host/util_compute": [None, 0.99]}, component_under_test="cpu:host")
    )
    assert any("too short" in note for note in v.notes)


def test_verdict_round_trips_in_the_trace_json() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {"cpu:host/util_compute": steady(n, 0.99)},
        component_under_test="block:vda",
    )
    v = assess(tr)
    tr.verdict = v.model_dump(mode="json")
    back = MonitorTrace.model_validate_json(tr.model_dump_json())
    assert back.verdict["hidden_bottlenecks"][0]["component"] == "cpu:host"
    assert back.verdict["hidden_bottlenecks"][0]["evidence"]


def test_a_rate_above_the_stated_limit_questions_the_limit() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {"block:vda/util_write": steady(n, 12.0)},
        limits={
            "block:vda/write": {"value": 2.5e8, "unit": "B/s", "source": "user", "detail": "rating"}
        },
        component_under_test="block:vda",
    )
    v = assess(tr)
    assert v.cut_saturated and v.valid
    assert any(
        "reached 1200 % of its limit of 238 MiB/s (user: rating)" in note for note in v.notes
    )


def test_a_cut_without_a_limit_says_what_was_measured_instead() -> None:
    n = 11
    tr = trace(
        [float(i) for i in range(n)],
        {
            "nic:lo/rx_bytes_per_s": steady(n, 2**30),
            "nic:lo/tx_bytes_per_s": steady(n, 2**30),
            "cpu:host/util_compute": steady(n, 0.99),
        },
        limits={
            "nic:lo/receive": {"value": None, "source": "unknown", "detail": "speed unreadable"}
        },
        component_under_test="nic:lo",
    )
    v = assess(tr)
    assert v.cut_limit_unknown and not v.cut_saturated
    assert any(
        "the CUT nic:lo has no stated throughput limit (speed unreadable)" in note
        and "receive 8.59 Gbit/s, send 8.59 Gbit/s" in note
        for note in v.notes
    ), v.notes
    assert not any("nothing was measured" in note for note in v.notes)
