"""Remote components are judged like local ones: series keys whose component id holds a '/'
(``nic:srv/eth0/util_receive``) are read whole, and the verdict names them."""

from __future__ import annotations

from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.trace import MonitorTrace

T = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def _trace(series: dict[str, list[float | None]]) -> MonitorTrace:
    return MonitorTrace(rate_hz=10.0, start_time=0.0, timestamps=T, series=series)


def test_a_saturated_remote_nic_and_a_busy_remote_disk_are_named() -> None:
    hot, calm = [None] + [0.95] * 10, [None] + [0.1] * 10
    trace = _trace(
        {
            "network:host~srv/util_send": calm,
            "nic:srv/eth0/util_receive": hot,
            "block:srv/vda/busy": hot,
            "cpu:srv/util_compute": calm,
            "cpu:srv/busiest_core": calm,
        }
    )
    path = ["network:host~srv", "nic:srv/eth0", "memory:srv", "cpu:srv", "block:srv/vda"]
    verdict = assess(trace, cut="network:host~srv", data_path=path)
    assert not verdict.valid
    assert sorted((h.component, h.direction) for h in verdict.hidden_bottlenecks) == [
        ("block:srv/vda", "busy"),
        ("nic:srv/eth0", "receive"),
    ]


def test_a_remote_single_core_is_named_as_one() -> None:
    trace = _trace(
        {
            "cpu:srv/util_compute": [None] + [0.5] * 10,
            "cpu:srv/busiest_core": [None] + [1.0] * 10,
            "network:host~srv/util_send": [None] + [0.2] * 10,
        }
    )
    verdict = assess(trace, cut="network:host~srv", data_path=["network:host~srv", "cpu:srv"])
    assert [(h.component, h.direction) for h in verdict.hidden_bottlenecks] == [
        ("cpu:srv", "single core")
    ]
