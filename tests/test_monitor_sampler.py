"""The sampler on this machine: drift-free ticks, spilling, its own cost, the trace it returns."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.errors import BadInput
from pilot_sys.monitor.sampler import Sampler, read_spill


@pytest.mark.serial  # times its ticks
@pytest.mark.live
def test_ticks_follow_absolute_deadlines() -> None:
    rate = 50.0
    sampler = Sampler(rate_hz=rate)
    with sampler:
        time.sleep(1.2)
    trace = sampler.trace
    cost = sampler.cost()
    t = np.asarray(trace.timestamps)[:-1]  # the last one is the closing sample, taken at stop()
    period = 1.0 / rate
    # every tick sits on the grid t0 + k / rate (late by less than a period), so the last tick's
    # grid index is the number of ticks taken plus the deadlines skipped: no drift accumulates
    grid = np.floor(t / period + 1e-9)
    lateness = t - grid * period
    assert np.median(lateness) < 0.5 * period
    assert grid[-1] == pytest.approx(len(t) - 1 + cost.skipped_ticks, abs=1)
    assert np.all(np.diff(grid) >= 1)
    assert cost.samples == len(t) + 1


@pytest.mark.live
def test_a_short_command_still_gets_a_closing_sample() -> None:
    sampler = Sampler(rate_hz=2.0)  # first tick at start, the next not due for 0.5 s
    sampler.start()
    time.sleep(0.05)
    trace = sampler.stop()
    assert len(trace.timestamps) == 2  # the opening and the closing sample: one interval measured
    assert trace.series["cpu:host/busy"][1] is not None


@pytest.mark.live
def test_spills_full_buffers_and_keeps_every_sample(tmp_path: Path) -> None:
    sampler = Sampler(rate_hz=100.0, spill_dir=tmp_path, chunk_rows=64)
    sampler.start()
    time.sleep(1.6)
    memory_while_running = sampler.cost().memory_bytes
    trace = sampler.stop()
    spilled = sorted(tmp_path.glob("samples-*.npy"))
    assert len(spilled) >= 2
    assert (tmp_path / "columns.json").exists()
    # bounded: one buffer of 64 rows in memory, whatever the length of the run
    assert memory_while_running == sampler._buf.nbytes + sampler._times.nbytes
    assert len(trace.timestamps) == sampler.cost().samples
    assert np.all(np.diff(trace.timestamps) > 0)  # chunks joined in order
    # what was spilled reads back on its own: the first 64-row chunks of the same recording
    columns, raw, times = read_spill(tmp_path)
    assert columns == sampler.columns and raw.shape == (64 * len(spilled), len(columns))
    all_raw, all_times = sampler.raw()
    assert np.array_equal(raw, all_raw[: len(raw)], equal_nan=True)
    assert np.array_equal(times, all_times[: len(times)])


@pytest.mark.serial  # measures the sampler's own cost
@pytest.mark.live
def test_accounts_for_its_own_cost() -> None:
    sampler = Sampler(rate_hz=40.0)
    per_sample = sampler.per_sample_cost(50)
    sampler.start()
    time.sleep(1.0)
    live = sampler.cost()
    assert live.cpu_seconds > 0
    sampler.stop()
    cost = sampler.cost()
    assert 0 < per_sample < 0.01
    assert cost.cpu_seconds >= live.cpu_seconds
    assert 0 < cost.cpu_seconds_per_second < 0.5
    assert cost.cpu_seconds_per_sample == pytest.approx(cost.cpu_seconds / cost.samples)
    assert cost.wakeups_per_second == pytest.approx(40.0, rel=0.25)
    trace = sampler.trace
    assert trace.monitor_cost["cpu_seconds"] == pytest.approx(cost.cpu_seconds)


@pytest.mark.live
def test_trace_has_utilization_levels_and_limits() -> None:
    with Sampler(rate_hz=20.0) as sampler:
        time.sleep(0.4)
        latest = sampler.recent()
    trace = sampler.trace
    assert "cpu:host/util_compute" in latest
    assert 0.0 <= latest["cpu:host/busy"] <= 1.0
    busy = [v for v in trace.series["cpu:host/busy"] if v is not None]
    assert busy and all(0.0 <= v <= 1.0 for v in busy)
    assert trace.series["cpu:host/busy"][0] is None  # a rate needs an interval
    assert trace.limits["cpu:host/compute"]["value"] >= 1
    assert any(key.startswith("memory:host/") for key in trace.series)


@pytest.mark.live
def test_components_restrict_what_is_read() -> None:
    sampler = Sampler(rate_hz=10.0, components=["memory:host"])
    # memory pressure (PSI) is a plug-in of its own, read at the full rate
    assert sorted(p.name for p in sampler.probes) == ["memory", "memory_pressure"]
    sampler.start()
    time.sleep(0.3)
    trace = sampler.stop()
    assert all(key.startswith("memory:host/") for key in trace.series)


def test_bad_rate_is_bad_input() -> None:
    with pytest.raises(BadInput):
        Sampler(rate_hz=0.0)


class _BrokenOnOpen:
    KIND, NAME = "dynamic", "broken-on-open"

    @staticmethod
    def open_probe(context):
        raise RuntimeError("no such hardware")


@pytest.mark.live
def test_a_failing_plug_in_is_a_note_and_a_failing_reader_leaves_gaps_not_an_end() -> None:
    from pilot_sys.plugins.dynamic import memory

    calls = {"n": 0}

    class FailsFromTheFifthRead:
        KIND, NAME = "dynamic", "fails-from-the-fifth-read"

        @staticmethod
        def open_probe(context):
            probe = memory.open_probe(context)
            probe.max_rate_hz = None  # read on every tick: this test counts reads per tick
            inner = list(probe.readers)

            def read_or_fail():
                calls["n"] += 1  # the first call is the sampler learning the reader's width
                if 5 <= calls["n"] <= 8:
                    raise OSError("device gone")
                return inner[0]()

            probe.readers = [read_or_fail, *inner[1:]]
            return probe

    sampler = Sampler(rate_hz=50.0, plugins=[_BrokenOnOpen, FailsFromTheFifthRead])
    sampler.start()
    time.sleep(0.5)
    trace = sampler.stop()
    assert len(trace.timestamps) >= 15  # sampling went on
    used = trace.series["memory:host/used_bytes"]
    # reads 2-4 are samples 0-2; a failing tick tries the reader twice (the fast path, then
    # each reader on its own), so reads 5-8 are samples 3-4: missing, not zero; then it is back
    assert all(v is not None for v in used[:3]) and all(v is None for v in used[3:5])
    assert all(v is not None for v in used[5:])
    assert trace.series["memory:host/major_faults_per_s"][3] is not None  # other readers unaffected
    assert any("broken-on-open not used: RuntimeError: no such hardware" in n for n in trace.notes)
    assert any("memory:host failed at times (OSError: device gone)" in n for n in trace.notes)
