"""Resolution of workload arguments to data paths on the captured machines."""

from __future__ import annotations

import pytest

from pilot_sys.errors import BadInput
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.resolve import candidates, resolve


def test_candidates_from_fio_dd_iperf3_arguments() -> None:
    found = candidates(
        [
            "fio",
            "--name=w",
            "--filename=/dev/sda:/mnt/a\\:b",
            "--rw=write",
            "--bs=4k",
            "--output=/tmp/out.json",
            "--directory=/scratch",
            "of=/x/y",
            "if=/dev/zero",
            "-c",
            "10.0.0.5",
            "--client=h.example",
            "plain",
            "-t",
            "./rel",
        ]
    )
    values = [value for _, value, _ in found]
    assert values == [
        "fio",
        "/dev/sda",
        "/mnt/a:b",
        "/scratch",
        "/x/y",
        "/dev/zero",
        "host:10.0.0.5",
        "host:h.example",
        "plain",
        "./rel",
    ]
    assert "/tmp/out.json" not in values  # result files are not the data path


QUOTA = "cgroup:/user.slice/user-1000.slice/cpu"  # the nvme-lvm session's cpu.max limiter


def test_file_on_lvm_over_nvme_partition(nvme: ComponentGraph) -> None:
    data = resolve(nvme, ["fio", "--filename=/home/alice/test.dat", "--rw=write"])
    # the captured session's cgroup CPU quota (1.5 cores on user-1000.slice) stands before the CPU
    assert data.paths == [
        [
            QUOTA,
            "cpu:host",
            "memory:host",
            "pci:0000:00:01.1",
            "pci:0000:01:00.0",
            "controller:nvme0",
            "block:nvme0n1",
            "block:nvme0n1p2",
            "block:dm-1",
            "mount:/home",
        ]
    ]
    assert data.cut == "block:nvme0n1"  # the physical device under partition and LV
    assert data.arguments[0].kind == "path" and data.arguments[0].component == "mount:/home"


def test_bind_mount_and_overlay(nvme: ComponentGraph) -> None:
    assert resolve(nvme, ["/srv/data/x"]).paths[0][-2:] == ["block:dm-1", "mount:/srv/data"]
    overlay = resolve(nvme, ["/var/lib/docker/overlay2/abc/merged/etc/f"])
    assert {p[-2] for p in overlay.paths} == {"mount:/", "mount:/scratch"}
    assert {p[6] for p in overlay.paths} == {"block:nvme0n1", "block:nvme1n1"}  # p[0]: the quota


def test_device_arguments(nvme: ComponentGraph) -> None:
    assert resolve(nvme, ["/dev/nvme1n1"]).cut == "block:nvme1n1"
    mapper = resolve(nvme, ["dd", "if=/dev/mapper/vg0-root", "of=/dev/null"])
    assert mapper.arguments[0].kind == "device" and mapper.arguments[0].component == "block:dm-0"
    assert mapper.cut == "block:nvme0n1"


def test_tmpfs_is_memory(nvme: ComponentGraph) -> None:
    data = resolve(nvme, ["/tmp/scratch.bin"])
    assert data.paths == [[QUOTA, "cpu:host", "memory:host", "mount:/tmp"]]
    assert data.cut == "memory:host"


def test_md_raid_cut_is_the_array(md: ComponentGraph) -> None:
    data = resolve(md, ["/var/lib/x"])
    assert data.cut == "block:md0"
    assert [p[-4:] for p in data.paths] == [
        ["block:sda", "block:sda1", "block:md0", "mount:/"],
        ["block:sdb", "block:sdb1", "block:md0", "mount:/"],
    ]
    assert {"controller:ata1", "controller:ata2"} <= set(data.components)


def test_loop_chain_cut_is_the_raid_underneath(md: ComponentGraph) -> None:
    data = resolve(md, ["/mnt/inner/file"])
    assert data.cut == "block:md1"
    assert all(
        p[-5:] == ["mount:/data", "block:loop0", "mount:/mnt/vm", "block:loop1", "mount:/mnt/inner"]
        for p in data.paths
    )


def test_nfs_path_ends_at_the_remote_host(nfs: ComponentGraph) -> None:
    data = resolve(nfs, ["/mnt/nfs/run1/out.dat"])
    assert data.cut == "remote:10.0.100.5"
    assert data.paths[0] == [
        "cpu:host",
        "memory:host",
        "pci:0000:00:02.0",
        "pci:0000:05:00.0",
        "nic:eth0",
        "nic:bond0",
        "nic:bond0.100",
        "network:bond0.100",
        "remote:10.0.100.5",
        "mount:/mnt/nfs",
    ]
    assert len(data.paths) == 2  # one per bond slave
    v6 = resolve(nfs, ["/mnt/nfs6/f"])
    assert v6.cut == "remote:2001:db8:100::5" and "nic:bond0.100" in v6.components


def test_host_arguments_resolve_to_the_routing_nic(nfs: ComponentGraph) -> None:
    assert resolve(nfs, ["iperf3", "-c", "10.0.100.9"]).cut == "nic:bond0.100"
    assert resolve(nfs, ["iperf3", "-c", "10.0.100.9"]).paths[0][-2:] == [
        "nic:bond0.100",
        "network:bond0.100",
    ]
    assert resolve(nfs, ["iperf3", "-c", "10.20.30.40"]).cut == "nic:bond0"  # 10/8 via bond0
    assert resolve(nfs, ["iperf3", "-c", "93.184.216.34"]).cut == "nic:eth2"  # default route
    assert resolve(nfs, ["iperf3", "-6", "-c", "2001:db8:100::77"]).cut == "nic:bond0.100"
    assert resolve(nfs, ["iperf3", "-c", "2a00:1450::1"]).cut == "nic:eth2"  # IPv6 default
    assert resolve(nfs, ["ping", "127.0.0.1"]).cut == "nic:lo"  # local table
    assert resolve(nfs, ["ping", "10.0.100.2"]).cut == "nic:lo"  # the host's own address


def test_memory_source_does_not_become_the_cut(nfs: ComponentGraph) -> None:
    data = resolve(nfs, ["dd", "if=/proc/self/x", "of=/mnt/fabric/f", "bs=1M"])
    assert data.cut == "block:nvme0n1"  # NVMe/TCP namespace: the device, behind the network
    assert "remote:10.0.100.7" in data.components


def test_strict_mode_rejects_what_is_neither_path_nor_host(nfs: ComponentGraph) -> None:
    with pytest.raises(BadInput, match="parent does not exist"):
        resolve(nfs, ["/no/such/dir/f"], strict=True, root="/")
    assert resolve(nfs, ["/no/such/dir/f"], root="/").paths == []  # not strict: ignored
    assert resolve(nfs, ["--rw=write", "4k"]).paths == []  # not strict: other options are ignored
