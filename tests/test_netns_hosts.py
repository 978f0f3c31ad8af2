"""The namespace test hosts themselves: reachable, daemons bound to the host's own address,
shaped by tc, and nothing left behind (also from a run that crashed)."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest
from netns import (
    NODE_EXPORTER,
    PMCD,
    PMPROXY,
    NetnsError,
    NetnsHost,
    cleanup_leftovers,
    host_fixture,
    netns_host,
    require_daemons,
)

pytestmark = pytest.mark.live


@pytest.fixture
def server_host() -> Iterator[NetnsHost]:
    yield from host_fixture("srv")


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_host_is_reachable_only_at_its_own_address(server_host: NetnsHost) -> None:
    require_daemons(NODE_EXPORTER)
    base = server_host.node_exporter()
    with urllib.request.urlopen(f"{base}/metrics?collect[]=netdev", timeout=5) as response:
        text = response.read().decode()
    # inside the namespace node_exporter sees the namespace's interfaces, not the root's
    assert 'node_network_receive_bytes_total{device="eth0"}' in text
    assert f'device="{server_host.root_if}"' not in text
    listening = server_host.run("ss", "-Htln").stdout
    assert f"{server_host.address}:9100" in listening
    assert "0.0.0.0:9100" not in listening and "*:9100" not in listening


def test_pcp_daemons_answer_without_system_services(server_host: NetnsHost) -> None:
    require_daemons(PMCD, PMPROXY)
    base = server_host.pcp()
    with urllib.request.urlopen(f"{base}/pmapi/fetch?names=hinv.ncpu", timeout=5) as response:
        body = json.load(response)
    assert body["values"][0]["instances"][0]["value"] == os.cpu_count()
    # pmcd itself listens on the namespace's loopback only
    assert "127.0.0.1:44321" in server_host.run("ss", "-Htln").stdout


def test_host_removed_with_its_daemons_also_when_the_test_fails() -> None:
    require_daemons(NODE_EXPORTER)
    with pytest.raises(RuntimeError, match="boom"), netns_host("gone") as host:
        host.node_exporter()
        pid = host.daemons[0].process.pid
        netns, root_if, workdir = host.netns, host.root_if, host.workdir
        raise RuntimeError("boom")
    assert netns not in _namespaces()
    assert not workdir.exists()
    assert (
        subprocess.run(["ip", "link", "show", root_if], capture_output=True, timeout=10).returncode
        != 0
    )
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_daemon_that_cannot_start_is_reported_with_its_log(server_host: NetnsHost) -> None:
    with pytest.raises(NetnsError, match="exited with"):
        server_host.start(
            "false", ["sh", "-c", "echo cannot bind >&2; exit 3"], lambda: False, timeout=5
        )


def test_leftovers_of_a_dead_run_are_removed() -> None:
    require_daemons()
    # a namespace named for a process that no longer exists, as a crashed run leaves it
    child = subprocess.Popen(["true"])
    child.wait()
    orphan = f"pst-{child.pid}-1"
    subprocess.run(["ip", "netns", "add", orphan], check=True, timeout=10)
    try:
        removed = cleanup_leftovers()
        assert orphan in removed
        assert orphan not in _namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", orphan], capture_output=True, timeout=10)


def test_two_hosts_get_distinct_subnets_and_both_answer() -> None:
    require_daemons()
    with netns_host("a") as first, netns_host("b") as second:
        nets = [ipaddress.ip_network(f"{h.peer}/30", strict=False) for h in (first, second)]
        assert not nets[0].overlaps(nets[1]) and first.netns != second.netns
        for host in (first, second):
            assert ipaddress.ip_address(host.address) in ipaddress.ip_network(
                f"{host.peer}/30", strict=False
            )
            # a closed port answers with a reset at once: the host is there, nothing listens
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((host.address, 9), timeout=2).close()


def test_tbf_shapes_traffic_into_the_host(server_host: NetnsHost) -> None:
    require_daemons("iperf3")
    port = server_host.iperf3_server()
    server_host.shape("40mbit")
    started = time.monotonic()
    done = subprocess.run(
        ["iperf3", "-c", server_host.address, "-p", str(port), "-t", "2", "-J"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    received = json.loads(done.stdout)["end"]["sum_received"]["bits_per_second"]
    assert 30e6 < received < 44e6, (received, time.monotonic() - started)
