"""Local servers the workload talks to: part of the workload, not "other processes".

``iperf3 -c 127.0.0.1`` moves its data to an ``iperf3 -s`` on the same host; an NBD client to a
local ``nbd-server``, a benchmark to a local database. The server is not in the command's
process tree, yet every byte the workload moves costs it CPU too: counted as "other processes",
its share would be blamed on the host.

Found through the sockets: the workload's own sockets (``/proc/PID/fd`` links ``socket:[INODE]``
of its processes, a handful) are looked up in the socket tables of its network namespace
(``/proc/PID/net/{tcp,tcp6,udp,udp6}``); a connection whose far end is also a socket in that
table (local address and port swapped) has its peer on this host, and the peer socket's owner
is found by reading the ``fd`` links of the other processes until every peer inode is found.
The tables are read only when the workload holds a socket not looked up before (the kernel
walks its whole socket hash to print them: 1-20 ms each on the project's 2-core VM, more when
it is busy), and owners found are remembered by inode, so the scan of every process's
descriptors runs once per new local connection, not per look; a look with no new socket lists
the members' ``fd`` folders only (under 0.1 ms). ``psutil.net_connections`` answers the same
question but reads every table and scans every process's descriptors on every call (about
30 ms with 110 processes on the project's 2-core VM): too dear to repeat a few times a second.

The look-ups run on a thread of their own (``PeerWatcher``), never on the sampler's tick; the
tick only reads the peers' counters (``PeerCounters``), counted from when each peer was found, so
a long-running server's past CPU time is not added to the first interval.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

SOCKET_TABLES = ("tcp", "tcp6", "udp", "udp6")
LISTEN_REMOTES = frozenset({"00000000:0000", "00000000000000000000000000000000:0000"})
WATCH_INTERVAL_S = 0.2  # how often the workload's sockets are looked at
# the counters the process probe sums: utime + stime + cutime + cstime, then /proc/PID/io's
COUNTERS = 7


def socket_inodes(pid: int, proc: str = "/proc") -> set[int]:
    """Inodes of the sockets process ``pid`` holds open (empty when it is gone)."""
    found: set[int] = set()
    fd_dir = f"{proc}/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return found
    for name in names:
        try:
            link = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue
        if link.startswith("socket:["):
            found.add(int(link[8:-1]))
    return found


V4_MAPPED = "0000000000000000FFFF0000"  # ::ffff:a.b.c.d as /proc/net/tcp6 prints it


def endpoint(text: str) -> str:
    """An address:port as /proc/net prints it, an IPv4-mapped IPv6 address as its IPv4 form
    (a dual-stack server's accepted IPv4 connection is listed in tcp6)."""
    address, _, port = text.partition(":")
    if len(address) == 32 and address.startswith(V4_MAPPED):
        return f"{address[24:]}:{port}"
    return text


def socket_table(pid: int, proc: str = "/proc") -> dict[int, tuple[str, str]]:
    """inode -> (local, remote) address:port, as the kernel prints them (IPv4-mapped IPv6 as
    IPv4), of every TCP and UDP socket in the network namespace of process ``pid``."""
    table: dict[int, tuple[str, str]] = {}
    for name in SOCKET_TABLES:
        try:
            text = Path(f"{proc}/{pid}/net/{name}").read_text()
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[9] != "0":
                table[int(fields[9])] = (endpoint(fields[1]), endpoint(fields[2]))
    return table


def peer_inodes(mine: set[int], table: dict[int, tuple[str, str]]) -> set[int]:
    """The sockets at the far end of ``mine`` that are in ``table`` too (same host and
    namespace): local and remote swapped. Listening and unconnected sockets have no peer."""
    by_pair = {pair: inode for inode, pair in table.items()}
    found = set()
    for inode in mine:
        pair = table.get(inode)
        if pair is None or pair[1] in LISTEN_REMOTES:
            continue
        peer = by_pair.get((pair[1], pair[0]))
        if peer is not None and peer not in mine:
            found.add(peer)
    return found


def owners(inodes: set[int], skip: Iterable[int], proc: str = "/proc") -> dict[int, int]:
    """inode -> pid of the process holding it, for as many of ``inodes`` as are found; stops
    reading descriptors once all are."""
    wanted = set(inodes)
    found: dict[int, int] = {}
    skipped = set(skip)
    try:
        pids = [int(p) for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if not wanted:
            break
        if pid in skipped:
            continue
        for inode in socket_inodes(pid, proc) & wanted:
            found[inode] = pid
            wanted.discard(inode)
    return found


def process_name(pid: int, proc: str = "/proc") -> str:
    try:
        return Path(f"{proc}/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


class PeerWatcher:
    """Finds, every ``WATCH_INTERVAL_S``, the local processes at the far end of the sockets of
    ``members()`` (the workload's pids); ``peers`` holds what was found so far."""

    def __init__(
        self,
        members: Callable[[], frozenset[int]],
        proc: str = "/proc",
        on_found: Callable[[int, str], None] | None = None,
    ) -> None:
        self.members = members
        self.proc = proc
        self.on_found = on_found
        self.peers: frozenset[int] = frozenset()
        self._owner: dict[int, int] = {}  # inode -> pid, found once
        self._looked_up: set[int] = set()  # the members' sockets already looked up
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pilot-sys-peers", daemon=True)

    def start(self) -> PeerWatcher:
        self._thread.start()
        return self

    def look(self) -> frozenset[int]:
        """One look: the peers of the members' current sockets (also the new ones)."""
        members = self.members()
        if not members:
            return self.peers
        mine: set[int] = set()
        for pid in members:
            mine |= socket_inodes(pid, self.proc)
        if mine <= self._looked_up:  # no new socket: the tables (milliseconds) are not read
            return self.peers
        self._looked_up |= mine
        table = socket_table(next(iter(members)), self.proc)
        far = peer_inodes(mine, table)
        unknown = far - set(self._owner)
        if unknown:
            self._owner.update(owners(unknown, members, self.proc))
        found = {self._owner[i] for i in far if i in self._owner} - set(members)
        new = found - self.peers
        self.peers = self.peers | frozenset(found)
        for pid in sorted(new):
            if self.on_found is not None:
                self.on_found(pid, process_name(pid, self.proc))
        return self.peers

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.look()
            except (OSError, ValueError):  # a process or table changed under the read
                pass
            self._stop.wait(WATCH_INTERVAL_S)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)


def read_counters(pid: int, proc: str = "/proc") -> list[int] | None:
    """The process probe's counters of one process (CPU ticks, then rchar, wchar, syscr, syscw,
    read_bytes, write_bytes); None when it is gone. I/O counters unreadable: zeros."""
    try:
        stat = Path(f"{proc}/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    row = [sum(int(x) for x in fields[11:15])]  # utime, stime, cutime, cstime (14-17)
    try:
        io = Path(f"{proc}/{pid}/io").read_bytes().split()
        row += [int(x) for x in io[1:12:2]]
    except (OSError, ValueError):
        row += [0] * (COUNTERS - 1)
    return row


class PeerCounters:
    """The peers' counters since each was found, to add to the workload's tree on every tick.

    A peer that exits keeps what it had counted, so the sum never drops."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc
        self._base: dict[int, list[int]] = {}
        self._last: dict[int, list[int]] = {}

    def add(self, row: list[bytes], peers: Iterable[int]) -> tuple[list[bytes], int]:
        """``row`` (the probe's counters as bytes) plus every peer's growth since it was found;
        and how many peers are alive."""
        alive = 0
        for pid in peers:
            now = read_counters(pid, self.proc)
            if now is None:
                continue
            alive += 1
            base = self._base.setdefault(pid, now)
            self._last[pid] = [n - b for n, b in zip(now, base, strict=True)]
        if not self._last:
            return row, alive
        extra = [sum(column) for column in zip(*self._last.values(), strict=True)]
        out = [b"%d" % (int(v) + e) for v, e in zip(row[:COUNTERS], extra, strict=True)]
        return out + row[COUNTERS:], alive
