"""Discovery of the captured machines in tests/fixtures/sys, checked component by component
against numbers computed by hand from the kernel's own strings."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from pilot_sys.topology.components import ComponentKind, LimitSource
from pilot_sys.topology.discover import discover
from pilot_sys.topology.effective import applied_limit
from pilot_sys.topology.graph import OUTWARD, ComponentGraph

SYS = FIXTURES / "sys"
GEN3_X4 = 8e9 * 128 / 130 * 4 / 8  # 3.938 GB/s per direction
GEN3_X2 = 8e9 * 128 / 130 * 2 / 8
GEN4_X4 = 16e9 * 128 / 130 * 4 / 8
GEN3_X8 = 8e9 * 128 / 130 * 8 / 8
GEN2_X1 = 5e9 * 8 / 10 * 1 / 8  # 500 MB/s
GEN3_X1 = 8e9 * 128 / 130 / 8


def outward_children(graph: ComponentGraph, node: str) -> set[str]:
    return {n for n in graph.g.successors(node) if graph.link(node, n).direction in OUTWARD}


def test_every_link_is_two_directed_edges(
    nvme: ComponentGraph, md: ComponentGraph, nfs: ComponentGraph
) -> None:
    for graph in (nvme, md, nfs):
        for link in graph.links():
            if link.direction in ("contains", "limits"):  # one-way: containment, a limiter's link
                continue
            assert graph.g.has_edge(link.target, link.source), link
            back = graph.link(link.target, link.source)
            assert {link.direction, back.direction} in (
                {"write", "read"},
                {"send", "receive"},
                {"down", "up"},
            )


def test_nvme_pcie_limits_and_chain(nvme: ComponentGraph) -> None:
    ssd = nvme.component("pci:0000:01:00.0")
    assert ssd.limits["send"].value == pytest.approx(GEN3_X4)
    assert ssd.limits["receive"].value == pytest.approx(GEN3_X4)
    assert ssd.limits["send"].source == LimitSource.SYSFS
    assert "128b/130b" in ssd.limits["send"].detail
    assert not ssd.warnings
    # the root port -> SSD edge carries the SSD's link bandwidth, each direction separately
    assert nvme.link("pci:0000:00:01.1", "pci:0000:01:00.0").capacity.value == pytest.approx(
        GEN3_X4
    )
    assert nvme.link("pci:0000:01:00.0", "pci:0000:00:01.1").direction == "up"
    assert nvme.component("controller:nvme0").attrs["transport"] == "pcie"
    assert outward_children(nvme, "pci:0000:01:00.0") == {"controller:nvme0"}
    assert outward_children(nvme, "controller:nvme0") == {"block:nvme0n1"}
    assert outward_children(nvme, "block:nvme0n1") == {"block:nvme0n1p1", "block:nvme0n1p2"}
    assert nvme.component("block:nvme0n1").attrs["rotational"] is False
    assert nvme.component("block:nvme0n1").limits["capacity"].value == 1953525168 * 512


def test_link_trained_below_maximum_is_a_warning(nvme: ComponentGraph) -> None:
    slow = nvme.component("pci:0000:02:00.0")
    assert slow.limits["send"].value == pytest.approx(GEN3_X2)
    assert len(slow.warnings) == 1 and "8 GT/s x2 of 16 GT/s x4" in slow.warnings[0]
    assert nvme.component("pci:0000:00:01.2").limits["send"].value == pytest.approx(GEN4_X4)
    port = nvme.component("pci:0000:00:1c.0")  # 5 GT/s x1 of 8 GT/s x1: 8b/10b vs 128b/130b
    assert port.limits["send"].value == pytest.approx(GEN2_X1)
    assert "8b/10b" in port.limits["send"].detail
    assert f"{GEN3_X1 / 1024**2:.3g} MiB/s" in port.warnings[0]


def test_native_multipath_namespace_hangs_off_its_controller(nvme: ComponentGraph) -> None:
    assert outward_children(nvme, "controller:nvme1") == {"block:nvme1n1"}
    assert nvme.paths_to("block:nvme1n1") == [
        [
            "cpu:host",
            "memory:host",
            "pci:0000:00:01.2",
            "pci:0000:02:00.0",
            "controller:nvme1",
            "block:nvme1n1",
        ]
    ]


def test_lvm_slaves(nvme: ComponentGraph) -> None:
    root = nvme.component("block:dm-0")
    assert root.attrs["role"] == "dm" and root.attrs["dm_target"] == "lvm"
    assert root.attrs["dm_name"] == "vg0-root" and root.attrs["slaves"] == ["nvme0n1p2"]
    assert outward_children(nvme, "block:nvme0n1p2") == {"block:dm-0", "block:dm-1"}
    assert outward_children(nvme, "block:dm-0") == {"mount:/"}


def test_mounts_bind_overlay_tmpfs(nvme: ComponentGraph) -> None:
    mounts = {c.name: c for c in nvme.components(ComponentKind.MOUNT)}
    assert set(mounts) == {
        "/",
        "/dev",
        "/boot/efi",
        "/home",
        "/tmp",
        "/srv/data",
        "/scratch",
        "/var/lib/docker/overlay2/abc/merged",
        "/mnt/My Photos",
    }  # proc, sysfs, cgroup2 left out
    assert mounts["/srv/data"].attrs["bind_of"] == "/home"
    assert mounts["/srv/data"].attrs["root"] == "/alice/data"
    assert mounts["/mnt/My Photos"].attrs["bind_of"] == "/scratch"  # \040 unescaped
    assert outward_children(nvme, "block:dm-1") == {"mount:/home", "mount:/srv/data"}
    overlay = mounts["/var/lib/docker/overlay2/abc/merged"]
    assert overlay.attrs["layers"] == ["/", "/scratch"]  # lowerdirs on /, upperdir on /scratch
    assert "mount:/tmp" in outward_children(nvme, "memory:host")
    assert mounts["/tmp"].attrs["memory"] is True


def test_cpu_topology_and_cgroup_v2_quota(nvme: ComponentGraph) -> None:
    cpu = nvme.component("cpu:host")
    assert cpu.attrs["sockets"] == 1 and cpu.attrs["cores"] == 4 and cpu.attrs["online_cpus"] == 8
    assert cpu.attrs["smt"] is True and cpu.attrs["threads_per_core"] == 2
    assert cpu.attrs["max_freq_hz"] == 4.2e9 and cpu.attrs["min_freq_hz"] == 0.8e9
    # the CPU's own (physical) limit is its 8 online CPUs; user-1000.slice's cpu.max
    # (150000/100000, under a parent at max) is a limiter of its own, and the tighter one applies
    assert cpu.limits["compute"].value == 8.0 and cpu.limits["compute"].unit == "cores"
    assert "quota" not in cpu.limits["compute"].detail and "cgroup_quota_cores" not in cpu.attrs
    applied = applied_limit(nvme, "cpu:host", "compute")
    assert (applied.applied, applied.limit.value) == ("effective", pytest.approx(1.5))
    assert applied.imposed_by == "cgroup:/user.slice/user-1000.slice/cpu"
    assert "user-1000.slice/cpu.max" in applied.limit.detail


def test_memory_bandwidth_from_dmi(nvme: ComponentGraph) -> None:
    memory = nvme.component("memory:host")
    # two populated DIMMs (16 GiB, 32 GiB via the extended size field) at 2933 MT/s x 64 bit;
    # the empty slot does not count
    assert memory.limits["read"].value == pytest.approx(2 * 2933e6 * 64 / 8)
    assert memory.limits["read"].source == LimitSource.DMI
    assert [d["size_bytes"] for d in memory.attrs["dimms"]] == [16 * 1024**3, 32 * 1024**3]
    assert memory.limits["capacity"].value == 32 * 1024**3


def test_nic_speed_duplex(nvme: ComponentGraph, md: ComponentGraph, nfs: ComponentGraph) -> None:
    assert nvme.component("nic:enp3s0").limits["send"].value == 1000e6 / 8
    assert nvme.paths_to("network:enp3s0")[0][-4:] == [
        "pci:0000:00:1c.0",
        "pci:0000:03:00.0",
        "nic:enp3s0",
        "network:enp3s0",
    ]
    half = md.component("nic:eno1")
    assert half.limits["send"].value == 100e6 / 8 and half.attrs["duplex"] == "half"
    assert any("half duplex" in w for w in half.warnings)
    virtio = nfs.component("nic:eth2")
    assert virtio.limits["send"].value is None and not virtio.limits["send"].known
    assert virtio.limits["send"].detail == "speed reads -1"
    assert nfs.component("nic:br0").limits["send"].detail.startswith("speed unreadable")


def test_sata_links_and_md_raid(md: ComponentGraph) -> None:
    assert md.component("controller:ata1").limits["write"].value == pytest.approx(600e6)
    assert md.component("controller:ata2").limits["write"].value == pytest.approx(300e6)
    assert md.link("controller:ata2", "block:sdb").capacity.value == pytest.approx(300e6)
    md0, md1 = md.component("block:md0"), md.component("block:md1")
    assert (md0.attrs["level"], md0.attrs["members"]) == ("raid1", ["sda1", "sdb1"])
    assert (md1.attrs["level"], md1.attrs["members"], md1.attrs["chunk_size"]) == (
        "raid0",
        ["sdc", "sdd"],
        524288,
    )
    assert outward_children(md, "block:sdc") == {"block:md1"}
    assert {p[-3] for p in md.paths_to("mount:/")} == {"block:sda1", "block:sdb1"}
    assert md.component("block:sda").attrs["rotational"] is True


def test_sas_port_rate(md: ComponentGraph) -> None:
    port = md.component("controller:sas-port-6:0")
    assert port.limits["read"].value == pytest.approx(12e9 * 8 / 10 / 8)  # SAS-3: 8b/10b
    assert port.attrs["phys"] == ["phy-6:0"]
    assert md.paths_to("block:sde") == [
        [
            "cpu:host",
            "memory:host",
            "pci:0000:00:03.0",
            "pci:0000:04:00.0",
            "controller:sas-port-6:0",
            "block:sde",
        ]
    ]
    assert md.component("block:sde").attrs["model"] == "PX05SMB080"


def test_loop_backing_chain_is_followed_recursively(md: ComponentGraph) -> None:
    assert "block:loop2" not in md  # size 0: an unused loop device
    paths = md.paths_to("mount:/mnt/inner")
    assert len(paths) == 2  # through each RAID0 member
    assert paths[0][3:] == [
        "controller:ata3",
        "block:sdc",
        "block:md1",
        "mount:/data",
        "block:loop0",
        "mount:/mnt/vm",
        "block:loop1",
        "mount:/mnt/inner",
    ]
    assert md.component("block:loop1").attrs["backing_file"] == "/mnt/vm/inner.img"


def test_zram_numa_and_cgroup_v1(md: ComponentGraph) -> None:
    zram = md.component("block:zram0")
    assert zram.attrs["role"] == "zram" and zram.attrs["memory_backed"] is True
    assert md.paths_to("block:zram0") == [["cpu:host", "memory:host", "block:zram0"]]
    cpu = md.component("cpu:host")
    assert cpu.attrs["sockets"] == 2 and cpu.attrs["numa_nodes"] == {
        "node0": [0, 1, 2, 3],
        "node1": [4, 5, 6, 7],
    }
    assert cpu.limits["compute"].value == 8.0  # physical: 8 online CPUs
    quota = applied_limit(md, "cpu:host", "compute")  # the v1 quota 200000 / 100000 applies
    assert (quota.applied, quota.limit.value) == ("effective", pytest.approx(2.0))
    assert md.component("memory:node1").limits["capacity"].value == 16 * 1024**3
    assert not md.component("memory:host").limits["read"].known  # no DMI, no probe asked: unknown


def test_bond_vlan_bridge(nfs: ComponentGraph) -> None:
    bond = nfs.component("nic:bond0")
    assert bond.attrs["type"] == "bond" and bond.attrs["lower"] == ["eth0", "eth1"]
    assert bond.limits["send"].value == 20000e6 / 8
    assert nfs.link("nic:eth0", "nic:bond0").capacity.value == 10000e6 / 8
    assert outward_children(nfs, "nic:bond0") == {"nic:bond0.100"}
    assert "network:bond0" not in nfs  # bond0 has an upper device (the VLAN)
    assert nfs.component("nic:bond0.100").attrs["type"] == "vlan"
    assert outward_children(nfs, "nic:veth1") == {"nic:br0"}
    assert nfs.component("pci:0000:05:00.0").limits["send"].value == pytest.approx(GEN3_X8)
    assert len(nfs.paths_to("network:bond0.100")) == 2  # one per slave


def test_nfs_cifs_and_fabrics_remotes(nfs: ComponentGraph) -> None:
    assert outward_children(nfs, "network:bond0.100") == {
        "remote:10.0.100.5",
        "remote:2001:db8:100::5",
        "remote:10.0.100.7",
    }
    assert outward_children(nfs, "network:eth2") == {
        "remote:192.168.50.20"
    }  # cifs via the default route
    assert nfs.component("mount:/mnt/share").attrs["remote_host"] == "192.168.50.20"
    assert outward_children(nfs, "remote:10.0.100.5") == {"mount:/mnt/nfs"}
    assert nfs.component("controller:nvme0").attrs["transport"] == "tcp"
    assert outward_children(nfs, "remote:10.0.100.7") == {"controller:nvme0"}
    # loop device backed by a file on the NFS mount
    assert outward_children(nfs, "mount:/mnt/nfs") == {"block:loop0"}
    assert nfs.component("mount:/").attrs["memory"] is True  # rootfs


def test_idle_pci_functions_are_pruned(nvme: ComponentGraph) -> None:
    assert "pci:0000:00:00.0" not in nvme  # host bridge with nothing behind it
    assert "pci:0000:00:01.1" in nvme  # a root port that leads to the SSD stays


def test_node_link_round_trip(nfs: ComponentGraph) -> None:
    data = nfs.to_node_link()
    assert {"nodes", "links"} <= set(data)
    again = ComponentGraph.from_node_link(data)
    assert sorted(c.id for c in again.components()) == sorted(c.id for c in nfs.components())
    assert again.limit("nic:bond0", "send") == nfs.limit("nic:bond0", "send")
    assert {(k.source, k.target, k.direction) for k in again.links()} == {
        (k.source, k.target, k.direction) for k in nfs.links()
    }


def test_unreadable_files_are_reported_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without root the DMI entries raise EACCES; tests run as root, so the denial is simulated
    at os.open, the one call every sysfs read goes through."""
    import errno
    import os

    real_open = os.open

    def deny_dmi(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if "/sys/firmware/dmi/" in str(path):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny_dmi)
    graph = discover(SYS / "nvme-lvm")
    memory = graph.component("memory:host")
    assert not memory.limits["read"].known
    assert memory.limits["read"].detail.startswith("DMI memory entries unreadable (needs root)")
    assert graph.unreadable["memory"] == [
        f"/sys/firmware/dmi/entries/17-{i}/raw: permission denied" for i in range(3)
    ]
    # everything else still discovered
    assert graph.component("pci:0000:01:00.0").limits["send"].known


def test_device_level_graph_folds_layers_into_devices(
    nvme: ComponentGraph, md: ComponentGraph, nfs: ComponentGraph
) -> None:
    from pilot_sys.topology.devices import device_graph, device_map

    ssd = device_map(nvme)
    # the SSD's root port, PCIe function, controller, partitions, LVM volumes and mounts are the SSD
    for member in (
        "pci:0000:00:01.1",
        "pci:0000:01:00.0",
        "controller:nvme0",
        "block:nvme0n1p2",
        "block:dm-1",
        "mount:/srv/data",
    ):
        assert ssd[member] == "block:nvme0n1"
    assert ssd["mount:/tmp"] == "memory:host" and ssd["nic:enp3s0"] == "nic:enp3s0"
    raid = device_graph(md)
    assert set(raid.predecessors("block:md0")) == {"block:sda", "block:sdb"}
    # loop chain folds into the RAID
    assert "mount:/mnt/inner" in raid.nodes["block:md1"]["members"]
    assert raid.has_edge("pci:0000:00:17.0", "block:sdc")  # the AHCI controller fans out: a device
    client = device_graph(nfs)
    assert client.has_edge("network:bond0.100", "remote:10.0.100.5")
    assert device_map(nfs)["nic:bond0.100"] == "nic:bond0"
    assert sorted(client.edges["nic:eth0", "nic:bond0"]["directions"]) == ["send"]
    assert sorted(client.edges["nic:bond0", "nic:eth0"]["directions"]) == ["receive"]


def test_limits_derived_from_rated_members() -> None:
    """Rate the four SATA disks by hand; partitions and md arrays follow their layouts."""
    from pilot_sys.topology.derive import derive_limits
    from pilot_sys.topology.userspec import apply_user_graph, parse_user_graph

    graph = discover(SYS / "md-raid-loop")
    assert not graph.limit("block:md0", "read").known  # nothing rated yet: nothing derived
    rated = {
        "sda": (200e6, 180e6),
        "sdb": (150e6, 140e6),
        "sdc": (250e6, 240e6),
        "sdd": (230e6, 220e6),
    }
    user = parse_user_graph(
        {
            "nodes": [
                {"id": f"block:{d}", "limits": {"read": r, "write": w}}
                for d, (r, w) in rated.items()
            ]
        },
        "rated.json",
    )
    apply_user_graph(graph, user, "rated.json")
    derive_limits(graph)
    assert graph.limit("block:sda1", "write").value == 180e6  # a partition: its disk
    assert graph.limit("block:sda1", "write").source == LimitSource.DERIVED
    md0 = graph.component("block:md0")  # raid1 over sda1, sdb1
    assert md0.limits["read"].value == 200e6 + 150e6 and md0.limits["write"].value == 140e6
    md1 = graph.component("block:md1")  # raid0 over sdc, sdd
    assert md1.limits["read"].value == 250e6 + 230e6 and md1.limits["write"].value == 240e6 + 220e6
    assert md1.limits["write"].detail == "raid0: sum of 2 members"
    assert not graph.limit(
        "block:loop0", "write"
    ).known  # a loop's limit is its file system's: not derived
