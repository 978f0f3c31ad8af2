"""`pilot-sys run --host` end to end against a namespace host (tests/netns.py) running real
node_exporter, pmcd/pmproxy, iperf3 and fio servers:

1. iperf3 through a veth shaped by tbf far below what the CPU can push: the component under test
   is the link to the host, it is saturated, and the host's NIC is sampled in every round (its
   received rate agrees with what iperf3 says it received);
2. the server's core made the limit (the server's iperf3 and a CPU hog pinned to one core of
   the host): the hidden bottleneck named is the server's CPU. In a namespace the CPU is this
   machine's, so this machine's busiest core is hot too; a CPU quota on the server's process
   would be invisible here (node_exporter has no cgroup collector);
3. fio client/server writing through the namespace, the host sampled through PCP: per-server
   and aggregate readings, the host's disk under the job's directory on the data path and
   written to, a verdict per round;
4. node_exporter stopped after the first round: the session finishes, every round is in
   rounds.jsonl, the rounds after it report the host's gap.

Every daemon is stopped when its host is removed, also on failure; every wait is bounded."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from netns import NODE_EXPORTER, PMCD, PMPROXY, NetnsHost, host_fixture, require_daemons

pytestmark = [pytest.mark.live, pytest.mark.slow]

SESSION_TIMEOUT_S = 240.0
LINK = "network:host~srv"


@pytest.fixture(scope="module")
def srv() -> Iterator[NetnsHost]:
    require_daemons(NODE_EXPORTER, PMCD, PMPROXY, "iperf3", "fio", "taskset")
    for host in host_fixture("srv"):
        host.node_exporter()
        host.pcp()
        host.iperf3_server()
        host.fio_server()
        yield host


def _run(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pilot_sys", "run", "-o", str(out), "--preset", "quick", *args],
        capture_output=True,
        text=True,
        timeout=SESSION_TIMEOUT_S,
        check=False,
    )


def _rounds(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines() if line]


def _trace(out: Path, record: dict) -> dict:
    return json.loads((out / record["dir"] / "monitor.json").read_text())


def _series(trace: dict, key: str) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in trace["series"].get(key, [])], dtype=float)


def test_a_shaped_link_is_the_limit_and_the_server_is_sampled(
    srv: NetnsHost, tmp_path: Path
) -> None:
    out = tmp_path / "shaped"
    srv.shape("20mbit")
    try:
        done = _run(
            out,
            "--max-rounds",
            "3",
            "--host",
            f"srv=http://{srv.address}:9100",
            "--",
            "iperf3",
            "-c",
            srv.address,
            "-t",
            "2",
            "-J",
        )
    finally:
        srv.unshape()
    assert "Traceback" not in done.stderr, done.stderr
    manifest = json.loads((out / "session.json").read_text())
    assert manifest["cut"] == LINK
    assert {"nic:srv/eth0", "memory:srv", "cpu:srv", LINK} <= set(manifest["data_path"])
    rounds = _rounds(out)
    assert len(rounds) == 3
    for record in rounds:
        trace = _trace(out, record)
        assert trace["verdict"]["cut_saturated"] is True, trace["verdict"]
        assert np.nanmedian(_series(trace, f"{LINK}/util_send")) > 0.8
        source = trace["sources"]["remote:srv"]
        assert len(source["times"]) >= 10 and source["clock"] == "backend time"
        received = _series(trace, "nic:srv/eth0/rx_bytes_per_s")
        iperf3 = json.loads((out / record["dir"] / "stdout.txt").read_text())
        rate = iperf3["end"]["sum_received"]["bytes"] / iperf3["end"]["sum_received"]["seconds"]
        # the host's NIC took in what iperf3 delivered (its counter adds headers: a few %)
        assert rate * 0.8 < np.nanmedian(received) < rate * 1.25, (rate, np.nanmedian(received))
        assert rate < 20e6 / 8 * 1.1  # the shaper, not the CPU, set the rate


def test_the_servers_core_is_named_when_it_is_the_limit(srv: NetnsHost, tmp_path: Path) -> None:
    out = tmp_path / "hog"
    port = "5202"
    srv.start(
        "iperf3-core1",
        ["taskset", "-c", "1", "iperf3", "-s", "-B", srv.address, "-p", port],
        srv.listening(int(port)),
    )
    srv.start("hog", ["taskset", "-c", "1", sys.executable, "-c", "while True: pass"], lambda: True)
    try:
        done = _run(
            out,
            "--max-rounds",
            "2",
            "--host",
            f"srv=http://{srv.address}:9100",
            "--",
            "taskset",
            "-c",
            "0",
            "iperf3",
            "-c",
            srv.address,
            "-p",
            port,
            "-t",
            "2",
            "-J",
        )
    finally:
        srv.stop("hog")
        srv.stop("iperf3-core1")
    assert "Traceback" not in done.stderr, done.stderr
    rounds = _rounds(out)
    assert len(rounds) == 2
    for record in rounds:
        named = record["monitor"]["hidden_bottlenecks"]
        assert any(h.startswith("cpu:srv ") for h in named), named
        trace = _trace(out, record)
        assert np.nanmedian(_series(trace, "cpu:srv/busiest_core")) > 0.9
    assert done.returncode == 3  # invalid: a hidden bottleneck


def test_fio_client_server_through_the_namespace(srv: NetnsHost, tmp_path: Path) -> None:
    out = tmp_path / "fio"
    target = srv.workdir / "fio-data"
    target.mkdir()
    job = tmp_path / "write.fio"
    job.write_text(
        f"[global]\nioengine=psync\nrw=write\nbs=64k\nsize=64m\ndirect=1\ndirectory={target}\n[w]\n"
    )
    done = _run(
        out,
        "--max-rounds",
        "3",
        "--host",
        f"srv=pcp://{srv.address}:44322",
        "--",
        "fio",
        "--output-format=json",
        f"--client=ip:{srv.address},8765",
        str(job),
    )
    assert "Traceback" not in done.stderr, done.stderr
    manifest = json.loads((out / "session.json").read_text())
    assert manifest["cut"].startswith("block:srv/"), manifest["cut"]
    assert {manifest["cut"], "cpu:srv", LINK} <= set(manifest["data_path"])
    rounds = _rounds(out)
    assert len(rounds) == 3
    written = []
    for record in rounds:
        readings = record["readings"]
        assert readings[f"write_bw@{srv.address}"] == pytest.approx(
            readings["write_bw"]
        )  # one server
        assert record["work_done"] == 64 * 2**20
        assert record["monitor"]["valid"] is not None  # judged
        trace = _trace(out, record)
        assert len(trace["sources"]["remote:srv"]["times"]) >= 2
        rate = _series(trace, f"{manifest['cut']}/write_bytes_per_s")
        step = np.diff(trace["timestamps"], prepend=np.nan)
        written.append(float(np.nansum(rate * step)))
    # the host's disk took the job's writes (direct I/O: 64 MiB a round, long enough for the
    # remote samples at 10 Hz to straddle it; other writers add)
    assert max(written) > 16 * 2**20, written


def test_a_host_that_stops_answering_is_a_gap_not_the_end(srv: NetnsHost, tmp_path: Path) -> None:
    out = tmp_path / "stopped"
    rounds_file = out / "rounds.jsonl"
    command = [
        sys.executable,
        "-m",
        "pilot_sys",
        "run",
        "-o",
        str(out),
        "--preset",
        "quick",
        "--max-rounds",
        "4",
        "--host",
        f"srv=http://{srv.address}:9100",
        "--",
        "iperf3",
        "-c",
        srv.address,
        "-t",
        "1",
        "-J",
    ]
    session = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped = threading.Event()

    def stop_after_first_round() -> None:
        deadline = time.monotonic() + SESSION_TIMEOUT_S
        while time.monotonic() < deadline and session.poll() is None:
            if rounds_file.exists() and rounds_file.read_text().count("\n") >= 1:
                srv.stop("node_exporter")
                stopped.set()
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=stop_after_first_round, daemon=True)
    watcher.start()
    try:
        _, stderr = session.communicate(timeout=SESSION_TIMEOUT_S)
    finally:
        if session.poll() is None:
            session.kill()
            session.wait(10)
        watcher.join(10)
        if not any(d.name == "node_exporter" for d in srv.daemons):
            srv.node_exporter()  # the other tests of this module use it
    assert stopped.is_set() and "Traceback" not in stderr, stderr
    rounds = _rounds(out)
    assert [r["index"] for r in rounds] == [1, 2, 3, 4]
    assert rounds[0]["monitor"]["gaps"] == []
    for record in rounds[2:]:  # round 2 may have started before the exporter went away
        assert any(g.startswith("remote:srv ") for g in record["monitor"]["gaps"]), record
        trace = _trace(out, record)
        assert any(
            "source remote:srv: no sample for" in n and "connection refused" in n
            for n in trace["notes"]
        ), trace["notes"]
        assert trace["series"]["cpu:host/util_compute"]  # the local side is still sampled
    assert json.loads((out / "result.json").read_text())["status"]
