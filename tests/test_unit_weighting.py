"""Workloads declare what their unit readings cover (equal time or equal work), and the analysis
averages a rate's unit readings accordingly; the timestamp guess is only for undeclared PIs."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.session.analysis import TrackAnalysis
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import RoundRecord, WorkloadSpec
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.builtin import SequentialIOWorkload
from pilot_sys.workload.parsers import fio, iperf3, table
from pilot_sys.workload.parsers.result import CapturedOutput
from pilot_sys.workload.pyfunc import FunctionWorkload

HERE = FIXTURES / "workload"
ROUNDS = 10
# per round: 21 x 100 and 21 x 300, shuffled; 420 samples split evenly into subsessions of 1..7
UNITS = 42
# By hand: arithmetic mean (100 + 300) / 2 = 200; harmonic 2 / (1/100 + 1/300) = 150, in every
# round and so over all of them (order does not change either mean).
ARITHMETIC_MEAN = 200.0
HARMONIC_MEAN = 150.0
REGULAR = 0.02 * np.arange(1, UNITS + 1)  # fio-like 20 ms windows
IRREGULAR = np.cumsum(np.tile([0.01, 0.03], UNITS // 2))  # gaps of 10 and 30 ms alternate


def _analyse(
    weighting: Literal["time", "work"] | None, stamps: np.ndarray
) -> tuple[float, list[str]]:
    spec = PISpec(name="bw", unit="B/s", pi_type=PIType.HARMONIC, unit_weighting=weighting)
    cfg = SessionConfig.from_preset(
        "normal",
        monitor=False,
        remove_nonstable=False,
        work_min=1.0,
        work_max=1.0,
        min_round_seconds=0.0,
    )
    rng = np.random.default_rng(7)
    units = {
        i: rng.permutation(np.repeat([100.0, 300.0], UNITS // 2)) for i in range(1, ROUNDS + 1)
    }
    records = [
        RoundRecord(
            index=i,
            workload="w",
            workload_round=i,
            dir=f"rounds/{i:04d}",
            started_at=0.0,
            work_amount=1.0,
            duration=1.0,
            phase="test",
            readings={"bw": float(np.mean(u))},
            unit_counts={"bw": UNITS},
        )
        for i, u in units.items()
    ]
    analysis = TrackAnalysis(config=cfg, pis=[spec])
    res = analysis.update(records, lambda rec: ({"bw": units[rec.index]}, {"bw": stamps}))["bw"]
    assert res.source == "unit_readings" and res.sample_size == ROUNDS * UNITS
    # no sample left out of the subsessions, so their mean is the plain mean of all samples
    assert (
        res.mean is not None
        and res.subsession_size is not None
        and (ROUNDS * UNITS) % res.subsession_size == 0
    )
    return res.mean, res.warnings


def test_declared_time_windows_average_arithmetically_despite_irregular_timestamps() -> None:
    mean, warnings = _analyse("time", IRREGULAR)
    assert mean == pytest.approx(ARITHMETIC_MEAN, rel=1e-9)
    assert any("equal-time windows (declared by the workload)" in w for w in warnings)


def test_declared_work_units_average_harmonically_despite_regular_timestamps() -> None:
    mean, warnings = _analyse("work", REGULAR)
    assert mean == pytest.approx(HARMONIC_MEAN, rel=1e-9)
    assert not any("equal-time windows" in w for w in warnings)


@pytest.mark.parametrize(
    ("stamps", "expected"), [(REGULAR, ARITHMETIC_MEAN), (IRREGULAR, HARMONIC_MEAN)]
)
def test_undeclared_units_follow_the_timestamp_guess(stamps: np.ndarray, expected: float) -> None:
    mean, warnings = _analyse(None, stamps)
    assert mean == pytest.approx(expected, rel=1e-9)
    guessed = any("equal-time windows (guessed from their timestamps)" in w for w in warnings)
    assert guessed is (expected == ARITHMETIC_MEAN)


def test_the_declaration_survives_the_manifest() -> None:
    """--resume rebuilds the PIs from session.json: the declaration must come back with them."""
    spec = WorkloadSpec(
        name="w", kind="command", pis=[PISpec(name="bw", unit="B/s", unit_weighting="time")]
    )
    assert WorkloadSpec.model_validate_json(spec.model_dump_json()).pis[0].unit_weighting == "time"
    assert (
        PISpec.model_validate({"name": "bw", "unit": "B/s"}).unit_weighting is None
    )  # an older manifest


def _fio(name: str) -> dict[str, str | None]:
    folder = HERE / name
    out = fio.parse(CapturedOutput(stdout=(folder / "stdout.txt").read_text(), round_dir=folder))
    return {s.name: s.unit_weighting for s in out.specs}


def test_fio_declares_its_averaged_logs_time_windows() -> None:
    # fio_seqwrite and fio_two_jobs were captured with --log_avg_msec=100 (capture.sh)
    for name in ("fio_seqwrite", "fio_two_jobs"):
        weights = _fio(name)
        logged = {k: v for k, v in weights.items() if k.endswith(("_bw", "_iops", "_lat_mean"))}
        assert logged and set(logged.values()) == {"time"}, (name, weights)
        # the runner asks for iops logs too: with log_avg_msec they are windows, logged or not
        assert weights["write_iops"] == "time"
    # fio_group wrote no logs and set no log_avg_msec: per-I/O rows would not be windows, so unknown
    assert set(_fio("fio_group").values()) == {None}


def test_fio_log_window_comes_from_global_or_job_options() -> None:
    assert (
        fio.log_window_ms(
            {"global options": {"log_avg_msec": "100"}, "jobs": [{"job options": {}}]}
        )
        == 100
    )
    assert (
        fio.log_window_ms(
            {
                "global options": {"log_avg_msec": "100"},
                "jobs": [{"job options": {"log_avg_msec": "0"}}],
            }
        )
        is None
    )  # the job logs every I/O
    assert fio.log_window_ms({"jobs": [{"job options": {"name": "x"}}]}) is None


def test_iperf3_declares_its_intervals_time_windows() -> None:
    for name in ("iperf3_client_tcp.json", "iperf3_server_tcp.json", "iperf3_client_bidir.json"):
        out = iperf3.parse(CapturedOutput(stdout=(HERE / name).read_text(), stdout_name=name))
        weights = {s.name: s.unit_weighting for s in out.specs}
        for pi in out.unit_readings:
            assert weights[pi] == "time", (name, pi)
    bidir = iperf3.parse(CapturedOutput(stdout=(HERE / "iperf3_client_bidir.json").read_text()))
    assert {"bw", "bw_reverse"} <= set(bidir.unit_readings)


@pytest.mark.live
def test_builtin_and_timed_function_units_are_equal_work(tmp_path: Path) -> None:
    specs = SequentialIOWorkload(tmp_path).pi_specs()
    assert [(s.name, s.unit_weighting) for s in specs] == [
        ("write_bw", "work"),
        ("read_bw", "work"),
    ]
    assert (
        FunctionWorkload(lambda n: None, unit_readings=True).pi_specs()[0].unit_weighting == "work"
    )
    # timed as a whole, a function has no unit readings of its own; what it returns is unknown
    assert FunctionWorkload(lambda n: None).pi_specs()[0].unit_weighting is None


def test_generic_tables_do_not_know() -> None:
    out = table.parse(CapturedOutput(stdout="t,rate\n0.1,5\n0.3,7\n0.4,6\n"))
    assert [(s.name, s.unit_weighting) for s in out.specs] == [("rate", None)]
