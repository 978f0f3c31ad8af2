"""The result directory under stress (issue 15 items 8, 9, 15, 16, 19): a session still writing
it, gaps between the journal and the round folders, a user's own folder given as -o, a
read-only file system, a full disk. Nothing is lost or silently changed, and every refusal is
one line with its exit code."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.errors import BadInput
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import JOURNAL, Journal, WorkloadSpec
from pilot_sys.session.session import Session
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput
from tests.conftest import run_cli

pytestmark = pytest.mark.live  # sessions collect the host's context; most tests start the CLI

VALUE = ["shuf", "-i", "990-1010", "-n", "1"]


class Units:
    """300 unit readings a round around 1e8, each round at its own level."""

    name = "units"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(11)
        self.n = 0

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="bw", unit="B/s", pi_type=PIType.HARMONIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        self.n += 1
        units = 1e8 * (1 + 0.02 * self.n + 0.01 * self.rng.standard_normal(300))
        return RoundOutput(
            work_amount=work_amount,
            duration=0.01,
            readings={"bw": float(np.mean(units))},
            unit_readings={"bw": units},
        )

    def data_path_args(self) -> list[str]:
        return []


def _units_session(root: Path, rounds: int = 12) -> Path:
    cfg = SessionConfig.from_preset(
        "quick",
        monitor=False,
        work_min=1.0,
        work_max=1.0,
        min_rounds=rounds,
        max_rounds=rounds,
        ci_perc=0.0001,
    )
    wl = Units()
    s = Session.create(
        root, cfg, [WorkloadSpec(name="units", kind="function", pis=wl.pi_specs())], [wl], ["t"]
    )
    s.run()
    return root


# -- item 9: gaps between the journal and the round folders -----------------------------------
def test_a_missing_units_file_is_reported_not_silent(tmp_path: Path) -> None:
    from pilot_sys.report.rebuild import rebuild_noting

    root = _units_session(tmp_path / "res")
    whole, _ = rebuild_noting(root, plots=False)
    (root / "rounds" / "0010" / "units.npz").unlink()
    (root / "rounds" / "0011" / "units.npz").unlink()
    result, notes = rebuild_noting(root, plots=False)
    said = [n for n in notes if "units.npz missing for round(s) 10-11" in n]
    assert said and "bw" in said[0] and "leave those rounds out" in said[0], notes
    assert said[0] in result.notes  # in result.json and report.md too
    assert said[0] in (root / "report.md").read_text()
    pi, before = result.workloads[0].pis["bw"], whole.workloads[0].pis["bw"]
    assert pi.sample_size < before.sample_size  # the mean changed, and the user is told why
    assert result.workloads[0].rounds.total == 12


def test_a_missing_monitor_trace_is_reported(tmp_path: Path) -> None:
    root = _units_session(tmp_path / "res", rounds=3)
    j = Journal.open(root, repair=False)
    lines = (root / JOURNAL).read_text().splitlines()
    rec = json.loads(lines[1])
    rec["monitor"] = {"file": "monitor.json", "samples": 5}
    lines[1] = json.dumps(rec)
    (root / JOURNAL).write_text("\n".join(lines) + "\n")
    j = Journal.open(root, repair=False)
    assert any("monitor.json missing for round(s) 2" in n for n in j.repairs), j.repairs


def test_an_empty_journal_beside_round_folders_is_damage(tmp_path: Path) -> None:
    root = _units_session(tmp_path / "res", rounds=6)
    (root / JOURNAL).write_bytes(b"")
    j = Journal.open(root, repair=False)
    assert j.damage == [
        f"{JOURNAL} is empty, but 6 round folder(s) have no journal line "
        "(rounds/0001, rounds/0002, rounds/0003 and 3 more)"
    ]
    with pytest.raises(BadInput) as err:
        Journal.open(root, repair=True)  # a resume
    assert "--repair" in err.value.problem and "nothing was changed" in err.value.problem
    assert sorted(p.name for p in (root / "rounds").iterdir()) == [f"{i:04d}" for i in range(1, 7)]
    (root / JOURNAL).unlink()
    assert Journal.open(root, repair=False).damage[0].startswith(f"{JOURNAL} is missing, but 6")
    # asked for, the folders are set aside (kept), never deleted
    j = Journal.open(root, repair=True, set_aside=True)
    j.unlock()
    assert sorted(p.name for p in (root / "rounds").iterdir()) == [
        f"{i:04d}.incomplete" for i in range(1, 7)
    ]


def test_the_round_a_kill_left_in_flight_is_not_damage(tmp_path: Path) -> None:
    root = _units_session(tmp_path / "res", rounds=3)
    (root / "rounds" / "0004").mkdir()  # kill -9 during round 4
    assert Journal.open(root, repair=False).damage == []
    j = Journal.open(root, repair=True)
    j.unlock()
    assert (root / "rounds" / "0004.incomplete").is_dir()
    (root / "rounds" / "0004.incomplete").rename(root / "rounds" / "0007")  # not the next round
    assert Journal.open(root, repair=False).damage


def test_a_journal_out_of_sequence_is_damage(tmp_path: Path) -> None:
    root = _units_session(tmp_path / "res", rounds=4)
    lines = (root / JOURNAL).read_text().splitlines()
    (root / JOURNAL).write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    damage = Journal.open(root, repair=False).damage
    assert any("out of sequence" in d and "round(s) 2 have no line" in d for d in damage), damage


@pytest.fixture(scope="module")
def command_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cmd") / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "--parser",
        "lines",
        "--max-rounds",
        "6",
        "--quiet",
        "--",
        *VALUE,
    )
    assert r.returncode in (0, 4), r.stderr
    return out


def test_report_and_resume_refuse_a_damaged_directory(
    command_session: Path, tmp_path: Path
) -> None:
    root = tmp_path / "res"
    shutil.copytree(command_session, root)
    (root / JOURNAL).write_bytes(b"")
    kept = (root / "result.json").read_bytes()
    rep = run_cli("report", str(root))
    assert rep.returncode == 2, rep.stderr
    assert (
        rep.stderr.count("\n") == 1
        and "damaged: rounds.jsonl is empty, but 6 round folder(s)" in rep.stderr
    )
    assert (
        root / "result.json"
    ).read_bytes() == kept  # a good result is not replaced by "0 rounds"
    res = run_cli("run", "--resume", str(root))
    assert res.returncode == 2 and "--repair" in res.stderr and res.stderr.count("\n") == 1, (
        res.stderr
    )
    assert sorted(p.name for p in (root / "rounds").iterdir()) == [f"{i:04d}" for i in range(1, 7)]
    fixed = run_cli(
        "run", "--resume", str(root), "--repair", "--max-rounds", "2", "--no-plots", "--quiet"
    )
    assert fixed.returncode in (0, 4), fixed.stderr
    names = {p.name for p in (root / "rounds").iterdir()}
    assert names == {"0001", "0002"} | {f"{i:04d}.incomplete" for i in range(1, 7)}


# -- item 8: a session still writing the directory --------------------------------------------
def test_report_while_a_session_writes_the_directory(command_session: Path, tmp_path: Path) -> None:
    root = tmp_path / "res"
    shutil.copytree(command_session, root)
    before = {
        name: (root / name).read_bytes() for name in ("result.json", "report.md", "session.json")
    }
    # this process holds the lock, as a running session does
    writer = Journal.open(root, repair=True)
    try:
        rep = run_cli("report", str(root))
        assert rep.returncode == 2, rep.stderr
        assert f"a session is still running in it (pilot-sys pid {os.getpid()})" in rep.stderr
        assert (
            "interrupted" not in rep.stderr + rep.stdout and "killed" not in rep.stderr + rep.stdout
        )
        shown = run_cli("report", "--stdout", str(root))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("# pilot-sys session report")
        assert "still running (pilot-sys pid" in shown.stdout and "killed" not in shown.stdout
        as_json = json.loads(run_cli("report", "--stdout", "--json", str(root)).stdout)
        assert as_json["status"] == "incomplete"
    finally:
        writer.unlock()
    assert {name: (root / name).read_bytes() for name in before} == before  # nothing rewritten


# -- item 15: a folder of the user's own given as -o -------------------------------------------
def test_a_non_empty_folder_that_is_not_a_result_directory_is_refused(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    (mine / "rounds" / "0001").mkdir(parents=True)
    files = {
        "report.md": b"my notes\n",
        "result.json": b'{"mine": true}\n',
        "rounds/0001/data.txt": b"42\n",
    }
    for name, data in files.items():
        (mine / name).write_bytes(data)
    r = run_cli("run", "-o", str(mine), "--no-monitor", "--parser", "none", "--", "true")
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "is not empty and holds no pilot-sys session" in r.stderr
    assert {n: (mine / n).read_bytes() for n in files} == files
    assert sorted(p.name for p in mine.rglob("*")) == [
        "0001",
        "data.txt",
        "report.md",
        "result.json",
        "rounds",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    ok = run_cli(
        "run",
        "-o",
        str(empty),
        "--no-monitor",
        "--no-plots",
        "--parser",
        "none",
        "--max-rounds",
        "1",
        "--",
        "true",
    )
    assert ok.returncode in (0, 4) and (empty / "result.json").is_file(), ok.stderr


# -- items 16 and 19: a read-only file system, a full disk --------------------------------------
@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_read_only_result_directory(command_session: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "16m") as mnt:
        root = mnt / "res"
        shutil.copytree(command_session, root)
        remount = subprocess.run(
            ["mount", "-o", "remount,ro", str(mnt)], capture_output=True, text=True
        )
        assert remount.returncode == 0, remount.stderr
        rep = run_cli("report", str(root))
        assert rep.returncode == 2, rep.stderr
        assert rep.stderr.count("\n") == 1 and "read-only file system" in rep.stderr
        assert f"report --stdout {root}" in rep.stderr and "internal error" not in rep.stderr
        shown = run_cli("report", "--stdout", str(root))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("# pilot-sys session report") and "shuf" in shown.stdout
        res = run_cli("run", "--resume", str(root))
        assert res.returncode == 2, res.stderr
        assert res.stderr.count("\n") == 1 and "read-only file system" in res.stderr


def test_a_full_disk_is_one_message_and_one_exit_code(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "4m") as mnt:
        st = os.statvfs(mnt)
        (mnt / "filler").write_bytes(b"x" * (st.f_bavail * st.f_frsize - 1200 * 1024))
        out = mnt / "res"
        # each round: ~110 KB of output and ~160 KB of unit readings; the 4th or 5th fills the disk
        r = run_cli(
            "run", "-o", str(out), "--no-monitor", "--parser", "lines", "--", "seq", "1", "20000"
        )
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
        assert r.stderr.count("disk full (ENOSPC)") == 1, r.stderr
        result = out / "result.json"
        expected = json.loads(result.read_text())["exit_code"] if result.is_file() else 4
        assert r.returncode == expected == 4, r.stderr
        assert not list(mnt.rglob("*.tmp"))
        assert len((out / JOURNAL).read_text().splitlines()) >= 3  # the rounds before are kept
