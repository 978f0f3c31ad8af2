"""The examples of docs/probes.md, run as printed: a static plug-in on a synthetic sysfs tree, a
probe on the captured /proc pair (expected values by hand from the files), a source on canned
``tc`` answers (and, live, on this machine's ``tc``)."""

from __future__ import annotations

import importlib
import json
import re
import runpy
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from conftest import FIXTURES, REPO, require_tool
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.topology.components import ComponentKind, LimitSource
from pilot_sys.topology.sysroot import SysRoot

PAIR = FIXTURES / "proc" / "vm-2cpu-dd-1s"
DT = 1.74
EXAMPLE = re.compile(r"```python\n# file: (\S+)\n(.*?)```", re.S)


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every ``# file:`` block of the page, written out as that file."""
    folder = tmp_path_factory.mktemp("docs_examples")
    found = {}
    for name, code in EXAMPLE.findall((REPO / "docs" / "probes.md").read_text()):
        (folder / name).write_text(code)
        found[name] = folder / name
    sys.path.insert(0, str(folder))
    yield found
    sys.path.remove(str(folder))
    for name in found:
        sys.modules.pop(name.removesuffix(".py"), None)


def _module(examples: dict[str, Path], name: str) -> ModuleType:
    assert f"{name}.py" in examples
    return importlib.import_module(name)


def test_the_page_has_an_example_of_each_form(examples: dict[str, Path]) -> None:
    assert set(examples) == {"fancy_gpu.py", "interrupts.py", "try_interrupts.py", "qdisc.py"}


def test_the_static_example_finds_a_gpu_below_its_pci_device(
    examples: dict[str, Path], tmp_path: Path
) -> None:
    gpu = _module(examples, "fancy_gpu")
    function = tmp_path / "sys" / "devices" / "pci0000:00" / "0000:00:02.0"
    for entry in ("card0", "card0-HDMI-A-1", "renderD128"):
        (function / "drm" / entry).mkdir(parents=True)
    (function / "drm" / "card0" / "device").symlink_to("../../../0000:00:02.0")
    (tmp_path / "sys" / "bus" / "pci" / "drivers" / "i915").mkdir(parents=True)
    (function / "driver").symlink_to("../../../bus/pci/drivers/i915")
    # no PCI
    (tmp_path / "sys" / "devices" / "platform" / "vkms" / "drm" / "card1").mkdir(parents=True)
    drm = tmp_path / "sys" / "class" / "drm"
    drm.mkdir(parents=True)
    for entry in ("card0", "card0-HDMI-A-1", "renderD128"):
        (drm / entry).symlink_to(f"../../devices/pci0000:00/0000:00:02.0/drm/{entry}")
    (drm / "card1").symlink_to("../../devices/platform/vkms/drm/card1")
    found = gpu.discover(SysRoot(tmp_path))
    assert [c.id for c in found.components] == ["accelerator:0000:00:02.0"]
    card = found.components[0]
    assert card.kind == ComponentKind.ACCELERATOR and card.name == "card0"
    assert card.attrs == {"driver": "i915"}
    assert (
        card.limits["compute"].source == LimitSource.UNKNOWN
        and card.limits["compute"].value is None
    )
    assert [(link.source, link.target, link.direction) for link in found.links] == [
        ("pci:0000:00:02.0", "accelerator:0000:00:02.0", "down"),
        ("accelerator:0000:00:02.0", "pci:0000:00:02.0", "up"),
    ]


def _copy(snapshot: Path, root: Path) -> None:
    shutil.copytree(snapshot, root, dirs_exist_ok=True)


def test_the_probe_example_on_the_captured_pair(examples: dict[str, Path], tmp_path: Path) -> None:
    interrupts = _module(examples, "interrupts")
    _copy(PAIR / "t0", tmp_path)
    probe = interrupts.open_probe(ProbeContext(root=tmp_path))
    first = probe.read()
    _copy(PAIR / "t1", tmp_path)  # rewritten in place: the kept-open file reads the new text
    second = probe.read()
    raw = np.array([[float(x) for x in first], [float(x) for x in second]])
    m = probe.derive(raw, np.array([0.0, DT]), {})
    # /proc/stat: intr 4546034 -> 4573471, softirq 10278983 -> 10354976 over 1.74 s
    assert m["cpu:host/interrupts_per_s"][1] == pytest.approx((4573471 - 4546034) / DT)
    assert m["cpu:host/softirqs_per_s"][1] == pytest.approx((10354976 - 10278983) / DT)
    assert np.isnan(m["cpu:host/interrupts_per_s"][0])
    probe.close()
    # in the sampler it is read on every tick, its file's text stored unsplit (a TextReader)
    sampler = Sampler(root=tmp_path, plugins=[interrupts])
    [plan] = sampler.schedule()
    assert (plan.probe, plan.every, plan.files) == (
        "interrupts",
        1,
        [str(tmp_path / "proc" / "stat")],
    )
    assert sampler._layouts[0]["kind"] == "lines"
    assert interrupts.open_probe(ProbeContext(root=tmp_path, components={"nic:eth0"})) is None
    sampler.close()


def _canned_tc(calls: list[int]):
    """``tc -s -j qdisc show`` as this VM printed it, its counters moving on every call."""

    def run(command, **kwargs):
        assert command == ["tc", "-s", "-j", "qdisc", "show"]
        k = len(calls)
        calls.append(k)
        qdiscs = [
            {
                "kind": "noqueue",
                "handle": "0:",
                "dev": "lo",
                "root": True,
                "drops": 0,
                "overlimits": 0,
                "backlog": 0,
            },
            {
                "kind": "pfifo_fast",
                "handle": "0:",
                "dev": "eth0",
                "root": True,
                "drops": 3 * k,
                "overlimits": 5 * k,
                "backlog": 100 * k,
            },
            {"kind": "pfifo_fast", "handle": "0:", "dev": "eth0", "parent": ":1", "drops": 999},
        ]
        return subprocess.CompletedProcess(command, 0, json.dumps(qdiscs).encode(), b"")

    return run


class _Opened:
    KIND = "dynamic"

    def __init__(self, opened) -> None:
        self.NAME = opened.name
        self.opened = opened

    def open_probe(self, context):
        return self.opened


def test_the_source_example_on_canned_tc_answers(
    examples: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qdisc = _module(examples, "qdisc")
    interrupts = _module(examples, "interrupts")
    assert (
        qdisc.open_probe(ProbeContext(root=tmp_path)) is None
    )  # a captured tree: no kernel to ask
    calls: list[int] = []
    monkeypatch.setattr(subprocess, "run", _canned_tc(calls))
    source = qdisc.QdiscSource(["eth0", "lo"])
    source.interval_s = 0.05
    _copy(PAIR / "t0", tmp_path)
    sampler = Sampler(rate_hz=50.0, root=tmp_path, plugins=[interrupts, _Opened(source)])
    sampler.start()
    time.sleep(0.6)
    trace = sampler.stop()
    record = trace.sources["qdisc"]
    assert len(record.times) == len(calls) >= 5 and record.cost.failed_calls == 0
    t = np.array(record.times)
    drops = np.array(record.series["nic:eth0/qdisc_drops_per_s"][1:], dtype=float)
    assert drops == pytest.approx(3 / np.diff(t))  # 3 more drops per call, over its own interval
    assert record.series["nic:eth0/qdisc_backlog_bytes"] == [100.0 * k for k in range(len(calls))]
    assert record.series["nic:lo/qdisc_overlimits_per_s"][1:] == [0.0] * (len(calls) - 1)
    # on the grid beside the probe's series
    assert len(trace.series["nic:eth0/qdisc_backlog_bytes"]) == len(trace.timestamps)
    assert "cpu:host/interrupts_per_s" in trace.series


@pytest.mark.live
def test_the_source_example_on_this_machine(examples: dict[str, Path]) -> None:
    require_tool("tc")
    qdisc = _module(examples, "qdisc")
    source = qdisc.open_probe(ProbeContext())
    assert source is not None and "lo" in source.devices
    source.interval_s = 0.3
    sampler = Sampler(rate_hz=10.0, plugins=[_Opened(source)])
    sampler.start()
    time.sleep(1.5)
    trace = sampler.stop()
    record = trace.sources["qdisc"]
    assert len(record.times) >= 4 and record.cost.failed_calls == 0
    assert record.cost.cpu_seconds > 0 and max(record.latency_s) < 1.0
    assert all(
        v == 0.0 for v in record.series["nic:lo/qdisc_backlog_bytes"]
    )  # noqueue: never queues


@pytest.mark.live
def test_the_try_it_example_runs(
    examples: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(examples, "interrupts")
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda seconds: real_sleep(min(seconds, 0.5)))
    runpy.run_path(str(examples["try_interrupts.py"]))
    out = capsys.readouterr().out
    assert "probe='interrupts'" in out and "one tick costs" in out
    last = json.loads(out.strip().splitlines()[-1].replace("None", "null"))
    assert len(last) == 5 and all(v is None or v >= 0 for v in last)
