"""The live table and the picture, from hand-built numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli
from pilot_sys.cli.present.monitor import rows_for, verdict_lines
from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.plot import draw, peak_by_component, plotted_signals
from pilot_sys.monitor.trace import MonitorTrace


def test_rows_show_utilization_when_a_limit_is_known_and_what_was_measured_otherwise() -> None:
    latest = {
        "nic:eth0/util_send": 0.5,
        "nic:eth0/util_receive": 0.9,
        "block:vda/busy": 0.97,
        "block:vda/write_bytes_per_s": 3 * 2**20,
        "cpu:host/util_compute": 0.25,
        "cpu:host/busiest_core": 1.0,
    }
    nic = rows_for("nic:eth0", latest, 0.8)
    assert [(r[1], r[3]) for r in nic] == [("receive", "90 %"), ("send", "50 %")]
    assert (
        nic[0][2].style == "red" and nic[1][2].style == "green"
    )  # above / well below the threshold
    disk = rows_for("block:vda", latest, 0.8)
    assert [(r[1], r[3]) for r in disk] == [
        ("busy (io_ticks)", "97 %"),
        ("limit unknown", "write 3.00 MiB/s"),
    ]
    cpu = rows_for("cpu:host", latest, 0.8)
    assert [(r[1], r[3]) for r in cpu] == [("compute", "25 %"), ("busiest core", "100 %")]
    lo = rows_for("nic:lo", {"nic:lo/rx_bytes_per_s": 1.25e8, "nic:lo/tx_bytes_per_s": 64.0}, 0.8)
    assert [(r[1], r[3]) for r in lo] == [
        ("limit unknown", "receive 1.00 Gbit/s, send 512 bit/s")
    ]  # 64 B/s x 8


def test_plot_picks_the_cut_and_judged_signals_and_draws(tmp_path: Path) -> None:
    n = 11
    trace = MonitorTrace(
        rate_hz=10.0,
        start_time=0.0,
        timestamps=[float(i) for i in range(n)],
        command=["fio"],
        series={
            "cpu:host/util_compute": [None] + [0.95] * 10,
            "block:vda/busy": [None] + [0.5] * 10,
            "core:0/util_compute": [None] + [1.0] * 10,
        },
        component_under_test="block:vda",
    )
    verdict = assess(trace)
    chosen = [s.metric for s in plotted_signals(verdict)]
    assert chosen[0] == "block:vda/busy"  # the CUT first
    assert "core:0/util_compute" not in chosen  # per-core series are reported, not plotted
    assert peak_by_component(verdict) == {"block:vda": 0.5, "cpu:host": 0.95}
    lines = verdict_lines(verdict)
    assert lines[0] == (
        "INVALID: 1 hidden bottleneck(s) besides the CUT (block:vda), above 80 % for more than "
        "10 % of the run:"
    )
    assert (
        lines[1].startswith("  - cpu:host (compute): ") and "CUT block:vda: not saturated" in lines
    )
    out = tmp_path / "p.png"
    draw(trace, verdict, out)
    assert out.read_bytes()[:4] == b"\x89PNG" and out.stat().st_size > 10_000


@pytest.mark.live
def test_forced_live_view_relays_the_command_output(tmp_path: Path) -> None:
    result = run_cli(
        "monitor",
        "--live",
        "--rate",
        "10",
        "--",
        "sh",
        "-c",
        "echo relayed-line; sleep 1",
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "relayed-line" in result.stdout  # through the pipe, printed above the table
    assert "pilot-sys monitor" in result.stdout and "cpu:host" in result.stdout  # the table itself


def test_a_saturated_cut_beside_a_hidden_bottleneck_says_which_governs() -> None:
    """`monitor` never says INVALID and "CUT saturated" without saying which one governs."""
    n = 21
    trace = MonitorTrace(
        rate_hz=10.0,
        start_time=0.0,
        timestamps=[0.1 * i for i in range(n)],
        series={
            "cpu:host/util_compute": [None] + [0.95] * (n - 1),
            "block:vda/busy": [None] + [0.97] * (n - 1),
        },
        component_under_test="block:vda",
    )
    verdict = assess(trace)
    assert verdict.cut_saturated and verdict.judged_invalid and verdict.governing == "cpu:host"
    lines = verdict_lines(verdict)
    assert lines[0].startswith("INVALID: 1 hidden bottleneck(s) besides the CUT (block:vda)")
    assert (
        "CUT block:vda: saturated, but the hidden bottleneck governs the verdict: the number "
        "may be cpu:host's limit, not block:vda's"
    ) in lines
    assert "CUT block:vda: saturated" not in lines  # never the bare state beside INVALID


def test_a_run_of_a_few_samples_is_not_judged() -> None:
    """Two sampled intervals cannot show a share of 10 %: the hot CPU is named, not judged."""
    trace = MonitorTrace(
        rate_hz=10.0,
        start_time=0.0,
        timestamps=[0.0, 0.1, 0.2],
        series={"cpu:host/util_compute": [None, 0.95, 0.95]},
        component_under_test="block:vda",
    )
    verdict = assess(trace)
    assert not verdict.valid and not verdict.enough_samples and not verdict.judged_invalid
    lines = verdict_lines(verdict)
    assert lines[0] == (
        "not judged: 2 sampled interval(s), 10 needed to judge a share of 10 % of "
        "the run (raise --rate or run longer); seen above 80 %: cpu:host (compute)"
    )
    assert not any(line.startswith("INVALID") for line in lines)
    assert not any(line.startswith("note: only 2 sampled") for line in lines)
