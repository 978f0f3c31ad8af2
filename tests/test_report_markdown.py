"""report.md says what a reviewer must see: an invalid result loudly, CIs, removal, context."""

from __future__ import annotations

from pathlib import Path

from pilot_sys.report.markdown import render
from pilot_sys.session.result import (
    BottleneckSection,
    OverheadSection,
    PIResult,
    Removal,
    SessionResult,
    Status,
    WorkloadResult,
    WPSResult,
)


def _result(status: Status, valid: bool | None) -> SessionResult:
    pi = PIResult(
        name="write_bw",
        unit="B/s",
        source="unit_readings",
        mean=2**30,
        ci_low=0.98 * 2**30,
        ci_high=1.02 * 2**30,
        ci_width_rel=0.04,
        ci_reached=True,
        target=0.1,
        sample_size=5000,
        subsession_size=4,
        required_sample_size=1200,
        removed=[Removal(method="edm", rounds=10, samples_removed=321, samples_kept=5000)],
    )
    w = WorkloadResult(
        name="fio",
        command=["fio", "--name=x"],
        pis={"write_bw": pi},
        work_unit="MiB",
        wps=WPSResult(
            alpha=0.05,
            alpha_ci_low=0.01,
            alpha_ci_high=0.09,
            v=1.0e9,
            v_ci_low=0.9e9,
            v_ci_high=1.1e9,
            alpha_work=4.5e8,
            alpha_work_amount=429.0,
            v_unit="B/s",
            rounds_used=10,
        ),
    )
    return SessionResult(
        status=status,
        exit_code=3 if status is Status.INVALID else 0,
        stop_reason="every CI target met",
        config={
            "ci_perc": 0.1,
            "confidence": 0.95,
            "autocorr_limit": 0.1,
            "preset": "normal",
            "bottleneck_threshold": 0.8,
        },
        workloads=[w],
        bottleneck=BottleneckSection(
            monitored=True,
            valid=valid,
            cut="block:vda",
            hidden_bottlenecks=["cpu:host (compute)"] if valid is False else [],
            max_utilization={"cpu:host/util_compute": 0.97},
        ),
        overhead=OverheadSection(
            sampling_rate_hz=10.0,
            rate_chosen_by="default",
            monitor_cost={
                "cpu_seconds_per_second": 0.004,
                "cpu_seconds_per_sample": 0.0004,
                "memory_bytes": 2**20,
            },
        ),
        context={
            "cpu_model": "Test CPU",
            "kernel": "6.1",
            "governor": None,
            "pilot_sys_version": "0.1.0",
            "command_line": ["pilot-sys", "run"],
        },
    )


def test_invalid_result_is_loud() -> None:
    md = render(_result(Status.INVALID, False), {})
    first = md.splitlines()[2]
    assert "color:red" in first and "INVALID RESULT" in first and "cpu:host (compute)" in first
    assert "**INVALID**: hidden bottleneck at `cpu:host (compute)`" in md


def test_valid_result_sections() -> None:
    md = render(
        _result(Status.VALID, True), {"write_bw: readings": Path("plots/write_bw-rounds.png")}
    )
    assert "INVALID" not in md
    # a 4 % full width is ± 2 % of the mean; the 10 % full-width target is ± 5 %
    assert "| write_bw | 1.00 GiB/s | [0.98 GiB/s, 1.02 GiB/s] | ± 2.0 % | ± 5 % | yes |" in md
    assert "every CI within ± 5 % of the mean at 95% confidence" in md
    assert "321 of 5321 unit readings removed" in md
    assert "v = 954 MiB/s, CI [858 MiB/s, 1.02 GiB/s]" in md  # 1e9 B/s = 953.67 MiB/s
    assert "429 MiB of work amount" in md
    assert "Sampling rate: 10 Hz (chosen by: default)" in md
    assert "not measured in this session" in md
    assert "0.400 % of a CPU, 400 µs per sample" in md
    assert "| CPU | Test CPU |" in md and "unknown (no cpufreq in /sys)" in md
    assert "![write_bw: readings](plots/write_bw-rounds.png)" in md


def test_round_lists_are_compressed_to_ranges() -> None:
    from pilot_sys.report.markdown import ranges

    assert ranges([1, 2, 3, 7, 9, 10]) == "1-3, 7, 9-10"
    assert ranges([12, 4, 6, 8, 7]) == "4, 6-8, 12"
    assert ranges([5]) == "5"


def test_sections_render_in_their_one_order() -> None:
    from pilot_sys.report import markdown

    md = render(
        _result(Status.VALID, True),
        {"p": Path("plots/p.png")},
        [["1", "fio", "1", "1", "x", "analysed", ""]],
    )
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads == [
        "## Verdict",
        "## Results: fio",
        "## Bottleneck verdict",
        "## Monitoring overhead",
        "## Plots",
        "## Rounds",
        "## Context",
        "## Terms",
    ]
    assert [f.__name__ for f in markdown.SECTIONS] == [
        "header",
        "verdict_section",
        "workloads",
        "comparison",
        "bottleneck",
        "gpus",
        "overhead",
        "plot_list",
        "rounds",
        "context",
        "notes",
        "terms",
    ]


def test_a_comparison_and_network_rates_in_their_units() -> None:
    from pilot_sys.session.result import Comparison, PairComparison

    result = _result(Status.VALID, True)
    result.workloads[0].command = ["iperf3", "-c", "127.0.0.1", "-J"]
    result.comparison = Comparison(
        pi="write_bw",
        ranking=["fio", "b"],
        pairs=[
            PairComparison(
                better="fio",
                worse="b",
                pi="write_bw",
                difference=1.25e8,
                difference_rel=0.1234,
                ci_low=1e8,
                ci_high=1.5e8,
                p_value=0.0012,
                cis_overlap=False,
                separated=True,
            )
        ],
    )
    md = render(result, {})
    # iperf3 traffic in bit/s: 2**30 B/s x 8 = 8.59 Gbit/s; 1.25e8 B/s = 1.00 Gbit/s
    assert "| write_bw | 8.59 Gbit/s | [8.42 Gbit/s, 8.76 Gbit/s] |" in md
    assert (
        "| fio vs b | 1.00 Gbit/s | 12.34 % | [0.80 Gbit/s, 1.20 Gbit/s] | 0.0012 | no | yes |"
        in md
    )
    assert "e+0" not in md


def test_a_numeric_library_warning_becomes_a_report_note_and_a_cosmetic_one_is_dropped() -> None:
    import warnings

    import numpy as np

    from pilot_sys.report.writer import library_warnings

    notes: list[str] = []
    with library_warnings(notes, "plots"):
        assert np.isnan(np.nanmax(np.array([np.nan, np.nan])))  # RuntimeWarning: All-NaN slice
        warnings.warn("no artists with labels found to put in legend", UserWarning, stacklevel=1)
        np.nanmax(np.array([np.nan]))  # the same warning again: one note
    assert notes == ["plots: All-NaN slice encountered"]
