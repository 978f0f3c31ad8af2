"""Sources: readers on their own schedule, placed on the sampler's grid.

The placement and clock rules by hand, then synthetic sources run beside a real sampler (no
host files are read: the only probe is a counter in memory): one with known values whose
placement is checked tick by tick against the rule written out in plain Python, one that blocks
for many ticks (the sampler's ticks stay on time), one that fails for a while (a gap, a note,
sampling goes on)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from pilot_sys.monitor import sampler as sampler_module
from pilot_sys.monitor.probe import Probe
from pilot_sys.monitor.rates import per_second, place_on_grid
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.monitor.source import Source, SourceReading
from pilot_sys.monitor.source_runner import find_gaps, sample_times

NAN = float("nan")


# -- the rules, by hand -----------------------------------------------------------------------
def test_place_on_grid_by_hand() -> None:
    grid = np.arange(10.0)  # ticks at 0, 1, ..., 9 s
    times = np.array([0.5, 2.5, 3.0, 7.9])  # the source's samples
    values = np.array([1.0, 2.0, 3.0, 4.0])
    # intervals (?, 0.5], (0.5, 2.5], (2.5, 3.0], (3.0, 7.9]: the last is longer than the 3 s bound
    rate = place_on_grid(values, times, grid, interval=True, stale_after=3.0)
    assert rate.tolist()[:4] == [1.0, 2.0, 2.0, 3.0]  # each tick: the first sample at or after it
    assert np.isnan(rate[4:]).all()  # 4-7: inside the too-long interval; 8-9: not closed yet
    # levels: each tick the last sample at or before it, while at most 3 s old
    level = place_on_grid(values, times, grid, interval=False, stale_after=3.0)
    assert np.isnan(level[0]) and level[1:7].tolist() == [1.0, 1.0, 3.0, 3.0, 3.0, 3.0]
    assert np.isnan(level[7]) and level[8:].tolist() == [4.0, 4.0]  # 7: 4 s old
    # the first sample's interval does not reach back further than the bound
    late = place_on_grid(np.array([5.0]), np.array([6.5]), grid, interval=True, stale_after=3.0)
    assert (
        np.isnan(late[:4]).all()
        and late[4:7].tolist() == [5.0, 5.0, 5.0]
        and np.isnan(late[7:]).all()
    )


def test_sample_times_midpoint_or_backend_time_less_the_offset() -> None:
    requested = np.array([0.0, 1.0, 2.0])
    answered = np.array([0.2, 1.05, 2.4])
    plain = sample_times(requested, answered, np.full(3, NAN))
    assert plain.clock == "call midpoint" and plain.offset is None
    assert plain.times.tolist() == pytest.approx([0.1, 1.025, 2.2])
    # the backend's clock is 99.995 s ahead (the fastest call, the second, says so, +- 0.025 s)
    taken = np.array([100.1, 101.02, 102.3])
    remote = sample_times(requested, answered, taken)
    assert remote.clock == "backend time"
    assert remote.offset == pytest.approx(101.02 - 1.025) and remote.uncertainty == pytest.approx(
        0.025
    )
    assert remote.times.tolist() == pytest.approx([0.105, 1.025, 2.305])
    # an answer repeating the previous sample time carries nothing new: dropped
    again = sample_times(requested, answered, np.array([100.1, 100.1, 102.3]))
    assert again.kept.tolist() == [0, 2]


def test_gaps_by_hand() -> None:
    assert find_gaps(np.array([1.0, 2.0, 6.0, 7.0]), 0.0, 10.0, 2.5) == [(2.0, 6.0), (7.0, 10.0)]
    assert find_gaps(np.array([]), 0.0, 4.0, 1.0) == [(0.0, 4.0)]
    assert find_gaps(np.array([0.5, 1.5]), 0.0, 2.0, 1.0) == []


# -- synthetic probes and sources ---------------------------------------------------------------
class _Ticks(Probe):
    """One counter in memory: a grid to place sources on, without reading the host."""

    name = "ticks"
    columns = ("tick:x/n",)

    def __init__(self) -> None:
        super().__init__()
        self.readers = [lambda: (b"1",)]

    def derive(self, raw, t, metrics):
        return {"tick:x/level": raw[:, 0].copy()}


class _Counter(Source):
    """Answers ``events`` = 10 x k and ``queue`` = k on its k-th call (from 0)."""

    name = "counter"
    columns = ("remote:h/events", "remote:h/queue")

    def __init__(
        self,
        interval_s: float,
        *,
        fail: range = range(0),
        block_from: int | None = None,
        clock_ahead: float | None = None,
    ) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.fail = fail
        self.block_from = block_from
        self.clock_ahead = clock_ahead
        self.release = threading.Event()
        self.calls = 0
        self.answered: list[int] = []
        self.closed_on: str | None = None

    def sample(self) -> SourceReading:
        k = self.calls
        self.calls += 1
        if k in self.fail:
            raise ConnectionError("no answer")
        if self.block_from is not None and k >= self.block_from:
            self.release.wait(30.0)
            raise TimeoutError("released by the test")
        taken = None
        if self.clock_ahead is not None:
            time.sleep(0.002)
            taken = time.time() + self.clock_ahead
            time.sleep(0.002)
        self.answered.append(k)
        return SourceReading([10.0 * k, float(k)], taken_at=taken, remote_cpu_seconds=0.01 * k)

    def derive(self, raw, t, metrics):
        return {
            "remote:h/events_per_s": per_second(raw[:, 0], t),
            "remote:h/queue": raw[:, 1].copy(),
        }

    def close(self) -> None:
        self.closed_on = threading.current_thread().name


class _Plugin:
    KIND = "dynamic"

    def __init__(self, opened) -> None:
        self.NAME = opened.name
        self.opened = opened

    def open_probe(self, context):
        return self.opened


def _run(source: _Counter | None, seconds: float, rate_hz: float = 50.0):
    plugins = [_Plugin(_Ticks())] + ([_Plugin(source)] if source is not None else [])
    sampler = Sampler(rate_hz=rate_hz, plugins=plugins)
    sampler.start()
    time.sleep(seconds)
    began = time.monotonic()
    trace = sampler.stop()
    return sampler, trace, time.monotonic() - began


def _expected_on_grid(
    grid: list[float], times: list[float], own: list[float | None], *, interval: bool, bound: float
) -> list[float | None]:
    """The placement rule, written out tick by tick."""
    out: list[float | None] = []
    for g in grid:
        if interval:
            after = [j for j, s in enumerate(times) if s >= g]
            j = after[0] if after else None
            ok = (
                j is not None
                and times[j] - g <= bound
                and (j == 0 or times[j] - times[j - 1] <= bound)
            )
        else:
            before = [j for j, s in enumerate(times) if s <= g]
            j = before[-1] if before else None
            ok = j is not None and g - times[j] <= bound
        out.append(own[j] if ok and j is not None else None)
    return out


def test_a_source_is_placed_on_the_grid_exactly_and_keeps_its_own_times() -> None:
    source = _Counter(0.07)
    sampler, trace, _ = _run(source, 1.0)
    record = trace.sources["counter"]
    times = record.times
    assert (
        len(times) >= 8 and len(times) == len(source.answered) and record.clock == "call midpoint"
    )
    # its own series at its own times: the values it answered, rated between its own samples
    ks = source.answered
    assert record.series["remote:h/queue"] == [float(k) for k in ks]
    rates = record.series["remote:h/events_per_s"]
    assert rates[0] is None
    assert rates[1:] == pytest.approx(
        [
            10.0 * (b - a) / (tb - ta)
            for a, b, ta, tb in zip(ks, ks[1:], times, times[1:], strict=False)
        ]
    )
    # on the grid: each tick by the rule, exactly
    grid = trace.timestamps
    assert trace.series["remote:h/events_per_s"] == _expected_on_grid(
        grid, times, rates, interval=True, bound=record.stale_after_s
    )
    assert trace.series["remote:h/queue"] == _expected_on_grid(
        grid, times, record.series["remote:h/queue"], interval=False, bound=record.stale_after_s
    )
    assert sum(v is not None for v in trace.series["remote:h/queue"]) > 0.8 * len(grid)
    # its cost: its own thread here, the backend's reported CPU time there; closed on its thread
    assert record.cost.cpu_seconds > 0 and record.cost.failed_calls == 0
    assert trace.monitor_cost["source_cpu_seconds"] == pytest.approx(record.cost.cpu_seconds)
    assert record.cost.remote_cpu_seconds == pytest.approx(0.01 * (ks[-1] - ks[0]))
    assert all(0 <= x < 0.05 for x in record.latency_s)
    assert source.closed_on == "pilot-sys-source-counter"
    assert record.gaps == [] and not any("source counter" in n for n in trace.notes)


def test_a_backend_clock_ahead_is_measured_and_taken_out() -> None:
    source = _Counter(0.05, clock_ahead=1000.0)
    _, trace, _ = _run(source, 0.6)
    record = trace.sources["counter"]
    assert record.clock == "backend time"
    # the same wall clock plus 1000 s: found to within the fastest call's half latency
    assert abs(record.clock_offset_s - 1000.0) <= record.clock_offset_uncertainty_s + 1e-3
    assert record.clock_offset_uncertainty_s < 0.01
    # placed at the backend's times less the offset: one sample per call, a call every 50 ms
    steps = np.diff(record.times)
    assert (steps > 0).all() and 0.04 <= float(np.median(steps)) <= 0.07


def test_a_source_that_blocks_for_many_ticks_does_not_delay_the_sampler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sampler_module, "SOURCE_STOP_WAIT_S", 0.3)
    baseline, _, _ = _run(None, 1.0)
    source = _Counter(0.05, block_from=2)  # answers twice, then blocks until released
    sampler, trace, stop_took = _run(source, 1.0)
    try:
        with_source, without = sampler.cost(), baseline.cost()
        # no tick waited on the source: a tick that did would have stopped the sampler at the
        # source's third call (a handful of samples); half the baseline's count leaves room for a
        # loaded machine without letting a blocked tick pass
        assert with_source.samples >= 0.5 * without.samples
        assert with_source.samples > 10 * len(trace.sources["counter"].times)
        assert stop_took < 1.0  # stop() waited for the hung call only as long as it may
        record = trace.sources["counter"]
        assert len(record.times) == 2 and record.gaps and record.gaps[-1][1] == trace.timestamps[-1]
        assert trace.series["remote:h/queue"][-1] is None  # not carried past its staleness bound
        assert any(
            "source counter: a call had not returned 0.3 s after the sampler stopped" in n
            for n in trace.notes
        )
        assert any("source counter: no sample for" in n for n in trace.notes)
    finally:
        source.release.set()
    runner = sampler._runners[0]
    assert (
        runner.join(5.0) and source.closed_on == "pilot-sys-source-counter"
    )  # closed once it returned


def test_a_failing_source_leaves_a_gap_and_a_note_and_sampling_goes_on() -> None:
    source = _Counter(0.04, fail=range(5, 15))  # about 0.4 s without an answer
    _, trace, _ = _run(source, 1.2)
    record = trace.sources["counter"]
    assert record.cost.failed_calls == 10 and record.errors == ["ConnectionError: no answer (10x)"]
    assert len(record.gaps) == 1
    start, end = record.gaps[0]
    assert end - start >= 0.3
    # inside the gap, nothing on the grid; before and after it, the source's series are there
    grid = np.array(trace.timestamps)
    inside = (grid > start + record.stale_after_s) & (grid < end)
    queue = np.array([NAN if v is None else v for v in trace.series["remote:h/queue"]])
    assert inside.any() and np.isnan(queue[inside]).all()
    assert np.isfinite(queue[grid > end + 0.05]).any() and np.isfinite(queue[grid < start]).any()
    assert trace.series["tick:x/level"].count(None) == 0  # the probe was read on every tick
    assert any(
        "source counter: no sample for" in n and "ConnectionError: no answer" in n
        for n in trace.notes
    )


def test_a_plug_in_returning_neither_a_probe_nor_a_source_is_a_note() -> None:
    class Odd:
        KIND, NAME = "dynamic", "odd"

        @staticmethod
        def open_probe(context):
            return object()

    sampler = Sampler(rate_hz=10.0, plugins=[Odd, _Plugin(_Ticks())])
    assert [p.name for p in sampler.probes] == ["ticks"] and sampler.sources == []
    assert any(
        "odd not used: open_probe returned a object, neither a Probe nor a Source" in n
        for n in sampler.context.notes
    )
    sampler.close()
