"""``--prometheus URL`` end to end: a real Prometheus server (tests/prometheus_server.py) scraping
two real node_exporters in network namespaces (tests/netns.py) under the job ``storage`` (and
the first of them under ``other`` too), and pilot-sys finding the fleet through the engine:

1. ``monitor --prometheus 'http://...?job=storage'`` finds both hosts, names them (the two
   namespaces share the machine's nodename, so each gets its address) and names their
   components as a direct scrape of the same host does;
2. ``run`` with ``--host`` and ``--prometheus`` naming the same host monitors it once, under the
   user's name, and keeps the resolved fleet in result.json;
3. a selector that matches nothing, a server that does not answer, a fleet above the bound:
   one line, exit 2.

Every daemon is stopped when its fixture ends, also on failure; every wait is bounded."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from netns import NODE_EXPORTER, NetnsHost, host_fixture, require_daemons
from prometheus_server import PrometheusServer, free_port, prometheus_server, require_prometheus

from conftest import run_cli
from pilot_sys.errors import BadInput
from pilot_sys.monitor.remote.prometheus_discovery import discover_instances
from pilot_sys.topology.prometheus_fleet import name_fleet, parse_fleet_url

pytestmark = [pytest.mark.live, pytest.mark.slow]

SCRAPE_S = 1.0


@pytest.fixture(scope="module")
def hosts() -> Iterator[tuple[NetnsHost, NetnsHost]]:
    require_daemons(NODE_EXPORTER, "taskset")
    require_prometheus()
    for first in host_fixture("fa"):
        for second in host_fixture("fb"):
            first.node_exporter()
            second.node_exporter()
            yield first, second


@pytest.fixture(scope="module")
def prom(hosts: tuple[NetnsHost, NetnsHost]) -> Iterator[PrometheusServer]:
    a, b = hosts
    config = (
        f"global:\n  scrape_interval: {int(SCRAPE_S * 1000)}ms\n"
        f"  scrape_timeout: {int(SCRAPE_S * 800)}ms\n"
        "scrape_configs:\n"
        f"  - job_name: storage\n    static_configs: "
        f'[{{"targets": ["{a.address}:9100", "{b.address}:9100"]}}]\n'
        f'  - job_name: other\n    static_configs: [{{"targets": ["{a.address}:9100"]}}]\n'
        '  - job_name: ghost\n    static_configs: [{"targets": ["127.0.0.1:1"]}]\n'
    )
    with prometheus_server([], interval_s=SCRAPE_S, config_text=config) as server:
        server.wait_for_samples('node_uname_info{job="storage"}[10s]', 3)
        server.wait_for_samples('node_uname_info{job="other"}[10s]', 3)
        yield server


def _expected_names(prom: PrometheusServer, hosts: tuple[NetnsHost, ...]) -> dict[str, str]:
    """address -> name, by hand: the nodename, with the address when two hosts share it."""
    nodename = {
        s["metric"]["instance"].rsplit(":", 1)[0]: s["metric"]["nodename"]
        for s in prom.query('node_uname_info{job="storage"}')
    }
    shared = len(set(nodename.values())) < len(nodename)
    return {
        h.address: f"{nodename[h.address]}-{h.address}" if shared else nodename[h.address]
        for h in hosts
    }


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=timeout)


def _monitor_components(trace_file: Path, spec: list[str], name: str) -> set[str]:
    done = _cli("monitor", "--json", str(trace_file), *spec, "--", "sleep", "3")
    assert done.returncode == 0, done.stderr
    trace = json.loads(trace_file.read_text())
    # the components and their series, with the host's name taken out
    return {k.replace(f":{name}", ":NAME") for k in trace["series"] if f":{name}" in k}


def test_monitor_finds_every_host_of_the_job_and_names_their_components(
    hosts: tuple[NetnsHost, NetnsHost], prom: PrometheusServer, tmp_path: Path
) -> None:
    names = _expected_names(prom, hosts)
    trace_file = tmp_path / "fleet.json"
    done = _cli(
        "monitor", "--json", str(trace_file),
        "--prometheus", f"{prom.url}?job=storage", "--", "sleep", "3",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    # the list shown once at start: every host with its instance
    assert f"--prometheus {prom.url}?job=storage: 2 hosts" in done.stderr, done.stderr
    for address, name in names.items():
        assert re.search(rf"^pilot-sys:\s+{re.escape(name)}\s+{address}:9100", done.stderr, re.M)
    trace = json.loads(trace_file.read_text())
    for name in names.values():
        for component in ("cpu", "nic", "block"):
            assert any(k.startswith(f"{component}:{name}") for k in trace["series"]), (
                component,
                name,
                sorted(trace["series"])[:40],
            )
    assert any("--prometheus" in n and all(x in n for x in names.values()) for n in trace["notes"])

    # the first host, found through the fleet, has the components a direct scrape gives it
    a = hosts[0]
    fleet = {k.replace(f":{names[a.address]}", ":NAME") for k in trace["series"]}
    fleet = {k for k in fleet if ":NAME" in k}
    direct = _monitor_components(
        tmp_path / "direct.json", ["--host", f"d=http://{a.address}:9100"], "d"
    )
    assert fleet and fleet == direct


def test_run_monitors_a_host_declared_both_ways_once_and_keeps_the_fleet(
    hosts: tuple[NetnsHost, NetnsHost], prom: PrometheusServer, tmp_path: Path
) -> None:
    a, b = hosts
    names = _expected_names(prom, hosts)
    out = tmp_path / "run"
    # one core kept busy on the second host: its CPU is judged under the fleet's name for it
    b.start("hog", ["taskset", "-c", "1", sys.executable, "-c", "while True: pass"], lambda: True)
    try:
        done = _cli(
            "run", "-o", str(out), "--preset", "quick", "--max-rounds", "2",
            "--host", f"filer=http://{a.address}:9100",
            "--prometheus", f"{prom.url}?job=storage", "--", "sleep", "4",
        )  # fmt: skip
    finally:
        b.stop("hog")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode not in (1, 2), done.stderr
    assert done.stderr.count(f"--prometheus {prom.url}?job=storage: 2 hosts") == 1, done.stderr
    config = json.loads((out / "result.json").read_text())["config"]
    assert [h.split("=", 1)[0] for h in config["hosts"]] == ["filer", names[b.address]]
    assert config["hosts"][1].startswith(f"{names[b.address]}=prom://127.0.0.1:")
    (fleet,) = config["prometheus"]
    assert fleet["url"] == f"{prom.url}?job=storage"
    assert fleet["selector"] == '{job="storage"}'
    assert [(h["name"], h["instance"]) for h in fleet["hosts"]] == sorted(
        [("filer", f"{a.address}:9100"), (names[b.address], f"{b.address}:9100")],
        key=lambda row: row[1],
    )
    rounds = [json.loads(x) for x in (out / "rounds.jsonl").read_text().splitlines() if x]
    trace = json.loads((out / rounds[0]["dir"] / "monitor.json").read_text())
    assert {"remote:filer", f"remote:{names[b.address]}"} <= set(trace["sources"])
    named = [h for r in rounds for h in r["monitor"]["hidden_bottlenecks"]]
    assert any(h.startswith(f"cpu:{names[b.address]} (") for h in named), named


def test_an_instance_under_two_jobs_is_one_host(
    hosts: tuple[NetnsHost, NetnsHost], prom: PrometheusServer
) -> None:
    a = hosts[0]
    query = parse_fleet_url(f'{prom.url}?instance=~"{re.escape(a.address)}:.*"')
    found = discover_instances(query)
    assert sorted(f.job or "" for f in found) == ["other", "storage"]
    assert [h.instance for h in name_fleet(found)] == [f"{a.address}:9100"]


def test_a_fleet_above_the_bound_is_refused(prom: PrometheusServer) -> None:
    with pytest.raises(BadInput, match="2 node_exporter instances match .* more than 1: narrow"):
        discover_instances(parse_fleet_url(f"{prom.url}?job=storage"), max_hosts=1)


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("?job=absent", "no node_exporter matches"),
        ("?job=ghost", "target(s) it matches are down (up is 0: 127.0.0.1:1)"),
        ('?instance=~"(unclosed"', "not a regular expression"),
    ],
)
def test_a_selector_that_selects_nothing_is_one_line(
    prom: PrometheusServer, query: str, problem: str
) -> None:
    done = _cli("monitor", "--prometheus", prom.url + query, "--", "true", timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"pilot-sys: error: --prometheus {prom.url}") and problem in line


def test_a_server_that_does_not_answer_is_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}?job=storage"
    done = _cli("graph", "--prometheus", url, timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"pilot-sys: error: --prometheus {url}") and "refused" in line


def test_a_server_without_node_exporters_says_so_in_one_line() -> None:
    with prometheus_server([], interval_s=SCRAPE_S) as server:
        done = _cli("graph", "--prometheus", server.url, timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"pilot-sys: error: --prometheus {server.url}: no node_exporter"), line
    assert "nor does any target" in line
