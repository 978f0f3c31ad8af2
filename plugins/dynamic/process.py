"""The workload's own process tree: CPU and I/O, to tell its load from everyone else's.

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
interval becomes NaN, never a negative rate. Reading a tree costs a directory listing per
process and tick plus two opens per new process: it is not part of the full-system sample cost.

Formulas: ``cpu_cores`` = delta(utime + stime + cutime + cstime) / USER_HZ / delta t (cores busy
with the workload); ``*_per_s`` = delta / delta t; ``processes`` and ``threads`` are levels.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.rates import levels, per_second

KIND = "dynamic"
NAME = "process"

USER_HZ = os.sysconf("SC_CLK_TCK")
COUNTERS = ("cpu_ticks", "rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes")
IO_TOKENS = (1, 3, 5, 7, 9, 11)  # values of rchar, wchar, syscr, syscw, read_bytes, write_bytes


class _Tracked:
    __slots__ = ("stat_fd", "io_fd")

    def __init__(self, stat_fd: int, io_fd: int | None) -> None:
        self.stat_fd = stat_fd
        self.io_fd = io_fd


class ProcessProbe(Probe):
    name = NAME

    def __init__(self, context: ProbeContext, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.proc = context.path("proc")
        self.component = f"process:{pid}"
        self.columns = tuple(f"{self.component}/{c}" for c in (*COUNTERS, "processes", "threads"))
        self._tracked: dict[int, _Tracked] = {}
        self.readers = [self._read_tree]

    def _children(self, pid: int) -> list[int]:
        found: list[int] = []
        task_dir = f"{self.proc}/{pid}/task"
        try:
            tids = os.listdir(task_dir)
        except OSError:
            return found
        for tid in tids:
            try:
                with open(f"{task_dir}/{tid}/children", "rb") as fh:
                    found += [int(x) for x in fh.read().split()]
            except OSError:
                continue
        return found

    def _track(self, pid: int) -> _Tracked | None:
        try:
            stat_fd = os.open(f"{self.proc}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            io_fd: int | None = os.open(f"{self.proc}/{pid}/io", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            io_fd = None  # not permitted: CPU only
        return _Tracked(stat_fd, io_fd)

    def _forget(self, pid: int) -> None:
        tracked = self._tracked.pop(pid)
        os.close(tracked.stat_fd)
        if tracked.io_fd is not None:
            os.close(tracked.io_fd)

    def _read_tree(self) -> list[bytes]:
        """Walk the tree and sum its members' cumulative counters."""
        pending, seen = [self.pid], set()
        totals = [0] * len(COUNTERS)
        threads = 0
        while pending:
            pid = pending.pop()
            if pid in seen:
                continue
            tracked = self._tracked.get(pid)
            if tracked is None:
                tracked = self._track(pid)
                if tracked is None:
                    continue
                self._tracked[pid] = tracked
            try:
                stat = os.pread(tracked.stat_fd, 4096, 0)
                io = os.pread(tracked.io_fd, 4096, 0) if tracked.io_fd is not None else b""
            except OSError:  # reaped since the walk found it: its counters are in its parent's now
                continue
            seen.add(pid)
            fields = stat[stat.rfind(b")") + 2 :].split()
            # utime (14) + stime (15) + cutime (16) + cstime (17)
            totals[0] += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
            threads += int(fields[17])  # num_threads (20)
            io_toks = io.split()
            if len(io_toks) >= 12:
                for k, i in enumerate(IO_TOKENS, start=1):
                    totals[k] += int(io_toks[i])
            pending += self._children(pid)
        for gone in [p for p in self._tracked if p not in seen]:
            self._forget(gone)
        return [str(v).encode() for v in (*totals, len(seen), threads)]

    def derive(self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
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

    def close(self) -> None:
        for pid in list(self._tracked):
            self._forget(pid)


def open_probe(context: ProbeContext) -> ProcessProbe | None:
    if context.pid is None or not Path(context.path("proc", str(context.pid))).exists():
        return None
    return ProcessProbe(context, context.pid)
