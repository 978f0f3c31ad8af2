"""`pilot-sys graph` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, run_cli
from pilot_sys.topology.userspec import load_user_graph

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload

NFS = str(FIXTURES / "sys" / "nfs-bond")


def one_error_line(result, code: int = 2) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("pilot-sys: error: ")
    return lines[0]


def test_help_has_an_example() -> None:
    result = run_cli("graph", "--help")
    assert result.returncode == 0
    assert (
        "Examples:" in result.stdout
        and "--load FILE" in result.stdout
        and "--probe" in result.stdout
    )


def test_tree_of_a_fixture_path_names_unknown_limits_and_sources() -> None:
    result = run_cli("graph", "--root", NFS, "/mnt/nfs/x", "93.184.216.34")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "remote:10.0.100.5" in out and "◀ component under test" in out
    assert "unknown (speed reads -1)" in out  # eth2, the default route's virtio NIC
    assert "send/receive 10.0 Gbit/s (sysfs: 10000 Mb/s, full duplex)" in out  # a NIC in bit/s


def test_json_is_node_link_with_the_data_path() -> None:
    result = run_cli("graph", "--root", NFS, "/mnt/nfs6/data", "--json", "--devices")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["data_path"]["cut"] == "remote:2001:db8:100::5"
    devices = {n["id"]: n["members"] for n in payload["devices"]["nodes"]}
    assert (
        "mount:/mnt/nfs6" in devices["remote:2001:db8:100::5"]
        and "nic:bond0.100" in devices["nic:bond0"]
    )
    ids = {n["id"] for n in payload["nodes"]}
    assert ids == set(payload["data_path"]["components"])
    assert all(
        {"source", "target", "direction", "capacity"} <= set(link) for link in payload["links"]
    )


def test_whole_host_json() -> None:
    result = run_cli("graph", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert any(n["id"] == "cpu:host" for n in payload["nodes"]) and payload["data_path"] is None


def test_pictures_and_exports(tmp_path: Path) -> None:
    files = {ext: tmp_path / f"g.{ext}" for ext in ("png", "svg", "dot", "graphml")}
    result = run_cli(
        "graph",
        "--root",
        NFS,
        "/mnt/scratch",
        *[a for ext, p in files.items() for a in (f"--{ext}", str(p))],
    )
    assert result.returncode == 0, result.stderr
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in files["svg"].read_bytes()[:500]
    assert '"remote:10.0.100.5" -> "mount:/mnt/nfs"' in files["dot"].read_text()
    loaded = load_user_graph(files["graphml"])
    assert (
        "block:loop0" in loaded
        and loaded.link("mount:/mnt/nfs", "block:loop0").direction == "write"
    )


def test_load_merges_user_limits() -> None:
    result = run_cli(
        "graph", "--root", NFS, "--load", str(REPO / "graphs" / "nfs-client-server.json"), "--json"
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    nodes = {n["id"]: n for n in payload["nodes"]}
    server_disk = nodes["block:nfs-server/md0"]["limits"]["write"]
    assert (server_disk["value"], server_disk["source"]) == (1.0e9, "user")
    assert (
        nodes["nic:eth0"]["limits"]["send"]["source"] == "sysfs"
    )  # discovered 10 GbE kept (same value)
    assert payload["notes"] == []  # no disagreement to report
    assert (
        nodes["network:eth0"]["limits"]["send"]["source"] == "user"
    )  # eth0 is a bond slave here: new node
    assert {"source": "remote:nfs-server", "target": "nic:nfs-server/eth0"} in [
        {"source": link["source"], "target": link["target"]} for link in payload["links"]
    ]


def test_path_whose_parent_is_missing_is_bad_input() -> None:
    line = one_error_line(run_cli("graph", "/no/such/dir/file"))
    assert "/no/such/dir/file" in line and "parent does not exist" in line


def test_bad_user_graph_names_the_link(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(
        json.dumps(
            {
                "nodes": [{"id": "nic:eth0"}, {"id": "network:lan"}],
                "links": [
                    {"source": "nic:eth0", "target": "network:lan", "capacity": 1e9},
                    {"source": "network:lan", "target": "remote:a"},
                    {"source": "nic:eth0", "target": "network:lan2", "capacity": "10G"},
                ],
            }
        )
    )
    line = one_error_line(run_cli("graph", "--root", NFS, "--load", str(bad)))
    assert line == (
        f"pilot-sys: error: {bad}: link 3 (nic:eth0 -> network:lan2): "
        "capacity must be a number in B/s (or null when unknown), not '10G'"
    )


def test_bad_graphml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.graphml"
    bad.write_text("<graphml>\n  <graph>\n    <node id='a'>\n  </graph>\n</graphml>\n")
    line = one_error_line(run_cli("graph", "--no-discover", "--load", str(bad)))
    assert f"{bad}:4:4" in line
    line = one_error_line(run_cli("graph", "--load", str(tmp_path / "missing.json")))
    assert "missing.json" in line
    one_error_line(run_cli("graph", "--no-discover"))
    one_error_line(run_cli("graph", "--png", str(tmp_path / "no" / "dir" / "g.png")))
