"""The Prometheus backend end to end: a real Prometheus server (Debian's ``prometheus``, started
by the tests, tests/prometheus_server.py) scraping real node_exporters in network namespaces
(tests/netns.py) every second, and ``pilot-sys`` judging through it:

1. a server whose core is the limit (its iperf3 and a CPU hog pinned to one core): the hidden
   bottleneck named through Prometheus is the one named by the direct backend, and the two
   readings of the server's busiest core agree;
2. ``monitor --host NAME=prom://...`` places the host's components under the same names as a
   direct scrape, at the engine's resolution, stated;
3. a Prometheus that stops answering mid-session: the session finishes, every round is
   journaled, the rounds after it report the host's gap.

Every daemon is stopped when its fixture ends, also on failure; every wait is bounded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from netns import NODE_EXPORTER, NetnsHost, host_fixture, require_daemons
from prometheus_server import PrometheusServer, prometheus_server, require_prometheus

pytestmark = [pytest.mark.live, pytest.mark.slow]

SESSION_TIMEOUT_S = 240.0
SCRAPE_S = 1.0


@pytest.fixture(scope="module")
def srv() -> Iterator[NetnsHost]:
    require_daemons(NODE_EXPORTER, "iperf3", "taskset")
    require_prometheus()
    for host in host_fixture("srv"):
        host.node_exporter()
        yield host


@pytest.fixture(scope="module")
def prom(srv: NetnsHost) -> Iterator[PrometheusServer]:
    with prometheus_server([f"{srv.address}:9100"], interval_s=SCRAPE_S) as server:
        server.wait_for_samples("up[10s]", 3)
        yield server


def _prom_spec(srv: NetnsHost, prom: PrometheusServer) -> str:
    return f"srv=prom://{prom.url.removeprefix('http://')}?instance={srv.address}:9100&job=node"


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


def test_the_servers_core_is_named_through_prometheus_as_directly(
    srv: NetnsHost, prom: PrometheusServer, tmp_path: Path
) -> None:
    port = "5203"
    srv.start(
        "iperf3-core1",
        ["taskset", "-c", "1", "iperf3", "-s", "-B", srv.address, "-p", port],
        srv.listening(int(port)),
    )
    srv.start("hog", ["taskset", "-c", "1", sys.executable, "-c", "while True: pass"], lambda: True)
    workload = ["taskset", "-c", "0", "iperf3", "-c", srv.address, "-p", port, "-t", "5", "-J"]
    busiest: dict[str, float] = {}
    try:
        for backend, spec in (
            ("prometheus", _prom_spec(srv, prom)),
            ("direct", f"srv=http://{srv.address}:9100"),
        ):
            out = tmp_path / backend
            done = _run(out, "--max-rounds", "2", "--host", spec, "--", *workload)
            assert "Traceback" not in done.stderr, done.stderr
            rounds = _rounds(out)
            assert len(rounds) == 2, done.stderr
            for record in rounds:
                named = record["monitor"]["hidden_bottlenecks"]
                assert any(h.startswith("cpu:srv ") for h in named), (backend, named)
            assert done.returncode == 3, done.stderr  # invalid: a hidden bottleneck
            traces = [_trace(out, r) for r in rounds]
            busiest[backend] = float(
                np.nanmedian(np.concatenate([_series(t, "cpu:srv/busiest_core") for t in traces]))
            )
            if backend == "prometheus":
                source = traces[0]["sources"]["remote:srv"]
                assert source["interval_s"] == pytest.approx(SCRAPE_S, rel=0.2)
                assert len(source["times"]) >= 3  # one per scrape
                stated = [
                    float(m.group(1))
                    for n in traces[0]["notes"]
                    if (m := re.search(r"its scrape interval is ([0-9.]+) s", n))
                ]
                assert stated and stated[0] == pytest.approx(SCRAPE_S, rel=0.1), stated
    finally:
        srv.stop("hog")
        srv.stop("iperf3-core1")
    assert busiest["prometheus"] > 0.9 and busiest["direct"] > 0.9, busiest
    assert abs(busiest["prometheus"] - busiest["direct"]) < 0.1, busiest


def test_monitor_names_the_hosts_components_as_a_direct_scrape_does(
    srv: NetnsHost, prom: PrometheusServer, tmp_path: Path
) -> None:
    seen: dict[str, set[str]] = {}
    for backend, spec in (
        ("prometheus", _prom_spec(srv, prom)),
        ("direct", f"srv=http://{srv.address}:9100"),
    ):
        trace_file = tmp_path / f"{backend}.json"
        done = subprocess.run(
            [sys.executable, "-m", "pilot_sys", "monitor", "--json", str(trace_file),
             "--host", spec, "--", "sleep", "3"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        trace = json.loads(trace_file.read_text())
        seen[backend] = {k for k in trace["series"] if ":srv" in k}
    assert seen["prometheus"] and seen["prometheus"] == seen["direct"]


def test_a_prometheus_that_stops_answering_is_a_gap_not_the_end(
    srv: NetnsHost, tmp_path: Path
) -> None:
    out = tmp_path / "paused"
    with prometheus_server([f"{srv.address}:9100"], interval_s=SCRAPE_S) as server:
        server.wait_for_samples("up[10s]", 3)

        def pause_after_round_one() -> None:
            deadline = time.monotonic() + SESSION_TIMEOUT_S
            while time.monotonic() < deadline:
                rounds = out / "rounds.jsonl"
                if rounds.exists() and rounds.read_text().strip():
                    os.kill(server.process.pid, signal.SIGSTOP)
                    return
                time.sleep(0.1)

        pauser = threading.Thread(target=pause_after_round_one, daemon=True)
        pauser.start()
        try:
            done = _run(
                out, "--max-rounds", "3", "--host", _prom_spec(srv, server), "--", "sleep", "4"
            )
        finally:
            pauser.join(5)
            server.resume()
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode not in (1, 2), done.stderr
    rounds = _rounds(out)
    assert len(rounds) == 3
    later = [r["monitor"] for r in rounds[1:]]
    assert all(any("remote:srv" in g for g in m["gaps"]) for m in later), later
    notes = [n for r in rounds[1:] for n in _trace(out, r)["notes"] if "remote:srv" in n]
    assert any("no answer within" in n for n in notes), notes


def test_rounds_shorter_than_three_scrapes_are_judged_over_the_session(
    srv: NetnsHost, prom: PrometheusServer, tmp_path: Path
) -> None:
    out = tmp_path / "short"
    srv.start("hog", ["taskset", "-c", "1", sys.executable, "-c", "while True: pass"], lambda: True)
    try:
        done = _run(out, "--max-rounds", "5", "--host", _prom_spec(srv, prom), "--", "sleep", "1")
    finally:
        srv.stop("hog")
    assert "Traceback" not in done.stderr, done.stderr
    rounds = _rounds(out)
    assert len(rounds) == 5
    for record in rounds:  # no round judges the host from its own one or two scrapes
        trace = _trace(out, record)
        busiest = _series(trace, "cpu:srv/busiest_core")
        assert not np.isfinite(busiest).any()
        assert any("shorter than 3 of its engine's scrape intervals" in n for n in trace["notes"])
    last = rounds[-1]
    notes = _trace(out, last)["notes"]
    assert any("judged over the session so far instead" in n for n in notes), notes
    # the hog is one busy core: judged as compute or as a single core, by how busy the others
    # happened to be; either way the host's CPU, over the session
    assert any(
        h.startswith("cpu:srv (") and h.endswith(") [over the session]")
        for h in last["monitor"]["hidden_bottlenecks"]
    ), last["monitor"]["hidden_bottlenecks"]


def test_graph_places_the_host_as_a_direct_inventory_does(
    srv: NetnsHost, prom: PrometheusServer
) -> None:
    ids: dict[str, set[str]] = {}
    for backend, spec in (
        ("prometheus", _prom_spec(srv, prom)),
        ("direct", f"srv=http://{srv.address}:9100"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "pilot_sys", "graph", "--json", "--host", spec, srv.address],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        graph = json.loads(done.stdout)
        ids[backend] = {n["id"] for n in graph["nodes"] if "srv" in n["id"]}
        assert {"cpu:srv", "memory:srv", "nic:srv/eth0", "network:host~srv"} <= ids[backend]
        assert graph["data_path"]["cut"] == "network:host~srv", graph["data_path"]
    assert ids["prometheus"] == ids["direct"]


def test_a_bounded_window_is_raw_scrapes_and_names_an_exporter_restart(
    srv: NetnsHost, prom: PrometheusServer
) -> None:
    from pilot_sys.monitor.remote import prometheus
    from pilot_sys.monitor.remote.http import Response
    from pilot_sys.topology.remote_hosts import parse_host_spec

    host = parse_host_spec(_prom_spec(srv, prom))
    fleet = prometheus.Fleet(prom.url, [host], timeout=10.0)
    own = f'process_cpu_seconds_total{{instance="{srv.address}:9100"}} > 0.05'
    deadline = time.monotonic() + 90
    while not prom.query(own):  # the old exporter's CPU time must be able to go back
        assert time.monotonic() < deadline, "the exporter never reached 0.05 s of CPU"
        time.sleep(1.0)
    time.sleep(4.0)
    srv.stop("node_exporter")  # a restart: its own CPU time starts again near 0
    srv.node_exporter()
    time.sleep(6.0)
    try:
        bounded = fleet.window([host], 12.0, points=7)["srv"]
        resets = dict(fleet.last_window_resets)
        families = {
            f: fleet._query(prometheus.range_query(f, [host], 20.0))[0]
            for f in prometheus.WINDOW_FAMILIES
        }
    finally:
        fleet.close()
    raw = prometheus.window_readings(host, families, Response(prom.url, b"", 0.0, 0.0))
    by_time = {r.remote_time: r for r in raw}
    assert 4 <= len(bounded) <= 7
    for reading in bounded:  # every point is one of the engine's raw scrapes, unchanged
        same = by_time[reading.remote_time]
        assert reading.values == same.values
        if reading.exporter_cpu_s is not None:
            assert reading.exporter_cpu_s == same.exporter_cpu_s
    assert resets.get("srv", 0) >= 1, resets  # the restart is seen server-side...
    left_out = [r for r in bounded[1:] if r.exporter_cpu_s is None]
    assert left_out and all("cpu:srv/busy_s" in r.values for r in left_out)  # ...for its family
