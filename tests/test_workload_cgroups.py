"""Where a session's workload runs: ``--cgroup`` replaces the graph's cgroup limiters before
the first round, a workload found in other cgroups after a round replaces them for the next,
and the options that place it (captured v1 tree, tests/fixtures/limits/v1-bench)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from pilot_sys.errors import BadInput
from pilot_sys.monitor.cgroup_follow import exiting as _exiting
from pilot_sys.session.launch import RunRequest, open_run
from pilot_sys.session.progress import NoProgress
from pilot_sys.session.workload_cgroups import WorkloadCgroups
from pilot_sys.topology.cgroups import joined_membership
from pilot_sys.topology.components import ComponentKind
from pilot_sys.topology.sysroot import SysRoot
from pilot_sys.workload.cgroup_launch import cgroup_target
from pilot_sys.workload.runner import CommandWorkload

V1 = FIXTURES / "limits" / "v1-bench"
MIB = 2**20
OWN = (V1 / "proc/self/cgroup").read_text()


def test_joined_membership_changes_only_the_hierarchies_joined() -> None:
    joined = joined_membership(
        SysRoot(V1), OWN, ["/sys/fs/cgroup/cpu/kl-bench", "/sys/fs/cgroup/memory/kl-bench"]
    )
    assert joined.splitlines() == [
        "9:name=systemd:/",
        "8:pids:/",
        "7:blkio:/kl-bench/job",
        "6:freezer:/",
        "5:devices:/",
        "4:memory:/kl-bench",
        "3:cpuset:/kl-bench/job",
        "2:cpuacct:/",
        "1:cpu:/kl-bench",
        "0::/",
    ]


def test_cgroup_option_replaces_the_graphs_limiters() -> None:
    """pilot-sys itself sits in /kl-bench/job; the workload goes to /kl-bench in every v1
    hierarchy that has it (cpu, cpuset, memory, blkio): the quota and the memory limit are still
    /kl-bench's, the cpuset of 1 CPU and the write throttle (both set on job) no longer apply,
    and /kl-bench's own read throttle does (v1 throttles are flat)."""
    cgroups = WorkloadCgroups("/kl-bench", root=V1)
    graph = cgroups.graph(root=V1)
    assert graph is not None
    found = {
        c.id: {k: v.value for k, v in c.limits.items()}
        for c in graph.components(ComponentKind.CGROUP)
    }
    assert found == {
        "cgroup:/kl-bench/cpu": {"compute": 0.2},
        "cgroup:/kl-bench/memory": {"capacity": 256 * MIB},
        "cgroup:/kl-bench/io:vda": {"read": 10 * MIB},
    }
    assert graph.component("cgroup:/kl-bench/io:vda").attrs["limits"] == "block:vda"
    assert graph.g.graph["workload_cgroup"]["spec"] == "/kl-bench"
    assert WorkloadCgroups(None, root=V1).graph(root=V1) is None  # discovery's own cgroups


class _Seen:
    def __init__(self, texts: set[str]) -> None:
        self.texts = texts

    def memberships(self) -> set[str]:
        return self.texts


class _Watch:
    def __init__(self, texts: set[str]) -> None:
        self.source = _Seen(texts)


def test_a_workload_found_elsewhere_brings_its_limits_for_the_next_round() -> None:
    from pilot_sys.topology.discover import discover

    cgroups = WorkloadCgroups(None, root=V1)
    graph = discover(V1)
    before = {c.id for c in graph.components(ComponentKind.CGROUP)}
    assert "cgroup:/kl-bench/job/io:vda" in before
    cgroups.watch = _Watch({OWN})  # where it was started: nothing changes
    # (the captured tree has no block devices: discovery's note on the throttle's link, once)
    assert cgroups.after_round(graph) == (
        False,
        [
            "cgroup discovery: link cgroup:/kl-bench/job/io:vda -> block:vda: endpoint not "
            "discovered"
        ],
    )
    moved = OWN.replace("1:cpu:/kl-bench/job", "1:cpu:/").replace(
        "7:blkio:/kl-bench/job", "7:blkio:/"
    )
    cgroups.watch = _Watch({moved})
    changed, notes = cgroups.after_round(graph)
    assert changed and len(notes) == 1
    assert notes[0].startswith("the workload ran in cgroups other than the ones it was started in")
    assert "are sampled and judged from the next round on" in notes[0]
    now = {c.id for c in graph.components(ComponentKind.CGROUP)}
    assert now == {"cgroup:/kl-bench/job/cpu", "cgroup:/kl-bench/memory"}  # cpuset, memory only
    cgroups.watch = _Watch({moved})
    assert cgroups.after_round(graph) == (False, [])  # the same again: no news


def test_the_launchers_first_moment_does_not_count_with_a_target() -> None:
    cgroups = WorkloadCgroups("/kl-bench", root=V1)
    graph = cgroups.graph(root=V1)
    cgroups.watch = _Watch({OWN})  # the wrapper seen before it joined /kl-bench
    assert cgroups.after_round(graph) == (False, [])


def test_what_could_not_be_read_about_the_cgroups_reaches_the_first_rounds_trace(
    tmp_path: Path,
) -> None:
    from pilot_sys.topology.discover import discover

    tree = tmp_path / "v1"
    shutil.copytree(V1, tree, symlinks=True)
    mountinfo = tree / "proc/self/mountinfo"
    kept = [
        line for line in mountinfo.read_text().splitlines(keepends=True) if "rw,memory" not in line
    ]
    mountinfo.write_text("".join(kept))
    cgroups = WorkloadCgroups(None, root=tree)
    changed, notes = cgroups.after_round(discover(tree))
    assert (
        not changed
        and (
            "cgroup discovery: cgroup v1 memory /kl-bench/job: hierarchy not mounted here; its "
            "limits unknown"
        )
        in notes
    )
    assert cgroups.after_round(discover(tree)) == (False, [])  # said once


@pytest.mark.parametrize(
    ("stat", "exiting"),
    [
        (b"42 (dd) R 1 42 42 0 -1 4194304 0 0", False),
        (b"42 (a b) c) Z 1 42 42 0 -1 4194304 0 0", True),  # a zombie; ")" inside the name
        (b"42 (dd) R 1 42 42 0 -1 4194308 0 0", True),  # PF_EXITING (0x4) in the flags
        (b"garbage", True),
    ],
)
def test_exiting_tasks_are_left_out(stat: bytes, exiting: bool) -> None:
    assert _exiting(stat) is exiting


def test_command_rounds_start_inside_the_cgroup(tmp_path: Path) -> None:
    target = cgroup_target("/kl-bench/job", SysRoot(V1))
    wl = CommandWorkload(["dd", "if=/dev/zero", "of=/tmp/x", "count=%WORK_AMOUNT%"], cgroup=target)
    argv = wl.command_for(3, tmp_path)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[4] == "4"  # four hierarchies to join
    assert argv[-4:] == ["dd", "if=/dev/zero", "of=/tmp/x", "count=3"]
    assert wl.data_path_args() == ["/tmp/x"] and wl.parser == "dd"  # the command, not the wrapper


def test_cgroup_option_is_for_commands(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="--cgroup"):  # the built-in workload runs in pilot-sys
        open_run(RunRequest(cgroup="/x", output_dir=tmp_path / "r"), NoProgress())


@pytest.mark.live
def test_an_unknown_cgroup_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run_cli(
        "run",
        "--cgroup",
        "/pilot-no-such-cgroup",
        "-w",
        "1,2",
        "-o",
        str(tmp_path / "s"),
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "count=%WORK_AMOUNT%",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "pilot-sys: error: /pilot-no-such-cgroup: no such cgroup in any mounted hierarchy (create "
        "it first, e.g. mkdir /sys/fs/cgroup/cpu/bench on cgroup v1)"
    ]
    assert not (tmp_path / "s").exists()


@pytest.mark.live
def test_the_watch_finds_a_workload_that_moved_into_a_cgroup() -> None:
    """A round's process joins a cgroup with a quota (as ``cgexec`` would): the watch reads
    its membership while it runs, the exited process adds nothing, and after the round the
    graph's cgroup limiters are the quota's."""
    from cgroups import scratch_cgroup

    from pilot_sys.monitor.probe import ProbeContext
    from pilot_sys.topology.discover import discover

    with scratch_cgroup(cpu_quota_cores=0.5) as cg:
        cgroups = WorkloadCgroups()
        source = cgroups.watcher().open_probe(ProbeContext())
        assert source is not None
        graph = discover()
        proc = cg.popen(["sleep", "5"])
        try:
            time.sleep(0.5)
            source.sample()
        finally:
            proc.kill()
            proc.wait()
        source.sample()
        assert [t for t in source.memberships() if f":cpu:{cg.name}\n" in t]
        changed, notes = cgroups.after_round(graph)
        source.close()
    assert changed and cg.name in notes[0]
    assert graph.component(f"cgroup:{cg.name}/cpu").limits["compute"].value == 0.5
