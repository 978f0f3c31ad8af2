"""The culprit ranking (``monitor.culprits``) on captured /proc data, and its words in the
verdict (``monitor.bottleneck_culprits``).

The scene (tests/fixtures/culprits, captured by tests/fixtures/capture_culprits.py at two
moments 2.03 s apart by /proc/uptime): pilot-sys (python3 23035) with its child ``dd`` 23099
(the workload), and beside it ``stress-ng`` 23079 with its worker ``stress-ng-cpu`` 23082, a
``dd`` 23081 writing with O_DIRECT, and an idle ``sleep`` 23077. The expected numbers are read
off the files by hand (clock ticks of 10 ms: CLK_TCK 100 on the capturing machine)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from pilot_sys.monitor import culprits
from pilot_sys.monitor.bottleneck_culprits import (
    cpu_culprits_text,
    culprit_words,
    culprits_clause,
    culprits_for,
)
from pilot_sys.monitor.culprits import (
    OTHERS,
    HostProcesses,
    descendants,
    merge_rankings,
    parse_io,
    parse_stat,
    rank,
)
from pilot_sys.monitor.trace import MonitorTrace

SCENE = FIXTURES / "culprits"
IDS = json.loads((SCENE / "scene.json").read_text())
SECONDS = 926.44 - 924.41  # /proc/uptime at the two captures


@pytest.fixture
def scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostProcesses:
    """A scan of the first capture, then the closing scan of the second."""
    monkeypatch.setattr(culprits, "USER_HZ", 100)  # the capturing machine's CLK_TCK
    root = tmp_path / "root"
    shutil.copytree(SCENE / "t0", root)
    source = HostProcesses(root, me=IDS["pilot_sys"])
    source.scan()
    shutil.rmtree(root / "proc")
    shutil.copytree(SCENE / "t1" / "proc", root / "proc")
    source.close()  # the closing scan
    return source


def test_stat_and_io_are_parsed_as_the_kernel_prints_them() -> None:
    # comm may hold spaces and ")": it ends at the last ")"
    text = b"77 (a) b (c)) S 1 77 77 0 -1 0 0 0 0 0 12 3 4 5 20 0 1 0 900 1000 42 0\n"
    assert parse_stat(text) == ("a) b (c)", 1, 15, 900, 42)
    assert parse_stat(b"garbage") is None
    io = b"rchar: 5\nwchar: 6\nsyscr: 1\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\n"
    assert parse_io(io) == (4096, 8192)
    assert parse_io(b"") == (None, None)


def test_the_workload_is_every_descendant_of_pilot_sys() -> None:
    parents = {10: 1, 11: 10, 12: 11, 13: 1, 14: 13}
    assert descendants(parents, {10}) == {11, 12}
    assert descendants(parents, {99}) == set()
    assert descendants({5: 6, 6: 5}, {10}) == set()  # a torn read's cycle ends


def test_the_captured_scene_ranks_stress_ng_first_by_cpu_and_dd_by_disk(
    scanned: HostProcesses,
) -> None:
    ranking = scanned.ranking()
    assert ranking["seconds"] == pytest.approx(SECONDS)
    assert ranking["workload_processes"] == 1  # the dd pilot-sys started: not a culprit
    top_cpu = ranking["top_cpu"]
    # stress-ng-cpu: utime 18 -> 41 ticks; dd writer: stime 10 -> 24; nobody else ran
    assert [(r["pid"], r["command"]) for r in top_cpu] == [
        (IDS["stress_ng_workers"][0], "stress-ng-cpu"),
        (IDS["writer"], "dd"),
    ]
    assert top_cpu[0]["cpu_seconds"] == pytest.approx(0.23)
    assert top_cpu[0]["cores"] == pytest.approx(0.23 / SECONDS)
    assert top_cpu[0]["share"] == pytest.approx(0.23 / 0.37)
    assert ranking["cpu_seconds"] == pytest.approx(0.37)
    # disk: the writer's write_bytes 497037312 -> 1119916032, read_bytes 12288 -> 32768; pilot-
    # sys itself wrote 12288 -> 122880 and is kept, marked
    top_disk = ranking["top_disk"]
    assert top_disk[0]["pid"] == IDS["writer"]
    assert top_disk[0]["write_bytes"] == 1119916032 - 497037312
    assert top_disk[0]["read_bytes"] == 32768 - 12288
    assert top_disk[1]["pid"] == IDS["pilot_sys"] and "pilot-sys itself" in top_disk[1]["note"]
    assert top_disk[1]["write_bytes"] == 122880 - 12288
    # command lines of the top ones, read while they existed (a stress-ng worker rewrites its own)
    assert top_cpu[0]["cmdline"] == "stress-ng-cpu [run]"
    assert top_cpu[1]["cmdline"].startswith("dd if=/dev/zero of=")
    assert all(r["pid"] != IDS["workload"] for r in ranking["top_memory"])


def test_a_process_that_started_during_the_run_counts_from_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run began before the capture (uptime 900 s): every scene process started after
    that, so all of its CPU time is the run's, not just what followed its first scan."""
    monkeypatch.setattr(culprits, "USER_HZ", 100)
    root = tmp_path / "root"
    shutil.copytree(SCENE / "t1", root)
    (root / "proc" / "uptime").write_text("900.00 300.00\n")
    source = HostProcesses(root, me=IDS["pilot_sys"])
    (root / "proc" / "uptime").write_text("926.44 361.42\n")
    source.scan()
    source.scan()
    top = {r["pid"]: r for r in source.ranking()["top_cpu"]}
    assert top[IDS["stress_ng_workers"][0]]["cpu_seconds"] == pytest.approx(0.41)
    assert top[IDS["pilot_sys"]]["cpu_seconds"] == pytest.approx(0.06)  # started before


def _trace(ranking: dict[str, object]) -> MonitorTrace:
    return MonitorTrace(
        rate_hz=10.0, start_time=0.0, timestamps=[], series={}, attrs={OTHERS: ranking}
    )


def test_the_evidence_names_the_top_processes_per_kind_of_component(
    scanned: HostProcesses,
) -> None:
    trace = _trace(scanned.ranking())
    worker = IDS["stress_ng_workers"][0]
    assert (
        cpu_culprits_text(trace)
        == f" (stress-ng-cpu pid {worker} 0.11, dd pid {IDS['writer']} 0.07)"
    )
    assert culprits_for(trace, "cpu:host")[0]["pid"] == worker
    disk = culprits_clause(trace, "block:vda")
    assert f"dd pid {IDS['writer']} read 20.0 KiB wrote 594 MiB" in disk
    assert "(/proc/PID/io, all disks)" in disk
    assert culprits_for(trace, "nic:eth0") == []  # no per-process counters for a NIC
    assert culprits_clause(_trace({}), "block:vda") == ""


def test_where_a_process_runs_is_said_only_when_it_is_not_the_roots() -> None:
    row = {"pid": 9, "command": "iperf3", "cores": 0.5, "share": 0.5, "cgroup": "/"}
    assert culprit_words(row, "cpu:host") == (
        "iperf3 pid 9 0.50 cores (50 % of the other processes' CPU)"
    )
    row |= {"netns": "net:[4026532281]", "cgroup": "/docker/abc"}
    assert culprit_words(row, "cpu:host").endswith("[netns net:[4026532281], cgroup /docker/abc]")


def test_rounds_rankings_are_merged_per_process() -> None:
    a = {"pid": 1, "command": "x", "cpu_seconds": 1.0, "read_bytes": 10, "write_bytes": 0}
    b = {"pid": 2, "command": "y", "cpu_seconds": 0.5, "read_bytes": None, "write_bytes": 5}
    first = rank([{**a, "rss_bytes": 100}, {**b, "rss_bytes": 50}], 2.0)
    second = rank([{**a, "rss_bytes": 300, "cpu_seconds": 3.0}], 2.0)
    merged = merge_rankings([first, second])
    assert merged["seconds"] == 4.0 and merged["runs"] == 2
    assert merged["cpu_seconds"] == pytest.approx(4.5)
    x = merged["top_cpu"][0]
    assert (x["pid"], x["cpu_seconds"], x["cores"]) == (1, 4.0, 1.0)
    assert x["share"] == pytest.approx(4.0 / 4.5)
    assert x["read_bytes"] == 20 and x["rss_bytes"] == 300
    assert merged["top_disk"][1]["read_bytes"] is None  # unknown in a round: unknown


def test_a_sessions_rounds_share_one_scan_per_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds shorter than the scan interval do not scan twice each: the shared scanner scans
    when due, and every round's ranking is the session's so far (the latest one is the
    session's, not a sum)."""
    monkeypatch.setattr(culprits, "USER_HZ", 100)
    root = tmp_path / "root"
    shutil.copytree(SCENE / "t0", root)
    shared = HostProcesses(root, me=IDS["pilot_sys"])
    first, second = culprits.SessionScan(shared), culprits.SessionScan(shared)
    first.sample()
    first.sample()  # /proc/uptime has not moved: not due
    assert shared.scans == 1
    shutil.rmtree(root / "proc")
    shutil.copytree(SCENE / "t1" / "proc", root / "proc")
    second.sample()  # 2.03 s later by /proc/uptime: due
    second.close()  # a round's end scans nothing of its own
    assert shared.scans == 2
    ranking = second.attrs()[OTHERS]
    assert ranking["cumulative"] and ranking["seconds"] == pytest.approx(SECONDS)
    earlier = {**ranking, "seconds": 1.0}
    assert merge_rankings([earlier, ranking]) == ranking


def test_a_culprits_netns_and_cgroup_are_told_when_not_pilot_sys_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stress-ng worker put in another network namespace and a v2 cgroup (synthesized on
    the captured scene): both are in its row and in its words; the writer, in pilot-sys's own
    netns and the root cgroup, gets neither."""
    monkeypatch.setattr(culprits, "USER_HZ", 100)
    worker, writer = IDS["stress_ng_workers"][0], IDS["writer"]

    def place(proc: Path) -> None:
        for pid, netns in ((IDS["pilot_sys"], "net:[4026531840]"), (writer, "net:[4026531840]")):
            (proc / str(pid) / "ns").mkdir(exist_ok=True)
            (proc / str(pid) / "ns" / "net").symlink_to(netns)
        (proc / str(worker) / "ns").mkdir(exist_ok=True)
        (proc / str(worker) / "ns" / "net").symlink_to("net:[4026532281]")
        (proc / str(worker) / "cgroup").write_text("1:cpu:/\n0::/system.slice/load.scope\n")

    root = tmp_path / "root"
    shutil.copytree(SCENE / "t0", root)
    place(root / "proc")
    source = HostProcesses(root, me=IDS["pilot_sys"])
    source.scan()
    shutil.rmtree(root / "proc")
    shutil.copytree(SCENE / "t1" / "proc", root / "proc")
    place(root / "proc")
    source.close()
    rows = {r["pid"]: r for r in source.ranking()["top_cpu"]}
    assert rows[worker]["netns"] == "net:[4026532281]"
    assert rows[worker]["cgroup"] == "/system.slice/load.scope"
    assert "netns" not in rows[writer] and rows[writer]["cgroup"] == "/"
    words = culprit_words(rows[worker], "cpu:host")
    assert words.endswith("[netns net:[4026532281], cgroup /system.slice/load.scope]")
    assert "[" not in culprit_words(rows[writer], "cpu:host")


def test_gone_processes_that_cannot_rank_are_forgotten_with_their_totals_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded memory: past ``MAX_TRACKED`` processes, the gone ones below the top are dropped
    (the idle sleep and the stress-ng parent, gone by the second scan); the totals stay."""
    monkeypatch.setattr(culprits, "USER_HZ", 100)
    monkeypatch.setattr(culprits, "MAX_TRACKED", 3)
    monkeypatch.setattr(culprits, "TOP", 1)
    root = tmp_path / "root"
    shutil.copytree(SCENE / "t0", root)
    source = HostProcesses(root, me=IDS["pilot_sys"])
    source.scan()
    shutil.rmtree(root / "proc")
    shutil.copytree(SCENE / "t1" / "proc", root / "proc")
    for gone in (IDS["idle"], IDS["stress_ng"]):
        shutil.rmtree(root / "proc" / str(gone))
    source.scan()
    assert {pid for pid, _ in source.tracked} == {
        IDS["pilot_sys"],
        IDS["workload"],
        IDS["stress_ng_workers"][0],
        IDS["writer"],
    }
    ranking = source.ranking()
    assert ranking["processes"] == 5 and ranking["cpu_seconds"] == pytest.approx(0.37)


def test_a_reused_pid_is_another_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's pid handed to a new process between the scans (another starttime): the
    writer's first reading is not taken for the new one's start, and both are kept."""
    monkeypatch.setattr(culprits, "USER_HZ", 100)
    root = tmp_path / "root"
    shutil.copytree(SCENE / "t0", root)
    source = HostProcesses(root, me=IDS["pilot_sys"])
    source.scan()
    stat = root / "proc" / str(IDS["writer"]) / "stat"
    fields = (SCENE / "t1" / "proc" / str(IDS["writer"]) / "stat").read_text().split(" ")
    fields[1], fields[21] = "(cc1)", str(int(fields[21]) + 50)  # another command, started later
    stat.write_text(" ".join(fields))
    source.scan()
    writers = [t for (pid, _), t in source.tracked.items() if pid == IDS["writer"]]
    assert sorted(t.last.comm for t in writers) == ["cc1", "dd"]
    assert all(t.cpu_seconds() == 0.0 for t in writers)  # neither is charged the other's ticks


def test_a_local_server_counted_with_the_workload_is_not_a_culprit(
    scanned: HostProcesses,
) -> None:
    """A process the process probe counted as the workload's local server (``local_peers``)
    is not named among the other processes."""
    trace = _trace(scanned.ranking())
    worker = IDS["stress_ng_workers"][0]
    trace.attrs["process:workload"] = {"local_peers": [worker]}
    assert worker not in [r["pid"] for r in culprits_for(trace, "cpu:host")]
    assert f"pid {worker} " not in cpu_culprits_text(trace)
