"""Parse ``/proc/self/mountinfo`` (proc(5)) and find the mount that holds a path.

Line format: ``id parent major:minor root mountpoint options [optional...] - fstype source super``;
spaces, tabs, newlines and backslashes in paths are printed as octal escapes (``\\040``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel

T = TypeVar("T")

NETWORK_FS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "fuse.sshfs",
        "sshfs",
        "9p",
        "virtiofs",
        "afs",
        "lustre",
        "gpfs",
        "fuse.s3fs",
        "fuse.rclone",
        "beegfs",
        "fuse.cephfs",
        "ocfs2",
        "gfs2",
        "orangefs",
        "fuse.juicefs",
    }
)
MEMORY_FS = frozenset({"tmpfs", "ramfs", "devtmpfs", "rootfs", "shm"})
# Kernel interface file systems: no data path worth drawing.
PSEUDO_FS = frozenset(
    {
        "proc",
        "sysfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "securityfs",
        "debugfs",
        "tracefs",
        "pstore",
        "bpf",
        "mqueue",
        "configfs",
        "fusectl",
        "binfmt_misc",
        "autofs",
        "efivarfs",
        "selinuxfs",
        "rpc_pipefs",
        "nsfs",
        "hugetlbfs",
        "fuse.gvfsd-fuse",
        "fuse.portal",
        "nfsd",
    }
)

_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


class MountEntry(BaseModel):
    mount_id: int
    parent_id: int
    devnum: str  # "major:minor" of the file system's st_dev
    root: str  # the directory of the file system mounted here ("/" unless a bind mount)
    mountpoint: str
    options: str
    fstype: str
    source: str
    super_options: str

    @property
    def is_network(self) -> bool:
        return self.fstype in NETWORK_FS or self.fstype.split(".")[0] in NETWORK_FS

    @property
    def is_memory(self) -> bool:
        return self.fstype in MEMORY_FS

    @property
    def is_pseudo(self) -> bool:
        return self.fstype in PSEUDO_FS

    def super_option(self, key: str) -> str | None:
        for item in self.super_options.split(","):
            name, _, value = item.partition("=")
            if name == key:
                return value
        return None


def parse_mountinfo(text: str) -> list[MountEntry]:
    """Entries in file order; malformed lines are skipped (the kernel never prints them)."""
    entries: list[MountEntry] = []
    for line in text.splitlines():
        fields = line.split()
        try:
            sep = fields.index("-", 6)
            entries.append(
                MountEntry(
                    mount_id=int(fields[0]),
                    parent_id=int(fields[1]),
                    devnum=fields[2],
                    root=unescape(fields[3]),
                    mountpoint=unescape(fields[4]),
                    options=fields[5],
                    fstype=fields[sep + 1],
                    source=unescape(fields[sep + 2]),
                    super_options=fields[sep + 3] if len(fields) > sep + 3 else "",
                )
            )
        except (ValueError, IndexError):
            continue
    return entries


def visible_mounts(entries: list[MountEntry]) -> dict[str, MountEntry]:
    """Mount point -> the entry visible there (the last one mounted over it wins)."""
    return {entry.mountpoint: entry for entry in entries}


def mount_for(path: str, mounts: Mapping[str, T]) -> T | None:
    """The mount holding an absolute, symlink-free path: the longest mount point prefix
    (``mounts`` maps mount points to entries, or to the graph's mount components)."""
    probe = path.rstrip("/") or "/"
    while True:
        entry = mounts.get(probe)
        if entry is not None:
            return entry
        if probe == "/":
            return None
        probe = probe.rsplit("/", 1)[0] or "/"


def remote_host(entry: MountEntry) -> str | None:
    """The server of a network mount: ``addr=`` (nfs, cifs) or ``ip=``, else the source's host."""
    for key in ("addr", "ip", "mon_addr"):
        value = entry.super_option(key)
        if value:
            return value.split("/")[0].split(",")[0].split(":")[0] if key == "mon_addr" else value
    source = entry.source
    if source.startswith("//"):  # cifs: //server/share
        return source[2:].split("/")[0]
    if ":" in source and not source.startswith("/"):
        host = (
            source.rsplit(":", 1)[0]
            if source.count(":") > 1 and source.startswith("[")
            else source.split(":")[0]
        )
        host = host.split("@")[-1].strip("[]")
        return host or None
    return None
