"""A declared host as a sampler source: its samples in column order with the host's own time,
its metrics equal to the remote formulas on the same readings, the link judged from both NICs,
and, in a real sampler, the host's series on the grid, its clock offset recovered and a stretch
without answers kept as a gap with a note (the recording goes on)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.monitor.overhead import MonitorCost
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.remote import node_exporter
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import RemoteUnavailable, Response
from pilot_sys.monitor.remote.source import (
    HostLinkProbe,
    RemoteHostPlugin,
    RemoteHostSource,
    counter_columns,
    host_plugins,
)
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.session.monitoring import remote_cpu_per_second, source_gaps
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.topology.remote_hosts import parse_host_spec

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "remote"
SRV = parse_host_spec("srv=http://10.9.9.9:9100")
TWO_CORES = Limit(value=2.0, unit="cores", source=LimitSource.NODE_EXPORTER, detail="2 CPUs")


def _captured(tag: str, sent: float, received: float) -> RemoteCounters:
    text = (FIXTURES / f"node_exporter_counters_{tag}.prom").read_text()
    samples = node_exporter.parse(text, node_exporter.COUNTER_SAMPLES)
    return node_exporter.counters_from_samples("srv", samples, Response("u", b"", sent, received))


class ListClient:
    """Answers with the given readings in turn."""

    def __init__(self, readings: list[RemoteCounters]) -> None:
        self.readings = list(readings)
        self.closed = False

    def counters(self) -> RemoteCounters:
        return self.readings.pop(0)

    def inventory(self) -> object:
        raise AssertionError("not asked")

    def close(self) -> None:
        self.closed = True


def _graph() -> ComponentGraph:
    graph = ComponentGraph()
    graph.add_component(
        Component(
            id="cpu:srv",
            kind=ComponentKind.CPU,
            name="srv",
            limits={"compute": TWO_CORES},
            attrs={"cpus": 2},
        )
    )
    speed = Limit(value=1.25e9, source=LimitSource.NODE_EXPORTER, detail="10000 Mb/s")
    graph.add_component(
        Component(
            id="nic:srv/eth0",
            kind=ComponentKind.NIC,
            name="eth0",
            limits={"send": speed, "receive": speed},
        )
    )
    graph.add_component(Component(id="block:srv/vda", kind=ComponentKind.BLOCK, name="vda"))
    return graph


def test_columns_are_the_hosts_cpu_per_cpu_disks_and_nics() -> None:
    ids = ["cpu:srv", "nic:srv/eth0", "block:srv/vda", "cpu:host", "nic:eth0", "memory:srv"]
    columns = counter_columns(ids, "srv", cpus=2)
    assert {"cpu:srv/busy_s", "cpu:srv/total_s", "cpu:srv/steal_s"} <= set(columns)
    assert "cpu:srv/core1_total_s" in columns and "cpu:srv/core2_busy_s" not in columns
    assert "block:srv/vda/io_time_s" in columns and "nic:srv/eth0/tx_bytes" in columns
    assert not any(c.startswith(("cpu:host", "nic:eth0", "memory:")) for c in columns)


def test_samples_carry_the_hosts_time_and_derive_the_remote_formulas() -> None:
    before = _captured("before", 100.0, 100.002)
    after = _captured("after", 103.0, 103.004)
    context = ProbeContext(graph=_graph())
    columns = counter_columns([c.id for c in _graph().components()], "srv", cpus=2)
    source = RemoteHostSource(SRV, columns, context, 0.1, ListClient([before, after]))
    readings = [source.sample(), source.sample()]
    assert readings[0].taken_at == before.remote_time and readings[1].taken_at == after.remote_time
    assert readings[1].remote_cpu_seconds == after.exporter_cpu_s
    assert list(readings[1].values) == [after.values[c] for c in columns]
    t = np.array([before.remote_time, after.remote_time])
    raw = np.array([r.values for r in readings])
    derived = source.derive(raw, t, {})
    reference = utilizations(
        CounterSeries.from_readings([before, after]),
        {"cpu:srv/compute": TWO_CORES, **{k: v for k, v in source.limits.items()}},
    )
    for key in ("cpu:srv/util_compute", "nic:srv/eth0/rx_bytes_per_s", "block:srv/vda/busy"):
        assert derived[key][1] == pytest.approx(reference[key][1])
    busiest = derived["cpu:srv/busiest_core"][1]
    shares = []
    for n in (0, 1):
        busy = after.values[f"cpu:srv/core{n}_busy_s"] - before.values[f"cpu:srv/core{n}_busy_s"]
        total = after.values[f"cpu:srv/core{n}_total_s"] - before.values[f"cpu:srv/core{n}_total_s"]
        shares.append(busy / total)
    assert busiest == pytest.approx(max(shares))
    assert source.interval_metric("cpu:srv/busy") and source.interval_metric("cpu:srv/util_compute")


def test_the_link_carries_at_most_what_both_nics_saw() -> None:
    context = ProbeContext()
    link = "network:host~srv"
    context.graph = ComponentGraph()
    context.graph.add_component(
        Component(
            id=link,
            kind=ComponentKind.NETWORK,
            name="link",
            limits={
                "send": Limit(value=100.0, source=LimitSource.DERIVED),
                "receive": Limit(detail="unknown"),
            },
        )
    )
    probe = HostLinkProbe(context, {link: ("nic:eth0", "nic:srv/eth0")})
    metrics = {
        "nic:eth0/tx_bytes_per_s": np.array([np.nan, 90.0, 50.0, 80.0]),
        "nic:srv/eth0/rx_bytes_per_s": np.array([np.nan, 70.0, 60.0, np.nan]),  # a gap at the end
        "nic:eth0/rx_bytes_per_s": np.array([np.nan, 5.0, 5.0, 5.0]),
        "nic:srv/eth0/tx_bytes_per_s": np.array([np.nan, 6.0, 4.0, 5.0]),
    }
    out = probe.derive(np.zeros((4, 0)), np.arange(4.0), metrics)
    np.testing.assert_array_equal(out[f"{link}/send_bytes_per_s"], [np.nan, 70.0, 50.0, 80.0])
    np.testing.assert_allclose(out[f"{link}/util_send"], [np.nan, 0.7, 0.5, 0.8])
    np.testing.assert_array_equal(out[f"{link}/receive_bytes_per_s"], [np.nan, 5.0, 4.0, 5.0])
    assert f"{link}/util_receive" not in out  # unknown capacity: no utilization invented


class ClockedClient:
    """A host whose CPU is busy 0.5 cores, whose clock runs ``offset`` s ahead of ours, and which
    does not answer between ``down[0]`` and ``down[1]`` seconds after its first call."""

    def __init__(self, offset: float, down: tuple[float, float]) -> None:
        self.offset = offset
        self.down = down
        self.first: float | None = None
        self.calls = 0
        self.threads: set[int] = set()

    def counters(self) -> RemoteCounters:
        self.threads.add(threading.get_ident())
        now = time.time()
        self.first = self.first if self.first is not None else now
        self.calls += 1
        if self.down[0] <= now - self.first < self.down[1]:
            raise RemoteUnavailable(SRV.base_url, "connection refused (nothing listens there)")
        elapsed = now - self.first
        values = {
            "cpu:srv/busy_s": 0.5 * elapsed,
            "cpu:srv/total_s": 2.0 * elapsed,
            "cpu:srv/steal_s": 0.0,
        }
        return RemoteCounters(
            host="srv",
            sent=now,
            received=now,
            remote_time=now + self.offset,
            values=values,
            exporter_cpu_s=0.001 * self.calls,
        )

    def inventory(self) -> object:
        raise AssertionError("not asked")

    def close(self) -> None:
        pass


def test_a_sampler_records_the_host_recovers_its_offset_and_keeps_a_gap() -> None:
    client = ClockedClient(offset=5.0, down=(0.7, 1.3))
    graph = ComponentGraph()
    graph.add_component(
        Component(id="cpu:srv", kind=ComponentKind.CPU, name="srv", limits={"compute": TWO_CORES})
    )
    plugin = RemoteHostPlugin(SRV, 10.0, client_factory=lambda host, timeout: client)
    sampler = Sampler(graph, rate_hz=10.0, plugins=[plugin])
    assert [s.name for s in sampler.sources] == ["remote:srv"]
    sampler.start()
    time.sleep(2.2)
    trace = sampler.stop()
    assert threading.get_ident() not in client.threads  # called on the source's own thread
    record = trace.sources["remote:srv"]
    assert record.clock == "backend time"
    assert record.clock_offset_s == pytest.approx(5.0, abs=0.01)
    util = np.array([np.nan if v is None else v for v in trace.series["cpu:srv/util_compute"]])
    assert np.nanmedian(util) == pytest.approx(0.25, abs=0.03)  # 0.5 of 2 cores
    assert len(record.gaps) == 1
    start, end = record.gaps[0]
    assert 0.5 < end - start < 1.0  # the 0.6 s without answers, less what the bound carries
    t = np.array(trace.timestamps)
    assert np.isnan(util[(t > start + 0.05) & (t < end - 0.05)]).all()
    # sampling went on after the host came back (the closing tick may come after its last sample)
    assert np.isfinite(util[(t > end + 0.3) & (t < t[-1] - 0.15)]).all()
    assert any(
        "source remote:srv: no sample for" in n and "connection refused" in n for n in trace.notes
    )
    assert source_gaps(trace) == [f"remote:srv {start:.1f}-{end:.1f} s"]
    seconds = trace.timestamps[-1] - trace.timestamps[0]
    assert record.cost.remote_cpu_seconds == pytest.approx(
        0.001 * (record.cost.calls - 1)  # its counter: 1 ms per call, failed calls too
    )
    assert remote_cpu_per_second(trace) == {
        "remote:srv": pytest.approx(record.cost.remote_cpu_seconds / seconds)
    }
    cost = MonitorCost.from_sampler(10.0, sampler.cost()).with_remote(remote_cpu_per_second(trace))
    assert cost.source_cpu_seconds_per_second > 0
    assert cost.remote_cpu_seconds_per_second == pytest.approx(
        record.cost.remote_cpu_seconds / seconds
    )
    assert cost.total_cpu_seconds_per_sample > cost.cpu_seconds_per_sample


def test_host_plugins_ask_at_the_sampling_rate_but_at_most_ten_times_a_second() -> None:
    assert host_plugins([], 10.0) == []
    slow, links = host_plugins([SRV], 2.0)
    assert slow.interval_s == pytest.approx(0.5) and links.NAME == "host-links"
    fast, _ = host_plugins([SRV], 100.0)
    assert fast.interval_s == pytest.approx(0.1)


def test_the_first_model_counts_one_remote_sample_per_tick_up_to_the_cap() -> None:
    def cost(rate: float) -> MonitorCost:
        return MonitorCost(
            rate_hz=rate,
            cpu_seconds_per_second=1e-4 * rate,
            cpu_seconds_per_sample=1e-4,
            wakeups_per_second=rate,
            memory_bytes=0.0,
            source_cpu_seconds_per_second=0.02 * min(rate, 10.0) / 10.0,  # 2 ms a remote sample
        )

    # below the cap each tick asks the hosts once: 2 ms more per tick
    assert cost(5.0).total_cpu_seconds_per_sample == pytest.approx(1e-4 + 2e-3)
    # above it the sources still ran 10 times a second: the same 2 ms per remote sample
    assert cost(100.0).total_cpu_seconds_per_sample == pytest.approx(1e-4 + 2e-3)
