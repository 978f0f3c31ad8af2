"""``pilot-sys monitor`` as a user runs it: bad input, exit codes, output files, Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_tool, run_cli, sigint_as_in_a_terminal

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ((), "CMD"),
        (("--rate", "0", "--", "true"), "--rate"),
        (("--rate", "fast", "--", "true"), "--rate"),
        (("--threshold", "1.5", "--", "true"), "--threshold"),
        (("--max-hot-fraction", "-0.1", "--", "true"), "--max-hot-fraction"),
        (("--bogus", "--", "true"), "--bogus"),
        (("--json", "/no/such/dir/out.json", "--", "true"), "--json"),
        (("--cut", "block:no-such-disk", "--", "true"), "--cut"),
        (("--", "no-such-command-pilot-sys"), "CMD"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], where: str) -> None:
    result = run_cli("monitor", *args, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"pilot-sys: error: {where}: "), result.stderr
    assert "Traceback" not in result.stderr


def test_help_has_an_example() -> None:
    result = run_cli("monitor", "--help")
    assert result.returncode == 0
    assert "pilot-sys monitor --" in result.stdout and "--json" in result.stdout


def test_runs_the_command_keeps_its_output_and_exit_code_and_writes_json_and_plot(
    tmp_path: Path,
) -> None:
    out_json, out_png = tmp_path / "run.json", tmp_path / "run.png"
    target = tmp_path / "data"
    script = (
        f"dd if=/dev/zero of={target} bs=64k count=1000 2>/dev/null; "
        "echo workload-said-hello; exit 3"
    )
    result = run_cli(
        "monitor",
        "--rate",
        "20",
        "--json",
        str(out_json),
        "--plot",
        str(out_png),
        "--",
        "sh",
        "-c",
        script,
        str(target),
        timeout=120,
    )
    assert result.returncode == 3  # the command's own exit code
    assert "workload-said-hello" in result.stdout  # its output stays visible, ours goes to stderr
    verdict_line = result.stderr.splitlines()[1]
    assert verdict_line.startswith(
        (
            "pilot-sys monitor: valid:",
            "pilot-sys monitor: INVALID:",
            "pilot-sys monitor: not judged:",
            "pilot-sys monitor: too short to judge:",
        )
    )
    intervals = int(result.stderr.split(" samples at ")[0].rsplit(" ", 1)[1]) - 1
    # fewer than 10 sampled intervals cannot show a share of 10 %: not judged, never INVALID
    undecided = "not judged" in verdict_line or "too short to judge" in verdict_line
    assert undecided == (intervals < 10), verdict_line
    data = json.loads(out_json.read_text())
    assert data["command"][:2] == ["sh", "-c"]
    assert len(data["timestamps"]) >= 2 and "cpu:host/util_compute" in data["series"]
    verdict = data["verdict"]
    assert isinstance(verdict["hidden_bottlenecks"], list)
    assert all(h["component"] and h["evidence"] for h in verdict["hidden_bottlenecks"])
    stats = {(s["component"], s["direction"]) for s in verdict["per_component"]}
    assert ("cpu:host", "compute") in stats
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_strict_exits_3_when_a_hidden_bottleneck_invalidates_a_successful_run(
    tmp_path: Path,
) -> None:
    stress = require_tool("stress-ng")
    result = run_cli(
        "monitor",
        "--rate",
        "20",
        "--strict",
        "--cut",
        "block:vda",
        "--json",
        str(tmp_path / "r.json"),
        "--",
        stress,
        "--cpu",
        "2",
        "--timeout",
        "2s",
        "--quiet",
        timeout=120,
    )
    assert result.returncode == 3, result.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert "cpu:host" in {h["component"] for h in data["verdict"]["hidden_bottlenecks"]}


def test_ctrl_c_stops_the_command_and_still_writes_what_was_measured(tmp_path: Path) -> None:
    out_json = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pilot_sys",
            "monitor",
            "--rate",
            "20",
            "--json",
            str(out_json),
            "--",
            "sleep",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,
    )
    deadline = time.monotonic() + 30
    while not _children_named(proc.pid, "sleep") and time.monotonic() < deadline:
        time.sleep(0.1)  # start-up (imports, discovery) is slow on a busy machine
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)  # only pilot-sys gets it, as with `kill -INT`; it passes it on
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    data = json.loads(out_json.read_text())
    assert len(data["timestamps"]) >= 10  # about 1.5 s at 20 Hz were kept
    assert any("interrupted" in note for note in data["notes"])


def _children_named(pid: int, name: str) -> bool:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return False
    for child in children:
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == name:
                return True
        except OSError:
            continue
    return False


def test_a_user_rated_disk_is_judged_by_its_stated_limit(tmp_path: Path) -> None:
    fio = require_tool("fio")
    rated = tmp_path / "rated.json"
    rated.write_text(
        json.dumps(
            {
                "nodes": [
                    {
                        "id": "block:vda",
                        "limits": {
                            "write": {"value": 20e6, "detail": "test rating: 20 MB/s"},
                            "read": {"value": 20e6, "detail": "test rating: 20 MB/s"},
                        },
                    }
                ]
            }
        )
    )
    out_json, target = tmp_path / "run.json", tmp_path / "fio.dat"
    result = run_cli(
        "monitor",
        "--rate",
        "20",
        "--load",
        str(rated),
        "--json",
        str(out_json),
        "--",
        fio,
        "--name=w",
        f"--filename={target}",
        "--rw=write",
        "--bs=1M",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=8",
        "--size=1G",
        "--runtime=2",
        "--time_based",
        "--output-format=terse",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(out_json.read_text())
    assert (
        data["limits"]["block:vda/write"]["value"] == 20e6
        and data["limits"]["block:vda/write"]["source"] == "user"
    )
    writes = [v for v in data["series"]["block:vda/write_bytes_per_s"] if v is not None]
    utils = [v for v in data["series"]["block:vda/util_write"] if v is not None]
    assert utils == pytest.approx(
        [w / 20e6 for w in writes]
    )  # utilization = throughput / stated limit
    verdict = data["verdict"]
    assert verdict["cut"] == "block:vda" and not verdict["cut_limit_unknown"]
    assert (
        sorted(utils)[len(utils) // 2] > 0.8
    )  # fio outruns a 20 MB/s rating by far, here and in CI
    assert verdict["cut_saturated"]
