"""The data path of a workload, found the same way by ``run``, ``monitor`` and ``graph``.

One function, ``find_data_path``: the component graph of this machine (discovered unless
given), each declared remote host's inventory merged into it (``--host NAME=URL``, asked of the
host's engine in parallel, each within a timeout), and the data-path arguments resolved through
it. The arguments are what ``workload.command_line.data_paths`` reads from a command line (files,
directories, devices, ``host:NAME``) or a built-in workload's directory; ``graph``'s own
targets are resolved strictly (each must be a path, device or host).

Hosts the arguments name are matched to the declared ones (by name, by the URL's address, by
what both resolve to); a host on the data path that nobody declared is a loud note, and so is a
declared host whose engine did not answer (its link is kept, with unknown capacity, and its
source keeps trying during the rounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.monitor.remote.http import RemoteUnavailable
from pilot_sys.topology.remote_hosts import RemoteHost
from pilot_sys.topology.remote_inventory import RemoteInventory
from pilot_sys.workload.command_line import HOST_PREFIX, host_argument, split_host_argument
from pilot_sys.workload.hosts import HostMention, match_hosts

INVENTORY_TIMEOUT_S = 3.0  # per host: an engine that does not answer in this time is reported
MAX_PARALLEL_INVENTORIES = 16


class FoundPath(BaseModel):
    """The graph, the data path (None when nothing resolved) and what a person must be told."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    graph: Any
    data_path: Any = None  # topology.resolve.DataPath
    notes: list[str] = Field(default_factory=list)
    loud: list[str] = Field(default_factory=list)  # to be shown as warnings, not only kept
    hosts: list[RemoteHost] = Field(default_factory=list)  # declared, in the order given
    on_path: list[str] = Field(default_factory=list)  # declared host names on the data path
    answered: list[str] = Field(default_factory=list)  # declared hosts whose inventory came


def fetch_inventories(
    hosts: Sequence[RemoteHost], timeout: float = INVENTORY_TIMEOUT_S
) -> dict[str, RemoteInventory | str]:
    """Each host's inventory, or why it could not be had, asked of all hosts at once."""
    from pilot_sys.monitor.remote.clients import connect, prepare

    def one(host: RemoteHost) -> RemoteInventory | str:
        client = connect(host, timeout)
        try:
            return client.inventory()
        except RemoteUnavailable as exc:
            return str(exc)
        except (ValueError, KeyError) as exc:  # an answer that is not what the engine sends
            return f"{host.base_url}: unexpected answer ({type(exc).__name__}: {exc})"
        finally:
            client.close()

    if not hosts:
        return {}
    prepare(hosts)
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_INVENTORIES, len(hosts))) as pool:
        return dict(zip([h.name for h in hosts], pool.map(one, hosts), strict=True))


def _host_name_of(target: str, hosts: Sequence[RemoteHost]) -> str | None:
    key = target.lower().rstrip(".")
    for host in hosts:
        if key in (host.name.lower(), host.address.lower()):
            return host.name
    return None


def find_data_path(
    args: Sequence[str],
    *,
    hosts: Sequence[RemoteHost] = (),
    graph: Any = None,
    root: str | Path = "/",
    strict: bool = False,
    inventories: dict[str, RemoteInventory | str] | None = None,
) -> FoundPath:
    """The graph with the declared hosts in it and the data path of ``args`` (see the module
    docstring). ``strict``: every argument must resolve (``graph``'s targets; a declared host's
    name or address stands for that host). ``inventories`` (host name -> inventory or why not)
    skips asking the engines."""
    from pilot_sys.topology.discover import discover
    from pilot_sys.topology.remote_path import add_host, add_unanswered_host
    from pilot_sys.topology.resolve import resolve
    from pilot_sys.topology.routes import read_routes, resolve_host
    from pilot_sys.topology.sysroot import SysRoot

    found = FoundPath(graph=graph if graph is not None else discover(root), hosts=list(hosts))
    args = list(args)
    if strict:  # graph's targets: a declared host's name or address is that host
        args = [
            host_argument(a) if not a.startswith(HOST_PREFIX) and _host_name_of(a, hosts) else a
            for a in args
        ]
    if hosts:
        routes = read_routes(SysRoot(root))
        answers = inventories if inventories is not None else fetch_inventories(hosts)
        for host in hosts:
            answer = answers.get(host.name, "not asked")
            if isinstance(answer, RemoteInventory):
                found.notes += add_host(found.graph, answer, host.address, routes)
                found.answered.append(host.name)
                found.notes += [f"host {host.name}: {note}" for note in answer.notes]
            else:
                add_unanswered_host(found.graph, host.name, host.address, routes, answer)
                found.loud.append(
                    f"host {host.name} ({host.spec}) did not answer: {answer}; its components are "
                    "unknown, its samples are tried during the rounds"
                )
    mentions = [
        HostMention(host=split_host_argument(a)[0], argument=a, role="workload argument")
        for a in args
        if a.startswith(HOST_PREFIX)
    ]
    matched = match_hosts(mentions, list(hosts), resolve=resolve_host)
    names = {m.host: name for name, ms in matched.matched.items() for m in ms}
    data_path = found.data_path = resolve(found.graph, args, root=root, strict=strict, hosts=names)
    mounts_mentions = _network_mount_servers(found.graph, data_path)
    more = match_hosts(mounts_mentions, list(hosts), resolve=resolve_host)
    for name, ms in more.matched.items():
        matched.matched.setdefault(name, []).extend(ms)
        _add_host_to_path(found.graph, data_path, name)
    for mention in [*matched.undeclared, *more.undeclared]:
        found.loud.append(
            f"server {mention.host} is on the data path but not monitored "
            f"(add --host {_suggested_name(mention.host)}=http://{mention.host}:9100)"
        )
    found.on_path = [h.name for h in hosts if h.name in matched.matched]
    return found


def _suggested_name(host: str) -> str:
    name = host.split(".")[0] if not host.replace(".", "").isdigit() else host
    return name if name and name != "host" else "srv"


def _network_mount_servers(graph: Any, data_path: Any) -> list[HostMention]:
    """The servers of network file systems the arguments landed on (NFS, CIFS, ...)."""
    mentions = []
    for argument in getattr(data_path, "arguments", []):
        if argument.kind == "host" or argument.component not in graph:
            continue
        attrs = graph.component(argument.component).attrs
        server = attrs.get("remote_host")
        if attrs.get("network") and server:
            mentions.append(
                HostMention(
                    host=str(server),
                    argument=argument.argument,
                    role=f"{attrs.get('fstype')} server of {argument.component}",
                )
            )
    return mentions


def _add_host_to_path(graph: Any, data_path: Any, name: str) -> None:
    """A declared host reached through a network file system: its link, NIC, memory and CPU
    join the data path's components (the file system's own path already ends at the server)."""
    from pilot_sys.topology.remote_path import remote_paths

    paths, _ = remote_paths(graph, name, [[]], None)
    extra = {node for path in paths for node in path}
    data_path.components = sorted(set(data_path.components) | extra)


def command_data_path(
    argv: Sequence[str],
    *,
    hosts: Sequence[RemoteHost] = (),
    graph: Any = None,
    root: str | Path = "/",
    cwd: Path | None = None,
) -> FoundPath:
    """``find_data_path`` of a command line: its data-path arguments as
    ``workload.command_line.data_paths`` reads them (what ``run`` resolves for the same command)."""
    from pilot_sys.workload.command_line import data_paths

    args = data_paths(list(argv), cwd or Path.cwd())
    return find_data_path(args, hosts=hosts, graph=graph, root=root)
