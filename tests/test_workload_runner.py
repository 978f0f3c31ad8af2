"""CommandWorkload: macros, parser choice, return codes, timeouts that kill the whole tree, real
tools."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path

import psutil
import pytest

from conftest import require_tool, sigint_as_in_a_terminal
from pilot_sys.errors import BadInput, WorkloadFailed
from pilot_sys.workload import Workload
from pilot_sys.workload.macros import format_work_amount, substitute
from pilot_sys.workload.parsers import MalformedOutput
from pilot_sys.workload.process import WorkloadTimeout
from pilot_sys.workload.runner import CommandWorkload, detect_parser


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pids: list[int], seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.02)
    return False


def test_macros_are_substituted_inside_arguments(tmp_path: Path) -> None:
    assert format_work_amount(48.0) == "48"
    assert format_work_amount(12.6) == "13"
    assert format_work_amount(2.5, integer=False) == "2.5"
    assert format_work_amount(7.0, integer=False) == "7"
    argv = substitute(
        ["fio", "--size=%WORK_AMOUNT%M", "--output=%RESULT_DIR%/x.json", "%WORK_AMOUNT%"],
        "64",
        tmp_path,
    )
    assert argv == ["fio", "--size=64M", f"--output={tmp_path}/x.json", "64"]


@pytest.mark.live
def test_round_runs_substituted_command_and_keeps_its_output(tmp_path: Path) -> None:
    script = 'echo "amount=$1"; echo note >&2; echo $1 > "$2/written.txt"'
    workload = CommandWorkload(["sh", "-c", script, "sh", "%WORK_AMOUNT%", "%RESULT_DIR%"])
    assert isinstance(workload, Workload)
    round_dir = tmp_path / "round-0001"
    out = workload.run_round(40, round_dir)
    assert (round_dir / "stdout.txt").read_text() == "amount=40\n"
    assert (round_dir / "stderr.txt").read_text() == "note\n"
    assert (round_dir / "written.txt").read_text() == "40\n"
    assert round_dir / "written.txt" in out.output_files
    # parser "none": the only reading is work amount over the measured duration
    assert out.readings == {"work_rate": pytest.approx(40 / out.duration)}
    assert out.work_amount == 40 and out.work_done == 40 and out.warnings == []
    assert [s.name for s in workload.pi_specs()] == ["work_rate"]


@pytest.mark.live
def test_command_without_work_amount_is_nominal(tmp_path: Path) -> None:
    workload = CommandWorkload(["true"])
    out = workload.run_round(10, tmp_path)
    assert out.work_done is None and any("nominal" in w for w in out.warnings)
    # no work amount to divide: the PI is the round's time, lower is better (not "10 work/s")
    assert out.readings == {"round_time": pytest.approx(out.duration)}
    spec = workload.pi_specs()[0]
    assert (spec.name, spec.unit, spec.higher_is_better) == ("round_time", "s", False)


@pytest.mark.parametrize(
    ("argv", "parser"),
    [
        (["fio", "job.fio"], "fio"),
        (["/usr/bin/fio", "--name=x"], "fio"),
        (["sudo", "-u", "root", "taskset", "-c", "0", "fio", "--name=x"], "fio"),
        (["numactl", "--cpunodebind=0", "-m", "0", "--", "iperf3", "-c", "h"], "iperf3"),
        (["env", "-u", "X", "LC_ALL=C", "dd", "if=/dev/zero"], "dd"),
        (["taskset", "0x3", "nice", "-n", "5", "dd"], "dd"),
        (["stress-ng", "--cpu", "1"], "none"),
    ],
)
def test_parser_is_chosen_from_the_real_program(argv: list[str], parser: str) -> None:
    assert detect_parser(argv) == parser


def test_fio_and_iperf3_get_the_options_their_parsers_need(tmp_path: Path) -> None:
    fio = CommandWorkload(["taskset", "-c", "0", "fio", "--name=x", "--size=%WORK_AMOUNT%M"])
    argv = fio.command_for(16, tmp_path)
    assert argv[:4] == ["taskset", "-c", "0", "fio"]
    assert "--output-format=json" in argv and "--size=16M" in argv
    assert f"--write_bw_log={tmp_path.resolve()}/fio" in argv and "--log_avg_msec=10" in argv
    assert f"--write_iops_log={tmp_path.resolve()}/fio" in argv
    logs = tmp_path / "private"
    assert f"--write_lat_log={logs.resolve()}/fio" in fio.command_for(16, tmp_path, logs)
    mine = CommandWorkload(
        ["fio", "--output-format=normal", "--write_bw_log=mine", "--log_avg_msec=20"]
    )
    argv = mine.command_for(1, tmp_path)
    assert "--output-format=normal,json" in argv and "mine" in " ".join(argv)
    assert (
        sum(a.startswith("--write_bw_log") for a in argv) == 1 and "--log_avg_msec=10" not in argv
    )
    # iperf3: JSON, and a 0.1 s report interval (unit readings) unless the user chose one
    assert CommandWorkload(["iperf3", "-c", "h"]).command_for(1, tmp_path) == [
        "iperf3",
        "-J",
        "-i",
        "0.1",
        "-c",
        "h",
    ]
    assert CommandWorkload(["iperf3", "-J", "-c", "h"]).command_for(1, tmp_path).count("-J") == 1
    for own in (["-i", "0.5"], ["-i0.5"], ["--interval=0.5"], ["--interval", "0"]):
        argv = CommandWorkload(["iperf3", "-c", "h", *own]).command_for(1, tmp_path)
        assert "0.1" not in argv and argv[-len(own) :] == own


def test_fio_clients_get_the_logs_asked_for_in_copies_of_their_job_files(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text("[w]\nrw=write\nsize=1M\n")
    (tmp_path / "hosts").write_text("srv1\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    fio = CommandWorkload(["fio", "--client", "hosts", "job.fio"], cwd=tmp_path)
    argv = fio.command_for(1, tmp_path / "r", logs)
    copy = Path(argv[-1])
    assert argv[-3:-1] == ["--client", "hosts"]  # a --client value is never taken for a job
    assert copy.parent == logs and copy.name.endswith("job.fio")
    head = f"[global]\nwrite_bw_log={logs.resolve()}/fio\n"
    assert copy.read_text().startswith(head)
    assert copy.read_text().endswith("log_avg_msec=10\n[w]\nrw=write\nsize=1M\n")
    # without --client the job file is fio's to read as it is
    plain = CommandWorkload(["fio", "job.fio"], cwd=tmp_path).command_for(1, tmp_path, logs)
    assert plain[-1] == "job.fio"


@pytest.mark.live
def test_return_codes(tmp_path: Path) -> None:
    argv = ["sh", "-c", "echo progress; echo 'disk on fire' >&2; exit 3"]
    with pytest.raises(
        WorkloadFailed,
        match=r"sh: exited with code 3 \(accepted: 0\): disk on fire \[output kept in ",
    ):
        CommandWorkload(argv).run_round(1, tmp_path / "a")
    assert (tmp_path / "a" / "stdout.txt").read_text() == "progress\n"  # kept for the post-mortem
    out = CommandWorkload(argv, accepted_returncodes={0, 3}).run_round(1, tmp_path / "b")
    assert out.returncode == 3
    with pytest.raises(WorkloadFailed, match="sh: was killed by SIGKILL: no output"):
        CommandWorkload(["sh", "-c", "kill -9 $$"]).run_round(1, tmp_path / "c")


@pytest.mark.live
def test_bad_construction_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="unknown parser 'xml'"):
        CommandWorkload(["true"], parser="xml")
    with pytest.raises(BadInput, match="no command"):
        CommandWorkload([])
    with pytest.raises(BadInput, match="--timeout"):
        CommandWorkload(["true"], timeout=0)
    with pytest.raises(BadInput, match="command not found"):
        CommandWorkload(["no-such-program-pilot"]).run_round(1, tmp_path)


@pytest.mark.live
def test_env_and_forced_parser(tmp_path: Path) -> None:
    workload = CommandWorkload(
        ["sh", "-c", 'for i in 1 2 3; do echo "$SCALE"; done'], parser="lines", env={"SCALE": "2.5"}
    )
    out = workload.run_round(1, tmp_path)
    assert out.readings == {"value": 2.5} and list(out.unit_readings["value"]) == [2.5, 2.5, 2.5]
    macro_env = CommandWorkload(
        ["sh", "-c", 'echo "$N"; echo "$N" > "$OUT"'],
        parser="lines",
        env={"N": "%WORK_AMOUNT%", "OUT": "%RESULT_DIR%/n.txt"},
    )
    out = macro_env.run_round(7, tmp_path / "m")
    assert out.readings == {"value": 7.0} and (tmp_path / "m" / "n.txt").read_text() == "7\n"
    assert out.work_done == 7  # the work amount reaches the command through the environment
    with pytest.raises(MalformedOutput, match="stdout.txt: no numeric column"):
        CommandWorkload(["printf", "hello\\nworld\\n"], parser="csv").run_round(1, tmp_path / "c")


@pytest.mark.live
def test_timeout_kills_the_whole_tree(tmp_path: Path) -> None:
    # Two children in the group and one that escaped to its own session with setsid.
    script = (
        'sleep 60 & echo $! > "$1/pids"; sleep 60 & echo $! >> "$1/pids"; '
        'setsid sleep 60 & echo $! >> "$1/pids"; wait'
    )
    workload = CommandWorkload(["sh", "-c", script, "sh", "%RESULT_DIR%"], timeout=0.5)
    started = time.monotonic()
    with pytest.raises(WorkloadTimeout, match=r"timed out after 0.5 s"):
        workload.run_round(1, tmp_path)
    assert time.monotonic() - started < 3.0  # SIGTERM sufficed, no wait for the grace period
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 3 and wait_gone(pids)


@pytest.mark.live
def test_leftover_background_processes_are_ended(tmp_path: Path) -> None:
    out = CommandWorkload(
        ["sh", "-c", 'sleep 60 & echo $! > "$1/pid"', "sh", "%RESULT_DIR%"]
    ).run_round(1, tmp_path)
    assert any("ended 1 process" in w for w in out.warnings)
    assert wait_gone([int((tmp_path / "pid").read_text())])


@pytest.mark.live
def test_ctrl_c_kills_the_round_tree(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        from pathlib import Path
        from pilot_sys.workload.runner import CommandWorkload
        script = 'sleep 60 & echo $! > "$1/pid"; wait'
        w = CommandWorkload(["sh", "-c", script, "sh", "%RESULT_DIR%"])
        try:
            w.run_round(1, Path({str(tmp_path)!r}))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,
    )
    pid_file = tmp_path / "pid"
    deadline = time.monotonic() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=10)
    assert stdout.strip() == "interrupted"
    assert wait_gone([int(pid_file.read_text())])


def test_data_path_args(tmp_path: Path) -> None:
    fio = CommandWorkload(
        ["fio", "--name=x", r"--filename=/dev/vda:/tmp/a\:b", f"--directory={tmp_path}"]
    )
    assert fio.data_path_args() == ["/dev/vda", "/tmp/a:b", str(tmp_path)]
    job = tmp_path / "seq.fio"
    job.write_text("[global]\ndirectory=/srv/data\n[w]\nrw=write\nfilename = /dev/nvme0n1\n")
    assert CommandWorkload(["fio", "seq.fio"], cwd=tmp_path).data_path_args() == [
        "/srv/data",
        "/dev/nvme0n1",
    ]
    assert CommandWorkload(["fio", "--name=x"], cwd=tmp_path).data_path_args() == [str(tmp_path)]
    dd = CommandWorkload(
        ["sudo", "dd", "if=/dev/zero", "of=%RESULT_DIR%/../f%WORK_AMOUNT%", "bs=1M"]
    )
    assert dd.data_path_args() == ["./../f1"]
    other = CommandWorkload(
        ["stress-ng", "--hdd", "1", "--temp-path", str(tmp_path), "--x=/dev/null"]
    )
    assert other.data_path_args() == [str(tmp_path)]


@pytest.mark.live
def test_real_fio_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tool("fio")
    workload = CommandWorkload(
        [
            "fio",
            "--name=seq",
            f"--directory={tmp_path}",
            "--rw=write",
            "--bs=1M",
            "--size=%WORK_AMOUNT%M",
            "--direct=1",
            "--ioengine=psync",
            "--time_based",
            "--runtime=1",
            "--unlink=1",
        ],
        fio_log_avg_msec=50,
    )
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp(**kw: str) -> str:
        made.append(real_mkdtemp(**kw))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    out = workload.run_round(8, tmp_path / "r1")
    assert out.readings["write_bw"] > 0 and out.work_done and out.work_done >= 8 * 2**20
    assert out.unit_readings["write_bw"].size >= 10  # 1 s in 50 ms windows
    assert out.unit_readings["write_iops"].size == out.unit_readings["write_bw"].size
    # the logs were written to a private folder, read, and removed with it
    assert not (tmp_path / "r1" / "fio_bw.1.log").exists()
    assert len(made) == 1 and not Path(made[0]).exists()
    assert {s.name for s in workload.pi_specs()} >= {"write_bw", "write_iops", "write_lat_mean"}


@pytest.mark.live
def test_real_dd_round(tmp_path: Path) -> None:
    require_tool("dd")
    workload = CommandWorkload(
        ["dd", "if=/dev/zero", f"of={tmp_path}/f", "bs=1M", "count=%WORK_AMOUNT%", "oflag=direct"],
        env={"LC_ALL": "de_DE.UTF-8"},
    )
    out = workload.run_round(4, tmp_path / "r1")
    assert out.work_done == 4 * 2**20 and out.readings["bw"] > 0
    assert "copied" in (tmp_path / "r1" / "stderr.txt").read_text()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.live
def test_real_iperf3_round_and_its_error(tmp_path: Path) -> None:
    require_tool("iperf3")
    port = str(free_port())
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-p", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        time.sleep(0.3)
        workload = CommandWorkload(
            ["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "%WORK_AMOUNT%", "-i", "0.2"],
            timeout=20,
        )
        out = workload.run_round(1, tmp_path / "r1")
        assert out.readings["bw"] > 0 and out.unit_readings["bw"].size >= 4
        assert out.work_done and out.work_done > 0
    finally:
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    refused = CommandWorkload(["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1"], timeout=20)
    with pytest.raises(WorkloadFailed, match="unable to (connect|send)"):
        refused.run_round(1, tmp_path / "r2")


@pytest.mark.live
def test_a_workload_printing_nan_fails_its_round_naming_the_line(tmp_path: Path) -> None:
    workload = CommandWorkload(["sh", "-c", "echo 1.5; echo nan; echo 2"], parser="lines")
    with pytest.raises(MalformedOutput) as err:
        workload.run_round(1, tmp_path / "r")
    assert err.value.where == f"{tmp_path / 'r' / 'stdout.txt'}:2:1"
    problem = (
        "1 value(s) no statistics can use (NaN, infinite, or beyond 1e±140) ('nan') of 3 in "
        "column 'value', first at line 2"
    )
    assert problem in err.value.problem
    with pytest.raises(MalformedOutput, match="'inf'.* in column 'rate'"):
        CommandWorkload(["printf", "rate\\ninf\\n"], parser="csv").run_round(1, tmp_path / "s")


@pytest.mark.live
def test_output_streams_to_disk_and_is_never_held_whole(tmp_path: Path) -> None:
    """64 MB of output: the parser-less round reads none of it, a failed one only its tail."""
    size = 64_000_000
    chatty = f"yes 0123456789abcdef | head -c {size}"
    tracemalloc.start()
    try:
        out = CommandWorkload(["sh", "-c", chatty]).run_round(1, tmp_path / "a")
        last_words = r"exited with code 3 .*: last words \[output kept"
        with pytest.raises(WorkloadFailed, match=last_words):
            failing = ["sh", "-c", f"{chatty}; echo; echo 'last words'; exit 3"]
            CommandWorkload(failing).run_round(1, tmp_path / "b")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp_path / "a" / "stdout.txt").stat().st_size == size
    assert out.readings["round_time"] > 0  # a command without a work amount: its round time
    assert peak < size / 16, f"peak {peak / 1e6:.1f} MB"
