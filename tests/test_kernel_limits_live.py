"""Live smoke checks of kernel-limit discovery and counters on this machine (root, cgroup v1
controllers, veth and tbf in a network namespace the test makes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cgroups import disk_of, scratch_cgroup

from conftest import REPO, require_tool
from pilot_sys.monitor.kernel_counters import blkio_stat, flat_keyed
from pilot_sys.monitor.throttling import throttled_periods
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.sysroot import SysRoot

pytestmark = pytest.mark.live
MIB = 2**20


def _limits_of(pid: int) -> dict[str, dict[str, float | None]]:
    found = cgroup_discovery(SysRoot("/"), [pid])
    return {c.id: {k: v.value for k, v in c.limits.items()} for c in found.components}


def test_cpu_quota_is_discovered_and_throttles_most_periods() -> None:
    with scratch_cgroup(cpu_quota_cores=0.2) as cg:
        before = flat_keyed(cg.read("cpu", "cpu.stat"))
        busy = cg.popen(
            ["timeout", "2", "dd", "if=/dev/zero", "of=/dev/null", "bs=64k"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.3)
            found = _limits_of(busy.pid)
        finally:
            busy.wait(timeout=30)
        after = flat_keyed(cg.read("cpu", "cpu.stat"))
    assert found == {f"cgroup:{cg.name}/cpu": {"compute": pytest.approx(0.2)}}
    share = throttled_periods(
        np.array([before["nr_throttled"], after["nr_throttled"]]),
        np.array([before["nr_periods"], after["nr_periods"]]),
    )[1]
    assert after["nr_periods"] - before["nr_periods"] >= 15  # about 2 s of 100 ms periods
    assert share > 0.8, (before, after)


def test_blkio_write_throttle_is_discovered_for_the_disk_and_counts_what_dd_wrote(
    tmp_path: Path,
) -> None:
    devnum, disk = disk_of(tmp_path)
    with scratch_cgroup(write_bps=(devnum, 4 * MIB)) as cg:
        writer = cg.popen(
            ["dd", "if=/dev/zero", f"of={tmp_path / 'x.bin'}", "bs=1M", "count=10", "oflag=direct"],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            time.sleep(0.2)
            found = _limits_of(writer.pid)
        finally:
            _, err = writer.communicate(timeout=60)
        written = blkio_stat(cg.read("blkio", "blkio.throttle.io_service_bytes"))
    assert found == {f"cgroup:{cg.name}/io:{disk}": {"write": 4 * MIB}}
    assert written[devnum]["Write"] == 10 * MIB  # O_DIRECT: every byte dd wrote, nothing else
    seconds = float(re.search(r"copied, ([\d.]+) s", err).group(1))  # type: ignore[union-attr]
    assert 10 * MIB / seconds < 1.5 * 4 * MIB, err  # held near the throttle, far below the disk


def test_launch_into_v1_hierarchies_and_v2() -> None:
    with scratch_cgroup(cpu_quota_cores=0.5, memory_bytes=512 * MIB) as v1:
        shown = v1.run(["cat", "/proc/self/cgroup"]).stdout
        assert f"cpu:{v1.name}" in shown and f"memory:{v1.name}" in shown
    with scratch_cgroup(v2=True) as v2:
        assert f"0::{v2.name}\n" in v2.run(["cat", "/proc/self/cgroup"]).stdout


def test_failing_to_join_exits_125() -> None:
    from pilot_sys.workload.cgroup_launch import CgroupTarget, in_cgroup

    bad = CgroupTarget(
        spec="/gone", procs_files=["/sys/fs/cgroup/cpu/pilot-no-such-cgroup/cgroup.procs"]
    )
    result = subprocess.run(in_cgroup(["true"], bad), capture_output=True, text=True, timeout=30)
    assert result.returncode == 125 and "cannot move into" in result.stderr


@pytest.fixture()
def shaped_netns() -> str:
    require_tool("ip")
    require_tool("tc")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    ns = f"pilot-test-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:

        def run(*argv: str) -> None:
            subprocess.run(
                ["ip", "netns", "exec", ns, *argv], check=True, capture_output=True, timeout=30
            )

        run("ip", "link", "add", "shaped0", "type", "veth", "peer", "name", "free0")
        run("ip", "link", "set", "shaped0", "up")
        run("ip", "link", "set", "free0", "up")
        run(
            "tc",
            "qdisc",
            "add",
            "dev",
            "shaped0",
            "root",
            "tbf",
            "rate",
            "250mbit",
            "burst",
            "64kbit",
            "latency",
            "100ms",
        )
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=True)


def test_tbf_on_a_veth_is_discovered_with_its_rate(shaped_netns: str) -> None:
    probe = (
        "import json; from pilot_sys.topology.discover import discover; "
        "from pilot_sys.topology.effective import applied_limit; g = discover('/'); "
        "print(json.dumps({n: applied_limit(g, f'nic:{n}', 'send').model_dump(mode='json') "
        "for n in ('shaped0', 'free0')}))"
    )
    out = subprocess.run(
        ["ip", "netns", "exec", shaped_netns, sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    applied = json.loads(out.stdout)
    assert (
        applied["shaped0"]["applied"] == "effective"
        and applied["shaped0"]["imposed_by"] == "qdisc:shaped0"
    )
    assert applied["shaped0"]["effective"]["value"] == 250e6 / 8
    assert applied["shaped0"]["effective"]["source"] == "qdisc"
    assert applied["free0"]["imposed_by"] is None  # noqueue: no shaping, no limiter
