"""Which interface routes to an address: longest-prefix match over ``/proc/net/route`` and
``/proc/net/ipv6_route`` as the kernel prints them (the kernel's main table, not policy rules).

``/proc/net/route``: tab-separated, destination/gateway/mask as little-endian hex of the
network-order address. ``/proc/net/ipv6_route``: destination (32 hex), prefix length (hex),
source, source prefix, next hop, metric, refcnt, use, flags, device.
"""

from __future__ import annotations

import ipaddress
import socket
import struct

from pydantic import BaseModel

from pilot_sys.topology.sysroot import SysRoot

RTF_UP = 0x0001
RTF_REJECT = 0x0200


class Route(BaseModel):
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    gateway: str | None
    metric: int
    interface: str


def _le_hex_to_ipv4(text: str) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(struct.pack("<I", int(text, 16)))


def parse_route(text: str) -> list[Route]:
    routes: list[Route] = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        flags = int(fields[3], 16)
        if not flags & RTF_UP or flags & RTF_REJECT:
            continue
        dest, gateway, mask = (_le_hex_to_ipv4(fields[i]) for i in (1, 2, 7))
        prefix = bin(int(mask)).count("1")
        routes.append(
            Route(
                network=ipaddress.IPv4Network(f"{dest}/{prefix}", strict=False),
                gateway=None if int(gateway) == 0 else str(gateway),
                metric=int(fields[6]),
                interface=fields[0],
            )
        )
    return routes


def parse_ipv6_route(text: str) -> list[Route]:
    routes: list[Route] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 10:
            continue
        flags = int(fields[8], 16)
        if not flags & RTF_UP or flags & RTF_REJECT:
            continue
        dest = ipaddress.IPv6Address(bytes.fromhex(fields[0]))
        hop = ipaddress.IPv6Address(bytes.fromhex(fields[4]))
        routes.append(
            Route(
                network=ipaddress.IPv6Network(f"{dest}/{int(fields[1], 16)}", strict=False),
                gateway=None if int(hop) == 0 else str(hop),
                metric=int(fields[5], 16),
                interface=fields[9],
            )
        )
    return routes


def parse_local_ipv4(fib_trie: str) -> list[Route]:
    """Addresses of this host from ``/proc/net/fib_trie`` (``|-- ADDR`` then ``/N host LOCAL``).

    /proc/net/route shows only the main table; traffic to the host's own addresses (the local
    table, 127.0.0.0/8 included) goes through ``lo``.
    """
    routes: list[Route] = []
    last: str | None = None
    for line in fib_trie.splitlines():
        text = line.strip()
        if text.startswith("|-- "):
            last = text[4:]
        elif last is not None and text.endswith("host LOCAL") and text.startswith("/"):
            prefix = int(text.split()[0][1:])
            network = ipaddress.IPv4Network(f"{last}/{prefix}", strict=False)
            routes.append(Route(network=network, gateway=None, metric=0, interface="lo"))
    return list({str(r.network): r for r in routes}.values())


def parse_local_ipv6(if_inet6: str) -> list[Route]:
    """Addresses of this host from ``/proc/net/if_inet6`` (address, index, prefix, scope,
    flags, dev)."""
    routes: list[Route] = []
    for line in if_inet6.splitlines():
        fields = line.split()
        if len(fields) >= 6:
            addr = ipaddress.IPv6Address(bytes.fromhex(fields[0]))
            routes.append(
                Route(
                    network=ipaddress.IPv6Network(f"{addr}/128"),
                    gateway=None,
                    metric=0,
                    interface="lo",
                )
            )
    return routes


def read_routes(root: SysRoot) -> list[Route]:
    """Main-table routes plus the host's own addresses (routed through ``lo``)."""
    return (
        parse_route(root.read("/proc/net/route") or "")
        + parse_ipv6_route(root.read("/proc/net/ipv6_route") or "")
        + parse_local_ipv4(root.read("/proc/net/fib_trie") or "")
        + parse_local_ipv6(root.read("/proc/net/if_inet6") or "")
    )


def lookup(routes: list[Route], address: str) -> Route | None:
    """The route the kernel's main table would pick: longest prefix, then lowest metric."""
    try:
        addr = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    best: Route | None = None
    for route in routes:
        if route.network.version != addr.version or addr not in route.network:
            continue
        # Local addresses (interface lo, metric 0) win ties with the connected route of the
        # same prefix.
        key = (route.network.prefixlen, route.interface == "lo", -route.metric)
        if best is None or key > (best.network.prefixlen, best.interface == "lo", -best.metric):
            best = route
    return best


def resolve_host(name: str) -> str | None:
    """An IP address for a host name or literal, or None when it does not resolve."""
    try:
        return str(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        return None
    return str(infos[0][4][0]) if infos else None
