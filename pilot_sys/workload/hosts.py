"""Which remote hosts a workload's command line puts on its data path, and which of them were
declared with ``--host`` (so they can be monitored) and which were not (a loud note, never
silence: the far end of the data path may be the bottleneck).

Hosts are found in iperf3's ``-c HOST``, fio's ``--client=HOST`` (client/server mode; a file
of host names is read), the host options other tools share (``-H``, ``--host``, ``-c`` as the
data-path resolver reads them), and the server of a network file system (NFS, CIFS, ...) that
holds one of the workload's files.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import BaseModel, Field

from pilot_sys.topology.mountinfo import MountEntry, mount_for, remote_host
from pilot_sys.topology.remote_hosts import RemoteHost
from pilot_sys.workload.command_line import HOST_PREFIX, data_paths, host_arguments

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class HostMention(BaseModel):
    """A host the workload talks to: ``host`` without port or protocol prefix."""

    host: str
    argument: str  # the argument (or mount) it was read from
    role: str  # e.g. "iperf3 server", "fio server", "nfs server of /mnt/data"


class HostMatch(BaseModel):
    """Mentions split by whether a declared host answers for them."""

    matched: dict[str, list[HostMention]] = Field(default_factory=dict)  # declared name -> mentions
    undeclared: list[HostMention] = Field(default_factory=list)  # one per host, first mention
    # loopback: this machine, monitored anyway
    local: list[HostMention] = Field(default_factory=list)


def mentioned_hosts(
    argv: list[str], *, cwd: Path, mounts: Mapping[str, MountEntry] | None = None
) -> list[HostMention]:
    """Every remote host ``argv`` names or reaches through a network file system.

    ``mounts`` maps mount points to entries (``visible_mounts(parse_mountinfo(...))``); without
    it network file systems are not looked at.
    """
    if not argv:
        return []
    found = host_arguments(argv, cwd)
    mentions = [HostMention(host=m.host, argument=m.argument, role=m.role) for m in found]
    # In fio's client/server mode the job's files are on the servers, not on this machine.
    client_mode = any(m.role == "fio server" for m in mentions)
    if mounts and not client_mode:
        for path in data_paths(argv, cwd):
            if path.startswith(HOST_PREFIX):
                continue
            full = os.path.realpath(path if os.path.isabs(path) else cwd / path)
            entry = mount_for(full, mounts)
            if entry is not None and entry.is_network and (server := remote_host(entry)):
                mentions.append(
                    HostMention(
                        host=server,
                        argument=path,
                        role=f"{entry.fstype} server of {entry.mountpoint}",
                    )
                )
    return mentions


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def match_hosts(
    mentions: list[HostMention],
    declared: list[RemoteHost],
    resolve: Callable[[str], str | None] | None = None,
) -> HostMatch:
    """Pair each mention with the declared host it names: by name, by the URL's address, or,
    when ``resolve`` (name -> address) is given, by the address both resolve to. Without
    ``resolve`` the function does no I/O."""

    def key(text: str) -> str:
        return text.lower().rstrip(".")

    by_key: dict[str, RemoteHost] = {}
    for host in declared:
        by_key.setdefault(key(host.name), host)
        by_key.setdefault(key(host.address), host)
    if resolve is not None:
        for host in declared:
            address = resolve(host.address)
            if address:
                by_key.setdefault(key(address), host)
    result = HostMatch()
    reported: set[str] = set()
    for mention in mentions:
        host = by_key.get(key(mention.host))
        if host is None and resolve is not None and (address := resolve(mention.host)):
            host = by_key.get(key(address))
            if host is None and _is_loopback(address):
                result.local.append(mention)
                continue
        if host is not None:
            result.matched.setdefault(host.name, []).append(mention)
        elif _is_loopback(mention.host):
            result.local.append(mention)
        elif key(mention.host) not in reported:
            reported.add(key(mention.host))
            result.undeclared.append(mention)
    return result
