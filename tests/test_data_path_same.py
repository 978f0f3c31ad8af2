"""`run`, `monitor` and `graph` find the same data path and component under test for the same
workload: iperf3 to loopback, fio on a file, dd reading a file, and the built-in workload's
directory (`graph DIR`, `monitor -- ls DIR`). Each command runs as a user would run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import require_tool, run_cli

pytestmark = [pytest.mark.live, pytest.mark.slow]

CLOSED_PORT = "5999"  # iperf3 fails at once when nothing listens: the data path is found before


def _run(tmp_path: Path, args: list[str]) -> tuple[list[str], str | None]:
    out = tmp_path / "run"
    done = run_cli("run", "-q", "-o", str(out), "--max-rounds", "1", "--preset", "quick", *args)
    manifest = json.loads((out / "session.json").read_text())
    assert manifest["data_path"], done.stderr
    return sorted(manifest["data_path"]), manifest["cut"]


def _monitor(tmp_path: Path, argv: list[str]) -> tuple[list[str], str | None]:
    trace_file = tmp_path / "monitor.json"
    done = run_cli("monitor", "--no-live", "--json", str(trace_file), "--", *argv)
    trace = json.loads(trace_file.read_text())
    assert trace["data_path"], done.stderr
    return sorted(trace["data_path"]), trace["component_under_test"]


def _graph(args: list[str]) -> tuple[list[str], str | None]:
    done = run_cli("graph", "--json", *args)
    assert done.returncode == 0, done.stderr
    path = json.loads(done.stdout)["data_path"]
    return sorted(path["components"]), path["cut"]


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    data = tmp_path / "data.bin"
    data.write_bytes(b"\0" * 2**20)
    return {
        "iperf3": ["iperf3", "-c", "127.0.0.1", "-p", CLOSED_PORT, "-t", "1"],
        "fio": [
            "fio",
            "--name=w",
            f"--filename={tmp_path / 'fio.dat'}",
            "--size=1M",
            "--rw=write",
            "--bs=64k",
            "--output-format=json",
        ],
        "dd": ["dd", f"if={data}", "of=/dev/null", "bs=64k"],
    }


@pytest.mark.parametrize("tool", ["iperf3", "fio", "dd"])
def test_a_command_has_one_data_path(tmp_path: Path, tool: str) -> None:
    require_tool(tool)
    argv = _commands(tmp_path)[tool]
    graph = _graph(["--", *argv])
    monitor = _monitor(tmp_path, argv)
    run = _run(tmp_path, ["--", *argv])
    assert graph == monitor == run
    if tool == "iperf3":
        assert graph[1] == "nic:lo" and "nic:lo" in graph[0]
    else:
        assert graph[1] is not None and graph[1].startswith("block:")


def test_the_builtin_workloads_directory_has_the_same_data_path(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    graph = _graph([str(work)])
    monitor = _monitor(tmp_path, ["ls", str(work)])
    run = _run(tmp_path, ["--dir", str(work), "-w", "1,1"])
    assert graph == monitor == run
    assert graph[1] is not None and any(c.startswith("mount:") for c in graph[0])
