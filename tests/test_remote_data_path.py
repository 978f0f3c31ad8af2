"""Declared remote hosts in the component graph and on the data path: the captured NVMe machine
(tests/fixtures/sys/nvme-lvm, its default route on enp3s0 at 1 Gbit/s) with a host whose
inventory is the node_exporter answer captured from a namespace host (eth0 at 10 Gbit/s, disk
vda holding /)."""

from __future__ import annotations

from pathlib import Path

from conftest import SYS_FIXTURES
from pilot_sys.monitor.data_path import find_data_path
from pilot_sys.monitor.remote import node_exporter
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.discover import discover
from pilot_sys.topology.effective import limits_link
from pilot_sys.topology.remote_hosts import parse_host_spec
from pilot_sys.topology.remote_inventory import RemoteInventory

ROOT = SYS_FIXTURES / "nvme-lvm"
ADDRESS = "192.168.1.77"  # on enp3s0's own subnet (0001A8C0/00FFFFFF in the fixture's route table)
SRV = parse_host_spec(f"srv=http://{ADDRESS}:9100")
INVENTORY = Path(__file__).resolve().parent / "fixtures" / "remote" / "node_exporter_inventory.prom"
LINK = "network:host~srv"


def _inventory() -> RemoteInventory:
    return node_exporter.inventory_from_samples("srv", node_exporter.parse(INVENTORY.read_text()))


def _found(
    args: list[str],
    *,
    answer: RemoteInventory | str | None = None,
    strict: bool = False,
    graph=None,
):  # noqa: ANN001, ANN202 - a fresh graph per test: find_data_path adds to it
    return find_data_path(
        args,
        hosts=[SRV],
        graph=graph if graph is not None else discover(ROOT),
        root=ROOT,
        strict=strict,
        inventories={"srv": answer if answer is not None else _inventory()},
    )


def test_a_declared_host_continues_the_path_past_the_routing_nic() -> None:
    found = _found([f"host:{ADDRESS}"])
    path = found.data_path
    (argument,) = path.arguments
    assert argument.host == "srv" and argument.component == "nic:enp3s0"
    main = path.paths[0]
    assert main[-5:] == ["nic:enp3s0", LINK, "nic:srv/eth0", "memory:srv", "cpu:srv"]
    assert main.index("cpu:host") < main.index("memory:host") < main.index("nic:enp3s0")
    assert "network:enp3s0" not in path.components  # the host's link takes the place of the network
    assert path.cut == LINK  # a network benchmark measures the path between the hosts
    assert found.on_path == ["srv"] and found.loud == []
    # the link's capacity is the slower NIC: enp3s0's 1 Gbit/s, not the host's 10 Gbit/s
    link = found.graph.component(LINK)
    assert found.graph.component("nic:srv/eth0").limits["receive"].value == 1.25e9
    for direction in ("send", "receive"):
        assert link.limits[direction].value == 125e6
        assert link.limits[direction].source == LimitSource.DERIVED
        assert "nic:enp3s0" in link.limits[direction].detail


def test_a_qdisc_on_the_local_nic_binds_the_link() -> None:
    graph = discover(ROOT)
    shaper = Component(
        id="qdisc:enp3s0",
        kind=ComponentKind.QDISC,
        name="tbf on enp3s0",
        limits={"send": Limit(value=5e6, source=LimitSource.QDISC, detail="tbf rate")},
    )
    graph.add_component(shaper)
    graph.add_link(limits_link(shaper.id, "nic:enp3s0"))
    found = _found([ADDRESS], graph=graph, strict=True)
    link = found.graph.component(LINK)
    assert link.limits["send"].value == 5e6  # the qdisc's rate: slower than either NIC
    assert "qdisc:enp3s0" in link.limits["send"].detail
    assert link.limits["receive"].value == 125e6  # the qdisc shapes what leaves, not what arrives
    assert "qdisc:enp3s0" in found.data_path.paths[0]


def test_a_path_on_the_host_ends_at_the_disk_under_it() -> None:
    found = _found([f"host:{ADDRESS}", f"host:{ADDRESS}:/srv/fio"])
    storage = found.data_path.arguments[1]
    assert storage.cut == "block:srv/vda"  # / on the host is on vda (its inventory says)
    assert [p[-3:] for p in storage.paths] == [
        ["nic:srv/eth0", "memory:srv", "cpu:srv"],
        ["memory:srv", "block:srv/vda", "mount:srv/"],
    ]
    assert found.data_path.cut == LINK  # the first argument's
    assert {"block:srv/vda", "mount:srv/", "cpu:srv"} <= set(found.data_path.components)


def test_a_host_nobody_declared_is_a_loud_note() -> None:
    found = _found(["host:192.168.1.99", f"host:{ADDRESS}"])
    assert found.loud == [
        "server 192.168.1.99 is on the data path but not monitored "
        "(add --host 192.168.1.99=http://192.168.1.99:9100)"
    ]
    assert found.data_path.arguments[0].cut == "nic:enp3s0"  # unmonitored: ends at our NIC
    assert found.on_path == ["srv"]


def test_a_host_that_does_not_answer_keeps_its_link_with_unknown_capacity() -> None:
    found = _found([f"host:{ADDRESS}"], answer=f"{SRV.base_url}: connection refused")
    assert len(found.loud) == 1 and "did not answer" in found.loud[0]
    assert "connection refused" in found.loud[0]
    assert found.answered == []
    link = found.graph.component(LINK)
    assert not link.limits["send"].known and "did not answer" in link.limits["send"].detail
    assert found.data_path.paths[0][-2:] == ["nic:enp3s0", LINK]
    assert "cpu:srv" not in found.graph


def test_graph_targets_name_a_declared_host_by_name_or_address() -> None:
    by_name = _found(["srv"], strict=True).data_path
    by_address = _found([ADDRESS], strict=True).data_path
    assert by_name.paths == by_address.paths and by_name.cut == LINK
    assert by_name.arguments[0].kind == "host" and by_name.arguments[0].host == "srv"


def test_the_server_of_a_network_file_system_joins_the_path_when_declared() -> None:
    root = SYS_FIXTURES / "nfs-bond"  # /mnt/nfs is nfs4 from 10.0.100.5, over bond0.100
    nas = parse_host_spec("nas=http://10.0.100.5:9100")
    inventory = node_exporter.inventory_from_samples(
        "nas", node_exporter.parse(INVENTORY.read_text())
    )
    found = find_data_path(
        ["/mnt/nfs/run1/out.dat"],
        hosts=[nas],
        graph=discover(root),
        root=root,
        inventories={"nas": inventory},
    )
    assert found.on_path == ["nas"] and found.loud == []
    assert {"network:host~nas", "nic:nas/eth0", "memory:nas", "cpu:nas"} <= set(
        found.data_path.components
    )
    assert found.graph.component("network:host~nas").attrs["nics"] == [
        "nic:bond0.100",
        "nic:nas/eth0",
    ]
    undeclared = find_data_path(["/mnt/nfs/run1/out.dat"], graph=discover(root), root=root)
    assert undeclared.loud == [
        "server 10.0.100.5 is on the data path but not monitored "
        "(add --host 10.0.100.5=http://10.0.100.5:9100)"
    ]


def test_a_gpu_hosts_gpus_join_its_path_below_its_memory() -> None:
    """dcgm-exporter's GPUs (tests/fixtures/dcgm/exporter.prom) of a host on the data path are
    on it: a GPU server's work is its GPUs' (which process uses them is not exported)."""
    from pilot_sys.monitor.remote import dcgm

    text = (Path(__file__).resolve().parent / "fixtures" / "dcgm" / "exporter.prom").read_text()
    series = [
        ({**labels, "__name__": name}, [(0.0, value)])
        for name, items in node_exporter.parse(text).items()
        for labels, value in items
    ]
    inventory = _inventory().model_copy(update={"gpus": dcgm.gpus_from_series(series)})
    found = _found([f"host:{ADDRESS}"], answer=inventory)
    gpus = ["accelerator:srv/0000:3b:00.0", "accelerator:srv/0000:86:00.0"]
    assert set(gpus) <= set(found.data_path.components)
    for gpu in gpus:
        assert any(p[-2:] == ["memory:srv", gpu] for p in found.data_path.paths)
        assert found.graph.component(gpu).kind == ComponentKind.ACCELERATOR
    assert found.data_path.cut == LINK  # the network benchmark's CUT is still the link
