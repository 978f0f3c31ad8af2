"""The workload's own process series in a session's round traces, and the phase check's choice
between them and the host-wide series.

The session test runs the real `pilot-sys run` on stress-ng; the probe tests start real child
processes under ``RoundMonitoring`` in this process; the fallback tests use the traces recorded
on this machine (tests/fixtures/traces), with their ``process:workload/*`` series removed where
a trace without them is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, require_tool, run_cli
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.monitor.trace_io import is_named_utilization, metric_matrix
from pilot_sys.session.journal import MONITOR_FILE
from pilot_sys.session.monitoring import WORKLOAD_COMPONENT, RoundMonitoring, RoundProcessesProbe
from pilot_sys.session.phase_check import HOST, WORKLOAD, check_traces, compare_traces
from pilot_sys.stats.phases import consistent_rounds

TRACES = FIXTURES / "traces"
WORKLOAD_WORDS = "the workload's own CPU and I/O series (process:*)"
RATE_HZ = 50.0


def _trace(workload: str, run: int) -> MonitorTrace:
    return MonitorTrace.model_validate_json((TRACES / workload / f"run{run}.json").read_bytes())


def _without_processes(trace: MonitorTrace) -> MonitorTrace:
    """The trace as a session records it for an in-process workload: no process series."""
    return trace.model_copy(
        update={"series": {k: v for k, v in trace.series.items() if not k.startswith("process:")}}
    )


# -- the phase check's choice of series ------------------------------------------------------------
def test_fallback_to_host_wide_series_without_process_series() -> None:
    """Recorded fio rounds without their process series: matched on the host-wide utilizations,
    exactly as the detector matches those series on their own, and the note says so."""
    traces = [(i + 1, _without_processes(_trace("fio_mix", i))) for i in range(5)]
    check = check_traces(traces)
    assert "on host-wide utilizations (the traces have no per-process series)" in check.note
    assert check.series == HOST
    # the same numbers as the detector on explicit host-wide utilization matrices
    keys = [k for k in traces[0][1].series if is_named_utilization(k)]
    assert keys and not any(k.startswith("process:") for k in keys)
    expected = consistent_rounds([metric_matrix(t, keys).values for _, t in traces])
    assert check.scores == [c.median_score for c in expected]
    # on this shared host the host-wide series move with other tenants: four of five genuine
    # fio rounds look inconsistent there, none on the workload's own series (below)
    assert check.inconsistent_rounds == [1, 2, 4, 5]

    own = check_traces([(i + 1, _trace("fio_mix", i)) for i in range(5)])
    assert WORKLOAD_WORDS in own.note and own.inconsistent_rounds == []
    assert own.series == WORKLOAD
    assert own.scores != check.scores


def test_one_trace_without_process_series_makes_all_host_wide() -> None:
    """Signatures are compared series by series: one round without process series (an older
    recording, a round too short to see its process) puts every round on host-wide series."""
    full = [(i + 1, _trace("fio_mix", i)) for i in range(5)]
    mixed = full[:2] + [(3, _without_processes(full[2][1]))] + full[3:]
    check = check_traces(mixed)
    assert "on host-wide utilizations (only 4 of 5 traces have per-process series)" in check.note
    stripped = check_traces([(i, _without_processes(t)) for i, t in full])
    assert (
        check.scores == stripped.scores
        and check.inconsistent_rounds == stripped.inconsistent_rounds
    )


def test_a_comparison_uses_one_kind_of_series_for_both_sides() -> None:
    fio = [_trace("fio_mix", i) for i in range(3)]
    pulses = [_trace("stress_pulses", i) for i in range(3)]
    both = compare_traces("fio", fio, "pulses", pulses)
    assert both.differs is True and both.note.endswith(f"(on {WORKLOAD_WORDS})")
    one = compare_traces("fio", fio, "pulses", [_without_processes(t) for t in pulses])
    assert one.note.endswith(
        "(on host-wide utilizations (only 3 of 6 traces have per-process series))"
    )


def test_metric_matrices_are_matched_as_given() -> None:
    """The API's matrix input has no series names: no choice is made or claimed."""
    rng = np.random.default_rng(5)
    runs = [
        (i, np.clip(np.repeat([0.1, 0.9, 0.2], 15)[:, None] + rng.normal(0, 0.01, (45, 1)), 0, 1))
        for i in range(1, 4)
    ]
    check = check_traces(runs)
    assert check.note == "3 rounds checked: the same phase behaviour in every one"
    assert check.series is None


# -- the round's process tree in RoundMonitoring ---------------------------------------------------
@pytest.fixture()
def monitoring(tmp_path: Path) -> RoundMonitoring:
    mon = RoundMonitoring(RATE_HZ, 0.8, None, [], tmp_path)
    if not mon.active:
        pytest.skip(f"monitoring is not available here: {mon.error}")
    return mon


def _round(mon: RoundMonitoring, round_dir: Path, argv: list[str] | None) -> MonitorTrace:
    mon.start()
    if argv is not None:
        subprocess.run(argv, check=True)
    else:
        sum(range(2_000_000))  # an in-process round
    summary = mon.stop(round_dir)
    assert summary is not None and summary.file == MONITOR_FILE and summary.error is None
    return MonitorTrace.model_validate_json((round_dir / MONITOR_FILE).read_bytes())


def _total(trace: MonitorTrace, metric: str) -> float:
    """The integral of a rate series over the round (intervals that could not be measured
    skipped)."""
    rate = np.array(
        [np.nan if v is None else v for v in trace.series[f"{WORKLOAD_COMPONENT}/{metric}"]]
    )
    dt = np.diff(np.asarray(trace.timestamps), prepend=np.nan)
    ok = np.isfinite(rate) & np.isfinite(dt)
    return float(np.sum(rate[ok] * dt[ok]))


@pytest.mark.live
def test_a_command_round_records_its_own_process_tree(
    monitoring: RoundMonitoring, tmp_path: Path
) -> None:
    """A child that writes 4 MiB in 64 KiB write() calls, then forks a grandchild that burns
    CPU for 0.4 s: the bytes written add up exactly (wchar counts write() calls), and the CPU of
    the grandchild, reaped by the child, is the workload's too."""
    size = 4 << 20
    out = tmp_path / "written.bin"
    script = (
        "import os, subprocess, sys, time\n"
        f"fd = os.open({str(out)!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
        f"for _ in range({size // 65536}): os.write(fd, bytes(65536))\n"
        "os.close(fd)\n"
        "subprocess.run([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
        "while time.process_time() - t < 0.4: pass'])\n"
        "time.sleep(0.2)\n"  # nothing left to count in the interval of its own reaping
    )
    trace = _round(monitoring, tmp_path / "r1", [sys.executable, "-c", script])
    series = trace.series
    assert (
        f"{WORKLOAD_COMPONENT}/cpu_cores" in series
        and f"{WORKLOAD_COMPONENT}/write_bytes_per_s" in series
    )
    assert (
        max(v for v in series[f"{WORKLOAD_COMPONENT}/processes"] if v is not None) == 2
    )  # child + grandchild
    written = _total(trace, "wchar_bytes_per_s")
    assert (
        size - 1 <= written <= size + 64 * 1024
    )  # (rates x intervals: float rounding); startup writes are few
    cpu = _total(trace, "cpu_cores")
    assert 0.4 <= cpu <= 0.4 + 0.5  # the busy loop, plus two interpreters' startup


@pytest.mark.live
def test_children_from_before_the_round_are_not_its_processes(
    monitoring: RoundMonitoring, tmp_path: Path
) -> None:
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        trace = _round(monitoring, tmp_path / "r1", ["sleep", "0.3"])
    finally:
        bystander.kill()
        bystander.wait()
    procs = [v for v in trace.series[f"{WORKLOAD_COMPONENT}/processes"] if v is not None]
    assert max(procs) == 1  # sleep only, not the python started before the round


@pytest.mark.live
def test_an_in_process_round_has_no_process_series(
    monitoring: RoundMonitoring, tmp_path: Path
) -> None:
    trace = _round(monitoring, tmp_path / "r1", None)
    assert not any(k.startswith("process:") for k in trace.series)
    assert any(
        n.startswith(f"{WORKLOAD_COMPONENT}: the round started no process") for n in trace.notes
    )
    assert "cpu:host/util_compute" in trace.series  # the host-wide series are all still there


@pytest.mark.live
def test_an_in_process_round_keeps_its_threads_cpu(
    monitoring: RoundMonitoring, tmp_path: Path
) -> None:
    """The round's own thread computing for about half a second: its CPU is the workload's
    (``thread:workload/cpu_cores``), near one core, matching the thread's own clock."""
    from pilot_sys.session.monitoring import ROUND_THREAD_CORES

    monitoring.start()
    began = time.thread_time()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        sum(range(10_000))
    spent = time.thread_time() - began
    summary = monitoring.stop(tmp_path / "r1")
    assert summary is not None and summary.error is None
    trace = MonitorTrace.model_validate_json((tmp_path / "r1" / MONITOR_FILE).read_bytes())
    assert not any(k.startswith("process:") for k in trace.series)
    cores = np.array([v for v in trace.series[ROUND_THREAD_CORES] if v is not None])
    step = np.diff(trace.timestamps)
    total = float(np.nansum(np.array(trace.series[ROUND_THREAD_CORES][1:], float) * step))
    assert cores.max() > 0.5  # a busy thread: most of a core in its busiest interval
    # the integral of the series is the thread's CPU time within a tick either side (USER_HZ)
    assert total == pytest.approx(spent, abs=2.5 / RATE_HZ + 0.05)


@pytest.mark.live
def test_an_idle_tick_reads_one_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a child (an in-process round) the probe costs one pread per tick, no open."""
    from pilot_sys.monitor.probe import ProbeContext

    probe = RoundProcessesProbe(
        ProbeContext(), Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    )
    calls: list[str] = []
    real_pread, real_open = os.pread, os.open
    monkeypatch.setattr(os, "pread", lambda *a: calls.append("pread") or real_pread(*a))
    monkeypatch.setattr(os, "open", lambda *a, **k: calls.append("open") or real_open(*a, **k))
    try:
        assert probe.read() == (b"0",) * len(probe.columns)
    finally:
        monkeypatch.undo()
        probe.close()
    assert calls == ["pread"]


# -- a real session --------------------------------------------------------------------------------
@pytest.mark.serial  # how busy stress-ng's worker was depends on what else ran
@pytest.mark.slow
@pytest.mark.live
def test_a_stress_ng_session_checks_phases_on_its_own_processes(tmp_path: Path) -> None:
    """`pilot-sys run` of stress-ng at 50 Hz, rounds of ~0.6-1.3 s on a quiet host (30+ samples
    each, more when the host is busy: 2000 bogo ops took 0.9 s idle here): every round trace holds
    the workload's own series, and the phase check says it matched on them."""
    require_tool("stress-ng")
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "--preset",
        "quick",
        "-w",
        "1500,2500",
        "--min-round-seconds",
        "0.3",
        "--max-round-seconds",
        "1.5",
        "--sample-rate",
        str(RATE_HZ),
        "--min-rounds",
        "3",
        "--max-rounds",
        "4",
        "--no-plots",
        "--json",
        "-o",
        str(out),
        "--",
        "stress-ng",
        "--cpu",
        "1",
        "--cpu-ops",
        "%WORK_AMOUNT%",
        "--quiet",
        timeout=120,
    )
    assert r.returncode in (0, 3, 4), (
        r.stderr
    )  # valid, invalid (a busy shared host) or out of rounds
    assert "Traceback" not in r.stderr
    result = json.loads(r.stdout)
    rounds = [
        json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines() if line.strip()
    ]
    assert len(rounds) == 4
    for rec in rounds:
        trace = json.loads((out / rec["dir"] / MONITOR_FILE).read_text())
        cores = [v for v in trace["series"][f"{WORKLOAD_COMPONENT}/cpu_cores"] if v is not None]
        # a sample every 20 ms through the round (the first and the reaping interval have none);
        # stress-ng's CPU worker is busy for most of it (the host's other tenants share the core)
        assert len(cores) >= max(5, 0.6 * rec["duration"] * RATE_HZ), (len(cores), rec["duration"])
        assert float(np.mean(cores)) > 0.2
        assert (
            max(trace["series"][f"{WORKLOAD_COMPONENT}/processes"]) >= 2
        )  # stress-ng and its worker
    check = result["workloads"][0]["phase_check"]
    assert len(check["checked_rounds"]) >= 3, check["note"]
    assert f"checked on {WORKLOAD_WORDS}" in check["note"]
    assert check["series"] == WORKLOAD
    report = (out / "report.md").read_text()
    assert f"checked on {WORKLOAD_WORDS}" in report
