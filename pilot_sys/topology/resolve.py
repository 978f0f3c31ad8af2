"""Resolve a workload's arguments to data paths through the component graph (seed paper §III-B:
"Pilot scans the list of parameters to identify file system paths").

An argument can be an existing path, the parent of a file to be created, a device file, a fio or
dd style option (``--filename=/x``, ``--directory=/d``, ``of=/x``, ``if=/x``), or a host (an IP
literal, or the value of ``-c``/``--client``) which resolves to the interface routing to it.

A host that was declared with ``--host`` (its inventory merged into the graph by
``remote_graph``) does not end at the routing interface: the path goes on through the link
between the hosts (``network:host~NAME``), the host's NIC and memory to its CPU, and to the disk
under the path when the argument names one on that host (``host:NAME:/PATH``, a fio server's
job files). ``hosts`` maps what the arguments call such a host (its name or address as written)
to its declared name.

The component under test (CUT) is the *end of the data path that has a bandwidth of its own*:
a mount has none, a partition or a device-mapper volume only forwards to what lies below, and a
loop device to the file holding it. So for a file the CUT is the physical device under it
(``block:vda`` for a file on / here), the md array for a RAID, memory for tmpfs, the remote host
for a network file system, the routing NIC for a host.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from pilot_sys.errors import BadInput
from pilot_sys.topology.components import ComponentKind
from pilot_sys.topology.effective import with_limiters
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.mountinfo import mount_for
from pilot_sys.topology.remote_path import local_nic_of, remote_paths
from pilot_sys.topology.routes import Route, lookup, read_routes, resolve_host
from pilot_sys.topology.sysroot import SysRoot
from pilot_sys.workload.command_line import HOST_PREFIX, host_of, split_host_argument

HOST_OPTIONS = {"-c", "--client", "-H", "--host", "--server-host"}
FILE_KEYS = {"filename", "directory", "of", "if", "file", "dir", "path", "target"}
SKIP_KEY_PARTS = ("log", "output", "result", "json", "config")
CUT_BLOCK_ROLES = {"disk", "md", "zram"}


class ResolvedArgument(BaseModel):
    argument: str  # as given
    target: str  # the path, device or host taken from it
    host: str | None = None  # the declared remote host it reaches (``--host NAME=URL``)
    kind: Literal["path", "new-file", "device", "host"]
    component: str  # where the argument lands: a mount, a block device, a NIC
    paths: list[list[str]]
    cut: str | None


class DataPath(BaseModel):
    """The data paths of a workload's arguments, and the default component under test."""

    arguments: list[ResolvedArgument] = Field(default_factory=list)
    paths: list[list[str]] = Field(default_factory=list)
    cut: str | None = None
    components: list[str] = Field(default_factory=list)
    # "ARG: why", arguments skipped (not strict)
    unresolved: list[str] = Field(default_factory=list)


def _split_fio_names(value: str) -> list[str]:
    """fio separates several files with ':' (``\\:`` escapes a literal colon)."""
    parts, current, i = [], "", 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value) and value[i + 1] == ":":
            current += ":"
            i += 2
            continue
        if value[i] == ":":
            parts.append(current)
            current = ""
        else:
            current += value[i]
        i += 1
    parts.append(current)
    return [p for p in parts if p]


def candidates(args: list[str]) -> list[tuple[str, str, bool]]:
    """``(argument, value, explicit)`` pairs worth resolving; ``explicit`` marks values that are
    files by their option (``of=``, ``--filename=``) or hosts by theirs (``-c``)."""
    found: list[tuple[str, str, bool]] = []
    host_next = False
    for arg in args:
        if host_next:
            if host_of(arg) is not None:  # ``-c SCRIPT`` of another program is no host
                found.append((arg, "host:" + arg, True))
            host_next = False
            continue
        if arg in HOST_OPTIONS:
            host_next = True
            continue
        if "=" in arg and not arg.startswith("/"):
            key, _, value = arg.partition("=")
            key_name = key.lstrip("-").lower()
            if not value or any(part in key_name for part in SKIP_KEY_PARTS):
                continue
            if key.lstrip("-") in ("c", "client", "host"):
                if host_of(value) is not None:
                    found.append((arg, "host:" + value, True))
                continue
            values = _split_fio_names(value) if key_name == "filename" else [value]
            explicit = key_name in FILE_KEYS
            found += [
                (arg, v, explicit)
                for v in values
                if explicit or v.startswith(("/", "./", "../", "~"))
            ]
            continue
        if arg.startswith("-"):
            continue
        found.append((arg, arg, False))
    return found


class _Resolver:
    def __init__(self, graph: ComponentGraph, root: str | Path | None) -> None:
        self.graph = graph
        self.sysroot = SysRoot(root if root is not None else graph.g.graph.get("root", "/"))
        self.mounts = {c.name: c for c in graph.components(ComponentKind.MOUNT)}
        self._routes: list[Route] | None = None
        self.devnums = {c.attrs.get("devnum"): c.id for c in graph.components(ComponentKind.BLOCK)}

    # -- what an argument is --------------------------------------------------------------
    def classify(self, value: str, explicit: bool, strict: bool) -> tuple[str, str] | None:
        if value.startswith(HOST_PREFIX):
            if not split_host_argument(value)[0].strip():
                raise BadInput(repr(value), "empty host name after host:")
            return "host", value[5:]
        if strict and not value.strip():
            raise BadInput(repr(value), "empty argument: name a path, device or host")
        if strict and value.startswith("-"):
            raise BadInput(value, "looks like an option, not a path, device or host")
        path = os.path.expanduser(value)
        if not self.sysroot.live and os.path.isabs(path):
            # A captured /proc and /sys tree holds no file contents: take absolute paths as given.
            return ("device", path) if self._device_by_name(path) else ("path", path)
        full = path
        if os.path.lexists(full):
            return ("device", path) if self._is_block_device(full) else ("path", path)
        if _is_ip(value):
            return "host", value
        parent = os.path.dirname(os.path.abspath(full))
        if strict and os.path.abspath(full).startswith("/dev/"):
            # devtmpfs would take a new file, but a device the user names must exist
            raise BadInput(value, "no such device; `lsblk` lists the block devices of this host")
        # A workload's explicit file option (fio --filename=x) names a file to be created; a bare
        # word given to `graph` (strict) is a host first: "nas01" must not become ./nas01.
        if ("/" in value or (explicit and not strict)) and os.path.isdir(parent):
            return "new-file", path
        if strict and "/" not in value and resolve_host(value) is not None:
            return "host", value
        if strict and os.path.isdir(parent):
            return "new-file", path
        if strict:
            raise BadInput(
                value,
                "no such file or directory, its parent does not exist either, and it is not a host",
            )
        return None

    @staticmethod
    def _is_block_device(path: str) -> bool:
        try:
            return stat.S_ISBLK(os.stat(path).st_mode)
        except OSError:
            return False

    def _device_by_name(self, path: str) -> str | None:
        """Fixture trees have no device nodes: map /dev names through sysfs instead."""
        if path.startswith("/dev/mapper/"):
            name = path.removeprefix("/dev/mapper/")
            for c in self.graph.components(ComponentKind.BLOCK):
                if c.attrs.get("dm_name") == name:
                    return c.id
            return None
        if path.startswith("/dev/"):
            bid = "block:" + path.removeprefix("/dev/").replace("/", "!")
            return bid if bid in self.graph else None
        return None

    # -- where it lands -------------------------------------------------------------------
    def landing(self, kind: str, target: str) -> str:
        if kind == "host":
            return self._host(target)
        if kind == "device":
            return self._device(target)
        path = target
        if self.sysroot.live:
            path = os.path.realpath(path)
        elif not os.path.isabs(path):
            path = "/" + path
        entry = mount_for(path, self.mounts)
        if entry is None:
            raise BadInput(target, "no mounted file system holds this path")
        return entry.id

    def _device(self, path: str) -> str:
        if self.sysroot.live:
            rdev = os.stat(path).st_rdev
            found = self.devnums.get(f"{os.major(rdev)}:{os.minor(rdev)}")
            if found:
                return found
        found = self._device_by_name(os.path.realpath(path) if self.sysroot.live else path)
        if found is None:
            raise BadInput(path, "block device not found in the discovered graph")
        return found

    def _host(self, target: str) -> str:
        host, _path = split_host_argument(target)
        address = resolve_host(host)
        if address is None:
            raise BadInput(host, "host name does not resolve")
        if self._routes is None:
            self._routes = read_routes(self.sysroot)
        route = lookup(self._routes, address)
        if route is None:
            raise BadInput(
                host, f"no route to {address} in /proc/net/route or /proc/net/ipv6_route"
            )
        nic = f"nic:{route.interface}"
        if nic not in self.graph:
            raise BadInput(host, f"routing interface {route.interface} not in the discovered graph")
        return nic

    # -- paths and the component under test -----------------------------------------------
    def paths(self, component: str, *, remote: bool = True) -> list[list[str]]:
        """From the CPU to ``component``; a NIC's paths go on to its network unless a declared
        host's link takes over (``remote=False``)."""
        paths = self.graph.paths_to(component) or [[component]]
        network = component.replace("nic:", "network:", 1)
        if remote and component.startswith("nic:") and network in self.graph:
            paths = [p + [network] for p in paths]
        # kernel-imposed limits (cgroup quota and throttles, qdisc) join just before what they limit
        return [with_limiters(self.graph, p) for p in paths]

    def cut(self, component: str, paths: list[list[str]]) -> str:
        if component.startswith("nic:"):
            return component
        for node in reversed(paths[0]):
            c = self.graph.component(node)
            if c.kind == ComponentKind.REMOTE or c.kind == ComponentKind.MEMORY:
                return node
            if c.kind == ComponentKind.BLOCK and c.attrs.get("role") in CUT_BLOCK_ROLES:
                return node
        return component


def is_command(arg: str) -> bool:
    """``arg`` names a program on PATH and nothing in the current directory: the start of a
    command line (``graph -- iperf3 -c HOST``), not a path, device or host."""
    return os.sep not in arg and not os.path.exists(arg) and shutil.which(arg) is not None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def resolve(
    graph: ComponentGraph,
    args: list[str],
    *,
    root: str | Path | None = None,
    strict: bool = False,
    hosts: Mapping[str, str] | None = None,
) -> DataPath:
    """The data paths of ``args`` through ``graph``.

    Arguments that are none of path, device or host are ignored (a workload's other options);
    with ``strict`` (the ``graph`` command, whose every argument must resolve) they raise
    ``BadInput``. ``root`` defaults to the root the graph was discovered from. ``hosts``: what
    the arguments call each declared remote host (lower case) -> its declared name.
    """
    declared = {k.lower().rstrip("."): v for k, v in (hosts or {}).items()}
    resolver = _Resolver(graph, root)
    if not strict and args and is_command(args[0]):
        # a whole command line (tests, scripts): its program is not its data. The commands give
        # ``workload.command_line.data_paths`` instead, where a path is never taken for a program.
        args = args[1:]
    resolved: list[ResolvedArgument] = []
    unresolved: list[str] = []
    for argument, value, explicit in (
        candidates(args) if not strict else [(a, a, True) for a in args]
    ):
        classified = resolver.classify(value, explicit, strict)
        if classified is None:
            continue
        kind, target = classified
        host = split_host_argument(target)[0].lower().rstrip(".")
        name = declared.get(host) if kind == "host" else None
        if name is not None and local_nic_of(graph, name) is not None:
            component = str(local_nic_of(graph, name))  # the interface the host's link leaves from
        else:
            try:
                component = resolver.landing(kind, target)
            except BadInput as exc:
                if strict:
                    raise
                unresolved.append(str(exc))  # an odd argument must not stop the monitoring
                continue
        paths = resolver.paths(component, remote=name is None)
        cut = resolver.cut(component, paths)
        if name is not None:
            paths, cut = remote_paths(graph, name, paths, split_host_argument(target)[1])
        resolved.append(
            ResolvedArgument(
                argument=argument,
                target=target,
                host=name,
                kind=kind,  # type: ignore[arg-type]
                component=component,
                paths=paths,
                cut=cut,
            )
        )
    all_paths: list[list[str]] = []
    for item in resolved:
        all_paths += [p for p in item.paths if p not in all_paths]
    cuts = [r.cut for r in resolved if r.cut]
    # A source like /dev/zero (memory) is rarely what is under test: prefer a storage or
    # network CUT.
    preferred = [c for c in cuts if not c.startswith("memory:")] or cuts
    return DataPath(
        arguments=resolved,
        paths=all_paths,
        cut=preferred[0] if preferred else None,
        components=sorted({node for path in all_paths for node in path}),
        unresolved=unresolved,
    )
