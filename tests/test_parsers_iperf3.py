"""iperf3 parser against JSON captured over loopback on this machine."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from pilot_sys.workload.parsers.iperf3 import error_message, parse
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput

HERE = FIXTURES / "workload"


def load(name: str) -> CapturedOutput:
    return CapturedOutput(stdout=(HERE / name).read_text(), stdout_name=name)


def test_tcp_client() -> None:
    out = parse(load("iperf3_client_tcp.json"))
    # end.sum_received.bits_per_second = 16208594192.356628
    assert out.readings["bw"] == pytest.approx(16208594192.356628 / 8)
    assert out.readings["retransmits"] == 10
    assert out.work_done == 4052746240
    # Four 0.5 s intervals (sender side) are the unit readings, e.g. 18984628951.53181 bit/s first.
    assert out.unit_readings["bw"].size == 4
    assert out.unit_readings["bw"][0] == pytest.approx(18984628951.53181 / 8)
    assert out.unit_timestamps["bw"][0] == pytest.approx(0.50041)
    assert "jitter" not in out.readings


def test_tcp_server_agrees_with_client_and_drops_the_last_sliver() -> None:
    server = parse(load("iperf3_server_tcp.json"))
    client = parse(load("iperf3_client_tcp.json"))
    assert server.readings["bw"] == pytest.approx(client.readings["bw"])
    assert "retransmits" not in server.readings
    # The server's third interval lasts 0.000264 s: a sliver, not a unit reading.
    assert server.unit_readings["bw"].size == 2
    assert server.unit_readings["bw"][1] == pytest.approx(1724942059.003277)


def test_udp_jitter_and_loss() -> None:
    out = parse(load("iperf3_client_udp.json"))
    assert out.readings["bw"] == pytest.approx(199997972.18148974 / 8)
    assert out.readings["jitter"] == pytest.approx(0.006791984319102258e-3)
    assert out.readings["lost_percent"] == 0
    specs = {s.name: s for s in out.specs}
    assert specs["jitter"].higher_is_better is False and specs["bw"].pi_type == "harmonic"
    assert [s.name for s in out.specs if s.gates_stop] == ["bw"]


def test_error_document() -> None:
    text = json.dumps(
        {
            "start": {},
            "intervals": [],
            "end": {},
            "error": "unable to connect to server: Connection refused",
        }
    )
    captured = CapturedOutput(stdout=text)
    assert error_message(captured) == "unable to connect to server: Connection refused"
    with pytest.raises(MalformedOutput, match="Connection refused"):
        parse(captured)


def test_plain_text_output_is_refused_with_position() -> None:
    with pytest.raises(MalformedOutput) as err:
        parse(
            CapturedOutput(
                stdout="Connecting to host 127.0.0.1, port 5201\n", stdout_name="r1/stdout.txt"
            )
        )
    assert err.value.where == "r1/stdout.txt:1:1" and "-J" in err.value.problem
    with pytest.raises(MalformedOutput, match="printed nothing"):
        parse(CapturedOutput(stdout="  \n"))


def test_bidirectional_test_reports_both_directions() -> None:
    out = parse(load("iperf3_client_bidir.json"))
    assert out.readings["bw"] == pytest.approx(2726395956.020149 / 8)
    assert out.readings["bw_reverse"] == pytest.approx(2367334752.755609 / 8)
    assert out.work_done == 347340800 + 301596672
    assert list(out.unit_readings["bw_reverse"]) == pytest.approx(
        [2873270426.64249 / 8, 1944641880.5635548 / 8]
    )


def test_non_finite_numbers_in_the_json_are_reported() -> None:
    """Python's json reads NaN and Infinity; a NaN rate is a failed measurement, not a reading."""
    doc = json.loads((HERE / "iperf3_client_tcp.json").read_text())
    doc["end"]["sum_received"]["bits_per_second"] = float("nan")
    doc["intervals"][1]["sum"]["bits_per_second"] = float("inf")
    out = parse(CapturedOutput(stdout=json.dumps(doc), stdout_name="r1/stdout.txt"))
    assert "bw" not in out.readings and "bw" not in out.unit_readings
    found = [(n.pi, n.count, n.first) for n in out.non_finite]
    assert found == [("bw", 1, "nan"), ("bw", 1, "inf")]
