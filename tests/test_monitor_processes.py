"""The process probe (``pilot_sys.monitor.processes``): a real process tree's CPU and I/O, its
kept-open files against fresh reads, children coming and going, pid reuse on a synthetic /proc."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.monitor import processes as process
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.procread import TOKEN_DTYPE, parse_tokens


def _scripted(code: str) -> subprocess.Popen[bytes]:
    """A Python process driven line by line through its stdin/stdout (a process tree to watch)."""
    return subprocess.Popen(
        [sys.executable, "-S", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


@pytest.mark.live
def test_process_tree_cpu_and_io_of_a_real_child(tmp_path: Path) -> None:
    # a parent that starts a child which burns 0.5 s of CPU and writes 4 MiB through write(2)
    code = (
        "import subprocess, sys; subprocess.run([sys.executable, '-c', "
        '"import time\\nwhile time.process_time() < 0.5: pass\\n'
        f"f=open(r'{tmp_path / 'out'}','wb'); f.write(b'x'*(4<<20)); f.close()\"])"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    probe = process.open_process_probe(ProbeContext(pid=proc.pid))
    rows, times = [], []

    def exited() -> bool:  # without reaping: the closing read must still see the zombie root
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None

    while True:
        done = exited()
        rows.append(probe.read())
        times.append(time.monotonic())
        if done:
            break
        time.sleep(0.05)
    probe.close()
    proc.wait()
    raw = parse_tokens(np.array(rows, dtype=TOKEN_DTYPE))
    m = probe.derive(raw, np.array(times), {})
    cpu_seconds = np.nansum(m[f"process:{proc.pid}/cpu_cores"][1:] * np.diff(times))
    # the child's 0.5 s of CPU (plus two interpreter start-ups), seen through the tree
    assert 0.45 < cpu_seconds < 2.0
    written = np.nansum(m[f"process:{proc.pid}/wchar_bytes_per_s"][1:] * np.diff(times))
    assert written >= (4 << 20) * (1 - 1e-9)  # rate x interval, summed: float rounding only
    assert np.nanmax(m[f"process:{proc.pid}/processes"]) == 2


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
        probe = process.open_process_probe(ProbeContext(pid=proc.pid))
        before = [int(v) for v in probe.read()]
        assert before == _fresh(proc.pid)  # blocked on stdin: nothing moves between the reads
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"done\n"
        after = [int(v) for v in probe.read()]  # through the descriptors opened for `before`
        assert after == _fresh(proc.pid)
        assert after == [
            int(v) for v in process.open_process_probe(ProbeContext(pid=proc.pid)).read()
        ]
        delta = dict(
            zip(process.COUNTERS, np.subtract(after[:7], before[:7]).tolist(), strict=True)
        )
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
        probe = process.open_process_probe(ProbeContext(pid=proc.pid))
        columns = {c.rsplit("/", 1)[1]: i for i, c in enumerate(probe.columns)}
        assert int(probe.read()[columns["processes"]]) == 2
        assert probe.fd_count() == 8
        os.kill(child, signal.SIGKILL)
        while Path(f"/proc/{child}/stat").read_text().split(") ")[1][0] != "Z":
            time.sleep(0.005)
        assert (
            int(probe.read()[columns["processes"]]) == 2
        )  # a zombie: its counters are still its own
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
    """This process's descriptors on /proc files, the kind the probe opens: in a test worker
    other threads open and close pipes and sockets meanwhile, which are not the probe's."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed since
            continue
        count += target.startswith("/proc/")
    return count


@pytest.mark.live
def test_children_coming_and_going_leak_no_descriptors() -> None:
    """A parent that starts a short-lived child over and over, read for 300 ticks: the probe
    never holds more than its two processes' files, and gives every one back."""
    import subprocess
    import sys

    baseline = _open_fds()
    loop = (
        "import subprocess, time\n"
        "while True:\n"
        "    subprocess.run(['sleep', '0.01']); time.sleep(0.01)\n"
    )
    proc = subprocess.Popen([sys.executable, "-S", "-c", loop])
    try:
        probe = process.open_process_probe(ProbeContext(pid=proc.pid))
        counts, held, ours = [], [], []
        for _ in range(300):
            counts.append(int(probe.read()[7]))  # processes
            held.append(probe.fd_count())
            ours.append(_open_fds())
            time.sleep(0.002)
    finally:
        proc.kill()
        proc.wait()
    arrivals = sum(1 for a, b in zip(counts, counts[1:], strict=False) if (a, b) == (1, 2))
    assert arrivals >= 5, counts  # children did come and go
    assert max(held) == 8 and min(held) == 4  # parent + child, or the parent alone: 4 files each
    assert max(ours) <= baseline + 8  # the pipe-less Popen holds none; the probe's at most 8
    assert min(ours) >= baseline + 4  # and the count sees the probe's own files
    probe.close()
    assert probe.fd_count() == 0 and _open_fds() == baseline


@pytest.mark.live
def test_a_child_started_by_a_second_thread_is_found_through_its_thread() -> None:
    """Children are listed per thread: a child of a non-main thread is in that thread's file
    only."""
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
        probe = process.open_process_probe(ProbeContext(pid=proc.pid))
        tokens = [int(v) for v in probe.read()]
        assert tokens[7] == 2 and tokens[8] == 3  # parent (2 threads) + sleep (1)
        assert (
            probe.fd_count() == 4 + 2 + 4
        )  # the parent's 4 files + its task directory + a 2nd children file
        assert child in probe._members
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"joined\n"
        while (
            len(os.listdir(f"/proc/{proc.pid}/task")) > 1
        ):  # join() returns just before the thread is gone
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
    # cutime cstime priority nice num_threads itrealvalue starttime ...;
    # a ')' in the name on purpose
    return (
        f"{pid} (a) b) S {ppid} {pid} {pid} 0 -1 0 0 0 0 0 {utime} 2 3 4 20 0 {threads} 0 {start} "
        "1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
    )


def _fake_process(
    root: Path, pid: int, ppid: int, utime: int, start: int, children: str = ""
) -> None:
    d = root / "proc" / str(pid)
    (d / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
    (d / "stat").write_text(_stat_line(pid, ppid, utime, start))
    (d / "io").write_text(
        f"rchar: {pid}\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
        "cancelled_write_bytes: 0\n"
    )
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
