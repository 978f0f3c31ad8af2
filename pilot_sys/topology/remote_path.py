"""Declared remote hosts in the component graph, and the data path through them.

``add_host`` merges a host's inventory (``remote_inventory.inventory_discovery``) into this
machine's graph and joins the two with the link component ``network:host~NAME``: from the local
NIC that routes to the host's address to the host's NIC that holds that address. The link's
capacity per direction is the slower end's, and the local end counts with its *effective* limit
(a qdisc shaping the interface binds the link as much as a slower NIC would).

``remote_paths`` continues a local data path that ends at that NIC: through the link and the
host's NIC into its memory and CPU (every server handles its data with both), on to its GPUs
where its engine reports some, and down to the disk under a path on the host when the workload
names one (the files of a fio job that a fio
server runs). The component under test is then the disk under that path, or else the link: a
network benchmark measures the path between the hosts.
"""

from __future__ import annotations

import re

from pilot_sys.topology.components import Component, ComponentKind, Discovery
from pilot_sys.topology.effective import applied_limit, with_limiters
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.mountinfo import mount_for
from pilot_sys.topology.remote_hosts import LOCAL_HOST
from pilot_sys.topology.remote_inventory import (
    RemoteInventory,
    cpu_id,
    host_link,
    inventory_discovery,
    link_id,
    memory_id,
    nic_id,
    nic_on_path,
)
from pilot_sys.topology.routes import Route, lookup, resolve_host


def _with_effective_limits(graph: ComponentGraph, component: Component) -> Component:
    """``component`` with each send/receive limit replaced by the one utilization is judged
    against (a qdisc's rate when it is tighter than the link speed), naming where it came from."""
    limits = dict(component.limits)
    for key in ("send", "receive"):
        applied = applied_limit(graph, component.id, key)
        if applied.applied == "effective" and applied.effective is not None:
            limits[key] = applied.effective.model_copy(
                update={"detail": f"{applied.effective.detail} (imposed by {applied.imposed_by})"}
            )
    return component.model_copy(update={"limits": limits})


def add_host(
    graph: ComponentGraph, inventory: RemoteInventory, address: str, routes: list[Route]
) -> list[str]:
    """Merge ``inventory``'s components into ``graph`` and link the host to the local NIC that
    routes to ``address``; returns notes on what could not be placed."""
    host = inventory.host
    notes: list[str] = []
    discovery = inventory_discovery(inventory)
    for component in discovery.components:
        graph.add_component(component)
    for link in discovery.links:
        if link.source in graph and link.target in graph:
            graph.add_link(link)
    if discovery.unreadable:
        graph.unreadable[discovery.plugin] = list(discovery.unreadable)
    local, why_local = _local_nic(graph, address, routes)
    remote_nic, why_remote = nic_on_path(inventory, resolve_host(address) or address)
    remote = graph.component(nic_id(host, remote_nic.name)) if remote_nic is not None else None
    why = "; ".join(w for w, c in ((why_local, local), (why_remote, remote)) if c is None)
    if why:
        notes.append(f"host {host}: {why}: the link's capacity is unknown")
    _merge(graph, host_link(local, remote, host, why))
    return notes


def add_unanswered_host(
    graph: ComponentGraph, host: str, address: str, routes: list[Route], why: str
) -> None:
    """A declared host whose engine did not answer: only the link, from the local NIC that
    routes to it, with unknown capacity (its inside is unknown until it answers)."""
    local, _ = _local_nic(graph, address, routes)
    _merge(graph, host_link(local, None, host, f"{host} did not answer ({why})"))


def _local_nic(
    graph: ComponentGraph, address: str, routes: list[Route]
) -> tuple[Component | None, str]:
    resolved = resolve_host(address)
    if resolved is None:
        return None, f"{address} does not resolve here"
    route = lookup(routes, resolved)
    if route is None:
        return None, f"no route to {resolved}"
    nic = f"nic:{route.interface}"
    if nic not in graph:
        return None, f"routing interface {route.interface} not in the graph"
    return _with_effective_limits(graph, graph.component(nic)), ""


def _merge(graph: ComponentGraph, discovery: Discovery) -> None:
    for component in discovery.components:
        graph.add_component(component)
    for link in discovery.links:
        graph.add_link(link)


def local_nic_of(graph: ComponentGraph, host: str) -> str | None:
    """The local NIC the link to ``host`` leaves from (None: no link, or its end is unknown)."""
    lid = link_id(LOCAL_HOST, host)
    if lid not in graph:
        return None
    nics = graph.component(lid).attrs.get("nics") or [None, None]
    return nics[0] if nics[0] in graph else None


def remote_nic_of(graph: ComponentGraph, host: str) -> str | None:
    lid = link_id(LOCAL_HOST, host)
    if lid not in graph:
        return None
    nics = graph.component(lid).attrs.get("nics") or [None, None]
    return nics[1] if len(nics) > 1 and nics[1] in graph else None


def _remote_storage(graph: ComponentGraph, host: str, path: str) -> list[str]:
    """``[block, mount]`` under ``path`` on ``host`` (the longest mount point holding it), or
    ``[mount]`` when its disk is unknown; [] when no file system of the host holds it."""
    prefix = f"mount:{host}"
    mounts = {
        c.name: c for c in graph.components(ComponentKind.MOUNT) if c.id.startswith(prefix + "/")
    }
    mount = mount_for(path, mounts)
    if mount is None:
        return []
    device = str(mount.attrs.get("device") or "").removeprefix("/dev/")
    # a partition the engine does not list as a disk (node_exporter leaves vda1 out): its disk
    for name in (device, re.sub(r"(?<=\d)p\d+$|(?<=[a-z])\d+$", "", device)):
        if name and f"block:{host}/{name}" in graph:
            return [f"block:{host}/{name}", mount.id]
    return [mount.id]


def _remote_gpus(graph: ComponentGraph, host: str) -> list[str]:
    """The host's GPUs (dcgm-exporter's): what a GPU server does with the data it receives is
    the GPUs' work, so they are on its path (which process uses them is not exported)."""
    return sorted(
        c.id
        for c in graph.components(ComponentKind.ACCELERATOR)
        if c.id.startswith(f"accelerator:{host}/")
    )


def remote_paths(
    graph: ComponentGraph, host: str, local_paths: list[list[str]], path_on_host: str | None
) -> tuple[list[list[str]], str | None]:
    """The local paths to the NIC continued into ``host``, and the component under test."""
    lid = link_id(LOCAL_HOST, host)
    if lid not in graph:
        return local_paths, local_paths[0][-1] if local_paths and local_paths[0] else None
    tail = [lid]
    nic = remote_nic_of(graph, host)
    memory, cpu = memory_id(host), cpu_id(host)
    if nic is not None:
        tail.append(nic)
    inside = memory in graph and nic is not None
    storage = _remote_storage(graph, host, path_on_host) if path_on_host and inside else []
    paths: list[list[str]] = []
    for path in local_paths or [[]]:
        prefix = with_limiters(graph, path + tail)
        if inside:
            paths.append(prefix + [memory, cpu] if cpu in graph else prefix + [memory])
            if storage:
                paths.append(prefix + [memory, *storage])
            paths += [prefix + [memory, gpu] for gpu in _remote_gpus(graph, host)]
        else:
            paths.append(prefix)
    blocks = [node for node in storage if node.startswith("block:")]
    return paths, blocks[0] if blocks else lid


def host_components(graph: ComponentGraph, host: str) -> list[str]:
    """Every component of ``host`` in the graph (``KIND:HOST`` and ``KIND:HOST/NAME``)."""
    return sorted(
        c.id
        for c in graph.components()
        if c.id.split(":", 1)[-1] == host or c.id.split(":", 1)[-1].startswith(host + "/")
    )
