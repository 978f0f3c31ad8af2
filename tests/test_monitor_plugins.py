"""Dynamic plug-ins on captured /proc pairs, against answers computed by hand from the files.

Fixture ``vm-2cpu-dd-1s``: this VM (kernel in ``kernel``), ``t0`` and ``t1`` captured while
``dd ... oflag=direct`` wrote to vda and other work kept both CPUs busy. The interval is taken
as 1.74 s: both cores' /proc/stat lines advanced by exactly 174 USER_HZ (100 Hz) ticks.
Each expected value below is written as the arithmetic on the two files' numbers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.procread import parse_rows, row_dtype
from pilot_sys.plugins.dynamic import block, cpu, memory, net, pci, process
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.graph import ComponentGraph


def _scripted(code: str) -> subprocess.Popen[bytes]:
    """A Python process driven line by line through its stdin/stdout (a process tree to watch)."""
    return subprocess.Popen([sys.executable, "-S", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


PAIR = FIXTURES / "proc" / "vm-2cpu-dd-1s"
DT = 1.74


def record(probes, root: Path, snapshots: list[Path]) -> dict[str, np.ndarray]:
    """The sampler's pipeline without its thread: read each snapshot into a tick record, parse,
    derive (the files are rewritten in place, so the kept-open descriptors see new contents)."""
    rows = []
    for snap in snapshots:
        for src in snap.rglob("*"):
            if src.is_file():
                (root / src.relative_to(snap)).write_bytes(src.read_bytes())
        row: list = []
        for p in probes:
            for reader in p.readers:
                row += reader()
        rows.append(b" ".join(row))
    columns = sum(len(p.columns) for p in probes)
    raw = parse_rows(np.array(rows, dtype=row_dtype(columns)), columns)
    t = np.arange(len(snapshots)) * DT
    metrics: dict[str, np.ndarray] = {}
    start = 0
    for p in probes:
        width = len(p.columns)
        metrics.update(p.derive(raw[:, start : start + width], t, metrics))
        start += width
    return metrics


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    shutil.copytree(PAIR / "t0", tmp_path, dirs_exist_ok=True)
    return tmp_path


def last(metrics: dict[str, np.ndarray], key: str) -> float:
    values = metrics[key]
    assert np.isnan(values[0]), f"{key}: a rate has no value at the first sample"
    return float(values[-1])


def test_cpu_fractions_and_pressure(root: Path) -> None:
    probe = cpu.open_probe(ProbeContext(root=root))
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    # cpu0: user 33256-33236=20, system 14081-13967=114, softirq 2102-2062=40, others 0: 174 busy of 174
    assert last(m, "core:0/util_compute") == pytest.approx(1.0)
    assert last(m, "core:0/system") == pytest.approx(114 / 174)
    # cpu1: user 35379-35237=142, system 15593-15562=31, steal 302-301=1: busy 173 of 174, 173 available
    assert last(m, "core:1/util_compute") == pytest.approx(173 / 173)
    assert last(m, "core:1/steal") == pytest.approx(1 / 174)
    assert last(m, "cpu:host/busy") == pytest.approx(347 / 348)
    assert last(m, "cpu:host/busy_cores") == pytest.approx(347 / (348 / 2))
    # utilization of the 2-core limit, net of steal: 1.994 / (2 x (1 - 1/348))
    assert last(m, "cpu:host/util_compute") == pytest.approx((347 / 174) / (2 * (1 - 1 / 348)))
    assert last(m, "cpu:host/busiest_core") == pytest.approx(1.0)
    assert last(m, "cpu:host/user") == pytest.approx((20 + 142) / 348)
    assert last(m, "cpu:host/context_switches_per_s") == pytest.approx((3370991 - 3361295) / DT)
    assert m["cpu:host/runnable"][-1] == 5  # procs_running at t1, a level
    assert last(m, "cpu:host/psi_some") == pytest.approx((349449323 - 347871385) / DT / 1e6)
    assert probe.limits["cpu:host/compute"].source == LimitSource.DERIVED


def test_block_rates_busy_queue_and_await(root: Path) -> None:
    probe = block.open_probe(ProbeContext(root=root))
    assert probe.devices == ["vda", "zram0"]  # loop devices without a backing file are skipped
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    # diskstats vda: sectors written 231046536-230694744 = 351792, x 512 bytes
    assert last(m, "block:vda/write_bytes_per_s") == pytest.approx(351792 * 512 / DT)
    assert last(m, "block:vda/read_bytes_per_s") == pytest.approx((103565114 - 103565090) * 512 / DT)
    assert last(m, "block:vda/write_iops") == pytest.approx((170030 - 169573) / DT)
    # io_ticks (field 10): 79696-79608 = 88 ms busy of 1740 ms
    assert last(m, "block:vda/busy") == pytest.approx(88 / 1740)
    # time_in_queue (field 11): 138354-138200 = 154 ms -> average 154/1740 requests in flight
    assert last(m, "block:vda/queue_depth") == pytest.approx(154 / 1740)
    # write ms (field 8) 80634-80491 = 143 over 457 writes
    assert last(m, "block:vda/write_await_s") == pytest.approx(143 / 457 / 1000)
    assert last(m, "block:vda/read_await_s") == pytest.approx(0.0)  # 3 reads, 0 ms
    assert last(m, "block:zram0/read_await_s") != last(m, "block:zram0/read_await_s")  # no I/O: NaN
    assert "block:vda/util_write" not in m  # no stated limit: no utilization invented
    assert last(m, "io:host/psi_some") == pytest.approx((37347660 - 37296147) / DT / 1e6)


def test_block_utilization_against_a_stated_limit(root: Path) -> None:
    graph = ComponentGraph()
    rated = Limit(value=200e6, unit="B/s", source=LimitSource.USER, detail="test rating")
    graph.add_component(Component(id="block:vda", kind=ComponentKind.BLOCK, name="vda",
                                  limits={"write": rated, "read": rated}))
    probe = block.open_probe(ProbeContext(root=root, graph=graph))
    assert probe.devices == ["vda"]  # with a graph: its block components
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    assert last(m, "block:vda/util_write") == pytest.approx(351792 * 512 / DT / 200e6)


def test_net_rates_and_half_duplex(root: Path) -> None:
    probe = net.open_probe(ProbeContext(root=root))
    assert probe.interfaces == ["lo", "ifb0", "ifb1", "eth0"]
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    assert last(m, "nic:lo/rx_bytes_per_s") == pytest.approx((391815766602 - 388624663186) / DT)
    assert last(m, "nic:lo/tx_packets_per_s") == pytest.approx((7581416 - 7522943) / DT)
    assert last(m, "nic:eth0/rx_bytes_per_s") == 0.0
    assert "nic:eth0/util_receive" not in m  # the fixture has no speed: unknown, not invented
    # half duplex at 1 Gb/s: both directions share 125e6 B/s
    (root / "sys" / "class" / "net" / "lo").mkdir(parents=True)
    (root / "sys" / "class" / "net" / "lo" / "speed").write_text("1000\n")
    (root / "sys" / "class" / "net" / "lo" / "duplex").write_text("half\n")
    shutil.copytree(PAIR / "t0", root, dirs_exist_ok=True)
    probe = net.open_probe(ProbeContext(root=root, components={"nic:lo"}))
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    both = 2 * (391815766602 - 388624663186) / DT
    assert last(m, "nic:lo/util_send") == pytest.approx(both / 125e6)
    assert last(m, "nic:lo/util_receive") == pytest.approx(both / 125e6)


def test_memory_levels_and_reclaim(root: Path) -> None:
    probe = memory.open_probe(ProbeContext(root=root))
    m = record([probe], root, [PAIR / "t0", PAIR / "t1"])
    assert m["memory:host/used_bytes"][-1] == (24682416 - 23962364) * 1024
    assert m["memory:host/util_capacity"][-1] == pytest.approx((24682416 - 23962364) / 24682416)
    assert m["memory:host/dirty_bytes"][-1] == 2608 * 1024
    assert last(m, "memory:host/major_faults_per_s") == pytest.approx(2 / DT)
    assert last(m, "memory:host/swap_out_bytes_per_s") == 0.0
    assert last(m, "memory:host/reclaim_scan_pages_per_s") == 0.0


def test_pci_sums_its_children(root: Path) -> None:
    sys_block = root / "sys" / "devices" / "pci0000:00" / "0000:00:02.0" / "virtio1" / "block" / "vda"
    sys_block.mkdir(parents=True)
    (root / "sys" / "class" / "block").mkdir(parents=True)
    (root / "sys" / "class" / "block" / "vda").symlink_to(sys_block)
    graph = ComponentGraph()
    link = Limit(value=1e9, unit="B/s", source=LimitSource.SYSFS, detail="test link")
    graph.add_component(Component(id="pci:0000:00:02.0", kind=ComponentKind.PCI, name="0000:00:02.0",
                                  limits={"send": link, "receive": link}))
    graph.add_component(Component(id="block:vda", kind=ComponentKind.BLOCK, name="vda"))
    context = ProbeContext(root=root, graph=graph)
    probes = [block.open_probe(context), pci.open_probe(context)]
    assert probes[1].children == {"pci:0000:00:02.0": ["block:vda"]}
    m = record(probes, root, [PAIR / "t0", PAIR / "t1"])
    # host -> device (receive) carries the disk's writes
    assert last(m, "pci:0000:00:02.0/receive_bytes_per_s") == pytest.approx(351792 * 512 / DT)
    assert last(m, "pci:0000:00:02.0/util_receive") == pytest.approx(351792 * 512 / DT / 1e9)
    assert last(m, "pci:0000:00:02.0/util_send") == pytest.approx(24 * 512 / DT / 1e9)


def test_a_vanished_device_reads_as_missing_not_as_a_rate(root: Path) -> None:
    probe = block.open_probe(ProbeContext(root=root))
    shrunk = root / "shrunk"
    (shrunk / "proc").mkdir(parents=True)
    text = (PAIR / "t1" / "proc" / "diskstats").read_text().splitlines()
    (shrunk / "proc" / "diskstats").write_text("\n".join(l for l in text if " zram0 " not in l) + "\n")
    for name in ("pressure",):
        shutil.copytree(PAIR / "t1" / "proc" / name, shrunk / "proc" / name)
    m = record([probe], root, [PAIR / "t0", shrunk, PAIR / "t1"])
    assert np.isnan(m["block:zram0/write_bytes_per_s"][1:]).all()  # gone, then back: no fake delta
    assert m["block:vda/write_bytes_per_s"][1] == pytest.approx(351792 * 512 / DT)


@pytest.mark.live
def test_process_tree_cpu_and_io_of_a_real_child(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    # a parent that starts a child which burns 0.5 s of CPU and writes 4 MiB through write(2)
    code = (
        "import subprocess, sys; subprocess.run([sys.executable, '-c', "
        "\"import time\\nwhile time.process_time() < 0.5: pass\\n"
        f"f=open(r'{tmp_path / 'out'}','wb'); f.write(b'x'*(4<<20)); f.close()\"])"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    probe = process.open_probe(ProbeContext(pid=proc.pid))
    rows, times = [], []
    import time

    def exited() -> bool:  # without reaping: the closing read must still see the zombie root
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None

    while True:
        done = exited()
        rows.append(b" ".join(probe.read()))
        times.append(time.monotonic())
        if done:
            break
        time.sleep(0.05)
    probe.close()
    proc.wait()
    raw = parse_rows(np.array(rows, dtype=row_dtype(len(probe.columns))), len(probe.columns))
    m = probe.derive(raw, np.array(times), {})
    cpu_seconds = np.nansum(m[f"process:{proc.pid}/cpu_cores"][1:] * np.diff(times))
    # the child's 0.5 s of CPU (plus two interpreter start-ups), seen through the tree
    assert 0.45 < cpu_seconds < 2.0
    written = np.nansum(m[f"process:{proc.pid}/wchar_bytes_per_s"][1:] * np.diff(times))
    assert written >= (4 << 20) * (1 - 1e-9)  # rate x interval, summed: float rounding only
    assert np.nanmax(m[f"process:{proc.pid}/processes"]) == 2


def test_a_vlan_is_judged_against_its_lower_device_speed(tmp_path: Path) -> None:
    """A VLAN's frames cross its lower device: without a speed of its own (virtual NICs read -1)
    it takes the lower device's, and the attribution is recorded."""
    snaps = []
    for name, rx in (("t0", 1_000_000), ("t1", 1_000_000 + 87_000_000)):
        snap = tmp_path / name
        shutil.copytree(PAIR / name, snap)
        dev = snap / "proc" / "net" / "dev"
        dev.write_text(dev.read_text() + f"eth0.100: {rx} 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n")
        snaps.append(snap)
    root = tmp_path / "root"
    shutil.copytree(snaps[0], root)
    sys_net = root / "sys" / "class" / "net"
    (sys_net / "eth0").mkdir(parents=True)
    (sys_net / "eth0" / "speed").write_text("1000\n")  # 1 Gb/s = 125e6 B/s
    (sys_net / "eth0" / "duplex").write_text("full\n")
    (sys_net / "eth0.100").mkdir()
    (sys_net / "eth0.100" / "speed").write_text("-1\n")
    (sys_net / "eth0.100" / "lower_eth0").symlink_to(sys_net / "eth0")
    probe = net.open_probe(ProbeContext(root=root, components={"nic:eth0.100"}))
    m = record([probe], root, snaps)
    assert last(m, "nic:eth0.100/rx_bytes_per_s") == pytest.approx(87_000_000 / DT)
    assert last(m, "nic:eth0.100/util_receive") == pytest.approx(87_000_000 / DT / 125e6)
    assert "lower device eth0" in probe.limits["nic:eth0.100/receive"].detail
    assert probe.attrs()["nic:eth0.100"]["lower_devices"] == ["eth0"]


def test_an_older_kernel_without_pressure_files_and_with_14_field_diskstats(tmp_path: Path) -> None:
    """Kernels before 4.18 print 14 diskstats fields and before 4.20 have no /proc/pressure.
    (Synthesized in those formats from this VM's pair, not captured on an old kernel.)"""
    snaps = []
    for name in ("t0", "t1"):
        snap = tmp_path / name
        shutil.copytree(PAIR / name, snap)
        shutil.rmtree(snap / "proc" / "pressure")
        disk = snap / "proc" / "diskstats"
        disk.write_text("".join(" ".join(line.split()[:14]) + "\n" for line in disk.read_text().splitlines()))
        snaps.append(snap)
    root = tmp_path / "root"
    shutil.copytree(snaps[0], root)
    context = ProbeContext(root=root)
    probes = [block.open_probe(context), cpu.open_probe(context)]
    assert not any("psi" in c for p in probes for c in p.columns)
    m = record(probes, root, snaps)
    assert last(m, "block:vda/write_bytes_per_s") == pytest.approx(351792 * 512 / DT)
    assert last(m, "block:vda/busy") == pytest.approx(88 / 1740)
    assert last(m, "cpu:host/busy") == pytest.approx(347 / 348)
    assert "cpu:host/psi_some" not in m


# -- the process tree's kept-open files ---------------------------------------------------------
def _fresh(pid: int) -> list[int]:
    """A tree of one process read the way a reviewer would: open, read, parse, close."""
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    fields = stat[stat.rfind(b")") + 2 :].split()
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    cpu_ticks = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    names = ("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes")
    return [cpu_ticks, *(int(io[n]) for n in names), 1, int(fields[17])]


def _on_tmpfs(path: Path) -> bool:
    """tmpfs pages are never accounted as written to storage (write_bytes stays 0)."""
    best, fstype = "", ""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _dev, mnt, kind = line.split()[:3]
        if str(path.resolve()).startswith(mnt.rstrip("/") + "/") and len(mnt) > len(best):
            best, fstype = mnt, kind
    return fstype in ("tmpfs", "ramfs")


@pytest.mark.live
def test_kept_open_files_read_what_a_fresh_read_reads(tmp_path: Path) -> None:
    """A child that writes exactly N bytes: the kept descriptors show N more in write_bytes and
    N + 5 in wchar (its 'done' line), and every value equals a fresh read's."""
    if _on_tmpfs(tmp_path):
        pytest.skip(f"{tmp_path} is on tmpfs, whose writes are not accounted in write_bytes")
    n = 16 * 4096  # whole pages of a new file: buffered writes are accounted per dirtied page
    # the file is created before the first read: creating it can dirty a block of the new
    # directory too, accounted to the creator as one more page of write_bytes
    code = (
        "import os, sys\n"
        f"fd = os.open(r'{tmp_path / 'out'}', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
        "sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.readline()\n"
        f"os.write(fd, b'x' * {n}); os.fsync(fd); os.close(fd)\n"
        "sys.stdout.write('done\\n'); sys.stdout.flush(); sys.stdin.readline()\n"
    )
    proc = _scripted(code)
    try:
        assert proc.stdout.readline() == b"ready\n"
        probe = process.open_probe(ProbeContext(pid=proc.pid))
        before = [int(v) for v in probe.read()]
        assert before == _fresh(proc.pid)  # blocked on stdin: nothing moves between the reads
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"done\n"
        after = [int(v) for v in probe.read()]  # through the descriptors opened for `before`
        assert after == _fresh(proc.pid)
        assert after == [int(v) for v in process.open_probe(ProbeContext(pid=proc.pid)).read()]
        delta = dict(zip(process.COUNTERS, np.subtract(after[:7], before[:7]).tolist(), strict=True))
        # N, plus a page when the write dirtied a metadata block that was clean: a file system
        # without a journal (this VM's ext4 root) accounts it to the writer; with one, exactly N
        extra = delta["write_bytes"] - n
        assert extra in (0, 4096), delta
        assert delta["wchar"] == n + len(b"done\n")
        assert delta["syscw"] == 2  # os.write and the flush of 'done'
        assert after[7:] == [1, 1]  # one process, one thread
        assert probe.fd_count() == 4  # its directory, stat, io and its one thread's children file
    finally:
        proc.kill()
        proc.wait()
    assert [int(v) for v in probe.read()] == [0] * 9  # reaped: nothing left to read, no error
    assert probe.fd_count() == 0


@pytest.mark.live
def test_an_exiting_child_is_dropped_with_its_files() -> None:
    """Killed, the child stays counted as a zombie; reaped, it is dropped and its descriptors
    closed; the root's own exit then leaves an empty tree, all without an error."""
    import signal

    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sleep', '30'])\n"
        "print(child.pid, flush=True); sys.stdin.readline()\n"
        "child.wait(); print('reaped', flush=True); sys.stdin.readline()\n"
    )
    proc = _scripted(code)
    try:
        child = int(proc.stdout.readline())
        probe = process.open_probe(ProbeContext(pid=proc.pid))
        columns = {c.rsplit("/", 1)[1]: i for i, c in enumerate(probe.columns)}
        assert int(probe.read()[columns["processes"]]) == 2
        assert probe.fd_count() == 8
        os.kill(child, signal.SIGKILL)
        while Path(f"/proc/{child}/stat").read_text().split(") ")[1][0] != "Z":
            time.sleep(0.005)
        assert int(probe.read()[columns["processes"]]) == 2  # a zombie: its counters are still its own
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"reaped\n"
        assert int(probe.read()[columns["processes"]]) == 1
        assert probe.fd_count() == 4
    finally:
        proc.kill()
        proc.wait()
    assert int(probe.read()[columns["processes"]]) == 0
    assert probe.fd_count() == 0


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.live
def test_children_coming_and_going_leak_no_descriptors() -> None:
    """A parent that starts a short-lived child over and over, read for 300 ticks: the probe
    never holds more than its two processes' files, and gives every one back."""
    import subprocess
    import sys

    baseline = _open_fds()
    loop = "import subprocess, time\nwhile True:\n    subprocess.run(['sleep', '0.01']); time.sleep(0.01)\n"
    proc = subprocess.Popen([sys.executable, "-S", "-c", loop])
    try:
        probe = process.open_probe(ProbeContext(pid=proc.pid))
        counts, held, ours = [], [], []
        for _ in range(300):
            counts.append(int(probe.read()[7]))  # processes
            held.append(probe.fd_count())
            ours.append(_open_fds())
            time.sleep(0.002)
    finally:
        proc.kill()
        proc.wait()
    arrivals = sum(1 for a, b in zip(counts, counts[1:]) if (a, b) == (1, 2))
    assert arrivals >= 5, counts  # children did come and go
    assert max(held) == 8 and min(held) == 4  # parent + child, or the parent alone: 4 files each
    assert max(ours) <= baseline + 8  # the pipe-less Popen holds none; the probe's at most 8
    probe.close()
    assert probe.fd_count() == 0 and _open_fds() == baseline


@pytest.mark.live
def test_a_child_started_by_a_second_thread_is_found_through_its_thread() -> None:
    """Children are listed per thread: a child of a non-main thread is in that thread's file only."""
    code = (
        "import subprocess, sys, threading\n"
        "def spawn():\n"
        "    child = subprocess.Popen(['sleep', '30']); print(child.pid, flush=True)\n"
        "    sys.stdin.readline(); child.kill(); child.wait()\n"
        "t = threading.Thread(target=spawn); t.start(); t.join()\n"
        "print('joined', flush=True); sys.stdin.readline()\n"
    )
    proc = _scripted(code)
    try:
        child = int(proc.stdout.readline())
        probe = process.open_probe(ProbeContext(pid=proc.pid))
        tokens = [int(v) for v in probe.read()]
        assert tokens[7] == 2 and tokens[8] == 3  # parent (2 threads) + sleep (1)
        assert probe.fd_count() == 4 + 2 + 4  # the parent's 4 files + its task directory + a 2nd children file
        assert child in probe._members
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"joined\n"
        while len(os.listdir(f"/proc/{proc.pid}/task")) > 1:  # join() returns just before the thread is gone
            time.sleep(0.001)
        tokens = [int(v) for v in probe.read()]
        assert tokens[7:] == [1, 1]
        assert probe.fd_count() == 4  # the thread's file and the task directory closed with it
    finally:
        proc.kill()
        proc.wait()
    probe.close()


def _stat_line(pid: int, ppid: int, utime: int, start: int, threads: int = 1) -> str:
    # fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    # cutime cstime priority nice num_threads itrealvalue starttime ...; a ')' in the name on purpose
    return (f"{pid} (a) b) S {ppid} {pid} {pid} 0 -1 0 0 0 0 0 {utime} 2 3 4 20 0 {threads} 0 {start} "
            "1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n")


def _fake_process(root: Path, pid: int, ppid: int, utime: int, start: int, children: str = "") -> None:
    d = root / "proc" / str(pid)
    (d / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
    (d / "stat").write_text(_stat_line(pid, ppid, utime, start))
    (d / "io").write_text(f"rchar: {pid}\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
                          "cancelled_write_bytes: 0\n")
    (d / "task" / str(pid) / "children").write_text(children)


def test_a_stranger_holding_a_listed_pid_or_the_roots_pid_is_not_counted(tmp_path: Path) -> None:
    """Pid reuse, on a synthetic /proc: a pid listed as a child but whose stat names another
    parent is not counted until it does; a root whose start time changed is not the root."""
    _fake_process(tmp_path, 100, 1, utime=10, start=5000, children="200 ")
    _fake_process(tmp_path, 200, 999, utime=7, start=6000)  # another parent: not the listed child
    probe = process.ProcessProbe(ProbeContext(root=tmp_path), 100)
    # cpu = utime + stime 2 + cutime 3 + cstime 4; rchar is the pid in these files
    assert list(probe.read()) == [b"19", b"100", b"2", b"3", b"4", b"5", b"6", b"1", b"1"]
    (tmp_path / "proc" / "200" / "stat").write_text(_stat_line(200, 100, 7, 6000))  # now the child
    assert list(probe.read()) == [b"35", b"300", b"4", b"6", b"8", b"10", b"12", b"2", b"2"]
    # the root's files read empty (as a reaped process's do) and its pid is now another process's
    for name in ("stat", "io"):
        (tmp_path / "proc" / "100" / name).write_text("")
    shutil.rmtree(tmp_path / "proc" / "100")
    _fake_process(tmp_path, 100, 1, utime=50, start=9999)
    assert list(probe.read()) == [b"0", b"0", b"0", b"0", b"0", b"0", b"0", b"0", b"0"]
    assert probe.fd_count() == 0
