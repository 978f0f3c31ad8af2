"""The Prometheus backend on recorded API answers (tests/fixtures/prometheus/answers.json,
made by capture.py against a real server scraping two namespace hosts every second): the
queries it builds, how it parses answers, how one host's reading is cut from a fleet's answer
(one scrape, its timestamp), and what a host that disappears reads as."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.monitor.remote import prometheus
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import RemoteUnavailable, Response
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
from pilot_sys.topology.remote_hosts import Backend, parse_host_spec

RECORDED = json.loads(
    (Path(__file__).parent / "fixtures" / "prometheus" / "answers.json").read_text()
)
SERVER = "prom://127.0.0.1:9090"


def _hosts() -> list:
    meta = RECORDED["hosts"]
    return [parse_host_spec(f"{n}=prom://127.0.0.1:9090?instance={meta[n]}") for n in ("a", "b")]


class ReplayedFleet(prometheus.Fleet):
    """A fleet answered from the recording, query by query, in the recorded order."""

    def __init__(self, hosts: list) -> None:
        super().__init__("http://127.0.0.1:9090", list(hosts))
        self.left = {k: list(v) for k, v in RECORDED["answers"].items()}
        self.asked: list[str] = []

    def _query(self, expr: str):  # type: ignore[no-untyped-def]
        self.asked.append(expr)
        queue = self.left.get(expr)
        if not queue:
            raise RemoteUnavailable(self.base_url, f"not recorded: {expr}")
        body = json.dumps(queue.pop(0) if len(queue) > 1 else queue[0]).encode()
        return prometheus.parse_answer(body, expr), Response(self.base_url, body, 0.0, 0.01)


def test_a_prom_url_names_the_engine_and_the_hosts_series() -> None:
    host = parse_host_spec(
        "nas1=proms://admin@prom.example:443/prom/?instance=10.0.0.5:9100&job=node"
    )
    assert host.backend is Backend.PROMETHEUS
    assert host.base_url == "https://prom.example:443/prom"
    assert host.labels == (("instance", "10.0.0.5:9100"), ("job", "node"))
    assert host.address == "10.0.0.5"  # routes lead to the host, not to the engine


def test_a_prom_url_without_label_matchers_is_bad_input() -> None:
    from pilot_sys.errors import BadInput

    with pytest.raises(BadInput, match="label matchers"):
        parse_host_spec("nas1=prom://prom:9090")


def test_one_selector_for_all_hosts() -> None:
    hosts = [
        parse_host_spec("a=prom://p:9090?job=node&instance=10.0.0.5:9100"),
        parse_host_spec("b=prom://p:9090?job=node&instance=nas.b:9100"),
    ]
    # one job: equality; two instances: an anchored alternation, dots escaped for RE2, the
    # backslash doubled inside the PromQL string
    assert prometheus.selector(hosts) == (
        '{instance=~"10\\\\.0\\\\.0\\\\.5:9100|nas\\\\.b:9100",job="node"}'
    )
    assert prometheus.range_query("up", hosts[:1], 3.0) == (
        'up{instance="10.0.0.5:9100",job="node"}[3000ms]'
    )
    assert prometheus.selector([parse_host_spec('q=prom://p?instance=x"y')]) == '{instance="x\\"y"}'


def test_the_recorded_fleet_asks_one_query_per_family_for_both_hosts() -> None:
    hosts = _hosts()
    fleet = ReplayedFleet(hosts)
    reading = fleet.counters(hosts[0], max_age=0.0)
    polls = [q for q in fleet.asked if q.endswith("[2000ms]")]
    # one per family, and one for every dcgm-exporter family together: not x2 for two hosts
    assert len(polls) == len(prometheus.COUNTER_FAMILIES) + 1
    both = "|".join(re.escape(RECORDED["hosts"][n]).replace("\\", "\\\\") for n in "ab")
    assert all(both in q for q in polls if "DCGM_FI_" not in q)
    gpu = [q for q in polls if "DCGM_FI_" in q]  # the hosts' addresses, any port
    assert len(gpu) == 1 and all(
        re.escape(RECORDED["hosts"][n].split(":")[0]).replace("\\", "\\\\") in gpu[0] for n in "ab"
    )
    # the second host is answered from the same poll: no new query
    asked = len(fleet.asked)
    other = fleet.counters(hosts[1], max_age=60.0)
    assert len(fleet.asked) == asked
    assert reading.host == "a" and other.host == "b"
    assert {"cpu:a/busy_s", "cpu:a/total_s", "nic:a/eth0/rx_bytes", "cpu:a/core0_busy_s"} <= set(
        reading.values
    )


def test_a_reading_is_one_scrape_at_its_timestamp() -> None:
    hosts = _hosts()
    cpu = RECORDED["answers"][prometheus.range_query("node_cpu_seconds_total", hosts, 2.0)][0]
    mine = [s for s in cpu["data"]["result"] if s["metric"]["instance"] == RECORDED["hosts"]["a"]]
    last = max(float(t) for s in mine for t, _ in s["values"])
    total = sum(float(max(s["values"])[1]) for s in mine)  # the latest point of every mode/CPU
    reading = ReplayedFleet(hosts).counters(hosts[0], max_age=0.0)
    assert reading.remote_time == pytest.approx(last)
    assert reading.values["cpu:a/total_s"] == pytest.approx(total)


def test_the_interval_is_learnt_from_up_samples() -> None:
    hosts = _hosts()
    fleet = ReplayedFleet(hosts)
    assert fleet.scrape_interval(hosts[0]) == pytest.approx(1.0, abs=0.05)
    assert fleet.scrape_interval(hosts[1]) == pytest.approx(1.0, abs=0.05)
    assert prometheus.scrape_interval_of([(0.0, 1.0)]) is None


def test_a_host_whose_target_went_down_is_a_failed_reading_naming_it() -> None:
    hosts = _hosts()
    fleet = ReplayedFleet(hosts)
    for _ in range(3):  # the three polls while both were up
        fleet.counters(hosts[0], max_age=0.0)
    fleet.counters(hosts[0], max_age=0.0)  # the recording's last poll: b's exporter stopped
    with pytest.raises(RemoteUnavailable, match="target is down") as caught:
        fleet.counters(hosts[1], max_age=60.0)
    assert f'instance="{RECORDED["hosts"]["b"]}"' in str(caught.value)


def test_a_host_the_engine_does_not_know_is_missing() -> None:
    hosts = [*_hosts(), parse_host_spec("ghost=prom://127.0.0.1:9090?instance=10.9.9.9:9100")]
    families = {
        f: prometheus.parse_answer(json.dumps(answers[0]).encode(), f)
        for f in prometheus.COUNTER_FAMILIES
        for q, answers in RECORDED["answers"].items()
        if q.startswith(f + "{") and q.endswith("[2000ms]")
    }
    why = prometheus.host_reading(hosts[2], families, Response("u", b"", 0.0, 0.0))
    assert isinstance(why, str) and "not scraped" in why


def test_error_answers_carry_the_engines_words() -> None:
    body = b'{"status":"error","errorType":"bad_data","error":"parse error at char 5"}'
    with pytest.raises(RemoteUnavailable, match="bad_data: parse error at char 5"):
        prometheus.parse_answer(body, "q")
    with pytest.raises(RemoteUnavailable, match="not JSON"):
        prometheus.parse_answer(b"<html>", "q")


def test_the_inventory_matches_the_direct_backends_form() -> None:
    hosts = _hosts()
    inventory = ReplayedFleet(hosts).inventory(hosts[0])
    assert inventory.host == "a"
    assert inventory.cpus and inventory.cpus >= 1
    assert "eth0" in {n.name for n in inventory.nics}
    # only the collectors a direct inventory scrape asks for are judged
    assert not any("collector hwmon" in note for note in inventory.notes)
    assert any("scrapes the host every 1 s" in note for note in inventory.notes)


def test_recorded_readings_give_rates_through_the_same_formulas() -> None:
    hosts = _hosts()
    fleet = ReplayedFleet(hosts)
    readings: list[RemoteCounters] = [fleet.counters(hosts[0], max_age=0.0) for _ in range(3)]
    series = CounterSeries.from_readings(readings)
    out = utilizations(series)
    busy = out["cpu:a/busy"]
    assert np.isnan(busy[0]) and np.all((busy[1:] >= 0) & (busy[1:] <= 1))
    assert np.all(np.diff(series.remote_time) > 0.5)  # one scrape apart (1 s)


def test_only_rounds_shorter_than_three_scrapes_leave_an_engine_host_out() -> None:
    from types import SimpleNamespace

    from pilot_sys.session.engine_window import blank_hosts, short_engine_hosts

    hosts = [*_hosts(), parse_host_spec("d=http://10.0.0.9:9100")]
    sources = {  # a 2 s scrape interval: stale after 6 s
        f"remote:{n}": SimpleNamespace(stale_after_s=6.0) for n in ("a", "b", "d")
    }
    series = {
        "cpu:a/busy": [0.5, 0.6],
        "nic:a/eth0/rx_bytes_per_s": [1.0, 2.0],
        "cpu:ab/busy": [0.1, 0.1],  # another host whose name starts alike
        "cpu:host/busy": [0.2, 0.3],
        "network:host~a/util_send": [0.1, 0.2],
    }
    short_trace = SimpleNamespace(timestamps=[0.0, 5.9], sources=sources, series=dict(series))
    assert short_engine_hosts(short_trace, hosts) == {"a": 2.0, "b": 2.0}  # not the direct d
    long_trace = SimpleNamespace(timestamps=[0.0, 6.0], sources=sources, series=dict(series))
    assert short_engine_hosts(long_trace, hosts) == {}
    blank_hosts(short_trace, ["a"])
    assert short_trace.series["cpu:a/busy"] == [None, None]
    assert short_trace.series["nic:a/eth0/rx_bytes_per_s"] == [None, None]
    # other hosts, this machine and the link (bounded by our own NIC too) stay
    for kept in ("cpu:ab/busy", "cpu:host/busy", "network:host~a/util_send"):
        assert short_trace.series[kept] == series[kept]


def test_a_window_of_raw_samples_is_one_reading_per_scrape() -> None:
    hosts = _hosts()
    answers = RECORDED["answers"]
    families = {
        f: prometheus.parse_answer(json.dumps(answers[q][0]).encode(), q)
        for f in prometheus.COUNTER_FAMILIES
        for q in answers
        if q.startswith(f + "{") and q.endswith("[2000ms]")
    }
    mine = prometheus.split_by_host(families, hosts)["a"]
    readings = prometheus.window_readings(hosts[0], mine, Response("u", b"", 0.0, 0.0))
    assert len(readings) == 2  # two scrapes in a 2 s window at 1 s
    times = [r.remote_time for r in readings]
    assert times == sorted(times) and np.all(np.diff(times) > 0.5)
    # the newest one is what a poll reads
    latest = prometheus.host_reading(hosts[0], families, Response("u", b"", 0.0, 0.0))
    assert isinstance(latest, RemoteCounters)
    assert readings[-1].values == latest.values


MATRIX = {"resultType": "matrix", "result": [{"metric": {"instance": "a"}, "values": [[1, "2"]]}]}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (b"", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "query failed"),
        (b'{"status": "success"}', "malformed answer"),
        (
            json.dumps({"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}),
            "not a vector",
        ),
        (
            json.dumps(
                {
                    "status": "success",
                    "data": {"resultType": "matrix", "result": [{"values": [[1, "2"]]}]},
                }
            ),
            "malformed answer",
        ),
        (
            json.dumps(
                {
                    "status": "success",
                    "data": {
                        "resultType": "matrix",
                        "result": [{"metric": {}, "values": [[1, "x"]]}],
                    },
                }
            ),
            "malformed answer",
        ),
        (
            json.dumps(
                {
                    "status": "success",
                    "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1]]}]},
                }
            ),
            "malformed answer",
        ),
        (
            json.dumps(
                {
                    "status": "success",
                    "data": {
                        "resultType": "vector",
                        "result": [{"metric": {}, "value": ["NaN", "1"]}],
                    },
                }
            ),
            "malformed answer",
        ),
        (
            json.dumps({"status": "success", "data": {"resultType": "vector", "result": {"a": 1}}}),
            "malformed answer",
        ),
        (
            json.dumps({"status": "error", "errorType": "timeout", "error": "query timed out"}),
            "timeout: query timed out",
        ),
    ],
)
def test_hostile_answers_are_one_named_failure(answer: bytes | str, problem: str) -> None:
    body = answer.encode() if isinstance(answer, str) else answer
    with pytest.raises(RemoteUnavailable, match=problem):
        prometheus.parse_answer(body, "http://p:9090/api/v1/query (up)")


def test_a_well_formed_answer_parses() -> None:
    body = json.dumps({"status": "success", "data": MATRIX}).encode()
    assert prometheus.parse_answer(body, "q") == [({"instance": "a"}, [(1.0, 2.0)])]
