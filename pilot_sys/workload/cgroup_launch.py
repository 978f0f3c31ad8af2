"""Start a workload inside a cgroup of the user's choice (cgroup v1 and v2).

The command is started through ``/bin/sh``, which writes its own pid into each chosen
``cgroup.procs`` and then ``exec``s the command: the workload's first instruction already runs
in the cgroup, with the same pid, and every process it forks stays there. (Moving the child
after ``Popen`` returns races with its first forks; a ``preexec_fn`` is unsafe in a process
that runs sampler threads.)

A cgroup is named either by its directory (``/sys/fs/cgroup/cpu/bench``: that one hierarchy)
or by its path inside the hierarchies (``/bench``: every mounted hierarchy that has it, so one
name covers the v1 ``cpu``, ``blkio`` and ``memory`` controllers alike).
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from pilot_sys.errors import BadInput
from pilot_sys.topology.mountinfo import parse_mountinfo
from pilot_sys.topology.sysroot import SysRoot

_MOVE_THEN_EXEC = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do '
    'echo $$ > "$1" || { echo "pilot-sys: cannot move into $1" >&2; exit 125; }; '
    'shift; n=$((n - 1)); done; exec "$@"'
)


class CgroupTarget(BaseModel):
    """Where a workload is placed: the ``cgroup.procs`` file of each hierarchy."""

    spec: str  # as the user gave it
    procs_files: list[str]


def _hierarchy_dirs(sysroot: SysRoot, path: str) -> list[tuple[str, str, str]]:
    """``(directory, mount point, fstype)`` of cgroup ``path`` in each hierarchy that has it."""
    found: list[tuple[str, str, str]] = []
    for entry in parse_mountinfo(sysroot.read("/proc/self/mountinfo") or ""):
        if entry.fstype not in ("cgroup", "cgroup2"):
            continue
        root = entry.root.rstrip("/")
        if root and not (path == root or path.startswith(root + "/")):
            continue
        directory = entry.mountpoint.rstrip("/") + path[len(root) :].rstrip("/")
        if sysroot.exists(f"{directory}/cgroup.procs") and directory not in [f[0] for f in found]:
            found.append((directory, entry.mountpoint, entry.fstype))
    return found


def _check_leaf(sysroot: SysRoot, spec: str, directory: str) -> None:
    """cgroup v2 admits processes only to the root and to cgroups that do not distribute a
    controller to children (``cgroup.subtree_control`` empty)."""
    subtree = sysroot.read(f"{directory}/cgroup.subtree_control")
    if subtree:
        raise BadInput(
            spec,
            f"{directory} enables controllers for its children ({subtree}); cgroup v2 "
            "admits processes only to leaf cgroups: name a child",
        )


def cgroup_target(spec: str, sysroot: SysRoot | None = None) -> CgroupTarget:
    """Resolve ``--cgroup SPEC`` to the ``cgroup.procs`` files to join; ``BadInput`` when the
    cgroup does not exist or cannot be joined."""
    sysroot = sysroot or SysRoot("/")
    if not spec.strip():
        raise BadInput(repr(spec), "empty cgroup name")
    mounts = {
        (e.mountpoint.rstrip("/"), e.fstype)
        for e in parse_mountinfo(sysroot.read("/proc/self/mountinfo") or "")
        if e.fstype in ("cgroup", "cgroup2")
    }
    directory = spec.rstrip("/")
    holder = next(
        ((m, f) for m, f in mounts if directory == m or directory.startswith(m + "/")), None
    )
    if holder is not None and sysroot.exists(f"{directory}/cgroup.procs"):
        found = [(directory, holder[0], holder[1])]  # a directory of one hierarchy
    else:
        found = _hierarchy_dirs(sysroot, "/" + spec.strip("/"))
    if not found:
        raise BadInput(
            spec,
            "no such cgroup in any mounted hierarchy (create it first, e.g. "
            "mkdir /sys/fs/cgroup/cpu/bench on cgroup v1)",
        )
    for directory, mountpoint, fstype in found:
        if fstype == "cgroup2" and directory.rstrip("/") != mountpoint.rstrip("/"):
            _check_leaf(sysroot, spec, directory)
        if not os.access(sysroot.path(f"{directory}/cgroup.procs"), os.W_OK):
            raise BadInput(
                spec, f"{directory}/cgroup.procs is not writable (needs root or a delegated cgroup)"
            )
    return CgroupTarget(spec=spec, procs_files=[f"{d}/cgroup.procs" for d, _, _ in found])


def in_cgroup(argv: list[str], target: CgroupTarget) -> list[str]:
    """``argv`` wrapped so that it starts inside ``target`` (exit status 125 if joining fails)."""
    if not argv:
        raise BadInput("command", "empty command")
    return [
        "/bin/sh",
        "-c",
        _MOVE_THEN_EXEC,
        "pilot-sys-cgroup",
        str(len(target.procs_files)),
        *target.procs_files,
        *argv,
    ]
