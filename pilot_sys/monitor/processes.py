"""The workload's own process tree: CPU and I/O, to tell its load from everyone else's.

Part of the monitor itself, not a plug-in: the sampler follows a command's tree
(``Sampler.follow``) and a session follows each round's processes (``session.monitoring``);
plug-ins are for optional measurements.

Counters, per process of the tree (the root ``pid`` and every descendant, found on each tick
through ``/proc/<pid>/task/<tid>/children``, zombies included):

* ``/proc/<pid>/stat`` fields 14 ``utime``, 15 ``stime``, 16 ``cutime``, 17 ``cstime`` (USER_HZ
  ticks; the ``c`` fields hold the children it has reaped), 20 ``num_threads``;
* ``/proc/<pid>/io`` ``rchar``/``wchar`` (bytes through read/write calls, page cache included),
  ``syscr``/``syscw`` (read/write calls), ``read_bytes``/``write_bytes`` (bytes sent to or
  fetched from storage); these also include the children it has reaped (the kernel adds a
  reaped child's accounting to its parent's).

So the tree's total is simply the sum over its live (and zombie) members: when a child exits
and is reaped its counters move into its parent's, and a process that lived and died between
two ticks is still counted through its parent. The total only drops when a process leaves the
tree without being reaped in it (it was re-parented, or the root itself was reaped): that
interval becomes NaN, never a negative rate.

Cost: every file a member needs is opened once, when the walk first finds the process, and
then read with ``pread`` at offset 0 on every tick (an open of a /proc file costs about ten
times a ``pread`` of a kept-open one, and a tick reads three files per process). A
single-threaded process (``num_threads`` 1 in the ``stat`` just read: its only task is the
process itself) is not listed at all; a multi-threaded one has its ``task`` directory listed
per tick, through a kept-open descriptor, since a new thread's children are only in its own
``children`` file. A tick of a tree of single-threaded processes is therefore three ``pread``
calls per process. Descriptors are closed as soon as their process or thread is gone (a read
says ``ESRCH``) or the process has left the tree.

Pid reuse: the files are opened relative to a descriptor of the ``/proc/<pid>`` directory,
which belongs to that process and not to its number: once the process is reaped every read
through it fails (``ESRCH``/``ENOENT``), even if the number is handed to a new process, which
is then opened afresh. The one window, between finding a pid in a ``children`` file and opening
its directory, is closed by checking the new member's parent (``stat`` field 4, ``ppid``)
against the process whose ``children`` file listed it: a stranger that took the number in
between is not counted. The root, given by number, is recognised by its start time (``stat``
field 22, read when it is first opened) whenever it has to be opened again.

Local servers the tree talks to over its sockets (an ``iperf3 -s`` for ``iperf3 -c 127.0.0.1``)
are counted with it from when they are found (``monitor.local_peers``): their work is the
workload's, not "other processes".

Formulas: ``cpu_cores`` = delta(utime + stime + cutime + cstime) / USER_HZ / delta t (cores busy
with the workload); ``*_per_s`` = delta / delta t; ``processes`` and ``threads`` are levels.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.monitor.local_peers import PeerCounters, PeerWatcher
from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.rates import levels, per_second

NAME = "process"

USER_HZ = os.sysconf("SC_CLK_TCK")
COUNTERS = ("cpu_ticks", "rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes")
# the tokens of /proc/PID/io holding rchar, wchar, syscr, syscw, read_bytes, write_bytes
IO_VALUES = slice(1, 12, 2)
READ_BYTES = 4096  # one pread of stat, io or a children file; a longer children file is read on
_OPEN_FILE = os.O_RDONLY | os.O_CLOEXEC
_OPEN_DIR = os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY
_GONE = (errno.ESRCH, errno.ENOENT)  # what a read or open says once the process or thread is gone


def _close(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def read_pids(fd: int) -> list[int]:
    """The pids in a ``children`` file; raises OSError once its thread is gone."""
    data = os.pread(fd, READ_BYTES, 0)
    while len(data) % READ_BYTES == 0 and data:  # hundreds of children: read on
        more = os.pread(fd, READ_BYTES, len(data))
        if not more:
            break
        data += more
    return [int(x) for x in data.split()]


def _pread(fd: int) -> bytes:
    """A kept-open file's current text; empty once its process is gone."""
    try:
        return os.pread(fd, READ_BYTES, 0)
    except OSError:
        return b""


class _Member:
    """One process of the tree, with its files kept open across ticks."""

    __slots__ = ("pid", "dir_fd", "stat_fd", "io_fd", "task_fd", "children_fds")

    def __init__(self, pid: int, dir_fd: int, stat_fd: int) -> None:
        self.pid = pid
        self.dir_fd = dir_fd
        self.stat_fd = stat_fd
        self.io_fd: int | None = None  # opened after stat, when permitted
        self.task_fd: int | None = None  # the task directory, opened once the process has threads
        self.children_fds: dict[int, int] = {}  # tid -> its children file

    def fds(self) -> int:
        return 2 + (self.io_fd is not None) + (self.task_fd is not None) + len(self.children_fds)

    def close(self) -> None:
        for fd in (
            self.stat_fd,
            self.io_fd,
            self.task_fd,
            *self.children_fds.values(),
            self.dir_fd,
        ):
            _close(fd)
        self.children_fds.clear()
        self.io_fd = self.task_fd = None

    def children(self, num_threads: int) -> list[int]:
        """The pids in the ``children`` files of this process's threads."""
        if num_threads <= 1:
            tids = [self.pid]
            if self.task_fd is not None:  # its other threads have exited
                _close(self.task_fd)
                self.task_fd = None
        else:
            try:
                if self.task_fd is None:
                    self.task_fd = os.open("task", _OPEN_DIR, dir_fd=self.dir_fd)
                tids = [int(t) for t in os.listdir(self.task_fd)]
            except OSError:
                return []
        for tid in [t for t in self.children_fds if t not in tids]:  # threads that have exited
            _close(self.children_fds.pop(tid))
        found: list[int] = []
        for tid in tids:
            fd = self.children_fds.get(tid)
            if fd is None:
                try:
                    fd = self.children_fds[tid] = os.open(
                        f"task/{tid}/children", _OPEN_FILE, dir_fd=self.dir_fd
                    )
                except (
                    OSError
                ):  # exited since the listing, or a kernel without CONFIG_PROC_CHILDREN
                    continue
            try:
                found += read_pids(fd)
            except OSError:  # the thread has exited
                _close(self.children_fds.pop(tid))
        return found


class ProcessProbe(Probe):
    name = NAME

    def __init__(
        self,
        context: ProbeContext,
        pid: int,
        component: str | None = None,
        local_peers: bool = True,
    ) -> None:
        """``component`` names the series (default ``process:PID``); ``local_peers``: count the
        local processes the tree talks to over its sockets as part of it."""
        super().__init__()
        self.pid = pid
        self._notes = context.notes
        self._members_seen: frozenset[int] = frozenset()
        self._peer_counters = PeerCounters(str(context.path("proc"))) if local_peers else None
        self._peers_found: set[int] = set()  # the local servers found, for ``attrs``
        self._watcher: PeerWatcher | None = None
        self._root_start: bytes | None = None
        self.proc = context.path("proc")
        self.component = component or f"process:{pid}"
        self.columns = tuple(f"{self.component}/{c}" for c in (*COUNTERS, "processes", "threads"))
        self._members: dict[int, _Member] = {}
        self.readers = [self._read_tree]

    def _track(self, pid: int, parent: int | None) -> tuple[_Member, bytes] | None:
        """Open a newly found member's files and keep them; its ``stat`` as read (None: gone, or
        not the process meant).

        ``parent`` is the pid whose ``children`` file listed it (None for a root given by pid):
        a process with another parent took the number in between. The root is recognised by
        its start time (``stat`` field 22) from its first read on."""
        try:
            dir_fd = os.open(f"{self.proc}/{pid}", _OPEN_DIR)
        except OSError:
            return None
        member = None
        try:
            stat_fd = os.open("stat", _OPEN_FILE, dir_fd=dir_fd)
            member = _Member(pid, dir_fd, stat_fd)
            stat = os.pread(stat_fd, READ_BYTES, 0)
            fields = stat.rsplit(b")", 1)[1].split()
            if parent is not None and int(fields[1]) != parent:  # ppid (4)
                raise ProcessLookupError(pid)
            if pid == self.pid:
                if self._root_start is None:
                    self._root_start = fields[19]  # starttime (22)
                elif fields[19] != self._root_start:  # the root was reaped and its pid reused
                    raise ProcessLookupError(pid)
        except (OSError, IndexError):
            if member is not None:
                member.close()
            else:
                _close(dir_fd)
            return None
        try:
            member.io_fd = os.open("io", _OPEN_FILE, dir_fd=dir_fd)
        except OSError:
            pass  # not permitted: CPU only
        self._members[pid] = member
        return member, stat

    def _forget(self, pid: int) -> None:
        member = self._members.pop(pid, None)
        if member is not None:
            member.close()

    def fd_count(self) -> int:
        """Descriptors this probe holds open (tests check that churn does not leak any)."""
        return sum(m.fds() for m in self._members.values())

    def _roots(self) -> list[tuple[int, int | None]]:
        """Where the walk starts: (pid, the parent it must have, None: any). The root given by
        pid is recognised by its start time instead (``_track``)."""
        return [(self.pid, None)]

    def _read_tree(self) -> list[bytes]:
        """Walk the tree(s) from ``_roots`` and sum the members' cumulative counters."""
        pending = self._roots()  # (pid, the parent that listed it)
        seen: set[int] = set()
        cpu_ticks = threads = 0
        ios: list[list[bytes]] = []  # per member: the values of rchar .. write_bytes, unparsed
        while pending:
            pid, parent = pending.pop()
            if pid in seen:
                continue
            member = self._members.get(pid)
            stat = _pread(member.stat_fd) if member is not None else b""
            if not stat:  # new, or the kept one was reaped (and the pid may be a new process's now)
                if member is not None:
                    self._forget(pid)
                tracked = self._track(pid, parent)
                if tracked is None:
                    continue
                member, stat = tracked
            if member.io_fd is not None:
                try:
                    io = os.pread(member.io_fd, READ_BYTES, 0).split()
                except OSError as exc:
                    if exc.errno in _GONE:  # reaped between the two reads
                        self._forget(pid)
                        continue
                    _close(member.io_fd)  # no longer permitted (it changed credentials): CPU only
                    member.io_fd = None
                else:
                    if len(io) >= 12:
                        ios.append(io[IO_VALUES])
            seen.add(pid)
            fields = stat[stat.rfind(b")") + 2 :].split(None, 18)  # up to num_threads (20)
            # utime (14), stime (15), cutime (16), cstime (17)
            cpu_ticks += sum(map(int, fields[11:15]))
            num_threads = int(fields[17])  # num_threads (20)
            threads += num_threads
            pending += [(child, pid) for child in member.children(num_threads)]
        if len(self._members) > len(seen):  # every member seen is kept: the others left the tree
            for gone in [p for p in self._members if p not in seen]:
                self._forget(gone)
        if len(ios) == 1:  # a tree of one process: its tokens as read
            io_totals = ios[0]
        elif ios:
            io_totals = [b"%d" % sum(map(int, column)) for column in zip(*ios, strict=True)]
        else:
            io_totals = [b"0"] * (len(COUNTERS) - 1)
        row = [b"%d" % cpu_ticks, *io_totals]
        processes = len(seen)
        if self._peer_counters is not None:
            self._members_seen = frozenset(seen)
            if self._watcher is None and seen:
                self._watcher = PeerWatcher(
                    lambda: self._members_seen, self.proc, self._peer_found
                ).start()
            if self._watcher is not None and self._watcher.peers:
                row, alive = self._peer_counters.add(row, self._watcher.peers - seen)
                processes += alive
        return [*row, b"%d" % processes, b"%d" % threads]

    def _peer_found(self, pid: int, name: str) -> None:
        self._peers_found.add(pid)
        self._notes.append(
            f"{self.component}: local process {name} (pid {pid}) at the far end of the "
            "workload's sockets is counted as part of the workload"
        )

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        cid = self.component
        out = {
            f"{cid}/cpu_cores": per_second(self.col(raw, f"{cid}/cpu_ticks"), t) / USER_HZ,
            f"{cid}/processes": levels(self.col(raw, f"{cid}/processes")),
            f"{cid}/threads": levels(self.col(raw, f"{cid}/threads")),
        }
        for c in COUNTERS[1:]:
            suffix = "bytes_per_s" if "char" in c or "bytes" in c else "per_s"
            name = c.replace("_bytes", "") if c.endswith("_bytes") else c
            out[f"{cid}/{name}_{suffix}"] = per_second(self.col(raw, f"{cid}/{c}"), t)
        return out

    def attrs(self) -> dict[str, dict[str, Any]]:
        """The local servers counted with the tree (``local_peers``: their pids), so that the
        verdict does not name them among the other processes (``bottleneck_culprits``)."""
        return (
            {self.component: {"local_peers": sorted(self._peers_found)}}
            if self._peers_found
            else {}
        )

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        for pid in list(self._members):
            self._forget(pid)


def open_process_probe(context: ProbeContext) -> ProcessProbe | None:
    """The tree rooted at ``context.pid``; None without a pid or when that process is gone."""
    if context.pid is None or not Path(context.path("proc", str(context.pid))).exists():
        return None
    return ProcessProbe(context, context.pid)
