"""FunctionWorkload and @benchmark: in-process Python workloads."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from pilot_sys.errors import WorkloadFailed
from pilot_sys.stats.pi import PIType
from pilot_sys.workload import FunctionWorkload, PISpec, Workload, benchmark
from pilot_sys.workload.pyfunc import REGISTRY


def test_timed_function_gives_work_per_second(tmp_path: Path) -> None:
    seen: list[int] = []

    def sleeper(n: int) -> None:
        seen.append(n)
        time.sleep(n / 1000)

    workload = FunctionWorkload(sleeper, work_amount_unit="ms")
    assert isinstance(workload, Workload)
    out = workload.run_round(30.4, tmp_path)
    assert seen == [30] and out.work_amount == 30
    assert out.duration >= 0.030
    assert out.readings["work_rate"] == pytest.approx(30 / out.duration)
    assert out.readings["work_rate"] <= 1000  # sleeping 1 ms per unit cannot beat 1000 units/s
    assert (
        workload.pi_specs()[0].unit == "ms/s" and workload.pi_specs()[0].pi_type == PIType.HARMONIC
    )


def test_returned_readings_and_unit_readings(tmp_path: Path) -> None:
    rate = PISpec(name="ops", unit="op/s", pi_type=PIType.HARMONIC)
    workload = FunctionWorkload(lambda n: {"ops": [100.0, 400.0], "latency": 0.5}, pi_specs=[rate])
    out = workload.run_round(2, tmp_path)
    assert out.readings["ops"] == pytest.approx(stats.hmean([100.0, 400.0]))  # 160
    assert out.readings["latency"] == 0.5
    np.testing.assert_array_equal(out.unit_readings["ops"], [100.0, 400.0])
    assert [s.name for s in workload.pi_specs()] == ["ops", "latency"]


def test_single_number_goes_to_the_single_pi(tmp_path: Path) -> None:
    spec = PISpec(name="checksum_time", unit="s", higher_is_better=False)
    out = FunctionWorkload(lambda n: 0.25 * n, pi_specs=[spec]).run_round(4, tmp_path)
    assert out.readings == {"checksum_time": 1.0}
    plain = FunctionWorkload(lambda n: 2.0 * n)
    assert plain.run_round(3, tmp_path).readings == {"value": 6.0}


def test_per_unit_calls_are_each_timed(tmp_path: Path) -> None:
    calls: list[int] = []
    workload = FunctionWorkload(lambda n: calls.append(n), unit_readings=True)
    out = workload.run_round(50, tmp_path)
    assert calls == [1] * 50
    units = out.unit_readings["work_rate"]
    assert units.size == 50 and np.all(units > 0)
    # The reading is total units over total time: the harmonic mean of the per-call rates.
    assert out.readings["work_rate"] == pytest.approx(stats.hmean(units), rel=1e-9)
    assert out.unit_timestamps["work_rate"][-1] == pytest.approx(out.duration)


def test_per_unit_values_are_unit_readings(tmp_path: Path) -> None:
    values = iter([3.0, 5.0, 7.0])
    out = FunctionWorkload(
        lambda n: next(values), unit_readings=True, pi_specs=[PISpec(name="x", unit="")]
    ).run_round(3, tmp_path)
    np.testing.assert_array_equal(out.unit_readings["x"], [3.0, 5.0, 7.0])
    assert out.readings["x"] == 5.0


def test_errors_in_user_code_are_failed_rounds(tmp_path: Path) -> None:
    def broken(n: int) -> None:
        raise ValueError("bad seed")

    with pytest.raises(WorkloadFailed, match=r"broken\(3\) raised ValueError: bad seed"):
        FunctionWorkload(broken, name="broken").run_round(3, tmp_path)
    with pytest.raises(WorkloadFailed, match="expected a number or a sequence"):
        FunctionWorkload(lambda n: {"x": "fast"}).run_round(1, tmp_path)


def test_decorator_registers_and_returns_the_function(tmp_path: Path) -> None:
    @benchmark(name="sum-squares", work_amount=(1000, 100000))
    def sum_squares(n: int) -> None:
        sum(i * i for i in range(n))

    assert sum_squares(10) is None  # still callable as before
    workload = REGISTRY["sum-squares"]
    assert workload is sum_squares.workload and workload.work_amount_range == (1000, 100000)
    assert workload.run_round(2000, tmp_path).readings["work_rate"] > 0

    @benchmark
    def plain(n: int) -> float:
        return float(n)

    assert plain.workload.name.endswith("plain")
