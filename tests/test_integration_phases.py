"""Phase behaviour in sessions and comparisons, on real recorded monitor traces.

``tests/fixtures/traces/<workload>/run*.json`` are MonitorTrace recordings of real workloads on
this machine (fio with a job mix, stress-ng pulses, dd write+read, ...). A result directory is
built from them the way a session journals its rounds (one monitor.json per round folder), then
read back by the real `pilot-sys report` and `pilot-sys compare` commands.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, run_cli
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import (
    MONITOR_FILE,
    Invocation,
    Journal,
    MonitorSummary,
    RoundRecord,
    SessionManifest,
    WorkloadSpec,
)
from pilot_sys.session.phase_check import MIN_SAMPLES, check_rounds, evenly_spaced
from pilot_sys.workload.base import PISpec

TRACES = FIXTURES / "traces"
UNITS = 40


def _runs(workload: str) -> list[Path]:
    return sorted((TRACES / workload).glob("run*.json"))


def _result_dir(
    root: Path, traces: list[Path], seed: int = 1, workloads: list[str] | None = None
) -> Path:
    """A finished session's directory whose rounds recorded ``traces`` (and unit readings of a
    PI ``x``). With several ``workloads``, round i belongs to ``workloads[i % len]`` and the
    session is an interleaved comparison, as `pilot-sys compare --run` journals it."""
    names = workloads or ["w"]
    cfg = SessionConfig(monitor=True, min_rounds=3, work_min=1, work_max=1)
    specs = [
        WorkloadSpec(
            name=n, kind="function", pis=[PISpec(name="x", unit="ms", higher_is_better=False)]
        )
        for n in names
    ]
    mode = "compare" if len(names) > 1 else "run"
    journal = Journal.create(root, SessionManifest(config=cfg, workloads=specs, mode=mode))
    rng = np.random.default_rng(seed)
    t0 = time.time()
    for i, src in enumerate(traces, start=1):
        name = names[(i - 1) % len(names)]
        wr = (i - 1) // len(names) + 1
        rdir, rel = journal.round_dir(name, wr, several=len(names) > 1)
        rdir.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, rdir / MONITOR_FILE)
        samples = len(json.loads(src.read_text())["timestamps"])
        # enough unit readings for a CI
        units = 100 + 3 * names.index(name) + rng.normal(size=UNITS)
        journal.write_units(rdir, {"x": units}, {"x": np.linspace(0, 7, UNITS)})
        journal.append(
            RoundRecord(
                index=i,
                workload=name,
                workload_round=wr,
                dir=rel,
                started_at=t0 + 8 * i,
                work_amount=1.0,
                duration=7.0,
                phase="fixed",
                readings={"x": float(units.mean())},
                unit_counts={"x": UNITS},
                monitor=MonitorSummary(file=MONITOR_FILE, samples=samples),
            )
        )
    assert journal.manifest is not None
    journal.manifest.invocations.append(
        Invocation(
            started_at=t0,
            ended_at=t0 + 8 * len(traces) + 8,
            stop_reason="every CI target met",
            status="valid",
            exit_code=0,
        )
    )
    journal.save_manifest()
    journal.unlock()
    return root


def _report(directory: Path) -> dict[str, object]:
    """`pilot-sys report DIR`, as a user runs it."""
    r = run_cli("report", str(directory), "--no-plots")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads((directory / "result.json").read_text())


def _rebuilt(directory: Path) -> dict[str, object]:
    """The same rebuild in this process (setup of the comparison tests: faster)."""
    from pilot_sys.report.rebuild import rebuild

    return json.loads(rebuild(directory, plots=False).model_dump_json())


@pytest.mark.live
def test_a_round_of_another_workload_is_named(tmp_path: Path) -> None:
    """Five fio rounds and one dd round in between: the dd round, and only it, is named."""
    own = _runs("fio_mix")
    out = _result_dir(tmp_path / "res", own[:2] + [_runs("dd_write_read")[0]] + own[2:])
    check = _report(out)["workloads"][0]["phase_check"]  # type: ignore[index]
    assert check["checked_rounds"] == [1, 2, 3, 4, 5, 6]
    assert check["inconsistent_rounds"] == [3]
    assert (
        check["scores"][2]
        < check["threshold"]
        <= min(s for i, s in enumerate(check["scores"]) if i != 2)
    )
    assert "round 3 (score" in check["note"]
    report = (out / "report.md").read_text()
    assert (
        "Phase behaviour of the rounds" in report
        and "**differs**" in report
        and "round 3 (score" in report
    )


def test_rounds_of_one_workload_are_consistent(tmp_path: Path) -> None:
    out = _result_dir(
        tmp_path / "res",
        _runs("stress_pulses")[:2] + [_runs("fio_mix")[0]] + _runs("stress_pulses")[2:],
    )
    check = _rebuilt(out)["workloads"][0]["phase_check"]  # type: ignore[index]
    assert check["inconsistent_rounds"] == [3]  # the fio round among stress-ng pulses
    same = _result_dir(tmp_path / "same", _runs("fio_mix"))
    check = _rebuilt(same)["workloads"][0]["phase_check"]  # type: ignore[index]
    assert check["checked_rounds"] == [1, 2, 3, 4, 5] and check["inconsistent_rounds"] == []
    assert "the same phase behaviour in every one" in check["note"]


def test_rounds_too_short_for_a_signature_are_not_judged(tmp_path: Path) -> None:
    """A quick session's rounds hold a handful of samples: a note, no verdict, no failure."""
    out = _result_dir(tmp_path / "res", _runs("fio_mix"))
    journal = Journal.open(out, repair=False)
    for (
        rec
    ) in journal.records:  # cut each saved trace to 6 samples, as a 0.6 s round at 10 Hz records
        path = out / rec.dir / MONITOR_FILE
        data = json.loads(path.read_text())
        data["timestamps"] = data["timestamps"][:6]
        data["series"] = {k: v[:6] for k, v in data["series"].items()}
        path.write_text(json.dumps(data))
    lines = (out / "rounds.jsonl").read_text().splitlines()
    (out / "rounds.jsonl").write_text(
        "".join(
            json.dumps({**json.loads(line), "monitor": {"file": MONITOR_FILE, "samples": 6}}) + "\n"
            for line in lines
        )
    )
    check = _rebuilt(out)["workloads"][0]["phase_check"]  # type: ignore[index]
    assert check["inconsistent_rounds"] == [] and check["checked_rounds"] == []
    assert check["note"].startswith(
        f"not checked: 0 of 5 monitored round(s) have at least {MIN_SAMPLES} samples"
    )


def test_a_failing_detector_becomes_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pilot_sys.monitor.phase_traces as phases

    def broken(*args: object, **kwargs: object) -> None:
        raise FloatingPointError("synthetic failure")

    monkeypatch.setattr(phases, "consistent_rounds", broken)
    out = _result_dir(tmp_path / "res", _runs("fio_mix"))
    journal = Journal.open(out, repair=False)
    check = check_rounds(journal, journal.records)
    assert check is not None and check.inconsistent_rounds == []
    assert check.note == "phase check failed: FloatingPointError: synthetic failure"


def test_sampling_keeps_the_ends_and_the_limit() -> None:
    picked = evenly_spaced(list(range(1, 201)), 40)
    assert len(picked) == 40 and picked[0] == 1 and picked[-1] == 200
    assert np.all(np.diff(picked) >= 4)  # spread over the session, not its first rounds
    assert evenly_spaced([1, 2, 3], 40) == [1, 2, 3]


@pytest.mark.live
def test_compare_notes_different_phase_behaviour(tmp_path: Path) -> None:
    fio = _result_dir(tmp_path / "fio", _runs("fio_mix") * 2, seed=1)
    pulses = _result_dir(tmp_path / "pulses", _runs("stress_pulses") * 2, seed=2)
    _rebuilt(fio)
    _rebuilt(pulses)
    r = run_cli("compare", str(fio), str(pulses), "--json")
    assert r.returncode == 0, r.stderr
    entries = json.loads(r.stdout)["phase_behaviour"]
    assert len(entries) == 1 and entries[0]["differs"] is True
    assert entries[0]["a"] == str(fio) and entries[0]["b"] == str(pulses)
    assert "phase behaviour differs" in entries[0]["note"]
    text = run_cli("compare", str(fio), str(pulses))
    assert text.returncode == 0, text.stderr
    assert "phase behaviour: " in text.stdout and "phase behaviour differs" in text.stdout


@pytest.mark.live
def test_compare_of_two_recordings_of_one_workload_has_no_note(tmp_path: Path) -> None:
    runs = _runs("fio_mix")
    a = _result_dir(tmp_path / "a", runs[:3] * 3, seed=3)
    b = _result_dir(tmp_path / "b", runs[3:] * 4, seed=4)
    _rebuilt(a)
    _rebuilt(b)
    r = run_cli("compare", str(a), str(b), "--json")
    assert r.returncode == 0, r.stderr
    entries = json.loads(r.stdout)["phase_behaviour"]
    assert len(entries) == 1 and entries[0]["differs"] is False


@pytest.mark.live
def test_an_interleaved_comparison_notes_different_phase_behaviour(tmp_path: Path) -> None:
    """`compare --run` journals both workloads in one session; its result carries the note."""
    fio, pulses = _runs("fio_mix") * 2, _runs("stress_pulses") * 2
    out = _result_dir(
        tmp_path / "res",
        [t for pair in zip(fio, pulses, strict=True) for t in pair],
        workloads=["fio", "pulses"],
    )
    result = _report(out)
    entries = result["comparison"]["phase_behaviour"]  # type: ignore[index]
    assert [(e["a"], e["b"]) for e in entries] == [
        ("fio", "pulses")
    ]  # the ranking's adjacent pair, best first
    assert entries[0]["differs"] is True and entries[0]["note"].startswith(
        "fio (A) vs pulses (B): phase behaviour differs"
    )
    assert "Phase behaviour: **differs**: fio (A) vs pulses (B)" in (out / "report.md").read_text()
