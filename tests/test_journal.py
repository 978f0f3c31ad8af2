"""The result directory keeps every round, whatever happens to the process or the disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.errors import BadInput
from pilot_sys.session import journal as journal_module
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import (
    JOURNAL,
    Journal,
    JournalWriteFailed,
    RoundRecord,
    SessionManifest,
    WorkloadSpec,
)


def _journal(tmp_path: Path) -> Journal:
    manifest = SessionManifest(
        config=SessionConfig(monitor=False), workloads=[WorkloadSpec(name="w", kind="function")]
    )
    return Journal.create(tmp_path / "res", manifest)


def _record(i: int) -> RoundRecord:
    return RoundRecord(
        index=i,
        workload="w",
        workload_round=i,
        dir=f"rounds/{i:04d}",
        started_at=1000.0 + i,
        work_amount=float(i),
        duration=0.5,
        phase="fixed",
        readings={"x": 10.0 + i},
    )


def test_rounds_and_unit_readings_round_trip(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    for i in (1, 2, 3):
        rdir, rel = j.round_dir("w", i, several=False)
        assert rel == f"rounds/{i:04d}"
        units = {"x": np.arange(5, dtype=float) * i}
        j.write_units(rdir, units, {"x": np.linspace(0, 1, 5)})
        rec = _record(i)
        rec.unit_counts = {"x": 5}
        j.append(rec)
    j.unlock()
    again = Journal.open(j.root)
    assert [r.index for r in again.records] == [1, 2, 3]
    assert again.records[1].readings == {"x": 12.0}
    values, times = again.load_units(again.records[2])
    np.testing.assert_array_equal(values["x"], np.arange(5) * 3.0)
    np.testing.assert_array_equal(times["x"], np.linspace(0, 1, 5))
    assert again.repairs == []
    # one JSON object per line, nothing else
    lines = (j.root / JOURNAL).read_text().splitlines()
    assert [json.loads(line)["index"] for line in lines] == [1, 2, 3]


def test_a_torn_last_line_is_cut_and_kept_aside(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    j.append(_record(1))
    j.append(_record(2))
    with open(j.root / JOURNAL, "ab") as fh:  # what a kill -9 in the middle of a write leaves
        fh.write(b'{"index":3,"workload":"w","workl')
    j.unlock()
    # `pilot-sys report` reads without changing anything
    reread = Journal.open(j.root, repair=False)
    assert [r.index for r in reread.records] == [1, 2]
    assert (j.root / JOURNAL).read_bytes().endswith(b'"workl')
    repaired = Journal.open(j.root)  # resume repairs
    assert [r.index for r in repaired.records] == [1, 2]
    assert (j.root / JOURNAL).read_bytes().endswith(b"}\n")
    assert b'"workl' in (j.root / (JOURNAL + ".torn")).read_bytes()
    assert any("torn" in note for note in repaired.repairs)
    repaired.append(_record(3))
    repaired.unlock()
    assert [r.index for r in Journal.open(j.root).records] == [1, 2, 3]


def test_a_round_folder_without_a_journal_line_is_set_aside(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    j.append(_record(1))
    (j.root / "rounds" / "0001").mkdir(parents=True)
    # the round in flight when pilot-sys was killed
    (j.root / "rounds" / "0002").mkdir(parents=True)
    (j.root / "rounds" / "0002" / "stdout.txt").write_text("partial")
    j.unlock()
    reopened = Journal.open(j.root)
    assert (j.root / "rounds" / "0002.incomplete" / "stdout.txt").read_text() == "partial"
    assert (j.root / "rounds" / "0001").is_dir()
    assert any("0002" in note for note in reopened.repairs)


def test_a_damaged_line_in_the_middle_names_file_and_line(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    j.append(_record(1))
    with open(j.root / JOURNAL, "ab") as fh:
        fh.write(b'{"index": "not a number"}\n')
    j.append(_record(3))
    j.unlock()
    with pytest.raises(BadInput) as err:
        Journal.open(j.root)
    assert err.value.where == f"{j.root / JOURNAL}:2"


def test_disk_full_keeps_the_journal_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real ENOSPC from the kernel: /dev/full refuses every write."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    j = _journal(tmp_path)
    j.append(_record(1))
    kept = (j.root / JOURNAL).read_bytes()
    (j.root / JOURNAL).rename(j.root / "kept.jsonl")
    real_open = journal_module.open_nofollow  # the journal refuses links: point the open there
    monkeypatch.setattr(
        journal_module,
        "open_nofollow",
        lambda path, flags, mode=0o644: real_open(Path("/dev/full"), flags & ~os.O_CREAT, mode),
    )
    with pytest.raises(JournalWriteFailed) as err:
        j.append(_record(2))
    message = str(err.value)
    assert "disk full (ENOSPC)" in message and "--resume" in message and "1 round(s)" in message
    assert [r.index for r in j.records] == [1]  # the failed round is not counted
    assert (j.root / "kept.jsonl").read_bytes() == kept


def test_create_refuses_a_directory_that_holds_a_session(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    manifest = SessionManifest(config=SessionConfig(), workloads=[])
    with pytest.raises(BadInput) as err:
        Journal.create(j.root, manifest)
    assert "--resume" in err.value.problem
    with pytest.raises(BadInput):
        Journal.open(tmp_path / "nothing-here")


def test_one_writer_per_directory(tmp_path: Path) -> None:
    j = _journal(tmp_path)
    with pytest.raises(BadInput) as err:
        Journal.open(j.root)  # e.g. a --resume while the first pilot-sys is still running
    assert f"another pilot-sys (pid {os.getpid()})" in err.value.problem
    assert Journal.open(j.root, repair=False).manifest is not None  # readers are welcome
    j.unlock()
    Journal.open(j.root).unlock()


@pytest.mark.live
def test_a_session_stops_cleanly_when_the_disk_fills(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal starts refusing writes (ENOSPC) in the middle of a session."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    from pilot_sys.session.session import Session
    from pilot_sys.workload.base import PISpec, RoundOutput

    root = tmp_path / "res"

    class FillsTheDisk:
        name = "w"
        calls = 0

        def pi_specs(self) -> list[PISpec]:
            return [PISpec(name="x", unit="s")]

        def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
            self.calls += 1
            if self.calls == 3:  # from round 3 on, every write to the journal fails
                (root / JOURNAL).rename(root / "kept.jsonl")
                real_open = journal_module.open_nofollow  # the journal refuses links
                monkeypatch.setattr(
                    journal_module,
                    "open_nofollow",
                    lambda path, flags, mode=0o644: real_open(
                        Path("/dev/full"), flags & ~os.O_CREAT, mode
                    ),
                )
            return RoundOutput(
                work_amount=1.0, duration=0.01, readings={"x": 1.0 + 0.01 * self.calls}
            )

        def data_path_args(self) -> list[str]:
            return []

    wl = FillsTheDisk()
    cfg = SessionConfig.from_preset(
        "normal", monitor=False, work_min=1.0, work_max=1.0, max_rounds=10
    )
    s = Session.create(
        root, cfg, [WorkloadSpec(name="w", kind="function", pis=wl.pi_specs())], [wl], ["t"]
    )
    with pytest.raises(JournalWriteFailed) as err:
        s.run()
    assert "disk full (ENOSPC)" in str(err.value) and "--resume" in str(err.value)
    assert wl.calls == 3  # nothing more was run once the journal could not keep it
    kept = [json.loads(line) for line in (root / "kept.jsonl").read_text().splitlines()]
    assert [r["index"] for r in kept] == [1, 2]
