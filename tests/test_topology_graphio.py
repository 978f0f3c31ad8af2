"""Pictures and DOT of graphs with every component kind, including kinds without a colour, and
the shared sysfs path rules that several plug-ins read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO
from pilot_sys.topology import graphio
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.sysfs_paths import pci_ancestors, pci_parent


def _gpu_host() -> ComponentGraph:
    """cpu:host -> memory:host -> pci:0000:3b:00.0 -> accelerator:0000:3b:00.0, plus one
    component of every other kind hanging off memory."""
    graph = ComponentGraph()
    link = Limit(
        value=16e9 * 128 / 130 * 16 / 8, unit="B/s", source=LimitSource.SYSFS, detail="16 GT/s x16"
    )
    graph.add_component(Component(id="cpu:host", kind=ComponentKind.CPU, name="host"))
    graph.add_component(Component(id="memory:host", kind=ComponentKind.MEMORY, name="host"))
    graph.add_component(
        Component(
            id="pci:0000:3b:00.0",
            kind=ComponentKind.PCI,
            name="0000:3b:00.0",
            limits={"send": link, "receive": link},
        )
    )
    graph.add_component(
        Component(id="accelerator:0000:3b:00.0", kind=ComponentKind.ACCELERATOR, name="gpu0")
    )
    graph.connect("cpu:host", "memory:host", "write")
    graph.connect("memory:host", "pci:0000:3b:00.0", "down", link)
    graph.connect("pci:0000:3b:00.0", "accelerator:0000:3b:00.0", "down", link)
    for kind in ComponentKind:
        cid = f"{kind.value}:x"
        if not any(c.kind == kind for c in graph.components()):
            graph.add_component(Component(id=cid, kind=kind, name="x"))
            graph.connect("memory:host", cid, "down")
    return graph


def test_the_accelerator_kind_has_a_colour_of_its_own() -> None:
    assert ComponentKind("accelerator") is ComponentKind.ACCELERATOR
    colour = graphio.kind_colour(ComponentKind.ACCELERATOR)
    assert colour != graphio.DEFAULT_COLOUR
    others = {graphio.kind_colour(k) for k in ComponentKind if k != ComponentKind.ACCELERATOR}
    assert colour not in others
    dot = graphio.to_dot(_gpu_host())
    assert (
        f'"accelerator:0000:3b:00.0" [label="accelerator:0000:3b:00.0", fillcolor="{colour}"];'
        in dot
    )


def test_a_kind_without_a_colour_is_drawn_in_the_default_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind added later without a colour: DOT and the picture use the default, no KeyError."""
    monkeypatch.delitem(graphio.KIND_COLOURS, ComponentKind.NIC)
    graph = _gpu_host()
    assert f'"nic:x" [label="nic:x", fillcolor="{graphio.DEFAULT_COLOUR}"];' in graphio.to_dot(
        graph
    )
    out = tmp_path / "g.png"
    graphio.draw(graph, out, highlight=["accelerator:0000:3b:00.0"])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pci_addresses_on_a_sysfs_path(tmp_path: Path) -> None:
    path = "/sys/devices/pci0000:00/0000:00:1c.0/0000:02:00.0/nvme/nvme0/nvme0n1"
    assert pci_parent(path) == "0000:02:00.0"
    assert pci_parent("/sys/devices/virtual/net/lo") is None
    # behind an Intel VMD controller the domain has five hex digits
    assert (
        pci_parent(
            "/sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0/10000:e1:00.0/nvme"
        )
        == "10000:e1:00.0"
    )
    # the dynamic side resolves the class link first, as /sys/class/block/<dev> is a symlink
    device = (
        tmp_path
        / "devices"
        / "pci0000:00"
        / "0000:00:1c.0"
        / "0000:02:00.0"
        / "nvme"
        / "nvme0"
        / "nvme0n1"
    )
    device.mkdir(parents=True)
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "nvme0n1").symlink_to(device)
    assert pci_ancestors(tmp_path / "class" / "nvme0n1") == ["0000:00:1c.0", "0000:02:00.0"]
    assert pci_ancestors(tmp_path / "class" / "missing") == []


def test_no_plug_in_imports_another_plug_in() -> None:
    """Helpers that several plug-ins need live in the core; a plug-in can be removed alone."""
    offenders = []
    for path in sorted((REPO / "plugins").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                f"{path.relative_to(REPO)}: {n}"
                for n in names
                if n.startswith(("pilot_sys.plugins", "plugins"))
                or (isinstance(node, ast.ImportFrom) and node.level)
            ]
    assert offenders == []
