"""Counter-file parsers on the captured and hand-written trees, and the throttling formulas
against a plain per-interval loop written from the kernel fields' definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.monitor.kernel_counters import (
    blkio_stat,
    flat_keyed,
    nested_keyed,
    pressure_totals,
    single,
)
from pilot_sys.monitor.throttling import (
    NS,
    US,
    below,
    cores_used,
    events,
    events_per_second,
    fraction_of,
    frequency_hz,
    throttled_periods,
    time_share,
)

V1 = FIXTURES / "limits/v1-bench/sys/fs/cgroup"
V2 = FIXTURES / "limits/v2-bench/sys/fs/cgroup/bench.slice"


def test_v1_captured_counter_files() -> None:
    """Captured after 1 s of a busy loop under the 0.2-core quota and two 8 MiB direct writes:
    throttling is counted where the quota is set (/kl-bench), not in the child holding the task."""
    assert flat_keyed((V1 / "cpu/kl-bench/cpu.stat").read_text()) == {
        "nr_periods": 37,
        "nr_throttled": 21,
        "throttled_time": 770055001,
        "nr_bursts": 0,
        "burst_time": 0,
    }
    assert flat_keyed((V1 / "cpu/kl-bench/job/cpu.stat").read_text())["nr_throttled"] == 0
    service = blkio_stat((V1 / "blkio/kl-bench/job/blkio.throttle.io_service_bytes").read_text())
    assert service == {
        "254:0": {
            "Read": 0,
            "Write": 16 * 2**20,
            "Sync": 16 * 2**20,
            "Async": 0,
            "Discard": 0,
            "Total": 16 * 2**20,
        }
    }
    assert (
        blkio_stat((V1 / "blkio/kl-bench/job/blkio.throttle.io_serviced").read_text())["254:0"][
            "Write"
        ]
        == 24
    )
    assert single((V1 / "memory/kl-bench/job/memory.failcnt").read_text()) == 0
    assert single((V1 / "cpuacct/cpuacct.usage").read_text()) == 2869373377894
    assert single("max\n") is None


def test_v2_counter_files() -> None:
    assert flat_keyed((V2 / "cpu.stat").read_text())["throttled_usec"] == 7918022
    assert nested_keyed((V2 / "job.scope/io.stat").read_text()) == {
        "259:0": {
            "rbytes": 1048576,
            "wbytes": 209715200,
            "rios": 16,
            "wios": 200,
            "dbytes": 0,
            "dios": 0,
        },
        "8:0": {"rbytes": 4096, "wbytes": 0, "rios": 1, "wios": 0, "dbytes": 0, "dios": 0},
    }
    assert flat_keyed((V2 / "job.scope/memory.events").read_text())["max"] == 1873
    assert pressure_totals((V2 / "job.scope/memory.pressure").read_text()) == {
        "some": 1534000,
        "full": 1200000,
    }


def _loop_rate(values: list[float], t: list[float], scale: float = 1.0) -> list[float]:
    """The per-interval rate written out one interval at a time (the reference)."""
    out = [math.nan]
    for i in range(1, len(values)):
        d, dt = values[i] - values[i - 1], t[i] - t[i - 1]
        out.append(math.nan if d < 0 or dt <= 0 else d / dt / scale)
    return out


def test_cpu_quota_formulas_against_a_loop() -> None:
    """0.2-core quota, 100 ms periods, sampled every 0.5 s: a busy task is throttled in 4 of 5
    periods per sample; the cgroup is recreated before the last sample (counters restart)."""
    t = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    periods = [100, 105, 110, 115, 115, 3]
    throttled = [80, 84, 88, 92, 92, 1]
    throttled_ns = [64e9, 64.32e9, 64.64e9, 64.96e9, 64.96e9, 0.1e9]
    usage_ns = [20e9, 20.1e9, 20.2e9, 20.3e9, 20.3e9, 0.0]
    shares = throttled_periods(np.array(throttled), np.array(periods))
    expected = [math.nan] + [
        math.nan
        if periods[i] - periods[i - 1] <= 0 or throttled[i] < throttled[i - 1]
        else (throttled[i] - throttled[i - 1]) / (periods[i] - periods[i - 1])
        for i in range(1, len(t))
    ]
    np.testing.assert_allclose(shares, expected, equal_nan=True)
    assert shares[1] == pytest.approx(0.8) and np.isnan(shares[4]) and np.isnan(shares[5])
    np.testing.assert_allclose(
        time_share(np.array(throttled_ns), np.array(t), NS),
        _loop_rate(throttled_ns, t, NS),
        equal_nan=True,
    )
    used = cores_used(np.array(usage_ns), np.array(t), NS)
    np.testing.assert_allclose(used, _loop_rate(usage_ns, t, NS), equal_nan=True)
    assert used[1] == pytest.approx(0.2)
    np.testing.assert_allclose(
        fraction_of(used, 0.2), np.array(_loop_rate(usage_ns, t, NS)) / 0.2, equal_nan=True
    )
    assert fraction_of(used, None) is None and fraction_of(used, 0.0) is None


def test_io_memory_qdisc_formulas_against_a_loop() -> None:
    t = [0.0, 1.0, 2.0, 3.5]
    # io_service_bytes Write under a 20 MiB/s throttle
    written = [
        0.0,
        20 * 2**20,
        40 * 2**20,
        70 * 2**20,
    ]
    rate = events_per_second(np.array(written), np.array(t))
    np.testing.assert_allclose(rate, _loop_rate(written, t), equal_nan=True)
    np.testing.assert_allclose(
        fraction_of(rate, 20 * 2**20), [math.nan, 1.0, 1.0, 1.0], equal_nan=True
    )
    failcnt = [5.0, 5.0, 9.0, 12.0]
    np.testing.assert_allclose(
        events_per_second(np.array(failcnt), np.array(t)), _loop_rate(failcnt, t), equal_nan=True
    )
    np.testing.assert_allclose(
        events(np.array([0.0, 0.0, 1.0, 1.0])), [math.nan, 0.0, 1.0, 0.0], equal_nan=True
    )
    some_us = [1534000.0, 1934000.0, 2034000.0, 2034000.0]
    np.testing.assert_allclose(
        time_share(np.array(some_us), np.array(t), US), _loop_rate(some_us, t, US), equal_nan=True
    )


def test_frequency_formulas() -> None:
    hz = frequency_hz(np.array([1995312.0, 0.0, 4388221.0]))
    np.testing.assert_allclose(hz, [1995312e3, math.nan, 4388221e3], equal_nan=True)
    np.testing.assert_allclose(below(hz, 2.9e9), [1.0, math.nan, 0.0], equal_nan=True)
    assert np.isnan(below(hz, None)).all()
