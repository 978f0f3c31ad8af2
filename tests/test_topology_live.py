"""Discovery on this machine, checked against independent readings of the kernel's files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pilot_sys.topology.components import ComponentKind, LimitSource
from pilot_sys.topology.discover import discover
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.resolve import resolve

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def host() -> ComponentGraph:
    return discover()


def physical_disk_of(path: str) -> str:
    """Reference: st_dev -> /sys/dev/block/M:m -> the whole disk when it is a partition."""
    dev = os.stat(path).st_dev
    sys_path = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if os.path.exists(os.path.join(sys_path, "partition")):
        sys_path = os.path.dirname(sys_path)
    return os.path.basename(sys_path)


def test_every_block_device_with_a_size_is_found(host: ComponentGraph) -> None:
    expected = {
        name
        for name in os.listdir("/sys/class/block")
        if int(Path(f"/sys/class/block/{name}/size").read_text()) > 0
    }
    assert {c.name for c in host.components(ComponentKind.BLOCK)} == expected
    for c in host.components(ComponentKind.BLOCK):
        assert c.attrs["devnum"] == Path(f"/sys/class/block/{c.name}/dev").read_text().strip()


def test_nic_limits_follow_the_speed_file(host: ComponentGraph) -> None:
    for name in os.listdir("/sys/class/net"):
        limit = host.limit(f"nic:{name}", "send")
        speed_file = Path(f"/sys/class/net/{name}/speed")
        try:
            speed: int | None = int(speed_file.read_text())
        except OSError:  # EINVAL: no link, or the driver does not report a speed
            speed = None
        if name == "lo":
            assert not limit.known and "loopback" in limit.detail
        elif speed is None:
            assert limit.value is None and limit.source == LimitSource.UNKNOWN
            assert (
                limit.detail.startswith("speed unreadable")
                if speed_file.exists()
                else limit.detail == "no speed file"
            )
        elif speed <= 0:
            assert limit.value is None and limit.detail == f"speed reads {speed}"
        else:
            assert limit.value == speed * 1e6 / 8 and limit.source == LimitSource.SYSFS


def test_file_under_tmp_ends_at_its_block_device(host: ComponentGraph, tmp_path: Path) -> None:
    target = tmp_path / "new-file.dat"
    data = resolve(host, ["fio", f"--filename={target}", "--rw=write"])
    mount = data.arguments[0].component
    assert data.arguments[0].kind == "new-file" and mount.startswith("mount:")
    fstype = host.component(mount).attrs["fstype"]
    if fstype in ("tmpfs", "ramfs"):
        assert data.cut == "memory:host"
    else:
        assert data.cut == f"block:{physical_disk_of(str(tmp_path))}"
        assert data.paths[0][:2] == ["cpu:host", "memory:host"] and data.paths[0][-1] == mount


def test_loopback_host_resolves_to_lo(host: ComponentGraph) -> None:
    data = resolve(host, ["iperf3", "-c", "127.0.0.1"])
    assert data.cut == "nic:lo" and data.paths == [["cpu:host", "memory:host", "nic:lo"]]


def test_compute_limit_is_the_usable_cpus(host: ComponentGraph) -> None:
    """The physical limit: the CPUs this process's affinity allows (a cgroup quota is a limiter
    of its own, ``cgroup:<path>/cpu``, not folded in here)."""
    compute = host.limit("cpu:host", "compute")
    assert compute.value == pytest.approx(len(os.sched_getaffinity(0))) and compute.unit == "cores"


def test_memory_probe_is_marked_as_measured() -> None:
    graph = discover(probe_memory=True)
    limit = graph.limit("memory:host", "read")
    if limit.source == LimitSource.DMI:
        pytest.skip("DMI gives the memory bandwidth here; the probe is not run")
    assert limit.source == LimitSource.PROBE and limit.value > 1e8
    assert "copy" in limit.detail


def test_pyudev_and_sysfs_enumerate_the_same_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Machines with a udev database enumerate through pyudev; this one has none, so the
    database's presence is simulated (libudev enumerates sysfs without it)."""
    from pilot_sys.topology.sysroot import SysRoot

    by_scandir = {s: SysRoot("/").class_devices(s) for s in ("block", "net", "pci")}
    real_isdir = os.path.isdir
    monkeypatch.setattr(
        os.path, "isdir", lambda p: True if p == "/run/udev/data" else real_isdir(p)
    )
    for subsystem, expected in by_scandir.items():
        assert SysRoot("/").class_devices(subsystem) == expected
