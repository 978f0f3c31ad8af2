"""Finding the local server a workload talks to, on socket tables and descriptors captured from
an iperf3 client and a dual-stack iperf3 server over 127.0.0.1
(tests/fixtures/proc/local_peers/capture.py), laid out as a /proc tree."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import FIXTURES
from pilot_sys.monitor.local_peers import (
    PeerCounters,
    PeerWatcher,
    endpoint,
    peer_inodes,
    socket_inodes,
    socket_table,
)

HERE = FIXTURES / "proc" / "local_peers"
CLIENT, SERVER, STRANGER = 100, 200, 300


def fake_proc(root: Path) -> Path:
    proc = root / "proc"
    for pid, role in ((CLIENT, "client"), (SERVER, "server"), (STRANGER, None)):
        (proc / str(pid) / "fd").mkdir(parents=True)
        (proc / str(pid) / "comm").write_text("iperf3\n" if role else "sleep\n")
        if role is None:
            continue
        for line in (HERE / f"{role}_fds.txt").read_text().splitlines():
            fd, target = line.split(" ", 1)
            os.symlink(target, proc / str(pid) / "fd" / fd)
    (proc / str(CLIENT) / "net").mkdir()
    for name in ("tcp", "tcp6", "udp", "udp6"):
        (proc / str(CLIENT) / "net" / name).write_text((HERE / name).read_text())
    return proc


def test_ipv4_mapped_addresses_read_as_ipv4() -> None:
    assert endpoint("0000000000000000FFFF00000100007F:1517") == "0100007F:1517"
    assert endpoint("00000000000000000000000001000000:1517").startswith("0000")  # ::1 stays


def test_the_servers_end_of_each_client_connection_is_found(tmp_path: Path) -> None:
    proc = str(fake_proc(tmp_path))
    mine = socket_inodes(CLIENT, proc)
    assert mine == {115511, 115513}  # client_fds.txt: fds 4 and 5
    table = socket_table(CLIENT, proc)
    # tcp row 30: 0100007F:9624 -> 0100007F:1517 (port 5399); the server's end is in tcp6,
    # IPv4-mapped: ...0100007F:1517 -> ...0100007F:9624, inode 115512
    assert table[115511] == ("0100007F:9624", "0100007F:1517")
    assert table[115512] == ("0100007F:1517", "0100007F:9624")
    assert peer_inodes(mine, table) == {115512, 115514}
    # the server's listening socket (115488) has no far end
    assert peer_inodes({115488}, table) == set()


def test_the_watcher_names_the_server_as_the_workloads(tmp_path: Path) -> None:
    proc = str(fake_proc(tmp_path))
    found: list[tuple[int, str]] = []
    watcher = PeerWatcher(lambda: frozenset({CLIENT}), proc, lambda p, n: found.append((p, n)))
    assert watcher.look() == {SERVER}
    assert found == [(SERVER, "iperf3")]
    assert watcher.look() == {SERVER} and len(found) == 1  # named once


def test_a_peer_counts_from_when_it_was_found_and_never_drops(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "7").mkdir(parents=True)
    stat = "7 (iperf3) S 1 7 7 0 -1 0 0 0 0 0 {u} {s} 0 0 20 0 1 0 5 0 0"
    (proc / "7" / "stat").write_text(stat.format(u=500, s=100))  # 600 ticks before it was found
    counters = PeerCounters(str(proc))
    row = [b"10", *[b"0"] * 6, b"1", b"1"]
    first, alive = counters.add(row, [7])
    assert first[0] == b"10" and alive == 1  # its past is not the workload's
    (proc / "7" / "stat").write_text(stat.format(u=530, s=110))
    assert counters.add(row, [7])[0][0] == b"50"  # 10 + 40 ticks since found
    (proc / "7" / "stat").unlink()  # it exited: what it counted stays
    assert counters.add(row, [7]) == ([b"50", *[b"0"] * 6, b"1", b"1"], 0)
