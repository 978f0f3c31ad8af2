"""The pure parsers and formulas of the topology layer against hand-computed cases."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilot_sys.topology.cpulist import parse_cpulist
from pilot_sys.topology.dmi import parse_type17
from pilot_sys.topology.linkspeed import (
    nic_limit,
    parse_gts,
    pcie_bandwidth,
    pcie_limit,
    sas_limit,
    sata_limit,
)
from pilot_sys.topology.mountinfo import mount_for, parse_mountinfo, remote_host, visible_mounts
from pilot_sys.topology.routes import lookup, parse_ipv6_route, parse_local_ipv4, parse_route


@pytest.mark.parametrize(
    ("gts", "width", "expected"),
    [
        (2.5, 1, 2.5e9 * 0.8 / 8),  # Gen1 x1: 250 MB/s
        (5.0, 16, 5e9 * 0.8 * 16 / 8),  # Gen2 x16: 8 GB/s
        (8.0, 4, 8e9 * 128 / 130 * 4 / 8),  # Gen3 x4: 3.938 GB/s
        (16.0, 16, 16e9 * 128 / 130 * 16 / 8),  # Gen4 x16: 31.5 GB/s
        (32.0, 4, 32e9 * 128 / 130 * 4 / 8),  # Gen5 x4
        (64.0, 16, 64e9 * 242 / 256 * 16 / 8),  # Gen6 x16 FLIT
    ],
)
def test_pcie_bandwidth_by_generation(gts: float, width: int, expected: float) -> None:
    assert pcie_bandwidth(gts, width) == pytest.approx(expected)


def test_pcie_strings_as_sysfs_prints_them() -> None:
    assert parse_gts("8.0 GT/s PCIe") == 8.0
    assert parse_gts("2.5 GT/s") == 2.5
    assert parse_gts("Unknown") is None and parse_gts(None) is None
    assert not pcie_limit(None, 4).known
    assert pcie_limit(16.0, 8).value == pytest.approx(15.753846e9, rel=1e-6)


def test_sata_sas_nic_limits() -> None:
    assert sata_limit("6.0 Gbps").value == pytest.approx(600e6)
    assert sata_limit("1.5 Gbps").value == pytest.approx(150e6)
    assert not sata_limit("<unknown>").known
    assert sas_limit("12.0 Gbit").value == pytest.approx(1.2e9)
    assert sas_limit("22.5 Gbit").value == pytest.approx(22.5e9 * 128 / 150 / 8)
    assert nic_limit("25000", None, "full").value == 25e9 / 8
    unknown = nic_limit("-1", None, "unknown")
    assert unknown.value is None and unknown.detail == "speed reads -1"
    assert nic_limit(None, 22, None).detail.startswith("speed unreadable")


def test_cpulist() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == [] and parse_cpulist(None) == []


MOUNTINFO = r"""36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw
40 22 0:50 / /mnt/with\040space\011tab rw shared:7 propagate_from:2 - nfs4 srv:/e rw,addr=192.0.2.9
41 22 0:51 / /mnt/c rw - cifs //fs.example/share rw,vers=3.0
42 22 0:52 / /mnt/s rw - fuse.sshfs bench@host.example:/data rw,user_id=0
43 22 0:53 / /mnt/v6 rw - nfs [2001:db8::5]:/x rw,vers=3
broken line
"""


def test_mountinfo_as_proc5_describes_it() -> None:
    entries = parse_mountinfo(MOUNTINFO)
    assert len(entries) == 6  # the malformed line is skipped
    first = entries[0]
    assert (first.mount_id, first.parent_id, first.devnum, first.root, first.mountpoint) == (
        36,
        35,
        "98:0",
        "/mnt1",
        "/mnt2",
    )
    assert (first.fstype, first.source, first.super_options) == (
        "ext3",
        "/dev/root",
        "rw,errors=continue",
    )
    nfs = entries[2]
    # optional fields skipped, octal escapes decoded
    assert nfs.mountpoint == "/mnt/with space\ttab"
    assert nfs.is_network and remote_host(nfs) == "192.0.2.9"
    assert remote_host(entries[3]) == "fs.example"
    assert entries[4].is_network and remote_host(entries[4]) == "host.example"
    assert remote_host(entries[5]) == "2001:db8::5"
    mounts = visible_mounts(entries)
    assert mount_for("/mnt/with space\ttab/a/b", mounts).fstype == "nfs4"
    assert mount_for("/etc/passwd", mounts).mountpoint == "/"
    # a prefix of the name is not a parent directory
    assert mount_for("/mnt2x", mounts).mountpoint == "/"


@given(st.text(alphabet=st.sampled_from("ab \t\n\\/é"), min_size=1, max_size=20))
def test_mountinfo_unescape_inverts_the_kernel_escape(name: str) -> None:
    escaped = "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in "/" + name)
    entry = parse_mountinfo(f"1 0 8:1 / {escaped} rw - ext4 /dev/sda1 rw")[0]
    assert entry.mountpoint == "/" + name


ROUTE = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0000A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
wg0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0
eth1\t0000000A\t00000000\t0001\t0\t0\t50\t000000FF\t0\t0\t0
eth1\t0064000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
down0\t0000FEA9\t00000000\t0000\t0\t0\t0\t0000FFFF\t0\t0\t0
"""
IPV6_ROUTE = """20010db8000000000000000000000000 20 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
20010db8000100000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth2
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000002 00000000 00450003     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
"""  # noqa: E501 (the kernel's /proc/net/ipv6_route lines, as it prints them)


def test_ipv4_routes_little_endian_hex() -> None:
    routes = parse_route(ROUTE)
    assert [str(r.network) for r in routes] == [
        "0.0.0.0/0",
        "192.168.0.0/24",
        "10.0.0.0/8",
        "10.0.0.0/8",
        "10.0.100.0/24",
    ]  # the route without RTF_UP is dropped
    assert routes[0].gateway == "192.168.0.1" and routes[0].metric == 100
    assert lookup(routes, "192.168.0.77").interface == "eth0"
    assert lookup(routes, "8.8.8.8").interface == "eth0"  # default
    assert lookup(routes, "10.0.100.9").interface == "eth1"  # /24 beats /8
    assert lookup(routes, "10.9.9.9").interface == "wg0"  # same /8: lower metric wins
    assert lookup(routes, "2001:db8::1") is None  # no IPv6 routes given


def test_ipv6_routes() -> None:
    routes = parse_ipv6_route(IPV6_ROUTE)
    assert [str(r.network) for r in routes] == [
        "2001:db8::/32",
        "2001:db8:1::/64",
        "::/0",
    ]  # reject route dropped
    assert routes[2].gateway == "fe80::1" and routes[2].metric == 0x400
    assert lookup(routes, "2001:db8:1::20").interface == "eth2"
    assert lookup(routes, "2001:db8:2::20").interface == "eth1"
    assert lookup(routes, "2606:4700::1").interface == "eth0"


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=32))
def test_route_lookup_matches_ipaddress_membership(address: int, prefix: int) -> None:
    """Against an independent reference: the route picked is the longest prefix containing it."""
    network = ipaddress.IPv4Network((address, prefix), strict=False)
    le = lambda a: f"{struct.unpack('<I', a.packed)[0]:08X}"  # noqa: E731
    text = (
        ROUTE.splitlines()[0]
        + "\n"
        + "x0\t00000000\t01010101\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        + (
            f"x1\t{le(network.network_address)}\t00000000\t0001\t0\t0\t0\t{le(network.netmask)}\t0\t0\t0\n"
        )
    )
    routes = parse_route(text)
    probe = ipaddress.IPv4Address(address ^ 1)
    expected = "x1" if probe in network else "x0"
    assert lookup(routes, str(probe)).interface == expected


def test_local_addresses_route_through_lo() -> None:
    trie = (
        "Local:\n  +-- 0.0.0.0/0 3 0 5\n"
        "     |-- 10.0.0.2\n        /32 host LOCAL\n"
        "     |-- 127.0.0.0\n        /8 host LOCAL\n"
    )
    routes = parse_route(ROUTE) + parse_local_ipv4(trie)
    assert lookup(routes, "10.0.0.2").interface == "lo"
    assert lookup(routes, "127.3.4.5").interface == "lo"
    assert lookup(routes, "10.0.0.3").interface == "wg0"


def _type17(width: int, size: int, speed: int, configured: int, extended: int = 0) -> bytes:
    body = bytearray(0x28)
    body[0], body[1] = 17, 0x28
    struct.pack_into("<H", body, 0x0A, width)
    struct.pack_into("<H", body, 0x0C, size)
    struct.pack_into("<H", body, 0x15, speed)
    struct.pack_into("<I", body, 0x1C, extended)
    struct.pack_into("<H", body, 0x20, configured)
    return bytes(body) + b"\0\0"


def test_smbios_type17() -> None:
    dimm = parse_type17(_type17(64, 8192, 3200, 2666))
    assert dimm.size_bytes == 8 * 1024**3 and dimm.configured_speed_mts == 2666
    assert dimm.bandwidth == pytest.approx(2666e6 * 8)  # 21.3 GB/s
    big = parse_type17(_type17(64, 0x7FFF, 4800, 4800, extended=65536))
    assert big.size_bytes == 64 * 1024**3
    small = parse_type17(_type17(64, 0x8000 | 512, 1600, 0))  # size in KiB, no configured speed
    assert small.size_bytes == 512 * 1024 and small.bandwidth == pytest.approx(1600e6 * 8)
    assert parse_type17(_type17(64, 0, 0, 0)).bandwidth is None  # empty slot
    assert parse_type17(b"\x10" + bytes(30)) is None  # not type 17


@pytest.mark.parametrize(
    ("level", "direction", "members", "expected"),
    [
        ("raid0", "write", [100.0, 200.0], 300.0),
        ("raid1", "read", [100.0, 200.0], 300.0),
        ("raid1", "write", [100.0, 200.0], 100.0),
        ("raid10", "write", [100.0] * 4, 200.0),
        ("raid5", "read", [100.0, 90.0, 100.0, 100.0], 270.0),  # 3 data members at the slowest
        ("raid6", "write", [100.0] * 6, 400.0),
        ("linear", "write", [100.0, 50.0], 50.0),
        ("raid6", "write", [100.0, 100.0], None),  # not a valid array: no number
        ("multipath", "read", [100.0], None),
    ],
)
def test_md_layouts(
    level: str, direction: str, members: list[float], expected: float | None
) -> None:
    from pilot_sys.topology.derive import md_limit

    result = md_limit(level, members, direction)
    assert (result[0] if result else None) == expected
