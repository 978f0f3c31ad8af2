"""Scratch cgroups for live tests: a CPU quota, a blkio write throttle, a memory limit.

``scratch_cgroup`` creates ``/pilot-test-<pid>-<n>`` in each v1 hierarchy it needs (or in the
cgroup v2 mount with ``v2=True``), yields it, and on the way out (a failure included) kills what
is left inside, waits for it to leave (bounded) and removes the directories. Tests skip when not
root or when a needed hierarchy is not mounted writable.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pilot_sys.topology.mountinfo import parse_mountinfo
from pilot_sys.workload.cgroup_launch import CgroupTarget, in_cgroup

_COUNTER = itertools.count()
EMPTY_WAIT_S = 5.0


def hierarchy_mount(controller: str) -> str | None:
    """Where the v1 hierarchy carrying ``controller`` is mounted (``"2"``: the v2 mount)."""
    for entry in parse_mountinfo(Path("/proc/self/mountinfo").read_text()):
        if controller == "2" and entry.fstype == "cgroup2":
            return entry.mountpoint
        if entry.fstype == "cgroup" and controller in entry.super_options.split(","):
            return entry.mountpoint
    return None


def disk_of(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(MAJ:MIN, name)`` of the whole disk holding ``path`` (throttles name whole disks)."""
    dev = os.stat(path).st_dev
    node = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    if (node / "partition").exists():
        node = node.parent
    return (node / "dev").read_text().strip(), node.name


class ScratchCgroup:
    """One test cgroup, present in every hierarchy in ``dirs`` (controller -> directory)."""

    def __init__(self, name: str, dirs: dict[str, Path]) -> None:
        self.name = name
        self.dirs = dirs

    @property
    def target(self) -> CgroupTarget:
        return CgroupTarget(
            spec=self.name, procs_files=[str(d / "cgroup.procs") for d in self.dirs.values()]
        )

    def run(
        self, argv: list[str], *, timeout: float = 60, **kwargs: object
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the cgroup, bounded by ``timeout`` seconds."""
        return subprocess.run(
            in_cgroup(argv, self.target), capture_output=True, text=True, timeout=timeout, **kwargs
        )  # type: ignore[call-overload]

    def popen(self, argv: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        argv = in_cgroup(argv, self.target)
        return subprocess.Popen(argv, **kwargs)  # type: ignore[call-overload]

    def read(self, controller: str, name: str) -> str:
        return (self.dirs[controller] / name).read_text()


def _empty_and_remove(directory: Path) -> str | None:
    """Kill what is left in ``directory``, wait for it to leave, remove it; a problem, or None."""
    deadline = time.monotonic() + EMPTY_WAIT_S
    while directory.exists():
        try:
            pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            directory.rmdir()
            return None
        except OSError as exc:
            if time.monotonic() > deadline:
                return f"{directory}: {exc}"
            time.sleep(0.05)
    return None


@contextmanager
def scratch_cgroup(
    *,
    cpu_quota_cores: float | None = None,
    cpu_period_us: int = 100_000,
    write_bps: tuple[str, int] | None = None,
    memory_bytes: int | None = None,
    v2: bool = False,
    cpu_shares: int | None = None,
) -> Iterator[ScratchCgroup]:
    """A cgroup with the given limits. ``write_bps`` is ``(MAJ:MIN, bytes/s)``. With ``v2`` the
    cgroup is made in the v2 mount with no limits (this host binds every controller to v1).
    With a CPU quota it is also made in the cpuacct hierarchy where that is mounted apart (as
    cgroups managers do), so that the cgroup's CPU use is counted; ``cpu_shares`` weights it
    against the other tasks (on this shared VM a heavy load would otherwise keep it from ever
    using its quota)."""
    if os.geteuid() != 0:
        pytest.skip("creating cgroups needs root")
    name = f"/pilot-test-{os.getpid()}-{next(_COUNTER)}"
    wanted = (
        ["2"]
        if v2
        else ["cpu"] * (cpu_quota_cores is not None)
        + ["blkio"] * (write_bps is not None)
        + ["memory"] * (memory_bytes is not None)
    )
    apart = hierarchy_mount("cpuacct") not in (None, hierarchy_mount("cpu"))
    if cpu_quota_cores is not None and apart:
        wanted.append("cpuacct")
    dirs: dict[str, Path] = {}
    try:
        for controller in wanted or ["cpu"]:
            mount = hierarchy_mount(controller)
            if mount is None or not os.access(mount, os.W_OK):
                pytest.skip(f"cgroup hierarchy {controller} is not mounted writable")
            dirs[controller] = Path(mount + name)
            dirs[controller].mkdir()
        if cpu_shares is not None:
            (dirs["cpu"] / "cpu.shares").write_text(str(cpu_shares))
        if cpu_quota_cores is not None:
            (dirs["cpu"] / "cpu.cfs_period_us").write_text(str(cpu_period_us))
            (dirs["cpu"] / "cpu.cfs_quota_us").write_text(
                str(round(cpu_quota_cores * cpu_period_us))
            )
        if write_bps is not None:
            (dirs["blkio"] / "blkio.throttle.write_bps_device").write_text(
                f"{write_bps[0]} {write_bps[1]}"
            )
        if memory_bytes is not None:
            (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
        yield ScratchCgroup(name, dirs)
    finally:
        problems = [p for d in dirs.values() if (p := _empty_and_remove(d)) is not None]
        if problems:
            raise RuntimeError("scratch cgroup not removed: " + "; ".join(problems))
