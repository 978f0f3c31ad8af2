"""The dynamic plug-ins of kernel limits on the trees of tests/fixtures/limits: which files each
opens (the counters discovery names beside each limit), what one read gives (the files' own
numbers), and the formulas on counter series worked out by hand."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.monitor.kernel_counters import BlkioDeviceLines
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.procread import MISSING
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.plugins.dynamic import cgroup as cgroup_plugin
from pilot_sys.plugins.dynamic import cpufreq as cpufreq_plugin
from pilot_sys.plugins.dynamic import memory_limit as memory_plugin
from pilot_sys.topology.kernel_limits import cgroup_discovery
from pilot_sys.topology.netlink_tc import CAPTURED_QDISCS, parse_dump, stats_offsets
from pilot_sys.topology.sysroot import SysRoot

LIMITS = FIXTURES / "limits"
MIB = 2**20


def _context(tree: Path) -> ProbeContext:
    return ProbeContext(root=tree)


# -- discovery names the counter files ------------------------------------------------------------
def test_v1_counters_are_read_where_the_kernel_counts() -> None:
    found = {c.id: c for c in cgroup_discovery(SysRoot(LIMITS / "v1-bench")).components}
    quota = found["cgroup:/kl-bench/cpu"]
    # the quota is set on /kl-bench: its cpu.stat counts the throttling, not the child's
    assert quota.attrs["counters"] == {"cpu.stat": "/sys/fs/cgroup/cpu/kl-bench/cpu.stat"}
    # cpuacct is a hierarchy of its own here and the process sits at its root: that usage
    # counts every task of the host, not the quota's, so none is taken
    assert "usage" not in quota.attrs["counters"]
    assert found["cgroup:/kl-bench/job/io:vda"].attrs["counters"] == {
        "bytes": "/sys/fs/cgroup/blkio/kl-bench/job/blkio.throttle.io_service_bytes",
        "ios": "/sys/fs/cgroup/blkio/kl-bench/job/blkio.throttle.io_serviced",
    }
    assert found["cgroup:/kl-bench/memory"].attrs["counters"] == {
        "usage": "/sys/fs/cgroup/memory/kl-bench/memory.usage_in_bytes",
        "failcnt": "/sys/fs/cgroup/memory/kl-bench/memory.failcnt",
    }
    assert found["cgroup:/kl-bench/job/cpu"].attrs["cpus"] == [1]  # the cpuset


def _with_cpuacct(tmp_path: Path) -> Path:
    """v1-bench with the process's cpuacct cgroup at /kl-bench/job (as when cgroups are made in
    every hierarchy at once)."""
    tree = tmp_path / "v1"
    shutil.copytree(LIMITS / "v1-bench", tree, symlinks=True)
    membership = (
        (tree / "proc/self/cgroup").read_text().replace("cpuacct:/\n", "cpuacct:/kl-bench/job\n")
    )
    (tree / "proc/self/cgroup").write_text(membership)
    for level, usage in (("kl-bench", 401_000_000), ("kl-bench/job", 400_000_000)):
        (tree / "sys/fs/cgroup/cpuacct" / level).mkdir(parents=True)
        (tree / "sys/fs/cgroup/cpuacct" / level / "cpuacct.usage").write_text(f"{usage}\n")
    return tree


def test_v1_usage_of_the_quotas_cgroup_path(tmp_path: Path) -> None:
    tree = _with_cpuacct(tmp_path)
    found = {c.id: c for c in cgroup_discovery(SysRoot(tree)).components}
    assert found["cgroup:/kl-bench/cpu"].attrs["counters"]["usage"] == (
        "/sys/fs/cgroup/cpuacct/kl-bench/cpuacct.usage"  # the quota's path, not the child's
    )
    probe = cgroup_plugin.open_probe(_context(tree))
    assert probe is not None
    values = dict(zip(probe.columns, probe.read(), strict=True))
    assert values["cgroup:/kl-bench/cpu/usage_ns"] == b"401000000"
    assert values["cgroup:/kl-bench/cpu/nr_throttled"] == b"21"


def test_v2_counters() -> None:
    found = {c.id: c for c in cgroup_discovery(SysRoot(LIMITS / "v2-bench")).components}
    base = "/sys/fs/cgroup/bench.slice"
    assert found["cgroup:/bench.slice/cpu"].attrs["counters"] == {
        "cpu.stat": f"{base}/cpu.stat",
        "usage_usec": f"{base}/cpu.stat",
    }
    assert found["cgroup:/bench.slice/io:nvme0n1"].attrs["counters"] == {
        "io.stat": f"{base}/io.stat"
    }
    assert found["cgroup:/bench.slice/job.scope/memory"].attrs["counters"] == {
        "usage": f"{base}/job.scope/memory.current",
        "events": f"{base}/job.scope/memory.events",
        "stat": f"{base}/job.scope/memory.stat",
        "pressure": f"{base}/job.scope/memory.pressure",
    }


# -- one read gives the files' numbers ----------------------------------------------------------
def test_cgroup_probe_reads_v1_files() -> None:
    probe = cgroup_plugin.open_probe(_context(LIMITS / "v1-bench"))
    assert probe is not None
    values = dict(zip(probe.columns, probe.read(), strict=True))
    assert values == {
        "cgroup:/kl-bench/cpu/nr_periods": b"37",
        "cgroup:/kl-bench/cpu/nr_throttled": b"21",
        "cgroup:/kl-bench/cpu/throttled_time": b"770055001",
        "cgroup:/kl-bench/job/io:vda/read_bytes": b"0",
        "cgroup:/kl-bench/job/io:vda/write_bytes": b"16777216",
        "cgroup:/kl-bench/job/io:vda/reads": b"0",
        "cgroup:/kl-bench/job/io:vda/writes": b"24",
    }
    attrs = probe.attrs()
    assert attrs["cgroup:/kl-bench/cpu"]["limiter"] == "CPU quota"
    assert attrs["cgroup:/kl-bench/cpu"]["judged_by"] == "throttled_periods"
    assert attrs["cgroup:/kl-bench/job/io:vda"]["limits"] == "block:vda"
    assert attrs["cgroup:/kl-bench/job/cpu"]["limiter"] == "cpuset"
    assert probe.limits["cgroup:/kl-bench/job/io:vda/write"].value == 20 * MIB
    probe.close()


def test_cgroup_probe_reads_v2_files() -> None:
    probe = cgroup_plugin.open_probe(_context(LIMITS / "v2-bench"))
    assert probe is not None
    values = dict(zip(probe.columns, probe.read(), strict=True))
    assert values["cgroup:/bench.slice/cpu/nr_throttled"] == b"93"
    assert values["cgroup:/bench.slice/cpu/throttled_usec"] == b"7918022"
    assert values["cgroup:/bench.slice/cpu/usage_usec"] == b"2004151"
    assert [
        values[f"cgroup:/bench.slice/io:nvme0n1/{c}"]
        for c in ("read_bytes", "write_bytes", "reads", "writes")
    ] == [b"1048576", b"209715200", b"16", b"200"]
    assert values["cgroup:/bench.slice/io:sda/reads"] == b"1"
    probe.close()


def test_memory_probe_reads_v1_and_v2_files() -> None:
    v1 = memory_plugin.open_probe(_context(LIMITS / "v1-bench"))
    assert v1 is not None
    assert dict(zip(v1.columns, v1.read(), strict=True)) == {
        "cgroup:/kl-bench/memory/usage": b"774144",
        "cgroup:/kl-bench/memory/failcnt": b"0",
    }
    v2 = memory_plugin.open_probe(_context(LIMITS / "v2-bench"))
    assert v2 is not None
    cid = "cgroup:/bench.slice/job.scope/memory"
    assert dict(zip(v2.columns, v2.read(), strict=True)) == {
        f"{cid}/usage": b"536408064",
        f"{cid}/events_max": b"1873",
        f"{cid}/events_high": b"0",
        f"{cid}/oom_kill": b"0",
        f"{cid}/refaults": b"51200",
        f"{cid}/major_faults": b"12",
        f"{cid}/psi_some_us": b"1534000",
        f"{cid}/psi_full_us": b"1200000",
    }
    for probe in (v1, v2):
        probe.close()


def test_a_missing_counter_file_is_a_note(tmp_path: Path) -> None:
    tree = tmp_path / "v1"
    shutil.copytree(LIMITS / "v1-bench", tree, symlinks=True)
    (tree / "sys/fs/cgroup/cpu/kl-bench/cpu.stat").unlink()
    context = _context(tree)
    probe = cgroup_plugin.open_probe(context)
    assert probe is not None and not any(
        c.startswith("cgroup:/kl-bench/cpu/") for c in probe.columns
    )
    # discovery found no cpu.stat beside the quota: nothing to open, nothing invented, a note
    assert probe.attrs()["cgroup:/kl-bench/cpu"]["judged_by"] == "util_compute"
    assert context.notes == [
        "cgroup:/kl-bench/cpu: no cpu.stat beside the quota in /sys/fs/cgroup/cpu/kl-bench; "
        "whether the quota throttled the workload is unknown"
    ]
    # a counter file that is there but cannot be read (a directory in its place: EISDIR, also
    # for root): that throttle's counters are left out, with a note
    serviced = tree / "sys/fs/cgroup/blkio/kl-bench/job/blkio.throttle.io_serviced"
    serviced.unlink()
    serviced.mkdir()
    unreadable = _context(tree)
    probe = cgroup_plugin.open_probe(unreadable)
    assert probe is not None and not any("io:vda" in c for c in probe.columns)
    assert any(
        n.startswith("/sys/fs/cgroup/blkio/kl-bench/job/blkio.throttle.io_serviced: not sampled")
        for n in unreadable.notes
    ), unreadable.notes


# -- the blkio format ---------------------------------------------------------------------------
def test_blkio_lines_find_the_device_by_key_and_operation(tmp_path: Path) -> None:
    path = tmp_path / "blkio.throttle.io_service_bytes"
    # the kernel lists a cgroup's devices newest first: positions move when a device appears
    path.write_text(
        "1254:0 Read 7\n1254:0 Write 9\n254:0 Read 1\n254:0 Write 2\n254:0 Sync 2\nTotal 19\n"
    )
    reader = BlkioDeviceLines(path, "254:0", ("Read", "Write"))
    assert reader() == [b"1", b"2"] and reader.read_text() == b"1 2"
    assert BlkioDeviceLines(path, "8:0", ("Read", "Write"))() == [b"0", b"0"]  # no I/O yet
    path.write_text("garbage\n")
    assert reader() == [MISSING, MISSING]
    reader.close()


# -- formulas ------------------------------------------------------------------------------------
def test_cpu_quota_formulas() -> None:
    probe = cgroup_plugin.open_probe(_context(LIMITS / "v2-bench"))
    assert probe is not None
    cid = "cgroup:/bench.slice/cpu"
    t = np.array([0.0, 0.5, 1.0, 1.5])
    raw = np.full((4, len(probe.columns)), np.nan)
    columns = {c: i for i, c in enumerate(probe.columns)}
    raw[:, columns[f"{cid}/nr_periods"]] = [100, 105, 110, 110]
    raw[:, columns[f"{cid}/nr_throttled"]] = [93, 97, 102, 102]
    raw[:, columns[f"{cid}/throttled_usec"]] = [0, 300_000, 700_000, 700_000]
    raw[:, columns[f"{cid}/usage_usec"]] = [0, 100_000, 200_000, 200_000]
    out = probe.derive(raw, t, {})
    assert np.isnan(out[f"{cid}/throttled_periods"][0])
    assert out[f"{cid}/throttled_periods"][1:3] == pytest.approx([4 / 5, 5 / 5])
    assert np.isnan(out[f"{cid}/throttled_periods"][3])  # no period: nothing was runnable
    assert out[f"{cid}/throttled_share"][1:] == pytest.approx([0.6, 0.8, 0.0])
    assert out[f"{cid}/cores_used"][1:] == pytest.approx([0.2, 0.2, 0.0])
    assert out[f"{cid}/util_compute"][1:] == pytest.approx([1.0, 1.0, 0.0])  # 0.2 of 0.2 cores
    assert out[f"{cid}/periods_per_s"][1:] == pytest.approx([10.0, 10.0, 0.0])
    io = "cgroup:/bench.slice/io:nvme0n1"
    raw[:, columns[f"{io}/write_bytes"]] = [0, 10 * MIB, 20 * MIB, 30 * MIB]
    out = probe.derive(raw, t, {})
    assert out[f"{io}/write_bytes_per_s"][1:] == pytest.approx([20 * MIB] * 3)
    assert out[f"{io}/util_write"][1:] == pytest.approx([1.0] * 3)  # the 20 MiB/s wbps
    assert f"{io}/util_read" not in out  # no read throttle on it: no utilization invented
    probe.close()


def test_cpuset_without_usage_reads_its_cores() -> None:
    probe = cgroup_plugin.open_probe(_context(LIMITS / "v1-bench"))
    assert probe is not None
    t = np.array([0.0, 1.0])
    raw = np.zeros((2, len(probe.columns)))
    metrics = {
        "core:0/util_compute": np.array([np.nan, 0.1]),
        "core:1/util_compute": np.array([np.nan, 0.95]),
    }
    out = probe.derive(raw, t, metrics)
    assert out["cgroup:/kl-bench/job/cpu/util_compute"][1] == pytest.approx(0.95)  # cpuset "1"
    probe.close()


def test_memory_formulas() -> None:
    probe = memory_plugin.open_probe(_context(LIMITS / "v2-bench"))
    assert probe is not None
    cid = "cgroup:/bench.slice/job.scope/memory"
    columns = {c: i for i, c in enumerate(probe.columns)}
    t = np.array([0.0, 1.0, 2.0])
    raw = np.zeros((3, len(probe.columns)))
    raw[:, columns[f"{cid}/usage"]] = [256 * MIB, 512 * MIB, 510 * MIB]
    raw[:, columns[f"{cid}/events_max"]] = [0, 300, 300]
    raw[:, columns[f"{cid}/events_high"]] = [0, 0, 20]
    raw[:, columns[f"{cid}/refaults"]] = [0, 1000, 5000]
    raw[:, columns[f"{cid}/psi_some_us"]] = [0, 250_000, 250_000]
    out = probe.derive(raw, t, {})
    assert out[f"{cid}/util_capacity"] == pytest.approx([0.5, 1.0, 510 / 512])
    assert out[f"{cid}/limit_hits_per_s"][1:] == pytest.approx([300, 20])
    assert out[f"{cid}/refaults_per_s"][1:] == pytest.approx([1000, 4000])
    assert out[f"{cid}/psi_some"][1:] == pytest.approx([0.25, 0.0])
    probe.close()


def test_cpufreq_probe_on_a_fixture_tree() -> None:
    sampler = Sampler(rate_hz=20, plugins=[cpufreq_plugin], root=LIMITS / "cpufreq-mixed")
    trace = sampler.start().stop()
    # scaling_cur_freq: 1995312 kHz (policy0, capped at 2.0 GHz) and 4388221 kHz; nominal 2.9 GHz
    assert trace.series["cpufreq:policy0/frequency_hz"][0] == 1995312e3
    assert trace.series["cpufreq:policy0/below_nominal"][0] == 1.0
    assert trace.series["cpufreq:policy1/below_nominal"][0] == 0.0
    assert trace.series["cpufreq:policy1/frequency_share"][0] == pytest.approx(4388221 / 4700000)
    assert trace.attrs["cpufreq:policy0"]["nominal_hz"] == 2.9e9
    assert trace.attrs["cpufreq:policy0"]["scaling_max_hz"] == 2.0e9
    # acpi-cpufreq states no nominal: no below_nominal series is invented
    capped = Sampler(rate_hz=20, plugins=[cpufreq_plugin], root=LIMITS / "cpufreq-capped")
    trace = capped.start().stop()
    assert "cpufreq:policy0/frequency_hz" in trace.series
    assert not any(k.endswith("/below_nominal") for k in trace.series)


def test_no_cpufreq_no_probe() -> None:
    assert cpufreq_plugin.open_probe(_context(LIMITS / "v1-bench")) is None


# -- qdisc counters at learnt offsets -----------------------------------------------------------
def _messages(data: bytes) -> list[bytes]:
    out, offset = [], 0
    while offset + 16 <= len(data):
        length = struct.unpack_from("=I", data, offset)[0]
        out.append(data[offset : offset + length])
        offset += (length + 3) & ~3
    return out


def test_stats_offsets_agree_with_the_full_parse() -> None:
    """Every qdisc message of the captured dump (the same layout as a get's answer): the
    counters at the offsets equal the full parse's, which agrees with ``tc -s -j``."""
    data = (LIMITS / "tc-veth" / CAPTURED_QDISCS.lstrip("/")).read_bytes()
    checked = 0
    for message in _messages(data):
        parsed = parse_dump(message)
        if not parsed:
            continue
        offsets = stats_offsets(message)
        assert offsets is not None
        sent, packets = struct.unpack_from("=QI", message, offsets[0])
        qlen, backlog, drops, _requeues, overlimits = struct.unpack_from("=5I", message, offsets[1])
        stats = parsed[0].stats
        assert stats is not None
        assert (sent, drops, overlimits, backlog, qlen) == (
            stats.bytes,
            stats.drops,
            stats.overlimits,
            stats.backlog,
            stats.qlen,
        )
        checked += 1
    assert checked == 10
