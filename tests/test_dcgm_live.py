"""Remote GPUs end to end: a fleet of three GPU hosts, each a network namespace whose static
exporters (tests/dcgm_exporter_replay.py) serve what node_exporter and dcgm-exporter would
have served while a shared H200 recording ran, at the recorded times; a real Prometheus
(Debian's ``prometheus``, tests/prometheus_server.py) scraping both exporters of each host
every half second as two jobs (``node`` on 9100, ``dcgm`` on 9400, as fleets run them); and
``pilot-sys monitor --host NAME=prom://...?instance=ADDR:9100&job=node`` judging the three
hosts through it while the recordings play. Each host gets the limiter the local replay of
the same recording names (the data README's ground truth), under its own name: the PCIe link
host to device, the tensor cores with the power cap, one CPU core for the starved GPU.

Every daemon is stopped when the test ends, also on failure; every wait is bounded."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from netns import NetnsHost, netns_host, require_daemons
from prometheus_server import PrometheusServer, prometheus_server, require_prometheus

from tests.dcgm_replay import GpuHostReplay

pytestmark = [pytest.mark.live, pytest.mark.slow]

SCRAPE_S = 0.5
EXPORTER = Path(__file__).parent / "dcgm_exporter_replay.py"
FLEET = {"gpuh2d": "h2d_pinned", "gpumm": "matmul", "gpust": "starved"}
BUS = "0000:00:06.0"
EXPECTED = {
    "gpuh2d": (f"accelerator:gpuh2d/{BUS}", "receive"),
    "gpumm": (f"accelerator:gpumm/{BUS}", "tensor"),
    "gpust": ("cpu:gpust", "single core"),
}


def _config(hosts: dict[str, NetnsHost], query_log: Path) -> str:
    jobs = []
    for job, port in (("node", 9100), ("dcgm", 9400)):
        targets = json.dumps([{"targets": [f"{h.address}:{port}" for h in hosts.values()]}])
        jobs.append(f"  - job_name: {job}\n    static_configs: {targets}\n")
    ms = int(SCRAPE_S * 1000)
    return (
        f"global:\n  scrape_interval: {ms}ms\n  scrape_timeout: {int(ms * 0.8)}ms\n"
        f"  query_log_file: {query_log}\n"
        "scrape_configs:\n" + "".join(jobs)
    )


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[dict[str, NetnsHost], PrometheusServer]]:
    require_daemons()
    require_prometheus()
    with contextlib.ExitStack() as stack:
        hosts = {name: stack.enter_context(netns_host(name)) for name in FLEET}
        config = _config(hosts, tmp_path / "queries.log")
        server = stack.enter_context(prometheus_server([], config_text=config))
        yield hosts, server


def _start_exporters(hosts: dict[str, NetnsHost], start_file: Path) -> None:
    for name, host in hosts.items():
        host.start(
            "exporters",
            [sys.executable, str(EXPORTER), FLEET[name], host.address, name, str(start_file)],
            lambda host=host: host.listening(9100)() and host.listening(9400)(),
        )


def _wait_for_polls(query_log: Path, monitor: subprocess.Popen[str], timeout: float) -> None:
    """Until the monitor's sources poll the engine (a range query of the GPU families in
    Prometheus's query log): the recordings then start, all at once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if monitor.poll() is not None:
            raise AssertionError(f"monitor exited early: {monitor.communicate()}")
        text = query_log.read_text() if query_log.exists() else ""
        if any("DCGM_FI" in line and "ms]" in line for line in text.splitlines()):
            return
        time.sleep(0.2)
    raise TimeoutError(f"the monitor did not poll the engine within {timeout:g} s")


def test_each_gpu_host_of_a_fleet_gets_its_limiter_through_prometheus(
    fleet: tuple[dict[str, NetnsHost], PrometheusServer], tmp_path: Path
) -> None:
    hosts, server = fleet
    duration = max(GpuHostReplay(case).duration for case in FLEET.values())
    start_file = tmp_path / "start"
    _start_exporters(hosts, start_file)
    server.wait_for_samples('DCGM_FI_DEV_GPU_UTIL{job="dcgm"}[2s]', 2, timeout=30.0)
    server.wait_for_samples('up{job="node"}[2s]', 2, timeout=30.0)
    engine = server.url.removeprefix("http://")
    specs = [
        f"{name}=prom://{engine}?instance={host.address}:9100&job=node"
        for name, host in hosts.items()
    ]
    trace_file = tmp_path / "trace.json"
    with subprocess.Popen(
        [sys.executable, "-m", "pilot_sys", "monitor", "--json", str(trace_file),
         *(a for spec in specs for a in ("--host", spec)),
         "--", "sleep", f"{duration + 4:.0f}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as monitor:  # fmt: skip
        try:
            _wait_for_polls(tmp_path / "queries.log", monitor, timeout=90.0)
            start_file.write_text("go\n")  # its time of writing starts every recording
            _, stderr = monitor.communicate(timeout=120)
        finally:
            if monitor.poll() is None:
                monitor.kill()
                monitor.communicate()
    done = subprocess.CompletedProcess(monitor.args, monitor.returncode, "", stderr)
    assert "Traceback" not in done.stderr, done.stderr
    trace = json.loads(trace_file.read_text())
    verdict = trace["verdict"]
    named = [(h["component"], h["direction"]) for h in verdict["hidden_bottlenecks"]]
    notes = verdict["notes"]
    for name, expected in EXPECTED.items():
        mine = [pair for pair in named if f":{name}" in pair[0]]
        assert mine and mine[0] == expected, (name, named, notes)
    # the starved host's GPU and the GPU-bound hosts' spin-waiting cores are not named
    assert (f"accelerator:gpust/{BUS}", "compute") not in named
    assert ("cpu:gpuh2d", "single core") not in named
    assert ("cpu:gpumm", "single core") not in named
    assert any("gpumm" in n and "software power cap" in n for n in notes), notes
    # the recordings started once the monitor polled: each GPU host's start-up was seen
    assert any(n.startswith("gpuh2d: start-up judged apart") for n in notes), notes
    # the resolution is the engine's, stated
    assert any("its scrape interval is 0.5 s" in n for n in trace["notes"]), trace["notes"]
    for name in FLEET:
        assert trace["attrs"][f"accelerator:{name}/{BUS}"]["model"] == "NVIDIA H200"
