"""fio's client/server output (``--client=HOST job.fio``): per-server and aggregate readings, on
a run of two fio servers captured here (tests/fixtures/workload/capture.sh, fio_clients)."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from pilot_sys.workload.parsers.fio import parse
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput

STDOUT = FIXTURES / "workload" / "fio_clients" / "stdout.txt"


def _doc() -> dict:
    text = STDOUT.read_text()
    return json.loads(text[text.index("\n{") + 1 :])


def test_each_server_and_the_aggregate_match_fios_own_numbers() -> None:
    out = parse(CapturedOutput(stdout=STDOUT.read_text()))
    stats = _doc()["client_stats"]
    by_host = {s["hostname"]: s["write"] for s in stats if s["jobname"] != "All clients"}
    assert sorted(by_host) == ["127.0.0.1", "127.0.0.2"]
    for host, write in by_host.items():
        # fio's own bw_bytes per server, and io_bytes over its runtime in ms
        assert out.readings[f"write_bw@{host}"] == pytest.approx(write["bw_bytes"], rel=1e-9)
        assert out.readings[f"write_bw@{host}"] == pytest.approx(
            write["io_bytes"] / (write["runtime"] / 1000)
        )
        assert out.readings[f"write_iops@{host}"] == pytest.approx(
            write["total_ios"] / (write["runtime"] / 1000)
        )
        assert out.readings[f"write_lat_mean@{host}"] == pytest.approx(
            write["lat_ns"]["mean"] / 1e9
        )
    everyone = next(s["write"] for s in stats if s["jobname"] == "All clients")
    # the servers run at once: all bytes over the longest runtime, as fio's "All clients" says
    assert out.readings["write_bw"] == pytest.approx(everyone["bw_bytes"], rel=1e-9)
    assert out.readings["write_bw"] == pytest.approx(
        sum(w["io_bytes"] for w in by_host.values())
        / (max(w["runtime"] for w in by_host.values()) / 1000)
    )
    assert out.work_done == sum(w["io_bytes"] for w in by_host.values())
    gating = {s.name for s in out.specs if s.gates_stop}
    assert gating == {
        "write_bw",
        "write_iops",
        "write_lat_mean",
    }  # per-server readings: reported only


def test_a_failed_server_job_names_the_server() -> None:
    doc = _doc()
    doc["client_stats"][1]["error"] = 5
    with pytest.raises(MalformedOutput) as caught:
        parse(CapturedOutput(stdout=json.dumps(doc)))
    assert "127.0.0.2 w: error 5" in str(caught.value)


def test_neither_jobs_nor_client_stats_is_malformed() -> None:
    with pytest.raises(MalformedOutput, match="client_stats"):
        parse(CapturedOutput(stdout='{"fio version": "fio-3.33"}'))
