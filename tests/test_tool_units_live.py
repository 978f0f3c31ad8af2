"""The issue-21 reproductions of unit readings from the tools themselves and of loopback, run
as a user would (``python3 -m pilot_sys run``): the ``--help`` fio example gets unit readings
and an interval; ``iperf3 -c 127.0.0.1`` gets a number and a verdict that says loopback measures
the CPU and memory, with the local ``iperf3 -s`` counted as the workload's."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import require_tool, run_cli

pytestmark = pytest.mark.live


def result(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "result.json").read_text())


def test_the_help_fio_example_gets_unit_readings_and_an_interval(tmp_path: Path) -> None:
    require_tool("fio")
    out = tmp_path / "res"
    # --no-monitor: the shared test host's load must not exclude rounds; this is about readings
    done = run_cli(
        *("run", "--preset", "quick", "-s", "40", "-w", "16,1024", "--no-monitor"),
        *("-o", str(out), "--", "fio", "--name=w", "--rw=write", "--bs=1M"),
        *("--size=%WORK_AMOUNT%M", f"--filename={tmp_path / 'F'}", "--direct=1"),
        timeout=120,
    )
    assert done.returncode in (0, 4), done.stderr[-2000:]
    bw = result(out)["workloads"][0]["pis"]["write_bw"]
    assert bw["source"] == "unit_readings", bw
    assert bw["ci_low"] is not None and bw["ci_low"] < bw["mean"] < bw["ci_high"]
    # many windows per round, not one reading per round
    rounds = [
        json.loads(line)
        for line in (out / "rounds.jsonl").read_text().splitlines()
        if '"work_amount"' in line
    ]
    assert bw["sample_size"] > 3 * len(rounds)
    assert max(r["unit_counts"].get("write_bw", 0) for r in rounds) >= 20
    # fio's logs went to a private folder, removed: the round folders keep units.npz instead
    assert not list(out.glob("rounds/*/fio_bw*.log"))
    assert list(out.glob("rounds/*/units.npz"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_iperf3_over_loopback_gives_a_number_and_a_loopback_verdict(tmp_path: Path) -> None:
    iperf3 = require_tool("iperf3")
    port = free_port()
    server = subprocess.Popen(
        [iperf3, "-s", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    out = tmp_path / "res"
    try:
        deadline = time.monotonic() + 5
        while not listening(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        done = run_cli(
            *("run", "--preset", "quick", "-s", "20", "-o", str(out), "--"),
            *(iperf3, "-c", "127.0.0.1", "-p", str(port), "-t", "1"),
            timeout=120,
        )
    finally:
        server.kill()
        server.wait()
    doc = result(out)
    bw = doc["workloads"][0]["pis"]["bw"]
    assert bw["mean"] is not None and bw["mean"] > 0, done.stdout[-2000:]
    assert bw["source"] == "unit_readings"  # -i 0.1: ten intervals per 1 s round
    # loopback's data path is the CPU and memory: they are the CUT, never an excluded round
    bottleneck = doc["bottleneck"]
    assert bottleneck["cut"] == "nic:lo"
    assert "cpu:host (compute)" not in bottleneck["hidden_bottlenecks"]
    assert not bottleneck["rounds_invalid"]
    assert "CPU and memory" in bottleneck["detail"]["loopback"]
    assert "loopback: the number measures this host's CPU and memory" in done.stdout
    # the local server is the workload's, named in the monitor's notes
    notes = " ".join(bottleneck["detail"]["notes"])
    assert f"local process iperf3 (pid {server.pid})" in notes


def test_a_fio_client_round_gets_its_servers_windows(tmp_path: Path) -> None:
    """fio --client=HOST job.fio with a fio server on 127.0.0.1: the logs are asked for in a
    copy of the job file, come back per server, and are the round's unit readings."""
    from pilot_sys.workload.runner import CommandWorkload

    fio = require_tool("fio")
    port = free_port()
    server = subprocess.Popen(
        [fio, f"--server=ip:127.0.0.1,{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    job = tmp_path / "job.fio"
    # 1 GiB: a round long enough for several of the servers' 10 ms windows on a fast disk
    job.write_text(f"[w]\nrw=write\nbs=1M\nsize=1024M\ndirect=1\nfilename={tmp_path / 'F'}\n")
    try:
        deadline = time.monotonic() + 5
        while not listening(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        workload = CommandWorkload(
            [fio, f"--client=ip:127.0.0.1,{port}", "job.fio"], cwd=tmp_path, timeout=60
        )
        out = workload.run_round(1024, tmp_path / "r1")
    finally:
        server.kill()
        server.wait()
    assert out.readings["write_bw"] > 0
    assert out.unit_readings["write_bw"].size >= 5
    assert out.unit_readings["write_bw@127.0.0.1"].size == out.unit_readings["write_bw"].size
