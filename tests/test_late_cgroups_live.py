"""A workload that puts itself into a cgroup after it started (a wrapper writing its own pid
into ``cgroup.procs`` and then ``exec``ing, as ``cgexec``, ``systemd-run --scope`` and container
entry points do): ``monitor`` and ``run`` must sample that cgroup's limits from the moment the
workload is seen there and name its CPU quota as what governed, as when ``run --cgroup`` put it
there (issue 21, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cgroups import scratch_cgroup

from conftest import run_cli

pytestmark = pytest.mark.live

DD_BLOCKS = 200_000  # about 0.4 s of CPU: 2 s or more at 0.2 cores


def _wrapped_dd(procs: Path, target: Path) -> list[str]:
    """``sh -c 'echo $$ > .../cgroup.procs; exec dd ...'``: the reproduction's wrapper."""
    return [
        "sh",
        "-c",
        f"echo $$ > {procs}; exec dd if=/dev/zero of={target} bs=512 count={DD_BLOCKS}",
    ]


def test_monitor_names_the_quota_of_a_cgroup_joined_after_start(tmp_path: Path) -> None:
    with scratch_cgroup(cpu_quota_cores=0.2) as cg:
        procs = cg.dirs["cpu"] / "cgroup.procs"  # the cpu hierarchy only, as in the report
        out = tmp_path / "trace.json"
        done = run_cli(
            "monitor",
            "--json",
            str(out),
            "--",
            *_wrapped_dd(procs, tmp_path / "F"),
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        trace = json.loads(out.read_text())
    limiter = f"cgroup:{cg.name}/cpu"
    verdict = trace["verdict"]
    hidden = {h["component"]: h for h in verdict["hidden_bottlenecks"]}
    assert limiter in hidden, (verdict["hidden_bottlenecks"], done.stderr)
    assert "throttled in" in hidden[limiter]["evidence"]
    assert "cpu:host" not in hidden  # the quota bound first: the host's CPU is not blamed
    assert trace["attrs"][limiter]["limiter"] == "CPU quota"
    assert any("after it started" in n and cg.name in n for n in trace["notes"])
    assert f"{limiter} (throttled periods)" in done.stderr


def test_run_names_the_quota_of_a_cgroup_joined_after_start(tmp_path: Path) -> None:
    """The first round is already judged against the quota (not only the rounds after it)."""
    with scratch_cgroup(cpu_quota_cores=0.2) as cg:
        procs = cg.dirs["cpu"] / "cgroup.procs"
        out = tmp_path / "result"
        done = run_cli(
            "run",
            "--preset",
            "quick",
            "-s",
            "12",
            "--max-rounds",
            "1",
            "-o",
            str(out),
            "--",
            *_wrapped_dd(procs, tmp_path / "F"),
            timeout=180,
        )
        assert done.returncode in (0, 3, 4), done.stderr
    first = next(out.rglob("monitor.json"))
    verdict = json.loads(first.read_text())["verdict"]
    components = [h["component"] for h in verdict["hidden_bottlenecks"]]
    assert f"cgroup:{cg.name}/cpu" in components, (components, done.stdout, done.stderr)
