"""The verdict on kernel-imposed limits, on hand-built traces whose numbers are worked out by hand:
each limiter names itself with its limit and the counters that show it bound, the CUT is judged
against its effective limit, what a binding limiter limits is not blamed as well, an unbound
limiter is not flagged, and a CPU-bound run below the nominal frequency is warned about."""

from __future__ import annotations

import time

import pytest

from pilot_sys.monitor.bottleneck import THROTTLED, assess
from pilot_sys.monitor.trace import MonitorTrace

N = 11  # 10 intervals of 1 s
MIB = 2**20
TWO_CORES = {"value": 2.0, "unit": "cores", "source": "sysfs", "detail": "2 online CPUs"}
QUOTA = "cgroup:/bench/cpu"
THROTTLE = "cgroup:/bench/io:vda"
SHAPER = "qdisc:veth0"
MEMORY = "cgroup:/bench/memory"
DISK_PATH = ["cpu:host", "memory:host", "mount:/", "block:vda"]


def steady(value: float) -> list[float | None]:
    return [None] + [value] * (N - 1)


def trace(series: dict[str, list[float | None]], **extra: object) -> MonitorTrace:
    return MonitorTrace(
        rate_hz=1.0, start_time=0.0, timestamps=[float(i) for i in range(N)], series=series, **extra
    )  # type: ignore[arg-type]


def quota_trace(throttled: list[float | None], busy: float = 0.95) -> MonitorTrace:
    return trace(
        {
            "cpu:host/util_compute": steady(busy),
            "cpu:host/busy_cores": steady(2 * busy),
            "cpu:host/busy": steady(busy),
            "cpu:host/busiest_core": steady(min(1.0, busy + 0.05)),
            f"{QUOTA}/throttled_periods": throttled,
            f"{QUOTA}/throttled_periods_per_s": [None if v is None else 10 * v for v in throttled],
            f"{QUOTA}/periods_per_s": steady(10.0),
            f"{QUOTA}/cores_used": steady(0.19),
            f"{QUOTA}/util_compute": steady(0.95),
            "block:vda/busy": steady(0.09),
            "block:vda/write_bytes_per_s": steady(5e6),
        },
        limits={
            "cpu:host/compute": TWO_CORES,
            f"{QUOTA}/compute": {
                "value": 0.2,
                "unit": "cores",
                "source": "cgroup",
                "detail": "quota 20000 us per 100000 us period",
            },
        },
        attrs={
            QUOTA: {
                "limiter": "CPU quota",
                "limits": "cpu:host",
                "cgroup": "/bench",
                "judged_by": "throttled_periods",
            }
        },
        component_under_test="block:vda",
    )


def test_a_throttling_quota_names_itself_and_the_loaded_cpu_is_not_blamed() -> None:
    # throttled in every period of 9 intervals and in 3 of 10 periods of the last
    v = assess(quota_trace(steady(1.0)[:-1] + [0.3]), data_path=DISK_PATH)
    assert not v.valid
    assert [(h.component, h.direction) for h in v.hidden_bottlenecks] == [(QUOTA, THROTTLED)]
    assert v.hidden_bottlenecks[0].time_above_fraction == pytest.approx(0.9)
    # 93 of 100 periods throttled over the run; the cgroup used 0.19 cores
    assert v.hidden_bottlenecks[0].evidence == (
        "cgroup /bench CPU quota 0.200 cores: throttled in 93 % of periods; "
        "the workload used 0.19 cores"
    )
    host = [s for s in v.per_component if s.component == "cpu:host"]
    assert host and all(not s.judged and "bound first" in s.note for s in host)
    assert any(n.startswith("cpu:host: bound first: cgroup:/bench/cpu") for n in v.notes)
    # the quota sits on the CPU, which every workload passes: on the path without being named
    quota_util = next(s for s in v.per_component if s.metric == f"{QUOTA}/util_compute")
    assert not quota_util.judged  # a quota is judged by its throttled periods, not its use


def test_a_quota_that_never_throttles_is_not_flagged_and_the_cpu_still_is() -> None:
    v = assess(quota_trace(steady(0.0)), data_path=DISK_PATH)
    assert [h.component for h in v.hidden_bottlenecks] == ["cpu:host"]  # others loaded the CPU


def test_the_cut_is_judged_against_its_effective_limit() -> None:
    v = assess(quota_trace(steady(1.0)), cut="cpu:host")
    assert v.cut_saturated and not v.cut_limit_unknown
    effective = next(
        s for s in v.per_component if s.component == "cpu:host" and s.applied == "effective"
    )
    assert (effective.direction, effective.imposed_by, effective.metric) == (
        "compute",
        QUOTA,
        f"{QUOTA}/util_compute",
    )
    assert effective.limit["value"] == 0.2 and effective.physical_limit == TWO_CORES
    physical = next(s for s in v.per_component if s.metric == "cpu:host/util_compute")
    assert physical.applied == "physical" and not physical.judged
    assert any(
        n.startswith(
            "cpu:host (compute) judged against its effective limit: "
            "cgroup:/bench/cpu's, limit of 0.200 cores (cgroup"
        )
        for n in v.notes
    )
    assert [h.component for h in v.hidden_bottlenecks] == [QUOTA]


def io_trace(write_bps: float, limit: float) -> MonitorTrace:
    return trace(
        {
            "cpu:host/util_compute": steady(0.2),
            "cpu:host/busy_cores": steady(0.4),
            "block:vda/busy": steady(0.09),
            "block:vda/write_bytes_per_s": steady(write_bps),
            f"{THROTTLE}/write_bytes_per_s": steady(write_bps),
            f"{THROTTLE}/util_write": steady(write_bps / limit),
        },
        limits={
            "cpu:host/compute": TWO_CORES,
            f"{THROTTLE}/write": {
                "value": limit,
                "unit": "B/s",
                "source": "cgroup",
                "detail": "blkio.throttle.write_bps_device 254:0 20971520",
            },
        },
        attrs={
            THROTTLE: {
                "limiter": "I/O throttle",
                "limits": "block:vda",
                "cgroup": "/bench",
                "disk": "vda",
                "device": "254:0",
                "judged_by": "util",
            }
        },
        component_under_test="block:vda",
    )


def test_an_io_throttle_names_itself_and_the_disk_number_is_invalid() -> None:
    v = assess(io_trace(19.8e6, 20 * MIB), data_path=DISK_PATH)
    assert not v.valid and [h.component for h in v.hidden_bottlenecks] == [THROTTLE]
    assert v.hidden_bottlenecks[0].evidence == (
        "cgroup /bench io throttle on vda write 20.0 MiB/s: writes held at 18.9 MiB/s "
        "while vda was 9 % busy"
    )
    # the disk has no stated limit here; against its effective limit (the throttle) it is full
    assert v.cut_saturated and not v.cut_limit_unknown
    effective = next(s for s in v.per_component if s.component == "block:vda" and s.applied)
    assert (effective.applied, effective.imposed_by) == ("effective", THROTTLE)
    assert effective.mean == pytest.approx(19.8e6 / (20 * MIB))


def test_a_generous_throttle_is_not_flagged() -> None:
    v = assess(io_trace(19.8e6, 20e9), data_path=DISK_PATH)
    assert v.hidden_bottlenecks == [] and v.valid


def test_a_throttle_off_the_data_path_is_not_blamed() -> None:
    v = assess(
        io_trace(19.8e6, 20 * MIB),
        data_path=["cpu:host", "memory:host", "block:vdb"],
        cut="block:vdb",
    )
    assert v.valid and v.hidden_bottlenecks == []


def shaped(sent: float, rate: float, over: list[float | None]) -> MonitorTrace:
    nic = {"value": 10e9 / 8, "unit": "B/s", "source": "sysfs", "detail": "10000 Mb/s"}
    return trace(
        {
            "nic:veth0/util_send": steady(sent / (10e9 / 8)),
            "nic:veth0/tx_bytes_per_s": steady(sent),
            f"{SHAPER}/util_send": steady(sent / rate),
            f"{SHAPER}/sent_bytes_per_s": steady(sent),
            f"{SHAPER}/over_rate": over,
            f"{SHAPER}/drops_per_s": steady(120.0),
        },
        limits={
            "nic:veth0/send": nic,
            f"{SHAPER}/send": {
                "value": rate,
                "unit": "B/s",
                "source": "qdisc",
                "detail": "tbf rate 100 Mbit/s",
            },
        },
        attrs={
            SHAPER: {
                "limiter": "traffic shaping",
                "limits": "nic:veth0",
                "qdisc": "tbf",
                "interface": "veth0",
                "judged_by": "util_send",
            }
        },
        component_under_test="nic:veth0",
    )


def test_a_shaping_qdisc_names_itself() -> None:
    over = [None, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0]  # over its rate in 8 of 10 intervals
    v = assess(shaped(12.3e6, 12.5e6, over), data_path=["cpu:host", "memory:host", "nic:veth0"])
    assert not v.valid and [h.component for h in v.hidden_bottlenecks] == [SHAPER]
    assert v.hidden_bottlenecks[0].evidence == (
        "qdisc tbf on veth0 rate 100 Mbit/s: over its rate in 80 % of samples, 1.20 k drops, "
        "sent 98.4 Mbit/s on average"
    )
    physical = next(s for s in v.per_component if s.metric == "nic:veth0/util_send")
    assert physical.applied == "physical" and not physical.judged  # 1 % of 10 Gbit/s
    assert v.cut_saturated  # against its effective 100 Mbit/s


def test_without_shaping_the_nic_is_judged_on_its_own() -> None:
    v = assess(
        shaped(12.3e6, 12.5e6, steady(1.0)).model_copy(
            update={"attrs": {}, "series": {"nic:veth0/util_send": steady(12.3e6 / (10e9 / 8))}}
        ),
        data_path=["nic:veth0"],
    )
    assert v.valid and v.hidden_bottlenecks == []
    assert all(s.applied is None for s in v.per_component)


def memory_trace(hits: list[float | None], fill: float = 0.98) -> MonitorTrace:
    return trace(
        {
            f"{MEMORY}/util_capacity": [fill] * N,
            f"{MEMORY}/usage_bytes": [fill * 64 * MIB] * N,
            f"{MEMORY}/limit_hits_per_s": hits,
            f"{MEMORY}/refaults_per_s": [None if h is None else 400.0 * h for h in hits],
            "block:vda/busy": steady(0.7),
            "block:vda/read_bytes_per_s": steady(200e6),
        },
        limits={
            f"{MEMORY}/capacity": {
                "value": 64 * MIB,
                "unit": "B",
                "source": "cgroup",
                "detail": "memory.limit_in_bytes 67108864",
            }
        },
        attrs={
            MEMORY: {
                "limiter": "memory limit",
                "limits": "memory:host",
                "cgroup": "/bench",
                "version": 1,
            }
        },
        component_under_test="block:vda",
    )


def test_a_memory_limit_that_was_hit_names_itself_with_its_reclaim() -> None:
    v = assess(memory_trace(steady(1500.0)), data_path=DISK_PATH)
    assert [h.component for h in v.hidden_bottlenecks] == [MEMORY]
    assert v.hidden_bottlenecks[0].evidence.startswith(
        "cgroup /bench memory limit 64.0 MiB: usage above 80 % for 100 % of the run"
    )
    assert (
        "the kernel reclaimed to stay under it 15.0 k times (memory.failcnt); 6.00 M evicted "
        "file pages were read again"
    ) in v.hidden_bottlenecks[0].evidence


def test_a_full_cgroup_that_never_reclaimed_is_not_flagged() -> None:
    """Page cache fills a cgroup up to its limit and stays there after the I/O ends: full, but
    the limit bound only while the kernel had to reclaim for it (1 of 10 intervals here: no
    more than the allowance)."""
    v = assess(memory_trace([None, 900.0] + [0.0] * 9), data_path=DISK_PATH)
    stats = next(s for s in v.per_component if s.component == MEMORY)
    assert stats.time_above_fraction == pytest.approx(0.1)
    assert stats.mean == pytest.approx(0.98 * 0.1)  # the fill counts only while reclaiming
    assert v.valid


def test_a_memory_limit_without_reclaim_counters_is_reported_not_judged() -> None:
    tr = memory_trace(steady(1500.0))
    for key in (f"{MEMORY}/limit_hits_per_s", f"{MEMORY}/refaults_per_s"):
        del tr.series[key]
    v = assess(tr, data_path=DISK_PATH)
    assert v.valid and any("no reclaim counter was readable" in n for n in v.notes)


def frequency_trace(
    cpu_bound: bool, below: float = 1.0, nominal: float | None = 2.9e9
) -> MonitorTrace:
    busy = 1.0 if cpu_bound else 0.1
    return trace(
        {
            "cpu:host/util_compute": steady(busy),
            "cpu:host/busy_cores": steady(4 * busy),
            "cpufreq:policy0/frequency_hz": [
                1.2e9,
                1.2e9,
                1.5e9,
                1.8e9,
                1.5e9,
                1.2e9,
                1.5e9,
                1.8e9,
                1.5e9,
                1.2e9,
                1.5e9,
            ],
            **({"cpufreq:policy0/below_nominal": [below] * N} if nominal else {}),
        },
        limits={"cpu:host/compute": {"value": 4.0, "unit": "cores", "source": "sysfs"}},
        attrs={
            "cpufreq:policy0": {
                "cpus": [0, 1, 2, 3],
                "nominal_hz": nominal,
                "hardware_max_hz": 4.7e9,
                "scaling_max_hz": 2.0e9,
                "governor": "powersave",
            }
        },
        component_under_test="cpu:host",
    )


def test_a_cpu_bound_result_below_the_nominal_frequency_is_warned_about() -> None:
    v = assess(frequency_trace(cpu_bound=True))
    warning = next(n for n in v.notes if n.startswith("warning: a CPU-bound result"))
    assert warning.endswith(
        "policy0 (CPUs 0,1,2,3) at 1.20 GHz-1.80 GHz (mean 1.45 GHz) below its nominal 2.90 GHz "
        "for 100 % of the run, capped at 2.00 GHz (scaling_max_freq), governor powersave"
    )


def test_no_frequency_warning_when_not_cpu_bound_at_nominal_or_without_a_nominal() -> None:
    idle_disk_run = frequency_trace(cpu_bound=False).model_copy(
        update={"component_under_test": "block:vda"}
    )
    for tr in (
        idle_disk_run,
        frequency_trace(cpu_bound=True, below=0.0),
        frequency_trace(cpu_bound=True, nominal=None),
    ):
        assert not any(n.startswith("warning: a CPU-bound") for n in assess(tr).notes)


def test_held_at_is_the_rate_while_writing() -> None:
    """A throttle releases I/O in slices (a 10 Hz sample reads 0 or twice the limit) and a round
    starts and ends idle: "held at" is the mean over the stretches of I/O, the idle start and
    end left out."""
    burst = [None, 0.0, 0.0, 40 * MIB, 0.0, 40 * MIB, 0.0, 40 * MIB, 0.0, 40 * MIB, 0.0]
    tr = io_trace(20 * MIB, 20 * MIB)
    tr.series[f"{THROTTLE}/write_bytes_per_s"] = burst
    tr.series[f"{THROTTLE}/util_write"] = [None if b is None else b / (20 * MIB) for b in burst]
    v = assess(tr, data_path=DISK_PATH)
    assert "writes held at 22.9 MiB/s" in v.hidden_bottlenecks[0].evidence  # 4 x 40 / 7 intervals


def test_frequency_warning_from_the_probe_on_a_captured_tree() -> None:
    """The cpufreq probe on the captured intel_pstate tree (policy0 at 1995312 kHz under a
    2.0 GHz cap, policy1 at 4388221 kHz; nominal 2.9 GHz) and a CPU that was busy all along:
    the warning names policy0 and the frequency seen, not policy1."""
    from conftest import FIXTURES
    from pilot_sys.monitor.sampler import Sampler
    from pilot_sys.plugins.dynamic import cpufreq

    tree = FIXTURES / "limits" / "cpufreq-mixed"
    sampler = Sampler(rate_hz=20, plugins=[cpufreq], root=tree).start()
    time.sleep(0.3)
    tr = sampler.stop(cut="cpu:host")
    n = len(tr.timestamps)
    tr.series["cpu:host/util_compute"] = [None] + [1.0] * (n - 1)
    tr.limits["cpu:host/compute"] = {"value": 2.0, "unit": "cores", "source": "sysfs"}
    warning = next(n for n in assess(tr).notes if n.startswith("warning: a CPU-bound result"))
    assert "policy0 (CPUs 0) at 2.00 GHz below its nominal 2.90 GHz for 100 % of the run" in warning
    assert "capped at 2.00 GHz (scaling_max_freq), governor powersave" in warning
    assert "policy1" not in warning
