"""Discovery of kernel-imposed limits on the trees of tests/fixtures/limits (captured v1 cgroups
and rtnetlink dumps from the test host; hand-written v2 cgroup and cpufreq trees, see
make_limit_fixtures.py), and how they join the graph and the data path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from pilot_sys.errors import BadInput
from pilot_sys.topology.cgroups import parse_membership, process_cgroups
from pilot_sys.topology.components import Component, ComponentKind, Discovery, Limit, LimitSource
from pilot_sys.topology.discover import build_graph
from pilot_sys.topology.effective import applied_limit, limiters_of, with_limiters
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.kernel_limits import cgroup_discovery, cpufreq_discovery, qdisc_discovery
from pilot_sys.topology.netlink_tc import CAPTURED_QDISCS, interface_names, parse_dump, read_tc
from pilot_sys.topology.resolve import resolve
from pilot_sys.topology.sysroot import SysRoot
from pilot_sys.workload.cgroup_launch import cgroup_target, in_cgroup

LIMITS = FIXTURES / "limits"
MIB = 1024 * 1024


def limits(discovery: Discovery) -> dict[str, dict[str, float | None]]:
    return {c.id: {k: v.value for k, v in c.limits.items()} for c in discovery.components}


def targets(discovery: Discovery) -> dict[str, str]:
    return {link.source: link.target for link in discovery.links}


# -- cgroups -------------------------------------------------------------------------------------
def test_membership_lines() -> None:
    text = (
        "12:memory:/a\n4:cpu,cpuacct:/system.slice/x.service\n1:name=systemd:/s\n0::/u.slice\n"
        "broken\n"
    )
    assert parse_membership(text) == [
        (12, ["memory"], "/a"),
        (4, ["cpu", "cpuacct"], "/system.slice/x.service"),
        (1, ["name=systemd"], "/s"),
        (0, [], "/u.slice"),
    ]


def test_v1_captured_limits_walk_up_except_blkio() -> None:
    """Captured on the test host: the process sits in /kl-bench/job; /kl-bench holds a 0.2-core
    quota, a 256 MiB memory limit and a 10 MiB/s *read* throttle; /kl-bench/job holds a
    20 MiB/s write throttle on vda (254:0) and cpuset 1 of CPUs 0-1."""
    found = cgroup_discovery(SysRoot(LIMITS / "v1-bench"))
    assert limits(found) == {
        "cgroup:/kl-bench/cpu": {"compute": 0.2},  # 20000 / 100000 from the parent: CFS quotas nest
        "cgroup:/kl-bench/job/cpu": {"compute": 1.0},  # cpuset.effective_cpus "1"
        "cgroup:/kl-bench/memory": {"capacity": 256 * MIB},
        # v1 throttles are flat: the parent's read throttle does not bind the child (checked live)
        "cgroup:/kl-bench/job/io:vda": {"write": 20 * MIB},
    }
    assert targets(found) == {
        "cgroup:/kl-bench/cpu": "cpu:host",
        "cgroup:/kl-bench/job/cpu": "cpu:host",
        "cgroup:/kl-bench/memory": "memory:host",
        "cgroup:/kl-bench/job/io:vda": "block:vda",
    }
    quota = next(c for c in found.components if c.id == "cgroup:/kl-bench/cpu")
    assert quota.kind == ComponentKind.CGROUP and quota.attrs["members"] == ["/kl-bench/job"]
    assert quota.limits["compute"].source == LimitSource.CGROUP
    assert quota.limits["compute"].detail.endswith("(/sys/fs/cgroup/cpu/kl-bench/cpu.cfs_quota_us)")
    assert not found.unreadable


def test_v2_tightest_level_per_device_and_key() -> None:
    found = cgroup_discovery(SysRoot(LIMITS / "v2-bench"))
    assert limits(found) == {
        "cgroup:/bench.slice/cpu": {"compute": 0.2},
        "cgroup:/bench.slice/job.scope/memory": {
            "capacity": 512 * MIB
        },  # memory.max below the parent's high
        "cgroup:/bench.slice/io:nvme0n1": {
            "write": 20 * MIB
        },  # the parent's wbps, tighter than the child's 40
        "cgroup:/bench.slice/io:sda": {"read": 50 * MIB, "iops_write": 1000},
    }
    assert targets(found)["cgroup:/bench.slice/io:sda"] == "block:sda"


def test_container_mount_root_is_not_slash() -> None:
    """A bind-mounted subtree: /proc/self/cgroup names the host path, the mount's root field
    says which cgroup sits at /sys/fs/cgroup; the cpuset (2 of 8) is looser than the quota."""
    found = cgroup_discovery(SysRoot(LIMITS / "v2-container"))
    assert limits(found) == {
        "cgroup:/system.slice/docker-abc.scope/cpu": {"compute": 1.5},
        "cgroup:/system.slice/docker-abc.scope/memory": {"capacity": 2 * 1024 * MIB},
    }
    cpu = found.components[0]
    assert set(cpu.attrs["files"]) == {"cpu:compute", "cpuset:compute"}


def test_missing_membership_is_a_note(tmp_path: Path) -> None:
    found = process_cgroups(SysRoot(tmp_path), ["self"])
    assert found.limits == [] and found.notes == [
        "/proc/self/cgroup: missing (no such process, or no cgroups); cgroup limits unknown"
    ]
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("4:cpu:/x\n")
    (tmp_path / "proc/self/mountinfo").write_text("")
    assert process_cgroups(SysRoot(tmp_path), ["self"]).notes == [
        "cgroup v1 cpu /x: hierarchy not mounted here; its limits unknown"
    ]


# -- the graph and the data path -----------------------------------------------------------------
def _host_with(*extra: Discovery) -> ComponentGraph:
    base = Discovery(
        plugin="test",
        components=[
            Component(
                id="cpu:host",
                kind=ComponentKind.CPU,
                name="CPU",
                limits={"compute": Limit(value=4.0, unit="cores", source=LimitSource.SYSFS)},
            ),
            Component(id="memory:host", kind=ComponentKind.MEMORY, name="memory"),
            Component(id="block:nvme0n1", kind=ComponentKind.BLOCK, name="nvme0n1"),
            Component(
                id="block:sda",
                kind=ComponentKind.BLOCK,
                name="sda",
                limits={
                    "read": Limit(value=550e6, source=LimitSource.USER),
                    "iops_write": Limit(value=90_000, unit="IO/s", source=LimitSource.USER),
                },
            ),
        ],
    )
    graph = build_graph([base, *extra])
    graph.connect("memory:host", "block:nvme0n1", "write")
    graph.connect("memory:host", "block:sda", "write")
    return graph


def test_effective_limit_is_the_tighter_and_names_its_source() -> None:
    graph = _host_with(cgroup_discovery(SysRoot(LIMITS / "v2-bench")))
    cpu = applied_limit(graph, "cpu:host", "compute")
    assert (cpu.applied, cpu.imposed_by, cpu.limit.value) == (
        "effective",
        "cgroup:/bench.slice/cpu",
        0.2,
    )
    assert cpu.physical.value == 4.0
    # no physical rating: the throttle applies
    disk = applied_limit(graph, "block:nvme0n1", "write")
    assert (disk.applied, disk.limit.value, disk.limit.source) == (
        "effective",
        20 * MIB,
        LimitSource.CGROUP,
    )
    # 50 MiB/s throttle below a 550 MB/s rating
    sda_read = applied_limit(graph, "block:sda", "read")
    assert (sda_read.applied, sda_read.limit.value) == ("effective", 50 * MIB)
    sda_iops = applied_limit(graph, "block:sda", "iops_write")  # 1000 IO/s throttle below 90k
    assert (sda_iops.applied, sda_iops.limit.value) == ("effective", 1000)
    unthrottled = applied_limit(graph, "block:sda", "write")
    assert (unthrottled.applied, unthrottled.effective) == ("unknown", None)
    loose = _host_with(cgroup_discovery(SysRoot(LIMITS / "v2-container")))  # 1.5 cores quota, but
    loose.set_limit("cpu:host", "compute", Limit(value=1.0, unit="cores", source=LimitSource.SYSFS))
    kept = applied_limit(loose, "cpu:host", "compute")  # ... the host has 1 core: physical applies
    assert (kept.applied, kept.limit.value, kept.imposed_by) == (
        "physical",
        1.0,
        "cgroup:/system.slice/docker-abc.scope/cpu",
    )


def test_limiters_stand_before_what_they_limit() -> None:
    graph = _host_with(cgroup_discovery(SysRoot(LIMITS / "v2-bench")))
    assert limiters_of(graph, "cpu:host") == ["cgroup:/bench.slice/cpu"]
    assert with_limiters(graph, ["cpu:host", "memory:host", "block:nvme0n1"]) == [
        "cgroup:/bench.slice/cpu",
        "cpu:host",
        "cgroup:/bench.slice/job.scope/memory",
        "memory:host",
        "cgroup:/bench.slice/io:nvme0n1",
        "block:nvme0n1",
    ]
    # limiters are not data links: the data paths through the graph do not pass through them
    assert graph.paths_to("block:nvme0n1") == [["cpu:host", "memory:host", "block:nvme0n1"]]


def test_discovered_fixture_host_joins_its_quota_to_the_data_path(nvme: ComponentGraph) -> None:
    """The captured NVMe host's session sits under a 1.5-core cpu.max on user-1000.slice."""
    quota = "cgroup:/user.slice/user-1000.slice/cpu"
    assert nvme.component(quota).limits["compute"].value == 1.5
    applied = applied_limit(nvme, "cpu:host", "compute")
    assert applied.imposed_by == quota and applied.limit.value == 1.5
    assert resolve(nvme, ["/home/alice/f"]).paths[0][:2] == [quota, "cpu:host"]


def test_node_link_round_trip_keeps_limiters(nvme: ComponentGraph) -> None:
    again = ComponentGraph.from_node_link(json.loads(json.dumps(nvme.to_node_link())))
    assert applied_limit(again, "cpu:host", "compute") == applied_limit(nvme, "cpu:host", "compute")


# -- qdiscs --------------------------------------------------------------------------------------
def _mbit(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)([KMG]?)bit", text).groups()  # type: ignore[union-attr]
    return float(value) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[unit] / 8


def test_netlink_dump_agrees_with_tc_json() -> None:
    """The captured rtnetlink bytes against ``tc -s -j qdisc show`` run right after: every qdisc's
    kind, parent, rate and counters."""
    tree = LIMITS / "tc-veth"
    names = interface_names(SysRoot(tree))
    ours = {
        (names[o.ifindex], o.handle): o
        for o in parse_dump((tree / CAPTURED_QDISCS.lstrip("/")).read_bytes())
    }
    reference = json.loads((tree / "reference/tc-qdisc.json").read_text())
    assert len(ours) == len(reference) == 10
    for q in reference:
        mine = ours[(q["dev"], q["handle"])]
        assert mine.kind == q["kind"] and mine.root == q.get("root", False)
        assert mine.parent == q.get("parent", "root")
        assert mine.rate == q["options"].get("rate")
        assert mine.stats is not None
        assert (
            mine.stats.bytes,
            mine.stats.packets,
            mine.stats.drops,
            mine.stats.overlimits,
            mine.stats.backlog,
            mine.stats.qlen,
            mine.stats.requeues,
        ) == (
            q["bytes"],
            q["packets"],
            q["drops"],
            q["overlimits"],
            q["backlog"],
            q["qlen"],
            q["requeues"],
        )
    assert ours[("klc", "8007:")].rate == 5e9  # 40 Gbit/s: above 2^32 B/s, from TCA_TBF_RATE64


def test_htb_classes_agree_with_tc_text() -> None:
    tree = LIMITS / "tc-veth"
    objects, notes = read_tc(SysRoot(tree))
    assert notes == []
    classes = {o.handle: o for o in objects if o.object == "class"}
    for name in ("klb", "klf"):
        for line in (tree / f"reference/tc-class-{name}.txt").read_text().splitlines():
            if line.startswith("class htb"):
                handle = line.split()[2]
                found = re.search(r"rate (\S+) ceil (\S+)", line)
                assert found is not None, line
                rate, ceil = found.groups()
                assert (classes[handle].rate, classes[handle].ceil) == (_mbit(rate), _mbit(ceil))


def test_qdisc_components_and_their_rates() -> None:
    found = qdisc_discovery(SysRoot(LIMITS / "tc-veth"))
    assert limits(found) == {
        "qdisc:kla": {"send": 100e6 / 8},  # tbf rate 100mbit
        "qdisc:klb": {"send": 200e6 / 8},  # htb default 1:10, ceil 200mbit under a 1gbit parent
        "qdisc:klc": {"send": 40e9 / 8},
        "qdisc:klf": {"send": None},  # htb without a default class: unclassified traffic unshaped
        "qdisc:klm": {"send": 40e6 / 8},  # mq with tbf 30mbit + 10mbit on its two queues
    }
    assert targets(found)["qdisc:klm"] == "nic:klm"
    klf = next(c for c in found.components if c.id == "qdisc:klf")
    assert (
        "no default class" in klf.limits["send"].detail
        and klf.limits["send"].source == LimitSource.UNKNOWN
    )
    klb = next(c for c in found.components if c.id == "qdisc:klb")
    assert (
        klb.limits["send"].source == LimitSource.QDISC and "class 1:10" in klb.limits["send"].detail
    )


def test_uncaptured_tc_is_a_note() -> None:
    found = qdisc_discovery(SysRoot(LIMITS / "v1-bench"))
    assert found.components == [] and found.unreadable[0].startswith(CAPTURED_QDISCS)


# -- cpufreq -------------------------------------------------------------------------------------
def test_every_policy_capped_is_a_limiter() -> None:
    found = cpufreq_discovery(SysRoot(LIMITS / "cpufreq-capped"))
    assert limits(found) == {"cpu:host": {"frequency": 3.6e9}, "cpufreq:host": {"frequency": 2.0e9}}
    assert targets(found) == {"cpufreq:host": "cpu:host"}
    host = found.components[0]
    assert len(host.warnings) == 4 and host.attrs["cpufreq"]["boost"] is True
    assert [p["current_hz"] for p in host.attrs["cpufreq"]["policies"]] == [
        1.999e9,
        1.8e9,
        2.0e9,
        1.2e9,
    ]


def test_one_policy_capped_is_a_warning_not_a_host_limit() -> None:
    found = cpufreq_discovery(SysRoot(LIMITS / "cpufreq-mixed"))
    assert limits(found) == {"cpu:host": {"frequency": 4.7e9}}
    host = found.components[0]
    assert host.warnings == [
        "cpufreq policy0 (CPUs 0) capped: scaling_max_freq 2000 MHz of 4700 MHz"
    ]
    policies = host.attrs["cpufreq"]["policies"]
    assert [p["nominal_hz"] for p in policies] == [2.9e9, 2.9e9] and policies[0][
        "governor"
    ] == "powersave"


def test_no_cpufreq_is_unknown_with_the_reason() -> None:
    found = cpufreq_discovery(SysRoot(LIMITS / "v1-bench"))
    frequency = found.components[0].limits["frequency"]
    assert not frequency.known and frequency.detail.startswith("no cpufreq policies in sysfs")


def test_whole_fixture_host_discovers_without_new_notes(md: ComponentGraph) -> None:
    """A captured host with a v1 quota (md-raid-loop): one limiter, and no plug-in failed."""
    assert limiters_of(md, "cpu:host") == ["cgroup:/system.slice/bench.service/cpu"]
    assert not any("plug-in failed" in u for notes in md.unreadable.values() for u in notes)


# -- joining a cgroup ----------------------------------------------------------------------------
def test_cgroup_target_by_path_and_its_errors() -> None:
    v1 = SysRoot(LIMITS / "v1-bench")
    target = cgroup_target("/kl-bench/job", v1)
    assert sorted(target.procs_files) == [
        f"/sys/fs/cgroup/{c}/kl-bench/job/cgroup.procs"
        for c in ("blkio", "cpu", "cpuset", "memory")
    ]
    with pytest.raises(BadInput, match="no such cgroup"):
        cgroup_target("/nope", v1)
    assert cgroup_target(
        "/sys/fs/cgroup/cpu/kl-bench/job/", v1
    ).procs_files == [  # one hierarchy's directory
        "/sys/fs/cgroup/cpu/kl-bench/job/cgroup.procs"
    ]
    v2 = SysRoot(LIMITS / "v2-bench")
    assert cgroup_target("bench.slice/job.scope", v2).procs_files == [
        "/sys/fs/cgroup/bench.slice/job.scope/cgroup.procs"
    ]
    with pytest.raises(BadInput, match="leaf"):
        cgroup_target("/bench.slice", v2)
    argv = in_cgroup(["dd", "if=/dev/zero"], target)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[-2:] == ["dd", "if=/dev/zero"] and argv[4] == "4"
