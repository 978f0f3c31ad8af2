"""The built-in sequential write/read workload on this machine's virtio disk and on tmpfs."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import sigint_as_in_a_terminal
from pilot_sys.errors import BadInput, WorkloadFailed
from pilot_sys.workload import Workload, builtin
from pilot_sys.workload.builtin import (
    FILE_PREFIX,
    MiB,
    SequentialIOWorkload,
    file_system_of,
    unit_rates,
)

SHM = Path("/dev/shm")


def leftovers(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.startswith(FILE_PREFIX)]


def test_unit_rates_by_hand() -> None:
    # Blocks of 1 MiB ending 10, 30 and 40 ms after a start at 0: 100, 50 and 100 MiB/s.
    ends = np.array([10, 30, 40]) * 1_000_000
    rates, stamps = unit_rates(ends, 0, MiB, 1)
    np.testing.assert_allclose(rates, [100 * MiB, 50 * MiB, 100 * MiB])
    # Grouped in pairs: one full group of 2 MiB in 30 ms (the third block is an incomplete group).
    rates, stamps = unit_rates(ends, 0, MiB, 2)
    np.testing.assert_allclose(rates, [2 * MiB / 0.030])
    assert list(stamps) == [30_000_000]


@pytest.mark.live
def test_direct_io_round_on_the_disk(tmp_path: Path) -> None:
    workload = SequentialIOWorkload(tmp_path)
    assert isinstance(workload, Workload)
    assert workload.direct  # ext4 on virtio accepts O_DIRECT
    out = workload.run_round(4, tmp_path / "round")
    assert out.work_amount == 4 and out.work_done == 4 * MiB
    assert set(out.readings) == {"write_bw", "read_bw"} and all(
        v > 0 for v in out.readings.values()
    )
    for name in ("write_bw", "read_bw"):
        units = out.unit_readings[name]
        assert units.size == 4 and np.all(units > 0)
        assert np.all(np.diff(out.unit_timestamps[name]) > 0)
    # Reads are timed after the writes end.
    assert out.unit_timestamps["read_bw"][0] > out.unit_timestamps["write_bw"][-1]
    # The round reading is total bytes over total time: never above the fastest block.
    assert out.readings["write_bw"] <= out.unit_readings["write_bw"].max()
    assert "O_DIRECT" in workload.pi_specs()[0].description
    assert "O_DIRECT" in (tmp_path / "round" / "builtin.txt").read_text()
    assert leftovers(tmp_path) == []
    assert workload.data_path_args() == [str(tmp_path.resolve())]


@pytest.mark.live
def test_tmpfs_falls_back_to_buffered_io(tmp_path: Path) -> None:
    directory = Path(os.environ.get("PILOT_TMPFS", str(SHM)))
    if file_system_of(directory)[1] != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    workload = SequentialIOWorkload(directory, block_size=256 * 1024)
    assert not workload.direct
    spec = workload.pi_specs()[0]
    assert "memory-backed" in spec.description and "tmpfs" in spec.description
    out = workload.run_round(2, tmp_path)
    # 256 KiB blocks are grouped by 4 so that each unit reading covers 1 MiB.
    assert out.unit_readings["write_bw"].size == 2 and out.work_done == 2 * MiB
    assert leftovers(directory) == []


@pytest.mark.live
def test_auto_falls_back_when_o_direct_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def refusing_open(path, flags, *args):  # a file system without O_DIRECT (e.g. FUSE) says EINVAL
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *args)

    monkeypatch.setattr(builtin.os, "open", refusing_open)
    workload = SequentialIOWorkload(tmp_path)
    assert not workload.direct
    assert "fsync after each block" in workload.method_description()
    out = workload.run_round(3, tmp_path / "round")
    assert out.unit_readings["read_bw"].size == 3 and out.readings["read_bw"] > 0
    assert leftovers(tmp_path) == []


def test_bad_directory_and_block_size(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not a directory"):
        SequentialIOWorkload(tmp_path / "missing")
    with pytest.raises(BadInput, match="multiple of 4096"):
        SequentialIOWorkload(tmp_path, block_size=1000)


@pytest.mark.live
def test_work_amount_range_and_space_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workload = SequentialIOWorkload(tmp_path)
    monkeypatch.setattr(workload, "free_bytes", lambda: 10 * 1024 * MiB)
    assert workload.default_work_amount_range() == (16.0, 1024.0)
    monkeypatch.setattr(workload, "free_bytes", lambda: 64 * MiB + 400 * MiB)
    assert workload.default_work_amount_range() == (16.0, 100.0)
    monkeypatch.setattr(workload, "free_bytes", lambda: 100 * MiB)
    with pytest.raises(BadInput, match="only 36 MiB free"):
        workload.default_work_amount_range()
    with pytest.raises(BadInput, match=r"^-w/--work-amount: a 40 MiB round needs 104 MiB free"):
        workload.validate_work_amount_range(16, 40)
    with pytest.raises(BadInput, match="needs 1 <= MIN <= MAX"):
        workload.validate_work_amount_range(20, 10)
    workload.validate_work_amount_range(16, 36)
    with pytest.raises(WorkloadFailed, match="a 50 MiB round needs 114 MiB free"):
        workload.run_round(50, tmp_path / "round")
    assert not (tmp_path / "round" / "builtin.txt").exists()


@pytest.mark.live
def test_ctrl_c_mid_round_removes_the_file(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        from pathlib import Path
        from pilot_sys.workload.builtin import SequentialIOWorkload
        w = SequentialIOWorkload({str(tmp_path)!r}, method="buffered")
        print("ready", flush=True)
        try:
            while True:
                w.run_round(64, Path({str(tmp_path)!r}) / "r")
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 10
    while not leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert leftovers(tmp_path), "the round never started writing"
    os.kill(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=20)
    assert stdout.strip() == "interrupted"
    assert leftovers(tmp_path) == []


@pytest.mark.live
def test_stale_file_of_a_killed_run_is_removed(tmp_path: Path) -> None:
    stale = tmp_path / f"{FILE_PREFIX}999999999.tmp"  # above any pid_max: that process is gone
    stale.write_bytes(b"x")
    builtin._remove_stale_files(tmp_path)
    assert not stale.exists()
    mine = tmp_path / f"{FILE_PREFIX}{os.getpid()}.tmp"
    mine.write_bytes(b"x")
    builtin._remove_stale_files(tmp_path)
    assert mine.exists()
