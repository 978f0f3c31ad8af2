"""Unit readings from fio's 10 ms window logs and iperf3's 0.1 s intervals, as the runner asks
for them (``pilot_sys.workload.tool_options``), on output captured here
(tests/fixtures/workload/capture.sh)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.workload.parsers import fio, iperf3
from pilot_sys.workload.parsers.result import CapturedOutput, ParsedOutput

HERE = FIXTURES / "workload"


def fio_round(name: str) -> ParsedOutput:
    folder = HERE / name
    stdout = (folder / "stdout.txt").read_text()
    return fio.parse(CapturedOutput(stdout=stdout, round_dir=Path("/nonexistent"), log_dir=folder))


def test_the_help_example_gets_bw_and_iops_windows_from_the_private_log_folder() -> None:
    out = fio_round("fio_windows")
    # fio_bw.1.log: 32 rows, "103, 1014058, 1, 0, 0" first and "430, 1126400, 1, 0, 0" last
    bw = out.unit_readings["write_bw"]
    assert bw.size == 32 and bw[0] == 1014058 * 1024 and bw[-1] == 1126400 * 1024
    np.testing.assert_allclose(out.unit_timestamps["write_bw"][[0, -1]], [0.103, 0.430])
    # fio_iops.1.log: the same windows, I/Os per second (990 I/Os of 1 MiB/s ~ 1014058 KiB/s)
    iops = out.unit_readings["write_iops"]
    assert iops.size == 32 and iops[0] == 990
    np.testing.assert_array_equal(
        out.unit_timestamps["write_iops"], out.unit_timestamps["write_bw"]
    )
    # the latency log has a row per 10 ms from the first window (43 rows: 10, 20, ... 430, 431 ms)
    assert out.unit_readings["write_lat_mean"].size == 43
    # the per-round reading stays: io_bytes 536870912 over runtime 431 ms (stdout.txt)
    assert out.readings["write_bw"] == pytest.approx(536870912 / 0.431)
    # windows of log_avg_msec = 10: declared equal-time, so they average to total bytes / time
    weights = {s.name: s.unit_weighting for s in out.specs}
    assert weights["write_bw"] == weights["write_iops"] == "time"


def test_two_mixed_jobs_sum_their_windows_per_direction() -> None:
    out = fio_round("fio_mixed_windows")
    # first rows at 14 ms: job 1 read 64000 KiB/s, write 64000; job 2 read 59428, write 91428;
    # iops job 1 read 1000, write 1000; job 2 read 928
    assert out.unit_readings["read_bw"][0] == (64000 + 59428) * 1024
    assert out.unit_readings["write_bw"][0] == (64000 + 91428) * 1024
    assert out.unit_readings["read_iops"][0] == 1000 + 928
    # second window (25 ms): reads 140800 + 160000, writes 198400 + 160000
    assert out.unit_readings["read_bw"][1] == (140800 + 160000) * 1024
    assert out.unit_readings["write_bw"][1] == (198400 + 160000) * 1024
    assert set(out.unit_readings) == {
        f"{d}_{pi}" for d in ("read", "write") for pi in ("bw", "iops", "lat_mean")
    }


def test_logs_are_read_from_the_round_folder_when_there_is_no_private_one() -> None:
    folder = HERE / "fio_windows"
    stdout = (folder / "stdout.txt").read_text()
    out = fio.parse(CapturedOutput(stdout=stdout, round_dir=folder))
    assert out.unit_readings["write_bw"].size == 32


def test_iperf3_tenth_second_intervals_are_ten_unit_readings() -> None:
    text = (HERE / "iperf3_client_tcp_fine.json").read_text()
    out = iperf3.parse(CapturedOutput(stdout=text))
    bw = out.unit_readings["bw"]
    # intervals[0].sum: 6651345908.644197 bits/s ending at 0.102314 s; the last ends at 1.004618
    assert bw.size == 10 and bw[0] == pytest.approx(6651345908.644197 / 8)
    np.testing.assert_allclose(out.unit_timestamps["bw"][[0, -1]], [0.102314, 1.004618])
    # the round's reading is the receiver's total: 7169579105.545335 bits/s
    assert out.readings["bw"] == pytest.approx(7169579105.545335 / 8)


def test_client_server_logs_come_back_per_server_and_sum_to_the_aggregate() -> None:
    """fio --client: the client writes each server's logs as fio_bw.1.log.<server>."""
    out = fio_round("fio_client_windows")
    # fio_bw.1.log.127.0.0.1: 112 rows, the first "94, 141617, 1, 0, 0"
    for name in ("write_bw", "write_bw@127.0.0.1"):
        assert out.unit_readings[name].size == 112
        assert out.unit_readings[name][0] == 141617 * 1024
    assert out.unit_readings["write_iops@127.0.0.1"][0] == 138
    # log_avg_msec=10 came from the job file's [global] section: windows, declared as such
    weights = {s.name: s.unit_weighting for s in out.specs}
    assert weights["write_bw"] == weights["write_bw@127.0.0.1"] == "time"
