"""``monitor.cgroup_follow``: a workload process that enters a cgroup v2 hierarchy's
``/bench.slice/job.scope`` after it started (captured tree tests/fixtures/limits/v2-bench, with
pilot-sys itself at the root and a synthesized workload process) gets that cgroup's limiters
sampled from then on, with the series, limits and attrs the limiter plug-ins give a limiter the
session put there from the start."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.monitor.cgroup_follow import FollowedCgroups, exiting, process_tree
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.plugin_loader import load_plugins
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.sysroot import SysRoot

V2 = FIXTURES / "limits" / "v2-bench"
PID = 4242
CHILD = 4243
JOB = "0::/bench.slice/job.scope\n"
QUOTA_STAT = "sys/fs/cgroup/bench.slice/cpu.stat"


def _stat(pid: int, ppid: int, state: str = "R", flags: int = 0) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags ...
    return f"{pid} (dd) {state} {ppid} {pid} {pid} 0 -1 {flags} 0 0 0 0 1 2 0 0 20 0 1 0 5\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The v2-bench tree, pilot-sys at the root cgroup, a workload (PID) with a child (CHILD),
    both still in the root cgroup."""
    root = tmp_path / "root"
    shutil.copytree(V2, root, symlinks=True)
    (root / "proc/self/cgroup").write_text("0::/\n")
    for pid, ppid, children in ((PID, 1, f"{CHILD} "), (CHILD, PID, "")):
        task = root / f"proc/{pid}/task/{pid}"
        task.mkdir(parents=True)
        (task / "children").write_text(children)
        (root / f"proc/{pid}/cgroup").write_text("0::/\n")
        (root / f"proc/{pid}/stat").write_text(_stat(pid, ppid))
    return root


def _cpu_stat(periods: int, throttled: int, throttled_us: int, usage_us: int) -> str:
    return (
        f"usage_usec {usage_us}\nuser_usec {usage_us}\nsystem_usec 0\nnice_usec 0\n"
        f"nr_periods {periods}\nnr_throttled {throttled}\nthrottled_usec {throttled_us}\n"
        "nr_bursts 0\nburst_usec 0\n"
    )


def test_the_tree_is_walked_through_children_files(tree: Path) -> None:
    assert sorted(process_tree(tree / "proc", [PID])) == [PID, CHILD]
    assert process_tree(tree / "proc", [PID], limit=1) == [PID]
    assert process_tree(tree / "proc", [99999]) == [99999]  # gone: itself only, no error


def test_a_cgroup_entered_later_is_sampled_from_then_on(tree: Path) -> None:
    context = ProbeContext(root=tree, graph=ComponentGraph())
    source = FollowedCgroups(context, lambda: [PID])
    (tree / QUOTA_STAT).write_text(_cpu_stat(100, 93, 7_918_022, 2_004_151))
    source.sample()  # still at the root: nothing to sample
    assert source.probes == []
    (tree / f"proc/{CHILD}/cgroup").write_text(JOB)  # the child moved (a wrapper's exec)
    source.sample()
    stats = [(110, 103, 8_718_022, 2_204_151), (120, 113, 9_518_022, 2_404_151)]
    for periods, throttled, throttled_us, usage_us in stats:
        (tree / QUOTA_STAT).write_text(_cpu_stat(periods, throttled, throttled_us, usage_us))
        source.sample()
    assert source.memberships() == {"0::/\n", JOB}

    t = np.array([0.0, 0.5, 1.5, 2.5])
    raw = np.arange(4, dtype=np.float64).reshape(4, 1)  # the call index of each sample
    out = source.derive(raw, t, {})
    cpu = "cgroup:/bench.slice/cpu"
    # before the workload was seen there: missing; then 10 of 10 periods per second throttled
    assert np.isnan(out[f"{cpu}/throttled_periods"][:2]).all()
    assert out[f"{cpu}/throttled_periods"][2:] == pytest.approx([1.0, 1.0])
    assert out[f"{cpu}/throttled_share"][2:] == pytest.approx([0.8, 0.8])
    # 0.2 cores used of a 0.2-core quota (usage_usec beside the quota)
    assert out[f"{cpu}/cores_used"][2:] == pytest.approx([0.2, 0.2])
    assert out[f"{cpu}/util_compute"][2:] == pytest.approx([1.0, 1.0])
    assert source.limits[f"{cpu}/compute"].value == pytest.approx(0.2)
    # the memory limit (memory.max of job.scope) and both io.max throttles (the tighter
    # ones, bench.slice's): sampled too
    memory = "cgroup:/bench.slice/job.scope/memory"
    assert f"{memory}/util_capacity" in out
    assert {"cgroup:/bench.slice/io:nvme0n1", "cgroup:/bench.slice/io:sda"} <= set(source.attrs())
    assert any("entered cgroup(s)" in n and "/bench.slice" in n for n in context.notes)


def test_late_limiters_are_judged_as_when_placed_there(tree: Path) -> None:
    """The same limits and attrs (but ``entered_after_start``) as the limiter plug-ins give the
    limiters discovered for that cgroup before the run."""
    context = ProbeContext(root=tree, graph=ComponentGraph())
    source = FollowedCgroups(context, lambda: [PID])
    (tree / f"proc/{PID}/cgroup").write_text(JOB)
    source.sample()

    placed = ComponentGraph()
    for component in cgroup_discovery(SysRoot(tree), (), memberships=[JOB]).components:
        placed.add_component(component)
    upfront = ProbeContext(root=tree, graph=placed)
    attrs: dict[str, dict[str, object]] = {}
    limits = {}
    for plugin in load_plugins("dynamic"):
        if plugin.NAME in ("cgroup", "memory_limit"):
            probe = plugin.open_probe(upfront)
            attrs.update(probe.attrs())
            limits.update(probe.limits)
            probe.close()
    late = source.attrs()
    assert set(late) == set(attrs)
    for cid, expected in attrs.items():
        assert late[cid] == {**expected, "entered_after_start": True}
    assert source.limits == limits
    source.close()


def test_the_graphs_limiters_and_ignored_memberships_are_not_opened_again(tree: Path) -> None:
    placed = ComponentGraph()
    for component in cgroup_discovery(SysRoot(tree), (), memberships=[JOB]).components:
        placed.add_component(component)
    (tree / f"proc/{PID}/cgroup").write_text(JOB)
    known = FollowedCgroups(ProbeContext(root=tree, graph=placed), lambda: [PID])
    known.sample()
    assert known.probes == []  # already sampled from the start by the plug-ins
    ignoring = FollowedCgroups(ProbeContext(root=tree, graph=None), lambda: [PID], ignore=[JOB])
    ignoring.sample()
    assert ignoring.probes == []


def test_an_exiting_process_is_not_taken_for_a_move_to_the_root(tree: Path) -> None:
    (tree / f"proc/{PID}/cgroup").write_text(JOB)
    (tree / f"proc/{PID}/stat").write_text(_stat(PID, 1, state="Z"))
    assert exiting((tree / f"proc/{PID}/stat").read_bytes())
    source = FollowedCgroups(ProbeContext(root=tree, graph=ComponentGraph()), lambda: [PID])
    source.sample()
    assert JOB not in source.memberships()
