"""The fio parser on JSON and logs captured here (tests/fixtures/workload/capture.sh)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.workload.parsers.fio import parse
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput

HERE = FIXTURES / "workload"


def captured(name: str, *, with_logs: bool = True) -> CapturedOutput:
    folder = HERE / name
    return CapturedOutput(
        stdout=(folder / "stdout.txt").read_text(),
        stdout_name=f"{name}/stdout.txt",
        round_dir=folder if with_logs else None,
    )


def log_column(path: Path, direction: int) -> list[float]:
    with path.open() as handle:
        return [float(row[1]) for row in csv.reader(handle) if int(row[2]) == direction]


def test_single_job_readings_match_fios_own_numbers() -> None:
    out = parse(captured("fio_seqwrite"))
    # From the fixture: io_bytes 7954497536 in runtime 2001 ms; fio printed bw_bytes 3975261137.
    assert out.readings["write_bw"] == pytest.approx(7954497536 / 2.001)
    assert out.readings["write_bw"] == pytest.approx(3975261137, rel=1e-9)
    assert out.readings["write_iops"] == pytest.approx(3791.104448, rel=1e-8)
    assert out.readings["write_lat_mean"] == pytest.approx(262566.87991e-9)
    assert out.readings["write_lat_p99"] == pytest.approx(708608e-9)
    assert "read_bw" not in out.readings
    assert out.work_done == 7954497536
    specs = {s.name: s for s in out.specs}
    assert specs["write_bw"].pi_type == "harmonic" and specs["write_bw"].unit == "B/s"
    assert specs["write_lat_mean"].higher_is_better is False
    # Tail percentiles are reported, but too noisy to keep a session running for.
    assert [s.name for s in out.specs if not s.gates_stop] == [
        "write_lat_p50",
        "write_lat_p99",
        "write_lat_p99_9",
    ]


def test_single_job_unit_readings_are_the_bw_log_in_bytes_per_second() -> None:
    out = parse(captured("fio_seqwrite"))
    kib = log_column(HERE / "fio_seqwrite" / "fio_bw.1.log", 1)
    assert len(kib) == 18
    np.testing.assert_allclose(out.unit_readings["write_bw"], np.array(kib) * 1024)
    assert out.unit_readings["write_bw"][0] == 3297134 * 1024  # first row: "141, 3297134, 1, 0, 0"
    assert out.unit_timestamps["write_bw"][0] == pytest.approx(0.141)
    # The windowed log agrees with the round's bandwidth within the noise of this shared VM.
    assert np.mean(out.unit_readings["write_bw"]) == pytest.approx(
        out.readings["write_bw"], rel=0.15
    )
    lat_ns = log_column(HERE / "fio_seqwrite" / "fio_lat.1.log", 1)
    np.testing.assert_allclose(out.unit_readings["write_lat_mean"], np.array(lat_ns) / 1e9)


def test_two_jobs_are_summed_per_reporting_group() -> None:
    out = parse(captured("fio_two_jobs"))
    # Two concurrent jobs, both 1001 ms: group rate = total bytes / longest runtime.
    assert out.readings["read_bw"] == pytest.approx((359202816 + 356712448) / 1.001)
    assert out.readings["write_bw"] == pytest.approx((360972288 + 366936064) / 1.001)
    assert out.readings["read_iops"] == pytest.approx((5481 + 5443) / 1.001)
    weighted = (85829.858238 * 5481 + 86660.419989 * 5443) / (5481 + 5443)
    assert out.readings["read_lat_mean"] == pytest.approx(weighted * 1e-9)
    assert "read_lat_p99" not in out.readings  # per-job percentiles cannot be merged
    assert any("group_reporting" in w for w in out.warnings)
    # First window: job 1 read 349357 KiB/s (t=109 ms), job 2 read 349629 KiB/s (t=108 ms).
    assert out.unit_readings["read_bw"][0] == (349357 + 349629) * 1024
    assert out.unit_readings["write_bw"][0] == (377541 + 383407) * 1024


def test_group_reporting_entry_gives_percentiles() -> None:
    out = parse(captured("fio_group"))
    assert out.readings["read_bw"] == pytest.approx(33554432 / 0.013)
    assert out.readings["read_lat_p99"] == pytest.approx(224256e-9)
    doc = json.loads((HERE / "fio_group" / "stdout.txt").read_text())
    assert out.readings["read_lat_p50"] == pytest.approx(
        doc["jobs"][0]["read"]["clat_ns"]["percentile"]["50.000000"] / 1e9
    )
    assert not out.unit_readings and any("no bw/iops/lat logs" in w for w in out.warnings)


def test_json_after_warning_lines_is_found() -> None:
    text = (
        "fio: this platform does not support something\n"
        + (HERE / "fio_group" / "stdout.txt").read_text()
    )
    assert parse(CapturedOutput(stdout=text)).readings["read_bw"] == pytest.approx(33554432 / 0.013)


def test_truncated_json_names_file_line_and_column() -> None:
    text = (HERE / "fio_group" / "stdout.txt").read_text()[:700]
    with pytest.raises(MalformedOutput) as err:
        parse(CapturedOutput(stdout=text, stdout_name="r3/stdout.txt"))
    assert err.value.where.startswith("r3/stdout.txt:")
    assert len(err.value.where.split(":")) == 3
    assert "cut short" in err.value.problem


def test_output_without_json_is_a_clear_failure() -> None:
    with pytest.raises(
        MalformedOutput, match=r"stdout.txt: expected fio JSON output \(--output-format=json\)"
    ):
        parse(CapturedOutput(stdout="seqwrite: (g=0): rw=write, bs=(R) 1024KiB\n"))


def test_job_error_is_reported() -> None:
    doc = json.loads((HERE / "fio_group" / "stdout.txt").read_text())
    doc["jobs"][0]["error"] = 28
    with pytest.raises(MalformedOutput, match="error 28"):
        parse(CapturedOutput(stdout=json.dumps(doc)))


def test_bad_log_row_names_the_log(tmp_path: Path) -> None:
    (tmp_path / "fio_bw.1.log").write_text("100, 5, 1, 0, 0\nnot a row\n")
    with pytest.raises(MalformedOutput, match="fio_bw.1.log"):
        parse(
            CapturedOutput(
                stdout=(HERE / "fio_group" / "stdout.txt").read_text(), round_dir=tmp_path
            )
        )
