"""Dynamic plug-ins on captured /proc pairs, against answers computed by hand from the files.

Fixture ``vm-2cpu-dd-1s``: this VM (kernel in ``kernel``), ``t0`` and ``t1`` captured while
``dd ... oflag=direct`` wrote to vda and other work kept both CPUs busy. The interval is taken
as 1.74 s: both cores' /proc/stat lines advanced by exactly 174 USER_HZ (100 Hz) ticks.
Each expected value below is written as the arithmetic on the two files' numbers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.procread import parse_segments, parse_tokens
from pilot_sys.monitor.sampler import tick_read
from pilot_sys.plugins.dynamic import block, cpu, memory, net, pci
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.graph import ComponentGraph

PAIR = FIXTURES / "proc" / "vm-2cpu-dd-1s"
DT = 1.74


def record(probes, root: Path, snapshots: list[Path]) -> dict[str, np.ndarray]:
    """The sampler's pipeline without its thread: each snapshot read by every reader's tick read
    (text for a ``TextReader``), the texts parsed after the run, then derived (the files are
    rewritten in place, so the kept-open descriptors see new contents)."""
    plans = [tick_read(reader, len(reader())) for p in probes for reader in p.readers]
    texts: list[list[bytes]] = [[] for _ in plans]
    for snap in snapshots:
        for src in snap.rglob("*"):
            if src.is_file():
                (root / src.relative_to(snap)).write_bytes(src.read_bytes())
        for k, (tick, _layout, _bound) in enumerate(plans):
            texts[k].append(tick())
    tokens = [parse_segments(texts[k], layout) for k, (_tick, layout, _bound) in enumerate(plans)]
    raw = parse_tokens(np.hstack(tokens)) if tokens else np.zeros((len(snapshots), 0))
    t = np.arange(len(snapshots)) * DT
    metrics: dict[str, np.ndarray] = {}
    start = 0
    for p in probes:
        width = len(p.columns)
        metrics.update(p.derive(raw[:, start : start + width], t, metrics))
        start += width
    return metrics


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    shutil.copytree(PAIR / "t0", tmp_path, dirs_exist_ok=True)
    return tmp_path


def last(metrics: dict[str, np.ndarray], key: str) -> float:
    values = metrics[key]
    assert np.isnan(values[0]), f"{key}: a rate has no value at the first sample"
    return float(values[-1])


def test_cpu_fractions_and_pressure(root: Path) -> None:
    probe = cpu.open_probe(ProbeContext(root=root))
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    # cpu0: user 33256-33236=20, system 14081-13967=114, softirq 2102-2062=40, others 0:
    # 174 busy of 174
    assert last(m, "core:0/util_compute") == pytest.approx(1.0)
    assert last(m, "core:0/system") == pytest.approx(114 / 174)
    # cpu1: user 35379-35237=142, system 15593-15562=31, steal 302-301=1:
    # busy 173 of 174, 173 available
    assert last(m, "core:1/util_compute") == pytest.approx(173 / 173)
    assert last(m, "core:1/steal") == pytest.approx(1 / 174)
    assert last(m, "cpu:host/busy") == pytest.approx(347 / 348)
    assert last(m, "cpu:host/busy_cores") == pytest.approx(347 / (348 / 2))
    # utilization of the 2-core limit, net of steal: 1.994 / (2 x (1 - 1/348))
    assert last(m, "cpu:host/util_compute") == pytest.approx((347 / 174) / (2 * (1 - 1 / 348)))
    assert last(m, "cpu:host/busiest_core") == pytest.approx(1.0)
    assert last(m, "cpu:host/user") == pytest.approx((20 + 142) / 348)
    assert last(m, "cpu:host/context_switches_per_s") == pytest.approx((3370991 - 3361295) / DT)
    assert m["cpu:host/runnable"][-1] == 5  # procs_running at t1, a level
    assert last(m, "cpu:host/psi_some") == pytest.approx((349449323 - 347871385) / DT / 1e6)
    assert probe.limits["cpu:host/compute"].source == LimitSource.DERIVED


def test_block_rates_busy_queue_and_await(root: Path) -> None:
    probe = block.open_probe(ProbeContext(root=root))
    assert probe.devices == ["vda", "zram0"]  # loop devices without a backing file are skipped
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    # diskstats vda: sectors written 231046536-230694744 = 351792, x 512 bytes
    assert last(m, "block:vda/write_bytes_per_s") == pytest.approx(351792 * 512 / DT)
    assert last(m, "block:vda/read_bytes_per_s") == pytest.approx(
        (103565114 - 103565090) * 512 / DT
    )
    assert last(m, "block:vda/write_iops") == pytest.approx((170030 - 169573) / DT)
    # io_ticks (field 10): 79696-79608 = 88 ms busy of 1740 ms
    assert last(m, "block:vda/busy") == pytest.approx(88 / 1740)
    # time_in_queue (field 11): 138354-138200 = 154 ms -> average 154/1740 requests in flight
    assert last(m, "block:vda/queue_depth") == pytest.approx(154 / 1740)
    # write ms (field 8) 80634-80491 = 143 over 457 writes
    assert last(m, "block:vda/write_await_s") == pytest.approx(143 / 457 / 1000)
    assert last(m, "block:vda/read_await_s") == pytest.approx(0.0)  # 3 reads, 0 ms
    assert last(m, "block:zram0/read_await_s") != last(m, "block:zram0/read_await_s")  # no I/O: NaN
    assert "block:vda/util_write" not in m  # no stated limit: no utilization invented
    assert last(m, "io:host/psi_some") == pytest.approx((37347660 - 37296147) / DT / 1e6)


def test_block_utilization_against_a_stated_limit(root: Path) -> None:
    graph = ComponentGraph()
    rated = Limit(value=200e6, unit="B/s", source=LimitSource.USER, detail="test rating")
    graph.add_component(
        Component(
            id="block:vda",
            kind=ComponentKind.BLOCK,
            name="vda",
            limits={"write": rated, "read": rated},
        )
    )
    probe = block.open_probe(ProbeContext(root=root, graph=graph))
    assert probe.devices == ["vda"]  # with a graph: its block components
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    assert last(m, "block:vda/util_write") == pytest.approx(351792 * 512 / DT / 200e6)


def test_net_rates_and_half_duplex(root: Path) -> None:
    probe = net.open_probe(ProbeContext(root=root))
    assert probe.interfaces == ["lo", "ifb0", "ifb1", "eth0"]
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    assert last(m, "nic:lo/rx_bytes_per_s") == pytest.approx((391815766602 - 388624663186) / DT)
    assert last(m, "nic:lo/tx_packets_per_s") == pytest.approx((7581416 - 7522943) / DT)
    assert last(m, "nic:eth0/rx_bytes_per_s") == 0.0
    assert "nic:eth0/util_receive" not in m  # the fixture has no speed: unknown, not invented
    # half duplex at 1 Gb/s: both directions share 125e6 B/s
    (root / "sys" / "class" / "net" / "lo").mkdir(parents=True)
    (root / "sys" / "class" / "net" / "lo" / "speed").write_text("1000\n")
    (root / "sys" / "class" / "net" / "lo" / "duplex").write_text("half\n")
    shutil.copytree(PAIR / "t0", root, dirs_exist_ok=True)
    probe = net.open_probe(ProbeContext(root=root, components={"nic:lo"}))
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    both = 2 * (391815766602 - 388624663186) / DT
    assert last(m, "nic:lo/util_send") == pytest.approx(both / 125e6)
    assert last(m, "nic:lo/util_receive") == pytest.approx(both / 125e6)


def test_memory_levels_and_reclaim(root: Path) -> None:
    probe = memory.open_probe(ProbeContext(root=root))
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    assert m["memory:host/used_bytes"][-1] == (24682416 - 23962364) * 1024
    assert m["memory:host/util_capacity"][-1] == pytest.approx((24682416 - 23962364) / 24682416)
    assert m["memory:host/dirty_bytes"][-1] == 2608 * 1024
    assert last(m, "memory:host/major_faults_per_s") == pytest.approx(2 / DT)
    assert last(m, "memory:host/swap_out_bytes_per_s") == 0.0
    assert last(m, "memory:host/reclaim_scan_pages_per_s") == 0.0


def test_pci_sums_its_children(root: Path) -> None:
    sys_block = (
        root / "sys" / "devices" / "pci0000:00" / "0000:00:02.0" / "virtio1" / "block" / "vda"
    )
    sys_block.mkdir(parents=True)
    (root / "sys" / "class" / "block").mkdir(parents=True)
    (root / "sys" / "class" / "block" / "vda").symlink_to(sys_block)
    graph = ComponentGraph()
    link = Limit(value=1e9, unit="B/s", source=LimitSource.SYSFS, detail="test link")
    graph.add_component(
        Component(
            id="pci:0000:00:02.0",
            kind=ComponentKind.PCI,
            name="0000:00:02.0",
            limits={"send": link, "receive": link},
        )
    )
    graph.add_component(Component(id="block:vda", kind=ComponentKind.BLOCK, name="vda"))
    context = ProbeContext(root=root, graph=graph)
    probes = [block.open_probe(context), pci.open_probe(context)]
    assert probes[1].children == {"pci:0000:00:02.0": ["block:vda"]}
    m = record(probes, root, [PAIR / "t0", PAIR / "t1"])
    # host -> device (receive) carries the disk's writes
    assert last(m, "pci:0000:00:02.0/receive_bytes_per_s") == pytest.approx(351792 * 512 / DT)
    assert last(m, "pci:0000:00:02.0/util_receive") == pytest.approx(351792 * 512 / DT / 1e9)
    assert last(m, "pci:0000:00:02.0/util_send") == pytest.approx(24 * 512 / DT / 1e9)


def test_a_vanished_device_reads_as_missing_not_as_a_rate(root: Path) -> None:
    probe = block.open_probe(ProbeContext(root=root))
    shrunk = root / "shrunk"
    (shrunk / "proc").mkdir(parents=True)
    text = (PAIR / "t1" / "proc" / "diskstats").read_text().splitlines()
    (shrunk / "proc" / "diskstats").write_text(
        "\n".join(line for line in text if " zram0 " not in line) + "\n"
    )
    for name in ("pressure",):
        shutil.copytree(PAIR / "t1" / "proc" / name, shrunk / "proc" / name)
    m = record([probe], root, [PAIR / "t0", shrunk, PAIR / "t1"])
    assert np.isnan(m["block:zram0/write_bytes_per_s"][1:]).all()  # gone, then back: no fake delta
    assert m["block:vda/write_bytes_per_s"][1] == pytest.approx(351792 * 512 / DT)


def test_a_vlan_is_judged_against_its_lower_device_speed(tmp_path: Path) -> None:
    """A VLAN's frames cross its lower device: without a speed of its own (virtual NICs read -1)
    it takes the lower device's, and the attribution is recorded."""
    snaps = []
    for name, rx in (("t0", 1_000_000), ("t1", 1_000_000 + 87_000_000)):
        snap = tmp_path / name
        shutil.copytree(PAIR / name, snap)
        dev = snap / "proc" / "net" / "dev"
        dev.write_text(dev.read_text() + f"eth0.100: {rx} 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n")
        snaps.append(snap)
    root = tmp_path / "root"
    shutil.copytree(snaps[0], root)
    sys_net = root / "sys" / "class" / "net"
    (sys_net / "eth0").mkdir(parents=True)
    (sys_net / "eth0" / "speed").write_text("1000\n")  # 1 Gb/s = 125e6 B/s
    (sys_net / "eth0" / "duplex").write_text("full\n")
    (sys_net / "eth0.100").mkdir()
    (sys_net / "eth0.100" / "speed").write_text("-1\n")
    (sys_net / "eth0.100" / "lower_eth0").symlink_to(sys_net / "eth0")
    probe = net.open_probe(ProbeContext(root=root, components={"nic:eth0.100"}))
    m = record([probe], root, snaps)
    assert last(m, "nic:eth0.100/rx_bytes_per_s") == pytest.approx(87_000_000 / DT)
    assert last(m, "nic:eth0.100/util_receive") == pytest.approx(87_000_000 / DT / 125e6)
    assert "lower device eth0" in probe.limits["nic:eth0.100/receive"].detail
    assert probe.attrs()["nic:eth0.100"]["lower_devices"] == ["eth0"]


def test_an_older_kernel_without_pressure_files_and_with_14_field_diskstats(tmp_path: Path) -> None:
    """Kernels before 4.18 print 14 diskstats fields and before 4.20 have no /proc/pressure.
    (Synthesized in those formats from this VM's pair, not captured on an old kernel.)"""
    snaps = []
    for name in ("t0", "t1"):
        snap = tmp_path / name
        shutil.copytree(PAIR / name, snap)
        shutil.rmtree(snap / "proc" / "pressure")
        disk = snap / "proc" / "diskstats"
        disk.write_text(
            "".join(" ".join(line.split()[:14]) + "\n" for line in disk.read_text().splitlines())
        )
        snaps.append(snap)
    root = tmp_path / "root"
    shutil.copytree(snaps[0], root)
    context = ProbeContext(root=root)
    probes = [block.open_probe(context), cpu.open_probe(context)]
    assert not any("psi" in c for p in probes for c in p.columns)
    m = record(probes, root, snaps)
    assert last(m, "block:vda/write_bytes_per_s") == pytest.approx(351792 * 512 / DT)
    assert last(m, "block:vda/busy") == pytest.approx(88 / 1740)
    assert last(m, "cpu:host/busy") == pytest.approx(347 / 348)
    assert "cpu:host/psi_some" not in m
