"""The remote clients against real daemons in a namespace host: inventories from node_exporter
and pmproxy, NIC counters around an iperf3 transfer into the host, a daemon that stops and
comes back, a pmproxy context that expires, and an answer longer than pmproxy's chunk size.

Bounds for the transfer: the host's eth0 must have received at least what the iperf3 server
read, and at most what the client wrote plus 8 % (its receive counter counts frames: Ethernet,
IP and TCP headers and the scrapes' own requests; headers of MTU-sized segments are 4.6 %, a
veth with GRO shows far less). Under load the server may stop reading before the last bytes
the client wrote arrive, so the two iperf3 counts can differ by megabytes."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator

import pytest
from netns import NODE_EXPORTER, PMCD, PMPROXY, NetnsHost, host_fixture, require_daemons

from pilot_sys.monitor.remote.http import HttpConnection, RemoteUnavailable
from pilot_sys.monitor.remote.node_exporter import NodeExporterClient
from pilot_sys.monitor.remote.pcp import COUNTER_METRICS, INVENTORY_METRICS, PmproxyClient
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
from pilot_sys.topology.components import LimitSource
from pilot_sys.topology.remote_hosts import parse_host_spec
from pilot_sys.topology.remote_inventory import inventory_discovery, nic_on_path

pytestmark = pytest.mark.live

TRANSFER = 32 * 2**20
HEADROOM = 1.08


@pytest.fixture(scope="module")
def srv() -> Iterator[NetnsHost]:
    require_daemons(NODE_EXPORTER, PMCD, PMPROXY, "iperf3")
    for host in host_fixture("srv"):
        host.node_exporter()
        host.pcp()
        host.iperf3_server()
        yield host


def _clients(host: NetnsHost) -> list[NodeExporterClient | PmproxyClient]:
    return [
        NodeExporterClient(parse_host_spec(f"srv=http://{host.address}:9100")),
        PmproxyClient(parse_host_spec(f"srv=pcp://{host.address}:44322")),
    ]


def _sysfs_speed(host: NetnsHost) -> float:
    """eth0's speed as the kernel prints it inside the namespace (Mb/s), in bytes/s."""
    return int(host.run("cat", "/sys/class/net/eth0/speed").stdout) * 1e6 / 8


@pytest.mark.parametrize("backend", [0, 1], ids=["node_exporter", "pcp"])
def test_inventory_of_a_namespace_host(srv: NetnsHost, backend: int) -> None:
    client = _clients(srv)[backend]
    inventory = client.inventory()
    found = {c.id: c for c in inventory_discovery(inventory).components}
    assert {"cpu:srv", "memory:srv", "nic:srv/eth0"} <= set(found)
    assert not any(cid.startswith("nic:srv/lo") for cid in found)
    assert any(cid.startswith("block:srv/") for cid in found)
    nic = found["nic:srv/eth0"].limits["receive"]
    source = LimitSource.NODE_EXPORTER if backend == 0 else LimitSource.PCP
    assert nic.value == _sysfs_speed(srv) and nic.source == source
    assert found["memory:srv"].limits["capacity"].known
    chosen, _ = nic_on_path(inventory, srv.address)
    assert chosen is not None and chosen.name == "eth0"
    client.close()


def test_nic_counters_follow_an_iperf3_transfer(srv: NetnsHost) -> None:
    clients = _clients(srv)
    before = [c.counters() for c in clients]
    done = subprocess.run(
        ["iperf3", "-c", srv.address, "-n", str(TRANSFER), "-J"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    after = [c.counters() for c in clients]
    end = json.loads(done.stdout)["end"]
    read, written = end["sum_received"]["bytes"], end["sum_sent"]["bytes"]
    for first, last in zip(before, after, strict=True):
        received = last.values["nic:srv/eth0/rx_bytes"] - first.values["nic:srv/eth0/rx_bytes"]
        assert read <= received <= written * HEADROOM, (received, read, written)
        assert last.remote_time is not None and first.remote_time < last.remote_time
        # the remote clock is this machine's (one kernel): the sample lies within the request
        assert last.sent - 0.005 <= last.remote_time <= last.received + 0.005
        rates = utilizations(CounterSeries.from_readings([first, last]))
        interval = last.remote_time - first.remote_time
        assert rates["nic:srv/eth0/rx_bytes_per_s"][1] == pytest.approx(received / interval)
    for client in clients:
        client.close()


def test_stopped_exporter_is_reported_and_found_again(srv: NetnsHost) -> None:
    client = _clients(srv)[0]
    client.counters()
    srv.stop("node_exporter")
    srv.daemons = [d for d in srv.daemons if d.name != "node_exporter"]
    with pytest.raises(RemoteUnavailable) as caught:
        client.counters()
    assert str(caught.value).startswith(f"http://{srv.address}:9100/metrics?collect")
    srv.node_exporter()
    assert client.counters().values["nic:srv/eth0/rx_bytes"] > 0
    client.close()


def test_expired_pmproxy_context_is_made_anew(srv: NetnsHost) -> None:
    client = PmproxyClient(parse_host_spec(f"srv=pcp://{srv.address}:44322"), polltimeout=1)
    first = client.counters()
    old = client._context
    time.sleep(2.5)  # pmproxy drops a context idle longer than its polltimeout
    second = client.counters()
    assert client._context != old
    assert second.remote_time > first.remote_time
    client.close()


def test_answer_longer_than_pmproxys_chunk_size_arrives_whole(srv: NetnsHost) -> None:
    base = f"http://{srv.address}:44322"
    names = ",".join((*COUNTER_METRICS, *INVENTORY_METRICS))
    connection = HttpConnection(base, timeout=5)
    body = connection.get(f"{base}/pmapi/metric?names={names}").body
    connection.close()
    assert len(body) > 4096  # beyond one page: pmproxy sends it chunked
    assert {m["name"] for m in json.loads(body)["metrics"]} == set(names.split(","))


def test_metric_the_host_lacks_is_left_out_not_invented(srv: NetnsHost) -> None:
    client = PmproxyClient(parse_host_spec(f"srv=pcp://{srv.address}:44322"))
    for _ in range(2):  # the second fetch does not ask for the missing descriptor again
        fetch, _ = client.fetch(["hinv.ncpu", "no.such.metric"])
        assert set(fetch.values) == {"hinv.ncpu"}
    assert client._absent == {"no.such.metric"}
    fetch, _ = client.fetch(["no.such.other"])  # pmproxy answers 400 when none exists
    assert fetch.values == {} and "no.such.other" in client._absent
    client.close()


def test_pmproxys_sample_times_lie_within_their_requests(srv: NetnsHost) -> None:
    """One kernel, one clock: every fetch's time is between its request and its answer (the
    raw timestamp's unpadded nanoseconds read right; a JSON float would be up to 0.9 s off in
    one fetch out of ten)."""
    client = PmproxyClient(parse_host_spec(f"srv=pcp://{srv.address}:44322"))
    outside = []
    for _ in range(40):
        reading = client.counters()
        if not reading.sent - 0.005 <= reading.remote_time <= reading.received + 0.005:
            outside.append((reading.sent, reading.remote_time, reading.received))
        time.sleep(0.013)
    client.close()
    assert outside == []
