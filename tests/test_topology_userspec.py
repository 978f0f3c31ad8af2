"""User-designated graphs: the shipped examples load, limits merge as the rules say, and every
validation error names the file and the node or link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from pilot_sys.errors import BadInput
from pilot_sys.topology.components import LimitSource
from pilot_sys.topology.discover import discover
from pilot_sys.topology.graphio import to_dot, write_graphml
from pilot_sys.topology.userspec import apply_user_graph, load_user_graph, parse_user_graph

GRAPHS = REPO / "graphs"


def test_shipped_examples_load() -> None:
    fig4 = load_user_graph(GRAPHS / "fig4-clients-to-nas.graphml")
    assert len(fig4.components()) == 16
    assert fig4.limit("network:switch", "send").value == 6.0e10
    assert fig4.link("network:switch", "nic:nas1/eth0").capacity.value == 3.125e9
    # the reverse is added
    assert fig4.link("nic:nas1/eth0", "network:switch").direction == "receive"
    nvme = load_user_graph(GRAPHS / "local-nvme.json")
    assert nvme.paths_to("mount:/data") == [
        [
            "cpu:host",
            "memory:host",
            "pci:0000:00:01.1",
            "pci:0000:01:00.0",
            "controller:nvme0",
            "block:nvme0n1",
            "mount:/data",
        ]
    ]
    # reverse_capacity
    assert nvme.link("block:nvme0n1", "controller:nvme0").capacity.value == 3.5e9
    assert nvme.limit("block:nvme0n1", "iops_read").unit == "IO/s"
    nfs = load_user_graph(GRAPHS / "nfs-client-server.json")
    assert nfs.paths_to("block:nfs-server/md0", source="nic:eth0")[0][-1] == "block:nfs-server/md0"


def test_user_limits_fill_unknown_ones_only() -> None:
    graph = discover(FIXTURES / "sys" / "nfs-bond")
    user = parse_user_graph(
        {
            "nodes": [
                {"id": "nic:eth2", "limits": {"send": 1.25e9}},  # unknown (speed -1): filled
                {"id": "nic:eth0", "limits": {"send": 5e8}},  # known from sysfs: kept, with a note
                {"id": "remote:nas", "kind": "remote"},
            ],
            "links": [
                {
                    "source": "network:eth2",
                    "target": "remote:nas",
                    "direction": "send",
                    "capacity": 1e9,
                }
            ],
        },
        "u.json",
    )
    notes = apply_user_graph(graph, user, "u.json")
    assert graph.limit("nic:eth2", "send").value == 1.25e9
    assert graph.limit("nic:eth2", "send").source == LimitSource.USER
    assert not graph.limit("nic:eth2", "receive").known  # only what the user gave
    assert (
        graph.limit("nic:eth0", "send").value == 1.25e9
        and graph.limit("nic:eth0", "send").source == "sysfs"
    )
    assert len(notes) == 1 and "nic:eth0" in notes[0]
    assert graph.link("network:eth2", "remote:nas").capacity.value == 1e9
    assert graph.link("remote:nas", "network:eth2").direction == "receive"
    override = discover(FIXTURES / "sys" / "nfs-bond")
    apply_user_graph(override, user, "u.json", override=True)
    assert override.limit("nic:eth0", "send").value == 5e8


def test_limits_on_a_discovered_virtual_disk_through_the_shipped_example() -> None:
    graph = discover(FIXTURES / "sys" / "nfs-bond")
    before = graph.limit("nic:eth2", "send")
    assert not before.known
    user = load_user_graph(GRAPHS / "rated-virtual-disk.json")
    # names nic:eth2's twin on the VM: nic:eth0
    apply_user_graph(graph, user, "rated-virtual-disk.json")
    # not discovered here: added as a new node
    assert graph.limit("block:vda", "write").value == 2.5e8
    assert graph.limit("block:vda", "write").source == LimitSource.USER
    assert graph.limit("block:vda", "iops_write").unit == "IO/s"
    # 10 GbE from sysfs wins over the file
    assert graph.limit("nic:eth0", "send").source == LimitSource.SYSFS


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {
                "nodes": [{"id": "a:b"}],
                "links": [{"source": "a:b", "target": "c:d", "capacity": "fast"}],
            },
            "g.json: link 1 (a:b -> c:d): capacity must be a number in B/s",
        ),
        (
            {"nodes": [{"id": "block:x", "limits": {"write": -5}}]},
            "g.json: node 1 (block:x): limit 'write' must be",
        ),
        (
            {"nodes": [{"id": "cpu:y", "limits": {"compute": "many"}}]},
            "limit 'compute' must be a number in cores",
        ),
        ({"nodes": [{"name": "no id"}]}, "g.json: node 1: id is required"),
        ({"nodes": [{"id": "a:b"}, {"id": "a:b"}]}, "g.json: node 2 (a:b): duplicate id"),
        (
            {"nodes": [{"id": "a:b", "kind": "toaster"}]},
            "g.json: node 1 (a:b): kind must be one of",
        ),
        ({"links": [{"source": "a:b"}]}, "g.json: link 1 (a:b -> ?): target is required"),
        (
            {"links": [{"source": "a:b", "target": "c:d", "direction": "sideways"}]},
            "direction must be one of",
        ),
        ([1, 2], "g.json: expected an object"),
    ],
)
def test_validation_errors_name_the_entry(data: object, message: str) -> None:
    with pytest.raises(BadInput) as info:
        parse_user_graph(data, "g.json")
    assert message in str(info.value)


def test_link_to_an_unknown_node_is_named_at_merge() -> None:
    graph = discover(FIXTURES / "sys" / "md-raid-loop")
    user = parse_user_graph(
        {
            "links": [
                {"source": "nic:eno1", "target": "network:lan"},
                {"source": "nic:eno1", "target": "remote:ghost"},
            ]
        },
        "g.json",
    )
    with pytest.raises(BadInput) as info:
        apply_user_graph(graph, user, "g.json")
    assert str(info.value).startswith(
        "g.json: link 1 (nic:eno1 -> network:lan): unknown node network:lan"
    )


def test_json_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": [\n  {"id": "a:b",}\n]}\n')
    with pytest.raises(BadInput) as info:
        load_user_graph(bad)
    assert str(info.value).startswith(f"{bad}:2:16: invalid JSON")


def test_graphml_export_loads_back_as_a_user_graph(tmp_path: Path) -> None:
    graph = discover(FIXTURES / "sys" / "nvme-lvm")
    write_graphml(graph, tmp_path / "g.graphml")
    again = load_user_graph(tmp_path / "g.graphml")
    assert sorted(c.id for c in again.components()) == sorted(c.id for c in graph.components())
    assert again.limit("pci:0000:01:00.0", "send").value == pytest.approx(
        graph.limit("pci:0000:01:00.0", "send").value
    )
    assert again.link("pci:0000:00:01.1", "pci:0000:01:00.0").capacity.value == pytest.approx(
        8e9 * 128 / 130 * 4 / 8
    )
    dot = to_dot(graph)
    assert dot.startswith("digraph") and '"controller:nvme0" -> "block:nvme0n1"' in dot
    again = json.loads(json.dumps(graph.to_node_link()))
    assert len(again["nodes"]) == len(graph) and len(again["links"]) == len(graph.links())
