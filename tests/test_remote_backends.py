"""node_exporter and pmproxy answers captured from the real daemons in a namespace host
(tests/fixtures/remote, made by its capture.py), parsed into inventories, components and
counters; the counters checked against values read from the raw text and JSON independently."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.monitor.remote import node_exporter, pcp
from pilot_sys.monitor.remote.clients import connect
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import Response
from pilot_sys.monitor.remote.utilization import (
    CounterSeries,
    clock_offset,
    exporter_cpu_per_reading,
    local_times,
    utilizations,
)
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.remote_hosts import parse_host_spec
from pilot_sys.topology.remote_inventory import (
    RemoteDisk,
    RemoteFilesystem,
    RemoteInventory,
    RemoteNic,
    host_link,
    inventory_discovery,
    nic_on_path,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "remote"
_IPERF3 = json.loads((FIXTURES / "transfer.json").read_text())
READ, WRITTEN = _IPERF3["iperf3_bytes_received"], _IPERF3["iperf3_bytes_sent"]


def _prom(tag: str) -> str:
    return (FIXTURES / f"node_exporter_{tag}.prom").read_text()


def _raw_prom(text: str, name: str, labels: str = "") -> float:
    """A sample's value straight from the exposition text (the reference for the parser)."""
    pattern = (
        "^" + re.escape(name) + (r"\{" + re.escape(labels) + r"\}" if labels else "") + r" (\S+)$"
    )
    match = re.search(pattern, text, re.MULTILINE)
    assert match, (name, labels)
    return float(match.group(1))


def _response(text: str | bytes, sent: float = 0.0, received: float = 0.001) -> Response:
    return Response(
        "http://srv/x", text.encode() if isinstance(text, str) else text, sent, received
    )


@pytest.fixture(scope="module")
def pcp_tables() -> tuple[dict[str, pcp.MetricDesc], dict[str, dict[int, str]]]:
    descs = pcp.descriptors(json.loads((FIXTURES / "pmproxy_metric.json").read_text()))
    indoms = json.loads((FIXTURES / "pmproxy_indom.json").read_text())
    names = {m: pcp.instance_names(indoms[d.indom]) for m, d in descs.items() if d.indom}
    return descs, names


def _pcp_fetch(tag: str, names: dict[str, dict[int, str]]) -> tuple[pcp.Fetch, dict]:
    body = json.loads((FIXTURES / f"pmproxy_fetch_{tag}.json").read_text())
    return pcp.parse_fetch(body, names), body


# -- inventories -------------------------------------------------------------------------------


def test_node_exporter_inventory_becomes_remote_components() -> None:
    text = _prom("inventory")
    inventory = node_exporter.inventory_from_samples("srv", node_exporter.parse(text))
    found = inventory_discovery(inventory)
    ids = {c.id for c in found.components}
    assert {"cpu:srv", "memory:srv", "nic:srv/eth0", "block:srv/vda", "mount:srv/"} <= ids
    assert "nic:srv/lo" not in ids  # loopback never carries traffic between hosts
    by_id = {c.id: c for c in found.components}
    assert by_id["cpu:srv"].limits["compute"].value == len(
        set(re.findall(r'node_cpu_seconds_total\{cpu="(\d+)"', text))
    )
    nic = by_id["nic:srv/eth0"].limits["receive"]
    assert nic.value == _raw_prom(text, "node_network_speed_bytes", 'device="eth0"')
    assert nic.source == LimitSource.NODE_EXPORTER
    memory = by_id["memory:srv"].limits
    assert memory["capacity"].value == _raw_prom(text, "node_memory_MemTotal_bytes")
    assert (
        not memory["read"].known
        and "node_exporter reports no memory bandwidth" in memory["read"].detail
    )
    assert not by_id["block:srv/vda"].limits["write"].known
    links = {(link.source, link.target, link.direction) for link in found.links}
    assert ("block:srv/vda", "mount:srv/", "write") in links
    assert ("memory:srv", "nic:srv/eth0", "send") in links
    assert ("nic:srv/eth0", "memory:srv", "receive") in links


def test_pcp_inventory_has_addresses_and_disk_sizes(pcp_tables) -> None:
    descs, names = pcp_tables
    fetch, body = _pcp_fetch("inventory", names)
    inventory = pcp.inventory_from_fetch("srv", fetch, descs)
    raw = {item["name"]: item["instances"] for item in body["values"]}
    eth0 = next(n for n in inventory.nics if n.name == "eth0")
    assert eth0.speed == raw["network.interface.baudrate"][0]["value"]  # byte / sec
    assert eth0.addresses == ["10.203.0.2"] and eth0.duplex == "full" and eth0.up
    assert inventory.memory == raw["mem.physmem"][0]["value"] * 1024  # Kbyte, binary
    vda = next(d for d in inventory.disks if d.name == "vda")
    assert vda.capacity == raw["disk.dev.capacity"][0]["value"] * 1024
    found = inventory_discovery(inventory)
    by_id = {c.id: c for c in found.components}
    assert by_id["nic:srv/eth0"].limits["send"].source == LimitSource.PCP
    assert by_id["block:srv/vda"].limits["capacity"].value == vda.capacity
    assert by_id["mount:srv/"].attrs["device"] == "/dev/vda"
    nic, how = nic_on_path(inventory, "10.203.0.2")
    assert nic is eth0 and how == "holds 10.203.0.2"


def test_nic_on_path_without_addresses() -> None:
    inventory = node_exporter.inventory_from_samples("srv", node_exporter.parse(_prom("inventory")))
    nic, how = nic_on_path(inventory, "10.203.0.2")
    assert nic is not None and nic.name == "eth0" and how == "the only interface that is up"
    two = inventory.model_copy(
        update={"nics": [RemoteNic(name="a", up=True), RemoteNic(name="b", up=True)]}
    )
    nic, how = nic_on_path(two, "10.0.0.1")
    assert nic is None and "2 interfaces are up" in how and "reports no addresses" in how


def test_unknown_speed_stays_unknown_with_reason() -> None:
    inventory = RemoteInventory(
        host="h",
        source=LimitSource.NODE_EXPORTER,
        cpus=None,
        nics=[RemoteNic(name="veth1", speed=None, speed_note="reads -1")],
    )
    by_id = {c.id: c for c in inventory_discovery(inventory).components}
    assert not by_id["nic:h/veth1"].limits["send"].known
    assert by_id["nic:h/veth1"].limits["send"].detail == "reads -1"
    assert not by_id["cpu:h"].limits["compute"].known


def _nic(cid: str, value: float | None) -> Component:
    limit = Limit(
        value=value, source=LimitSource.SYSFS if value else LimitSource.UNKNOWN, detail="x"
    )
    return Component(
        id=cid, kind=ComponentKind.NIC, name=cid, limits={"send": limit, "receive": limit}
    )


def test_host_link_takes_the_slower_nic_or_stays_unknown() -> None:
    found = host_link(_nic("nic:eth0", 1.25e9), _nic("nic:srv/eth0", 1.25e8), "srv")
    (link,) = found.components
    assert link.id == "network:host~srv" and link.kind == ComponentKind.NETWORK
    assert link.limits["send"].value == 1.25e8 and link.limits["send"].source == LimitSource.DERIVED
    assert "nic:srv/eth0" in link.limits["send"].detail
    edges = {(x.source, x.target, x.direction) for x in found.links}
    assert edges == {
        ("nic:eth0", "network:host~srv", "send"),
        ("network:host~srv", "nic:eth0", "receive"),
        ("network:host~srv", "nic:srv/eth0", "send"),
        ("nic:srv/eth0", "network:host~srv", "receive"),
    }
    unknown = host_link(_nic("nic:eth0", 1.25e9), _nic("nic:srv/eth0", None), "srv").components[0]
    assert (
        not unknown.limits["receive"].known and "nic:srv/eth0" in unknown.limits["receive"].detail
    )
    one_end = host_link(
        _nic("nic:eth0", 1.25e9), None, "srv", why="3 interfaces are up"
    ).components[0]
    assert (
        not one_end.limits["send"].known and "3 interfaces are up" in one_end.limits["send"].detail
    )


# -- counters and utilizations -----------------------------------------------------------------


def _node_exporter_readings() -> tuple[list[RemoteCounters], list[str]]:
    texts = [_prom("counters_before"), _prom("counters_after")]
    readings = [
        node_exporter.counters_from_samples("srv", node_exporter.parse(t), _response(t))
        for t in texts
    ]
    return readings, texts


def _pcp_readings(pcp_tables) -> tuple[list[RemoteCounters], list[dict]]:
    descs, names = pcp_tables
    out, bodies = [], []
    for tag in ("counters_before", "counters_after"):
        fetch, body = _pcp_fetch(tag, names)
        out.append(pcp.counters_from_fetch("srv", fetch, descs, _response(b"{}")))
        bodies.append(body)
    return out, bodies


def test_node_exporter_counters_against_the_raw_text() -> None:
    readings, texts = _node_exporter_readings()
    for reading, text in zip(readings, texts, strict=True):
        assert reading.remote_time == _raw_prom(text, "node_time_seconds")
        assert reading.exporter_cpu_s == _raw_prom(text, "process_cpu_seconds_total")
        assert reading.values["nic:srv/eth0/rx_bytes"] == _raw_prom(
            text, "node_network_receive_bytes_total", 'device="eth0"'
        )
        modes = dict(re.findall(r'node_cpu_seconds_total\{cpu="\d+",mode="(\w+)"\} (\S+)', text))
        assert set(modes) == {"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"}
        every = [float(v) for v in re.findall(r"node_cpu_seconds_total\{[^}]*\} (\S+)", text)]
        assert reading.values["cpu:srv/total_s"] == pytest.approx(sum(every))
    series = CounterSeries.from_readings(readings)
    rates = utilizations(series)
    dt = readings[1].remote_time - readings[0].remote_time
    received = (
        readings[1].values["nic:srv/eth0/rx_bytes"] - readings[0].values["nic:srv/eth0/rx_bytes"]
    )
    assert rates["nic:srv/eth0/rx_bytes_per_s"][1] == pytest.approx(received / dt)
    assert np.isnan(rates["nic:srv/eth0/rx_bytes_per_s"][0])  # no interval before the first reading
    # the namespace's eth0 received the iperf3 transfer and little else
    assert READ <= received <= WRITTEN * 1.05
    assert 0.0 <= rates["cpu:srv/busy"][1] <= 1.0


def test_pcp_counters_against_the_raw_json(pcp_tables) -> None:
    readings, bodies = _pcp_readings(pcp_tables)
    for reading, body in zip(readings, bodies, strict=True):
        assert reading.remote_time == body["timestamp"]
        raw = {item["name"]: item["instances"] for item in body["values"]}
        eth0 = 2  # instance number of eth0 in indom 60.3 of this capture
        rx = next(i["value"] for i in raw["network.interface.in.bytes"] if i["instance"] == eth0)
        assert reading.values["nic:srv/eth0/rx_bytes"] == rx
        assert (
            reading.values["block:srv/vda/read_bytes"]
            == raw["disk.dev.read_bytes"][0]["value"] * 1024
        )
        assert (
            reading.values["block:srv/vda/io_time_s"] == raw["disk.dev.avactive"][0]["value"] / 1000
        )
        busy_ms = sum(raw[m][0]["value"] for m in pcp.CPU_BUSY)
        assert reading.values["cpu:srv/busy_s"] == pytest.approx(busy_ms / 1000)
        assert reading.exporter_cpu_s == raw["pmcd.cputime.total"][0]["value"] / 1000
    received = (
        readings[1].values["nic:srv/eth0/rx_bytes"] - readings[0].values["nic:srv/eth0/rx_bytes"]
    )
    assert READ <= received <= WRITTEN * 1.05
    rates = utilizations(CounterSeries.from_readings(readings))
    dt = bodies[1]["timestamp"] - bodies[0]["timestamp"]
    assert rates["nic:srv/eth0/rx_bytes_per_s"][1] == pytest.approx(received / dt)


def test_both_engines_see_the_same_transfer(pcp_tables) -> None:
    ne_readings, _ = _node_exporter_readings()
    pcp_readings, _ = _pcp_readings(pcp_tables)

    def delta(readings: list[RemoteCounters]) -> float:
        return (
            readings[1].values["nic:srv/eth0/rx_bytes"]
            - readings[0].values["nic:srv/eth0/rx_bytes"]
        )

    assert delta(ne_readings) == pytest.approx(delta(pcp_readings), rel=0.01)


def _synthetic(
    values: list[dict[str, float]],
    remote: list[float | None],
    sent: list[float],
    latency: list[float],
) -> CounterSeries:
    return CounterSeries.from_readings(
        [
            RemoteCounters(host="h", sent=s, received=s + lat, remote_time=r, values=v)
            for v, r, s, lat in zip(values, remote, sent, latency, strict=True)
        ]
    )


def test_rates_use_remote_times_and_counter_resets_give_nan() -> None:
    key = "nic:h/eth0/rx_bytes"
    # the remote clock runs 100 s ahead; requests took 10-50 ms
    series = _synthetic(
        [{key: 0.0}, {key: 1e6}, {key: 3e6}, {key: 5e5}],
        [100.0, 101.0, 101.5, 102.5],
        [0.0, 0.98, 1.49, 2.47],
        [0.01, 0.05, 0.02, 0.03],
    )
    limits = {"nic:h/eth0/receive": Limit(value=4e6, source=LimitSource.PCP)}
    rates = utilizations(series, limits)
    np.testing.assert_allclose(rates["nic:h/eth0/rx_bytes_per_s"], [np.nan, 1e6, 4e6, np.nan])
    np.testing.assert_allclose(rates["nic:h/eth0/util_receive"], [np.nan, 0.25, 1.0, np.nan])
    assert "nic:h/eth0/util_send" not in rates  # tx counters absent: nothing invented


def test_clock_offset_from_the_shortest_round_trip() -> None:
    key = "cpu:h/busy_s"
    series = _synthetic(
        [{key: 0.0}] * 3, [100.03, 101.005, 102.2], [0.0, 1.0, 2.0], [0.05, 0.01, 0.3]
    )
    offset = clock_offset(series)
    assert offset is not None and offset.reading == 1
    assert offset.offset == pytest.approx(101.005 - 1.005) and offset.error == pytest.approx(0.005)
    np.testing.assert_allclose(local_times(series, offset), [0.03, 1.005, 2.2])
    none = _synthetic([{key: 0.0}] * 2, [None, None], [0.0, 1.0], [0.02, 0.04])
    assert clock_offset(none) is None
    np.testing.assert_allclose(local_times(none, None), [0.01, 1.02])


def test_cpu_busy_share_and_cores() -> None:
    readings = [
        {"cpu:h/busy_s": 10.0, "cpu:h/total_s": 40.0, "cpu:h/steal_s": 0.0},
        {"cpu:h/busy_s": 13.0, "cpu:h/total_s": 44.0, "cpu:h/steal_s": 1.0},
    ]
    series = _synthetic(readings, [0.0, 2.0], [0.0, 2.0], [0.01, 0.01])
    rates = utilizations(
        series, {"cpu:h/compute": Limit(value=2.0, unit="cores", source=LimitSource.PCP)}
    )
    assert rates["cpu:h/busy"][1] == pytest.approx(0.75)
    assert rates["cpu:h/busy_cores"][1] == pytest.approx(1.5)
    assert rates["cpu:h/util_compute"][1] == pytest.approx(1.5 / (2.0 * (1 - 0.25)))


def test_exporter_cost_per_reading() -> None:
    series = CounterSeries.from_readings(
        [
            RemoteCounters(host="h", sent=i, received=i + 0.01, exporter_cpu_s=c)
            for i, c in enumerate([1.00, None, 1.02, 1.03, 1.05])
        ]
    )
    assert exporter_cpu_per_reading(series) == pytest.approx(0.05 / 4)


@pytest.mark.parametrize(
    ("units", "scale"),
    [
        ("Kbyte", 1024.0),
        ("byte / sec", 1.0),
        ("Mbyte / sec", 2.0**20),
        ("millisec", 1e-3),
        ("count", 1.0),
        ("count x 10^3", 1e3),
        ("microsec / count", 1e-6),
        ("none", 1.0),
        ("", 1.0),
    ],
)
def test_pcp_units_to_si(units: str, scale: float) -> None:
    assert pcp.si_scale(units) == pytest.approx(scale)


def test_unknown_pcp_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown PCP unit 'furlong'"):
        pcp.si_scale("furlong / sec")


def test_descriptors_leave_out_unknown_names() -> None:
    body = {
        "metrics": [
            {"name": "no.such.metric", "message": "Unknown metric name", "success": False},
            {
                "name": "disk.dev.read_bytes",
                "pmid": "60.0.38",
                "indom": "60.1",
                "sem": "counter",
                "units": "Kbyte",
            },
        ]
    }
    descs = pcp.descriptors(body)
    assert list(descs) == ["disk.dev.read_bytes"] and descs["disk.dev.read_bytes"].scale == 1024.0


def test_unnamed_instance_keeps_its_number(pcp_tables) -> None:
    body = {
        "timestamp": 5.0,
        "values": [
            {"name": "network.interface.in.bytes", "instances": [{"instance": 99, "value": 7}]}
        ],
    }
    fetch = pcp.parse_fetch(body, pcp_tables[1])
    assert fetch.values == {"network.interface.in.bytes": {"#99": 7}}


def test_line_prefilter_keeps_exactly_the_counters() -> None:
    text = _prom("counters_after") + "node_cpu_seconds_total_bogus 1\ngo_goroutines 7\n"
    every = node_exporter.parse(text)
    kept = node_exporter.parse(text, node_exporter.COUNTER_SAMPLES)
    assert set(kept) == set(node_exporter.COUNTER_SAMPLES) and "go_goroutines" in every
    assert all(kept[name] == every[name] for name in kept)
    response = _response(text)
    assert node_exporter.counters_from_samples("srv", kept, response) == (
        node_exporter.counters_from_samples("srv", every, response)
    )


def test_mounts_hang_off_their_disk_or_memory_or_say_why_not() -> None:
    inventory = RemoteInventory(
        host="nas1",
        source=LimitSource.NODE_EXPORTER,
        cpus=4,
        disks=[RemoteDisk(name="md0")],
        filesystems=[
            RemoteFilesystem(mountpoint="/srv", device="/dev/md0", fstype="xfs", size=1e12),
            RemoteFilesystem(mountpoint="/run", device="tmpfs", fstype="tmpfs"),
            RemoteFilesystem(mountpoint="/boot", device="/dev/sda1", fstype="ext4"),
        ],
    )
    found = inventory_discovery(inventory)
    links = {(x.source, x.target) for x in found.links}
    assert ("block:nas1/md0", "mount:nas1/srv") in links and (
        "memory:nas1",
        "mount:nas1/run",
    ) in links
    boot = next(c for c in found.components if c.id == "mount:nas1/boot")
    assert not any(target == boot.id for _, target in links)
    assert "/dev/sda1: not among the disks node_exporter reports" in boot.warnings[0]


def test_client_follows_the_url_scheme() -> None:
    assert isinstance(
        connect(parse_host_spec("a=http://10.0.0.1:9100")), node_exporter.NodeExporterClient
    )
    assert isinstance(connect(parse_host_spec("b=pcp://10.0.0.1")), pcp.PmproxyClient)


def test_scrape_url_filters_collectors() -> None:
    assert node_exporter.scrape_url("http://h:9100/metrics", ("cpu", "netdev")) == (
        "http://h:9100/metrics?collect%5B%5D=cpu&collect%5B%5D=netdev"
    )
    assert node_exporter.scrape_url("http://h:9100/metrics", None) == "http://h:9100/metrics"


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        # pmproxy 6.0.3 answers seen on a namespace host, with the time of the call around them
        (b'{"context":1,"timestamp":1795565631.48450560,"values":[]}', 1795565631.048450560),
        (b'{"timestamp": 1795565631.127825406, "values": []}', 1795565631.127825406),
        (b'{"timestamp":1795565631.3900}', 1795565631.0000039),
        (b'{"timestamp":5}', 5.0),
    ],
)
def test_pmproxys_unpadded_nanoseconds_are_read_from_the_raw_text(
    raw: bytes, seconds: float
) -> None:
    assert pcp.fetch_timestamp(raw) == pytest.approx(seconds, abs=1e-9)
    assert pcp.fetch_timestamp(b'{"values": []}') is None
