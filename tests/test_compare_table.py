"""`compare`'s primary PI, the table of every shared PI, its warnings, and units.

Saved results are written as result.json files (the format `compare DIR DIR` reads); the
statistics are checked against statsmodels and scipy on the same numbers.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats as sps
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from conftest import FIXTURES
from pilot_sys.cli.compare import compare
from pilot_sys.cli.present.comparison import saved_lines
from pilot_sys.errors import BadInput
from pilot_sys.session.compare_launch import compare_directories
from pilot_sys.session.compare_pis import Side, build_table
from pilot_sys.session.result import (
    BottleneckSection,
    PIResult,
    RoundCounts,
    SessionResult,
    Status,
    WorkloadResult,
    save_result,
)
from pilot_sys.workload.parsers import dd, fio, iperf3
from pilot_sys.workload.parsers.result import CapturedOutput
from pilot_sys.workload.primary import primary_pi
from pilot_sys.workload.runner import CommandWorkload

HERE = FIXTURES / "workload"
GIB = 2.0**30


# -- the primary PI ---------------------------------------------------------------------------
def test_primary_is_the_bandwidth_of_fio_iperf3_and_dd() -> None:
    fio_out = fio.parse(
        CapturedOutput(
            stdout=(HERE / "fio_seqwrite" / "stdout.txt").read_text(),
            stdout_name="stdout.txt",
            round_dir=HERE / "fio_seqwrite",
        )
    )
    assert [s.name for s in fio_out.specs][:2] == ["write_bw", "write_iops"]
    assert primary_pi(fio_out.specs) == "write_bw"
    udp = iperf3.parse(
        CapturedOutput(stdout=(HERE / "iperf3_client_udp.json").read_text(), stdout_name="udp.json")
    )
    assert {"bw", "jitter", "lost_percent"} <= {s.name for s in udp.specs}
    assert primary_pi(udp.specs) == "bw"
    form = (HERE / "dd_forms.txt").read_text().split("/s\n")[0] + "/s\n"
    assert primary_pi(dd.parse(CapturedOutput(stderr=form)).specs) == "bw"


def _pi(
    name: str,
    unit: str = "B/s",
    pi_type: str = "harmonic",
    source: str = "readings",
    gates: bool = True,
    **kw: object,
) -> PIResult:
    return PIResult(
        name=name, unit=unit, pi_type=pi_type, source=source, target=0.1, gates_stop=gates, **kw
    )


def test_primary_is_never_wps_and_a_round_time_leads_a_timed_command() -> None:
    # the built-in workload's result: its own rates first, the WPS fit last
    builtin = [
        _pi("wps", source="wps"),
        _pi("write_bw", source="unit_readings"),
        _pi("read_bw", source="unit_readings"),
    ]
    assert primary_pi(builtin) == "write_bw"
    # a timed command without a work amount: `--parser none` reports the round time, which leads
    timed = CommandWorkload(["sleep", "0.1"], parser="none").pi_specs()
    assert [s.name for s in timed] == ["round_time"] and primary_pi(timed) == "round_time"
    # beside a work rate, the round time still leads
    work_rate = _pi("work_rate", unit="work/s")
    round_time = _pi("round_time", unit="s", pi_type="arithmetic", higher_is_better=False)
    assert primary_pi([work_rate, round_time]) == "round_time"
    # a fio latency column is not a bandwidth, a reported-only PI does not lead
    assert primary_pi([_pi("lat_p99", "s", "arithmetic", gates=False), _pi("lat", "s")]) == "lat"
    assert primary_pi([_pi("wps", source="wps")]) == "wps"  # nothing else to lead with
    assert primary_pi([]) is None


# -- saved results ----------------------------------------------------------------------------
def _samples_pi(name: str, x: np.ndarray, unit: str = "s") -> PIResult:
    """An arithmetic PI of independent samples (subsessions of one sample) with its t-interval."""
    m, v, n = float(x.mean()), float(x.var(ddof=1)), int(x.size)
    half = sps.t.ppf(0.975, n - 1) * math.sqrt(v / n)
    return _pi(
        name,
        unit,
        "arithmetic",
        higher_is_better=False,
        mean=m,
        ci_low=m - half,
        ci_high=m + half,
        sample_size=n,
        subsession_size=1,
        subsession_count=n,
        subsession_variance=v,
    )


def _result(
    path: Path,
    pis: list[PIResult],
    status: Status = Status.VALID,
    rounds: int = 40,
    stop: str = "every CI target met",
    hidden: list[str] | None = None,
) -> Path:
    res = SessionResult(
        status=status,
        exit_code=0,
        stop_reason=stop,
        result_dir=str(path),
        config={"confidence": 0.95},
        workloads=[
            WorkloadResult(
                name="fio",
                command=["fio"],
                pis={p.name: p for p in pis},
                rounds=RoundCounts(total=rounds, analysed=rounds),
            )
        ],
        bottleneck=BottleneckSection(
            monitored=True, valid=not hidden, cut="block:vda", hidden_bottlenecks=hidden or []
        ),
    )
    path.mkdir(parents=True)
    save_result(res, path)
    return path


def _fio_pair(tmp_path: Path, **b_kw: object) -> tuple[Path, Path]:
    """Two fio sessions as seen on this machine: per-round write_bw without an interval on B,
    tail latencies with one on both sides."""
    rng = np.random.default_rng(7)
    a = _result(
        tmp_path / "fio-1M",
        [
            _pi(
                "write_bw",
                mean=3.27e9,
                ci_low=2.98e9,
                ci_high=3.63e9,
                sample_size=90,
                subsession_size=9,
                subsession_count=10,
                subsession_variance=4.0e-22,
            ),
            _samples_pi("write_lat_p99", rng.normal(1.0e-3, 2e-4, 90)),
            _pi("wps", source="wps", mean=2.53e9, ci_low=1.89e9, ci_high=3.80e9, sample_size=90),
        ],
    )
    b = _result(
        tmp_path / "fio-64k",
        [
            _pi("write_bw", mean=1.06e9, sample_size=84, required_sample_size=117),
            _samples_pi("write_lat_p99", rng.normal(1.05e-4, 2e-5, 84)),
            _pi("wps", source="wps", mean=9.77e8, ci_low=8.12e8, ci_high=1.23e9, sample_size=84),
        ],
        **b_kw,
    )
    return a, b


def test_every_shared_pi_is_compared_and_the_default_is_the_primary(tmp_path: Path) -> None:
    a, b = _fio_pair(tmp_path)
    saved = compare_directories([a, b], None, 0.01)
    # the bandwidth leads, though only the tail latency has an interval on both sides
    assert saved.pi == "write_bw" and [r.pi for r in saved.table.rows] == [
        "write_bw",
        "write_lat_p99",
        "wps",
    ]
    bw, lat, wps = saved.table.rows
    assert (
        bw.verdict == "cannot_decide"
        and bw.reason == "B has no interval yet (84 samples, about 117 needed)"
    )
    assert bw.difference == pytest.approx(
        3.27e9 - 1.06e9
    ) and bw.relative_difference == pytest.approx(2.21e9 / 1.06e9)
    assert lat.verdict == "b_faster" and lat.p_value < 1e-6  # lower latency is better
    assert (
        wps.verdict == "a_faster" and wps.p_value is None and wps.cis_overlap is False
    )  # no Welch stats for WPS
    # --pi names any shared PI, with or without an interval on every side
    for name in ("write_bw", "write_lat_p99", "wps"):
        assert compare_directories([a, b], name, 0.01).table.rows[0].pi == name
    with pytest.raises(
        BadInput, match=r"--pi: 'read_bw' is not a PI both results report \(shared: write_bw, "
    ):
        compare_directories([a, b], "read_bw", 0.01)


def test_the_table_in_text_and_json(tmp_path: Path) -> None:
    a, b = _fio_pair(tmp_path)
    lines = saved_lines(compare_directories([a, b], None, 0.01))
    assert lines[0] == f"A: {a} (fio, valid, 40 rounds analysed)"
    header = next(line for line in lines if line.strip().startswith("PI "))
    assert re.split(r"\s{2,}", header.strip()) == [
        "PI",
        "A",
        "B",
        "A - B [95 % CI]",
        "change",
        "p",
        "verdict",
    ]
    rows = {
        re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip())
        for line in lines
        if line.startswith("  ") and not line.strip().startswith(("PI ", "*"))
    }
    assert rows["write_bw *"][1:3] == ["3.05 GiB/s ± 9.9 %", "1011 MiB/s (no CI)"]
    assert rows["write_bw *"][-1] == "cannot decide" and rows["wps"][-1] == "A faster"
    assert rows["write_lat_p99"][-2:] == ["< 0.001", "B faster"]
    assert (
        "  write_bw: cannot decide: B has no interval yet (84 samples, about 117 needed)" in lines
    )
    result = CliRunner().invoke(compare, [str(a), str(b), "--json", "--pi", "wps"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["pi"] == "wps" and out["table"]["rows"][0]["verdict"] == "a_faster"
    assert [s["directory"] for s in out["sides"]] == [str(a), str(b)] and out["warnings"] == []


def test_welch_row_matches_statsmodels(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    xa, xb = rng.normal(10.0, 1.0, 60), rng.normal(11.0, 1.5, 45)
    table = build_table(
        Side("A", {"lat": _samples_pi("lat", xa)}, 60),
        Side("B", {"lat": _samples_pi("lat", xb)}, 45),
        0.95,
        0.01,
    )
    row = table.rows[0]
    cm = CompareMeans(DescrStatsW(xa), DescrStatsW(xb))
    _, p, _ = cm.ttest_ind(usevar="unequal")
    low, high = cm.tconfint_diff(alpha=0.05, usevar="unequal")
    assert row.p_value == pytest.approx(p, rel=1e-9)
    assert (row.difference_ci_low, row.difference_ci_high) == (
        pytest.approx(low),
        pytest.approx(high),
    )
    assert row.verdict == "a_faster" and row.difference == pytest.approx(xa.mean() - xb.mean())


def test_not_significant_says_how_many_more_rounds(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    xa, xb = rng.normal(10.0, 1.0, 20), rng.normal(10.3, 1.0, 20)
    row = build_table(
        Side("A", {"lat": _samples_pi("lat", xa)}, 20),
        Side("B", {"lat": _samples_pi("lat", xb)}, 20),
        0.95,
        0.01,
    ).rows[0]
    assert row.verdict == "not_significant" and row.more_rounds_a and row.more_rounds_b

    # one sample a round: with that many more rounds each, scipy's Welch test decides at 0.01
    def p_with(more_a: int, more_b: int) -> float:
        return sps.ttest_ind_from_stats(
            xa.mean(),
            xa.std(ddof=1),
            20 + more_a,
            xb.mean(),
            xb.std(ddof=1),
            20 + more_b,
            equal_var=False,
        ).pvalue

    assert p_with(row.more_rounds_a, row.more_rounds_b) < 0.01
    assert p_with(row.more_rounds_a - 2, row.more_rounds_b - 2) >= 0.01


def test_units_of_a_saved_pi_are_converted(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    xa, xb = rng.normal(1.0e-3, 1e-4, 50), rng.normal(1.1e-3, 1e-4, 50)
    in_s = build_table(
        Side("A", {"lat": _samples_pi("lat", xa)}, 50),
        Side("B", {"lat": _samples_pi("lat", xb)}, 50),
        0.95,
        0.01,
    ).rows[0]
    in_ms = build_table(
        Side("A", {"lat": _samples_pi("lat", xa)}, 50),
        Side("B", {"lat": _samples_pi("lat", xb * 1e3, unit="ms")}, 50),
        0.95,
        0.01,
    ).rows[0]
    assert in_ms.p_value == pytest.approx(in_s.p_value) and in_ms.difference == pytest.approx(
        in_s.difference
    )
    other = build_table(
        Side("A", {"x": _pi("x", "s", mean=1.0)}, 5),
        Side("B", {"x": _pi("x", "MiB/s", mean=1.0)}, 5),
        0.95,
        0.01,
    ).rows[0]
    assert other.verdict == "cannot_decide" and "measure different things" in other.reason


def test_a_rate_interval_wider_than_the_rate_cannot_decide(tmp_path: Path) -> None:
    # a WPS fit of a few noisy rounds: 2187 % wide in full, far from B's tight interval
    a = _result(
        tmp_path / "a", [_pi("wps", source="wps", mean=1.0e8, ci_low=3.0e7, ci_high=2.217e9)]
    )
    b = _result(tmp_path / "b", [_pi("wps", source="wps", mean=5.0e9, ci_low=4.9e9, ci_high=5.1e9)])
    row = compare_directories([a, b], None, 0.01).table.rows[0]
    assert row.cis_overlap is False  # the old rule would have ranked B first
    assert row.verdict == "cannot_decide"
    assert row.reason == (
        "A's interval (± 1093.5 %) is wider than the rate itself: it says nothing about where "
        "the rate is"
    )


@pytest.mark.parametrize(
    ("status", "stop", "hidden", "expected"),
    [
        (
            Status.INVALID,
            "session time limit reached",
            ["cpu:host (compute)"],
            "B ({b}) is invalid: hidden bottleneck at cpu:host (compute) (component under test: "
            "block:vda; stopped: session time limit reached); the comparison inherits it: a "
            "difference may be that bottleneck's rather than the workload's",
        ),
        (
            Status.LIMIT_REACHED,
            "session time limit reached",
            None,
            "B ({b}) reached its limit before every CI target (session time limit reached); the "
            "comparison inherits it: its intervals are wider than asked for",
        ),
        (
            Status.INTERRUPTED,
            "interrupted (Ctrl-C)",
            None,
            "B ({b}) was interrupted (interrupted (Ctrl-C)); the comparison inherits it: it rests "
            "on the rounds measured before that",
        ),
    ],
)
def test_a_session_that_is_not_valid_is_named(
    tmp_path: Path, status: Status, stop: str, hidden: list[str] | None, expected: str
) -> None:
    a, b = _fio_pair(tmp_path, status=status, stop=stop, hidden=hidden)
    saved = compare_directories([a, b], None, 0.01)
    assert saved.warnings == [expected.format(b=b)]
    assert f"warning: {expected.format(b=b)}" in saved_lines(saved)


# -- data files with units --------------------------------------------------------------------
def _column(path: Path, header: str, x: np.ndarray) -> str:
    path.write_text(header + "\n" + "\n".join(f"{v:.6f}" for v in x) + "\n")
    return str(path)


def test_files_in_ms_and_us_are_compared_in_one_unit(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    xa, xb = rng.normal(10.0, 1.0, 300), rng.normal(10.5, 1.0, 300)  # milliseconds
    a = _column(tmp_path / "a.csv", "latency (ms)", xa)
    b_ms = _column(tmp_path / "b_ms.csv", "latency (ms)", xb)
    b_us = _column(tmp_path / "b_us.csv", "latency (us)", xb * 1000)
    same = json.loads(CliRunner().invoke(compare, [a, b_ms, "--json"]).output)
    mixed = CliRunner().invoke(compare, [a, b_us, "--json"])
    assert mixed.exit_code == 0, mixed.output
    out = json.loads(mixed.output)
    assert out["unit"] == "ms" and out["unit_note"] == f"{b_us}: converted from us to ms (x 0.001)"
    assert (
        out["difference"]
        == pytest.approx(same["difference"])
        == pytest.approx(xa.mean() - xb.mean(), rel=0.05)
    )
    assert (
        out["p_value"] == pytest.approx(same["p_value"], rel=1e-4)
        and out["verdict"] == same["verdict"] == "a_lower"
    )
    text = CliRunner().invoke(compare, [a, b_us]).output
    assert text.startswith(f"note: {b_us}: converted from us to ms (x 0.001)\n")


def test_a_latency_file_against_a_throughput_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pilot_sys.cli import main

    a = _column(tmp_path / "a.csv", "latency (ms)", np.linspace(9, 11, 50))
    b = _column(tmp_path / "b.csv", "throughput (MiB/s)", np.linspace(90, 110, 50))
    with pytest.raises(SystemExit) as exit_:
        main(["compare", a, b])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"pilot-sys: error: {b}: column 'throughput (MiB/s)' is in MiB/s (data/time) but A's "
        "column 'latency (ms)' is in ms (time): they measure different things and cannot be "
        "compared"
    ]


def test_a_rate_file_whose_interval_is_wider_than_the_rate_cannot_decide(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = _column(tmp_path / "a.csv", "throughput (MiB/s)", rng.lognormal(0.0, 1.5, 60))
    b = _column(tmp_path / "b.csv", "throughput (MiB/s)", rng.normal(10.0, 1.0, 200))
    res = CliRunner().invoke(compare, [a, b, "--pi-type", "harmonic", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    half = (out["a"]["ci_high"] - out["a"]["ci_low"]) / 2 / out["a"]["mean"]
    assert half > 0.5 and out["p_value"] < 1e-10  # Welch alone would call it
    assert out["verdict"] == "cannot_decide" and out["a_faster"] is None
    assert out["reason"] == (
        f"A's interval (± {100 * half:.1f} %) is wider than the rate itself: it says nothing "
        "about where the rate is"
    )
    text = CliRunner().invoke(compare, [a, b, "--pi-type", "harmonic"]).output
    assert f"  verdict: cannot decide: {out['reason']}" in text.splitlines()
