"""Real workloads on this machine, each judged by the full path: discovery, data-path resolution,
sampling of the command's process tree, and the verdict.

This VM is shared: other people's tests may keep its two CPUs busy while these run. Where that
changes the right answer (the fio-alone case) the test checks the right answer for the load it
measured itself: either nothing hidden and the disk saturated, or the CPU named *and* blamed on
processes other than the workload.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import require_tool
from pilot_sys.cli.present.monitor import verdict_lines
from pilot_sys.monitor.session_monitor import MonitoredRun, run_monitored
from pilot_sys.monitor.trace import MonitorTrace

# serial: the verdicts judge what loaded this host, which a parallel worker would load too
pytestmark = [pytest.mark.live, pytest.mark.serial]
RATE = 20.0


def mean_of(trace: MonitorTrace, key: str) -> float:
    values = np.array([v for v in trace.series.get(key, []) if v is not None], dtype=float)
    return float(values.mean()) if values.size else 0.0


def workload_cores(trace: MonitorTrace) -> float:
    return sum(
        mean_of(trace, k)
        for k in trace.series
        if k.startswith("process:") and k.endswith("/cpu_cores")
    )


def hidden(run: MonitoredRun) -> set[str]:
    return {h.component for h in run.verdict.hidden_bottlenecks}


def fio_args(path: Path) -> list[str]:
    return [
        require_tool("fio"),
        "--name=seqwrite",
        f"--filename={path}",
        "--rw=write",
        "--bs=1M",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=16",
        "--size=4G",
        "--runtime=1500ms",
        "--time_based",
        "--output-format=terse",
    ]


def listening(port: int) -> bool:
    """Is something listening on 127.0.0.1:port (from /proc/net/tcp, without connecting)?"""
    needle = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as fh:
        return any(needle in line and line.split()[3] == "0A" for line in fh)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_iperf3_over_loopback_measures_cpu_and_memory_with_its_server() -> None:
    """Loopback's data path is the CPU and memory: judged as the CUT, never a hidden bottleneck;
    the local iperf3 server the client talks to is counted as part of the workload."""
    iperf3 = require_tool("iperf3")
    port = free_port()
    server = subprocess.Popen(
        [iperf3, "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 5
        while not listening(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        run = run_monitored(
            [iperf3, "-c", "127.0.0.1", "-p", str(port), "-t", "2"],
            rate_hz=RATE,
            stdout=subprocess.DEVNULL,
        )
    finally:
        server.kill()
        server.wait()
    assert run.returncode == 0
    assert run.verdict.cut == "nic:lo"  # resolved from the host argument
    assert run.verdict.cut_limit_unknown  # loopback has no speed
    assert mean_of(run.trace, "nic:lo/tx_bytes_per_s") > 50e6  # traffic really went over lo
    assert "cpu:host" not in hidden(run) and "memory:host" not in hidden(run)
    loopback = [n for n in run.verdict.notes if "is loopback" in n]
    assert loopback and "CPU and memory" in loopback[0]
    assert any(f"(pid {server.pid})" in n for n in run.verdict.notes)  # the server: workload


def test_dd_with_512_byte_blocks_is_system_call_bound(tmp_path: Path) -> None:
    dd = require_tool("dd")
    out = tmp_path / "dd.out"
    run = run_monitored(
        [dd, "if=/dev/zero", f"of={out}", "bs=512", "count=300000"],
        rate_hz=RATE,
        stderr=subprocess.DEVNULL,
    )
    out.unlink()
    assert run.returncode == 0
    assert run.verdict.cut == "block:vda"
    assert "cpu:host" in hidden(run)
    # the workload itself spent its time in the kernel: system calls, not the disk
    pid_key = next(
        k for k in run.trace.series if k.startswith("process:") and k.endswith("/syscw_per_s")
    )
    assert mean_of(run.trace, pid_key) > 10_000


def test_fio_direct_writes_load_the_disk_and_hide_nothing_on_a_quiet_cpu(tmp_path: Path) -> None:
    target = tmp_path / "fio.dat"
    run = run_monitored(fio_args(target), rate_hz=RATE, stdout=subprocess.DEVNULL)
    target.unlink(missing_ok=True)
    assert run.returncode == 0
    v = run.verdict
    assert v.cut == "block:vda"
    assert mean_of(run.trace, "block:vda/write_bytes_per_s") > 10e6
    own = workload_cores(run.trace)
    others = mean_of(run.trace, "cpu:host/busy_cores") - own
    if hidden(run):
        # the shared CPUs were busy: the right call names the CPU and blames other processes
        assert hidden(run) == {"cpu:host"}, verdict_lines(v)
        assert others > own, f"workload {own:.2f} cores, others {others:.2f}"
        assert "other processes" in v.hidden_bottlenecks[0].evidence
    else:
        assert v.valid
        assert v.cut_saturated, verdict_lines(v)  # the disk's busy time: it is the bottleneck
        assert v.cut_limit_unknown  # and the verdict says that busy time stood in for a limit


def test_fio_beside_a_cpu_hog_flags_the_cpu(tmp_path: Path) -> None:
    stress = require_tool("stress-ng")
    # one busy worker per CPU ("--cpu 0"), whatever the machine
    hog = subprocess.Popen(
        [stress, "--cpu", "0", "--timeout", "8s", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    target = tmp_path / "fio.dat"
    try:
        time.sleep(0.5)
        run = run_monitored(fio_args(target), rate_hz=RATE, stdout=subprocess.DEVNULL)
    finally:
        hog.terminate()
        hog.wait()
        target.unlink(missing_ok=True)
    assert run.returncode == 0
    assert not run.verdict.valid
    assert "cpu:host" in hidden(run)
    cpu = next(h for h in run.verdict.hidden_bottlenecks if h.component == "cpu:host")
    assert cpu.time_above_fraction > 0.5
    assert "other processes" in cpu.evidence
