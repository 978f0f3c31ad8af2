"""Third-party plug-ins through the entry-point group: a broken one is skipped with a note where
plug-in failures are reported, never an exception that stops discovery or monitoring."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from conftest import FIXTURES
from pilot_sys import plugin_loader
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.topology.discover import discover

GOOD = """
KIND = "dynamic"
NAME = "thirdparty"


def open_probe(context):
    return None
"""


@pytest.fixture()
def fake_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[EntryPoint]:
    (tmp_path / "thirdparty_good.py").write_text(GOOD)
    (tmp_path / "thirdparty_broken.py").write_text("import a_module_nobody_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [
        EntryPoint("good", "thirdparty_good", plugin_loader.ENTRY_POINT_GROUP),
        EntryPoint("broken", "thirdparty_broken", plugin_loader.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(
        plugin_loader, "entry_points", lambda group: [e for e in eps if e.group == group]
    )
    plugin_loader.load_plugins.cache_clear()
    yield eps
    plugin_loader.load_plugins.cache_clear()
    for name in ("thirdparty_good", "thirdparty_broken"):
        sys.modules.pop(name, None)


def test_a_broken_entry_point_is_skipped_with_a_note(fake_entry_points: list[EntryPoint]) -> None:
    dynamic = plugin_loader.load_plugins("dynamic")
    names = [p.NAME for p in dynamic]
    assert names[-2:] == ["broken", "thirdparty"]  # entry points by name, after the built-ins
    assert "block" in names and "cpu" in names
    broken = dynamic[-2]
    assert isinstance(broken, plugin_loader.UnloadablePlugin)
    assert "No module named 'a_module_nobody_installed'" in broken.problem
    # its kind is unknown: listed under both, and failing when used
    assert [p.NAME for p in plugin_loader.load_plugins("static")][-1] == "broken"


def test_monitoring_and_discovery_report_it_and_go_on(fake_entry_points: list[EntryPoint]) -> None:
    sampler = Sampler(root=FIXTURES / "proc" / "vm-2cpu-dd-1s" / "t0")
    try:
        assert {"block", "cpu", "net"} <= {p.name for p in sampler.probes}
        notes = [n for n in sampler.context.notes if "broken" in n]
        assert len(notes) == 1 and "PluginLoadError" in notes[0] and "thirdparty_broken" in notes[0]
    finally:
        sampler.close()
    graph = discover(FIXTURES / "sys" / "nvme-lvm")
    assert "block:nvme0n1" in graph
    assert "could not be loaded (ModuleNotFoundError" in graph.unreadable["broken"][0]
