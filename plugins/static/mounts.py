"""Static plug-in: mounted file systems from ``/proc/self/mountinfo``.

A local mount hangs off its block device (found by major:minor through ``/sys/dev/block``); a
memory file system (tmpfs, ramfs, devtmpfs) off memory; a network file system off the remote
host, which hangs off the network of the interface that routes to it; an overlay off the mounts
of its upper and lower directories; a loop device off the mount holding its backing file (so
loop-in-file-on-loop chains resolve recursively). A mount has no bandwidth of its own.
"""

from __future__ import annotations

import ipaddress

from pilot_sys.topology.components import Component, ComponentKind, Discovery, Limit, Link
from pilot_sys.topology.mountinfo import (
    MountEntry,
    mount_for,
    parse_mountinfo,
    remote_host,
    visible_mounts,
)
from pilot_sys.topology.routes import lookup, read_routes, resolve_host
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "mounts"


def mount_id(mountpoint: str) -> str:
    return f"mount:{mountpoint}"


def _pair(parent: str, child: str, outward: str = "write") -> list[Link]:
    back = {"write": "read", "send": "receive"}[outward]
    return [
        Link(source=parent, target=child, direction=outward),
        Link(source=child, target=parent, direction=back),
    ]


def _device_of(root: SysRoot, entry: MountEntry, dm_names: dict[str, str]) -> str | None:
    """Block device name behind a mount: major:minor first, then the source path (btrfs and other
    file systems report an anonymous 0:N device)."""
    if root.exists(f"/sys/dev/block/{entry.devnum}"):
        return root.realpath(f"/sys/dev/block/{entry.devnum}").rsplit("/", 1)[-1]
    source = entry.source
    if source.startswith("/dev/mapper/"):
        return dm_names.get(source.removeprefix("/dev/mapper/"))
    if source.startswith("/dev/"):
        name = source.removeprefix("/dev/").replace("/", "!")
        if root.exists(f"/sys/class/block/{name}"):
            return name
    return None


def discover(root: SysRoot) -> Discovery:
    text = root.read("/proc/self/mountinfo")
    if text is None:
        return Discovery(plugin=NAME, unreadable=["/proc/self/mountinfo: missing or unreadable"])
    entries = parse_mountinfo(text)
    mounts = visible_mounts(entries)
    dm_names = {
        root.read(f"/sys/class/block/{name}/dm/name") or "": name
        for name in root.listdir("/sys/class/block")
        if name.startswith("dm-")
    }
    routes = None
    components: list[Component] = []
    links: list[Link] = []
    remotes: set[str] = set()
    whole_fs = {(e.devnum): e.mountpoint for e in mounts.values() if e.root == "/"}
    for entry in mounts.values():
        if entry.is_pseudo:
            continue
        mid = mount_id(entry.mountpoint)
        attrs: dict[str, object] = {
            "fstype": entry.fstype,
            "source": entry.source,
            "devnum": entry.devnum,
            "root": entry.root,
            "options": entry.options,
            "network": entry.is_network,
            "memory": entry.is_memory,
        }
        if entry.root != "/" and whole_fs.get(entry.devnum, entry.mountpoint) != entry.mountpoint:
            attrs["bind_of"] = whole_fs[entry.devnum]
        warnings: list[str] = []
        if entry.is_network:
            host = remote_host(entry)
            address = resolve_host(host) if host and _is_literal(host) else host
            attrs["remote_host"] = host
            if host is None:
                warnings.append("network file system without a server address in mountinfo")
                links += _pair("memory:host", mid)
            else:
                rid = f"remote:{address}"
                if rid not in remotes:
                    remotes.add(rid)
                    components.append(
                        Component(
                            id=rid,
                            kind=ComponentKind.REMOTE,
                            name=host,
                            limits={
                                "read": Limit(detail="remote server: add its rating with --load"),
                                "write": Limit(detail="remote server: add its rating with --load"),
                            },
                            attrs={"address": address},
                        )
                    )
                    if routes is None:
                        routes = read_routes(root)
                    route = lookup(routes, address or "")
                    if route is None:
                        warnings.append(f"no route to {host} found (or not an IP address)")
                        links += _pair("memory:host", rid, "send")
                    else:
                        upstream = (
                            "nic:lo" if route.interface == "lo" else f"network:{route.interface}"
                        )
                        links += _pair(upstream, rid, "send")
                links += _pair(rid, mid)
        elif entry.is_memory:
            links += _pair("memory:host", mid)
        elif entry.fstype == "overlay":
            dirs = [entry.super_option("upperdir")] + (entry.super_option("lowerdir") or "").split(
                ":"
            )
            layers = sorted(
                {
                    found.mountpoint
                    for d in dirs
                    if d and (found := mount_for(d, mounts)) is not None
                }
            )
            attrs["layers"] = layers
            for layer in layers:
                if layer != entry.mountpoint:
                    links += _pair(mount_id(layer), mid)
        else:
            device = _device_of(root, entry, dm_names)
            attrs["device"] = device
            if device is not None:
                links += _pair(f"block:{device}", mid)
            else:
                warnings.append(f"no block device found for {entry.devnum} ({entry.source})")
        components.append(
            Component(
                id=mid,
                kind=ComponentKind.MOUNT,
                name=entry.mountpoint,
                attrs=attrs,
                warnings=warnings,
            )
        )
    links += _loop_backing(root, mounts)
    return Discovery(plugin=NAME, components=components, links=links)


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _loop_backing(root: SysRoot, mounts: dict[str, MountEntry]) -> list[Link]:
    """The mount holding each loop device's backing file -> the loop device."""
    links: list[Link] = []
    for name in root.listdir("/sys/class/block"):
        if not name.startswith("loop"):  # the loop driver names its devices loopN
            continue
        backing = root.read(f"/sys/class/block/{name}/loop/backing_file")
        if not backing:
            continue
        holder = mount_for(backing.removesuffix(" (deleted)"), mounts)
        if holder is not None and not holder.is_pseudo:
            links += _pair(mount_id(holder.mountpoint), f"block:{name}")
    return links
