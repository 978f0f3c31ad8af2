"""A window through Prometheus from a bounded number of points per series: the queries it sends
(one per family for all hosts, whatever their number), hand-built answers turned into one
reading per distinct scrape, and the counters a restart reset left out where it happened."""

from __future__ import annotations

import pytest

from pilot_sys.monitor.remote import prometheus, prometheus_window
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import Response
from pilot_sys.monitor.remote.prometheus_window import (
    RESTART_MARKERS,
    TIME_KEY,
    WindowPlan,
    readings_of_host,
)
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
from pilot_sys.topology.remote_hosts import parse_host_spec

RESPONSE = Response("http://p:9090", b"", 0.0, 0.0)


def _hosts(n: int) -> list:
    return [parse_host_spec(f"h{i}=prom://p:9090?instance=sim-{i}:9100&job=node") for i in range(n)]


def test_a_label_value_is_escaped_only_where_re2_needs_it() -> None:
    # Prometheus looks a plain alternation of literals up as a set of values; any other escape
    # (re.escape's "\-") makes it run the regex over every value of the label
    assert prometheus.regex_literal("sim-1:9100") == "sim-1:9100"
    assert prometheus.regex_literal("10.0.0.5:9100") == "10\\.0\\.0\\.5:9100"
    assert prometheus.regex_literal("a(b)|c*") == "a\\(b\\)\\|c\\*"
    selector = prometheus.selector(_hosts(3))
    assert selector == '{instance=~"sim-0:9100|sim-1:9100|sim-2:9100",job="node"}'


def test_a_label_some_hosts_lack_is_a_regex_not_an_equality() -> None:
    hosts = [*_hosts(1), parse_host_spec("x=prom://p:9090?instance=sim-9:9100")]
    assert prometheus.selector(hosts) == '{instance=~"sim-0:9100|sim-9:9100",job=~"node"}'


def test_the_plan_spans_the_window_in_whole_milliseconds() -> None:
    plan = WindowPlan(end=1000.0, seconds=60.0, points=21)
    assert plan.step == pytest.approx(3.0)
    assert plan.start == pytest.approx(940.0)
    odd = WindowPlan(end=1000.0, seconds=10.0, points=4)  # 3.333... s -> 3.334 s
    assert odd.step == pytest.approx(3.334) and odd.start == pytest.approx(1000.0 - 3 * 3.334)
    for bad in (1, 11_001):
        with pytest.raises(ValueError, match="2 to 11000 points"):
            WindowPlan(end=1000.0, seconds=10.0, points=bad)


def test_the_queries_aggregate_per_host_and_never_extrapolate() -> None:
    hosts = _hosts(2)
    times = prometheus_window.time_query(hosts)
    assert times == (
        "max by (instance, job) (timestamp(node_cpu_seconds_total"
        '{mode="idle",instance=~"sim-0:9100|sim-1:9100",job="node"}))'
    )
    for query in (times, prometheus_window.value_query("a_total", hosts)):
        assert "rate(" not in query and "increase(" not in query and "[" not in query


class RangeFleet(prometheus.Fleet):
    """A fleet whose engine answers every query_range with nothing and records what it was
    asked."""

    def __init__(self, hosts: list) -> None:
        super().__init__("http://p:9090", list(hosts))
        self.asked: list[str] = []

    def server_time(self) -> float:
        return 10_000.0

    def _query_range(self, expr: str, start: float, end: float, step: float) -> list:
        self.asked.append(expr)
        assert end == 10_000.0 and step > 0
        return []


@pytest.mark.parametrize("n", [1, 10, 1000])
def test_a_window_is_one_query_per_family_whatever_the_hosts(n: int) -> None:
    fleet = RangeFleet(_hosts(n))
    found = fleet.window(fleet.hosts, 600.0)
    assert found == {h.name: [] for h in fleet.hosts}
    # values per family, the two restart markers, the scrape times
    assert len(fleet.asked) == len(prometheus.WINDOW_FAMILIES) + len(RESTART_MARKERS) + 1


def _cpu(t_values: list[tuple[float, float]], mode: str) -> tuple[dict, list]:
    return ({"instance": "sim-0:9100", "job": "node", "cpu": "0", "mode": mode}, t_values)


def _host_series(values: list[float], steps: list[float]) -> list:
    return [({"instance": "sim-0:9100"}, list(zip(steps, values, strict=True)))]


def test_each_distinct_scrape_is_one_reading_and_a_restart_leaves_its_counters_out() -> None:
    host = _hosts(1)[0]
    steps = [0.0, 10.0, 20.0, 30.0]
    scraped = [-1.0, 9.0, 9.0, 29.0]  # the step at 20 s still sees the scrape of 9 s
    idle = [100.0, 105.0, 105.0, 110.0]
    user = [50.0, 55.0, 55.0, 75.0]
    own = [3.0, 3.5, 3.5, 3.7]  # the exporter restarted between 9 s and 29 s: 3.7 is wrong
    mine = {
        TIME_KEY: _host_series(scraped, steps),
        "node_cpu_seconds_total": [
            _cpu(list(zip(steps, idle, strict=True)), "idle"),
            _cpu(list(zip(steps, user, strict=True)), "user"),
        ],
        "process_cpu_seconds_total": _host_series(own, steps),
        "process_start_time_seconds": _host_series([-500.0, -500.0, -500.0, 12.0], steps),
        "node_boot_time_seconds": _host_series([-9e4] * 4, steps),
    }
    readings, broken = readings_of_host(host, mine, RESPONSE)
    assert [r.remote_time for r in readings] == [-1.0, 9.0, 29.0]
    assert broken == 1
    assert [r.exporter_cpu_s for r in readings] == [3.0, 3.5, None]
    series = CounterSeries.from_readings(readings)
    busy = utilizations(series)["cpu:h0/busy"]
    # busy share per interval, by hand: 5 / 10, then 20 / 25; the CPU was not reset
    assert busy[1:].tolist() == pytest.approx([0.5, 0.8])


def test_a_reboot_leaves_the_kernels_counters_out_of_its_interval() -> None:
    host = _hosts(1)[0]
    steps = [0.0, 10.0, 20.0]
    mine = {
        TIME_KEY: _host_series([0.0, 10.0, 20.0], steps),
        "node_cpu_seconds_total": [_cpu([(0.0, 900.0), (10.0, 950.0), (20.0, 960.0)], "idle")],
        "node_network_receive_bytes_total": [
            ({"instance": "sim-0:9100", "device": "eth0"}, [(0.0, 1e9), (10.0, 2e9), (20.0, 3e9)])
        ],
        "node_boot_time_seconds": _host_series([-9e4, -9e4, 15.0], steps),
    }
    readings, broken = readings_of_host(host, mine, RESPONSE)
    assert broken == 1
    assert "nic:h0/eth0/rx_bytes" in readings[1].values
    assert readings[2].values == {}  # every kernel counter started again
    rates = utilizations(CounterSeries.from_readings(readings))["nic:h0/eth0/rx_bytes_per_s"]
    assert rates[1] == pytest.approx(1e8) and not rates[2] == rates[2]  # NaN: left out


def test_a_boot_time_that_moves_by_a_second_is_no_reboot() -> None:
    # the kernel's boot time is the wall clock less the uptime: a clock adjustment moves it
    host = _hosts(1)[0]
    steps = [0.0, 10.0, 20.0]
    mine = {
        TIME_KEY: _host_series([0.0, 10.0, 20.0], steps),
        "node_cpu_seconds_total": [_cpu([(0.0, 900.0), (10.0, 950.0), (20.0, 960.0)], "idle")],
        "node_boot_time_seconds": _host_series([-9e4, -9e4 + 1.0, -9e4], steps),
        "process_start_time_seconds": _host_series([-500.0, -499.0, -500.0], steps),
    }
    readings, broken = readings_of_host(host, mine, RESPONSE)
    assert broken == 0 and all("cpu:h0/total_s" in r.values for r in readings)


def test_a_step_without_the_hosts_cpu_series_is_no_reading() -> None:
    host = _hosts(1)[0]
    mine = {
        TIME_KEY: _host_series([-1.0, 9.0], [0.0, 10.0]),
        "node_cpu_seconds_total": [_cpu([(10.0, 5.0)], "idle")],
    }
    readings, broken = readings_of_host(host, mine, RESPONSE)
    assert [r.remote_time for r in readings] == [9.0] and broken == 0


class WindowFleet(prometheus.Fleet):
    """A fleet whose window is 21 readings of one host with one core always busy, and one
    interval left out for a restart."""

    def window(self, hosts, seconds, points=prometheus.WINDOW_POINTS):  # type: ignore[no-untyped-def]
        self.last_window_resets = {"a": 1}
        readings = []
        for i in range(21):
            t = 1000.0 + 3.0 * i
            values = {
                "cpu:a/core0_busy_s": t,
                "cpu:a/core0_total_s": t,
                "cpu:a/core1_busy_s": 0.0,
                "cpu:a/core1_total_s": t,
                "cpu:a/busy_s": t,
                "cpu:a/total_s": 2 * t,
                "cpu:a/steal_s": 0.0,
            }
            readings.append(
                RemoteCounters(host="a", sent=t, received=t, remote_time=t, values=values)
            )
        return {"a": readings}


def test_a_session_window_is_judged_at_its_points_spacing_and_names_the_restart() -> None:
    from types import SimpleNamespace

    from pilot_sys.session.engine_window import judge_over_session

    host = parse_host_spec("a=prom://p:9090?instance=a:9100")
    key = (host.base_url, host.auth)
    prometheus._FLEETS[key] = WindowFleet(host.base_url, [host])
    try:
        trace = SimpleNamespace(
            timestamps=[0.0, 1.0], limits={}, attrs={}, component_under_test=None
        )
        found = judge_over_session(
            trace, [host], {"a": 1.0}, 0.0, graph=None, threshold=0.8, data_path=None
        )
    finally:
        del prometheus._FLEETS[key]
    (note,) = found.notes
    assert "judged over the session so far instead (60 s, 21 scrapes, one every 3 s" in note
    assert "reset (the exporter or the host restarted) in 1 interval(s), left out" in note
    assert any(h.startswith("cpu:a (") for h in found.hidden), found  # one core always busy
