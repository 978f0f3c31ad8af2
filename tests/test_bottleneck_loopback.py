"""The loopback rule on hand-built traces: a loopback CUT's CPU and memory are the CUT."""

from __future__ import annotations

import pytest

from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.trace import MonitorTrace

TWO_CORES = {"value": 2.0, "unit": "cores", "source": "sysfs", "detail": "2 online CPUs"}
N = 11  # 10 intervals of 1 s


def steady(value: float) -> list[float | None]:
    return [None] + [value] * (N - 1)


def loopback_run(cut: str, *, loopback: bool, own: float = 1.2) -> MonitorTrace:
    """iperf3 over lo: both cores busy, the client and its local server using ``own`` cores."""
    return MonitorTrace(
        rate_hz=1.0,
        start_time=0.0,
        timestamps=[float(i) for i in range(N)],
        series={
            "cpu:host/util_compute": steady(0.95),
            "cpu:host/busy_cores": steady(1.9),
            "cpu:host/busy": steady(0.95),
            f"{cut}/tx_bytes_per_s": steady(2.5e9),
            "process:workload/cpu_cores": steady(own),
        },
        limits={"cpu:host/compute": TWO_CORES},
        attrs={cut: {"loopback": loopback}},
        component_under_test=cut,
    )


def test_a_hot_cpu_is_a_loopback_cuts_own_saturation() -> None:
    v = assess(loopback_run("nic:lo", loopback=True))
    assert v.valid and not v.hidden_bottlenecks
    assert v.cut_saturated and v.governing == "nic:lo"
    note = next(n for n in v.notes if "is loopback" in n)
    assert "CPU and memory" in note and "CPU busy mean 95 %" in note
    # 1.9 busy cores, 1.2 of them the workload's (client and server): others 0.70
    assert "used 1.20 cores, other processes 0.70" in note
    assert "left to the workload" not in note


def test_other_processes_taking_most_of_the_cpu_are_said_to_shape_the_number() -> None:
    v = assess(loopback_run("nic:lo", loopback=True, own=0.4))
    note = next(n for n in v.notes if "is loopback" in n)
    assert "other processes 1.50" in note
    assert "the number is what the other processes left to the workload" in note


@pytest.mark.parametrize("cut", ["nic:eth0", "block:vda"])
def test_the_same_hot_cpu_is_hidden_for_any_other_cut(cut: str) -> None:
    v = assess(loopback_run(cut, loopback=False))
    assert not v.valid and [h.component for h in v.hidden_bottlenecks] == ["cpu:host"]
    assert not any("is loopback" in n for n in v.notes)


def test_loopback_is_known_from_the_graphs_words_when_the_probe_did_not_say() -> None:
    tr = loopback_run("nic:lo", loopback=False)
    tr.attrs = {}
    tr.limits["nic:lo/send"] = {
        "value": None,
        "unit": "B/s",
        "source": "unknown",
        "detail": "loopback: limited by memory and CPU",
    }
    assert assess(tr).valid
