"""Hostile result directories (issue 24 items 4, 5, 6, 8): every file of a session edited,
repeated, swapped, cut, linked elsewhere or made endless.

Each case ends one of two ways: the session is read (and repaired only when asked, and only
where the repair is certain), with a note naming the file; or it is refused in one line naming
the round, the line or the file, with nothing changed, inside the directory or outside it.
The directories are written by tests/session_dirs.py: no process runs, nothing of this host
is read."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pilot_sys.errors import BadInput
from pilot_sys.report.rebuild import rebuild_noting
from pilot_sys.session.journal import JOURNAL, Journal
from tests.session_dirs import make_session

ROUNDS = 6


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_session(tmp_path_factory.mktemp("hostile") / "s", rounds=ROUNDS)


@pytest.fixture
def session(pristine: Path, tmp_path: Path) -> Path:
    root = tmp_path / "s"
    shutil.copytree(pristine, root, symlinks=True)
    return root


def _lines(root: Path) -> list[str]:
    return (root / JOURNAL).read_text().splitlines()


def _write(root: Path, lines: list[str]) -> None:
    (root / JOURNAL).write_text("\n".join(lines) + "\n")


def _repair(root: Path) -> Journal:
    j = Journal.open(root, repair=True, set_aside=True)
    j.unlock()
    return j


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root`` (links by target, files by content): to show nothing changed."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            elif path.is_file():
                out[rel] = path.read_bytes()
            else:
                out[rel] = "dir"
    return out


# -- item 5: the journal's lines repeated or out of order -------------------------------------
@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda ls: ls + [ls[3]], "line 7 repeats round 4 (line 4) exactly"),
        (lambda ls: ls[:3] + [ls[2]] + ls[3:], "line 4 repeats round 3 (line 3) exactly"),
        (lambda ls: [ls[0], ls[2], ls[1], *ls[3:]], "line 2 holds round 3 where round 2 was"),
        (lambda ls: ls[::-1], "line 1 holds round 6 where round 1 was"),
    ],
)
def test_repeated_or_swapped_lines_are_named_then_repaired(
    session: Path, edit: object, said: str
) -> None:
    before = _lines(session)
    _write(session, edit(before))  # type: ignore[operator]
    with pytest.raises(BadInput) as err:
        rebuild_noting(session, plots=False)
    assert said in err.value.problem and "--repair" in err.value.problem
    j = _repair(session)
    assert [r.index for r in j.records] == list(range(1, ROUNDS + 1))
    assert [r.dir for r in j.records] == [f"rounds/{i:04d}" for i in range(1, ROUNDS + 1)]
    assert _lines(session) == before  # the journal as the session wrote it
    assert any(p.name.startswith(f"{JOURNAL}.before-repair") for p in session.iterdir())
    result, _ = rebuild_noting(session, plots=False)
    assert result.workloads[0].rounds.total == ROUNDS


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda ls: ls[:2] + ls[3:], "round(s) 3 have no line"),
        (
            lambda ls: ls + [ls[3].replace('"duration":', '"duration":1e-3,"x":')],
            "lines 4 and 7 both hold round 4, differently",
        ),
    ],
)
def test_what_a_repair_cannot_know_is_refused_and_left_alone(
    session: Path, edit: object, said: str
) -> None:
    _write(session, edit(_lines(session)))  # type: ignore[operator]
    before = _tree(session)
    for attempt in (lambda: rebuild_noting(session, plots=False), lambda: _repair(session)):
        with pytest.raises(BadInput) as err:
            attempt()
        assert said in err.value.problem
    assert _tree(session) == before


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["repeat", "swap", "drop"]), st.integers(0, 99), st.integers(0, 99)
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_repeats_swaps_and_drops_are_repaired_exactly_or_refused(
    pristine: Path, tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, int, int]]
) -> None:
    root = tmp_path_factory.mktemp("prop") / "s"
    shutil.copytree(pristine, root)
    lines = _lines(root)
    for op, a, b in edits:
        a, b = a % len(lines), b % len(lines)
        if op == "repeat":
            lines.insert(b, lines[a])
        elif op == "swap":
            lines[a], lines[b] = lines[b], lines[a]
        elif len(lines) > 1:
            del lines[a]
    _write(root, lines)
    kept = sorted({json.loads(line)["index"] for line in lines})
    # only repeats and order changed (dropped last rounds read as a session killed after
    # round len(kept): their folders are set aside, as after any kill)
    certain = kept == list(range(1, len(kept) + 1))
    before = _tree(root)
    try:
        j = _repair(root)
    except BadInput as err:
        assert not certain, err
        assert "line" in err.problem or "round(s)" in err.problem
        assert _tree(root) == before
        return
    assert certain
    assert [(r.index, r.dir) for r in j.records] == [(i, f"rounds/{i:04d}") for i in kept]


# -- item 4: links out of the session and folders outside rounds/ -----------------------------
def test_a_rounds_folder_linked_to_another_session_is_never_touched(
    session: Path, tmp_path: Path, pristine: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(pristine, other)
    (session / "rounds" / f"{ROUNDS + 1:04d}").mkdir()  # what a repair would set aside
    shutil.rmtree(session / "rounds")
    (session / "rounds").symlink_to(other / "rounds")
    (other / "rounds" / "0099").mkdir()  # a folder the other session's journal does not know
    theirs = _tree(other)
    for attempt in (lambda: rebuild_noting(session, plots=False), lambda: _repair(session)):
        with pytest.raises(BadInput) as err:
            attempt()
        assert "rounds is a symbolic link" in err.value.problem
    assert _tree(other) == theirs


@pytest.mark.parametrize("name", ["rounds/0003", "rounds.jsonl", "plots"])
def test_a_linked_session_file_or_round_folder_is_refused(
    session: Path, tmp_path: Path, name: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = session / name
    if target.is_dir():
        shutil.copytree(target, elsewhere / "x")
        shutil.rmtree(target)
    elif target.exists():
        (elsewhere / "x").write_bytes(target.read_bytes())
        target.unlink()
    else:
        (elsewhere / "x").mkdir()
    target.symlink_to(elsewhere / "x")
    outside = _tree(elsewhere)
    with pytest.raises(BadInput) as err:
        _repair(session)
    assert f"{name} is a symbolic link" in err.value.problem
    assert _tree(elsewhere) == outside


@pytest.mark.parametrize("folder", ["../../etc", "/etc", "rounds/../..", "rounds/0001/../..", "x"])
def test_a_line_naming_a_folder_outside_rounds_is_refused(session: Path, folder: str) -> None:
    lines = _lines(session)
    record = json.loads(lines[1])
    record["dir"] = folder
    lines[1] = json.dumps(record)
    _write(session, lines)
    with pytest.raises(BadInput) as err:
        rebuild_noting(session, plots=False)
    assert "line 2 names round folder" in err.value.problem


# -- item 6: a round's units.npz cut, garbled or holding what no measurement gives ------------
def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _replace(path: Path, **arrays: np.ndarray) -> None:
    with np.load(path) as z:
        kept = {k: z[k] for k in z.files}
    kept.update(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **kept)


def _with_value(value: float) -> object:
    def put(path: Path) -> None:
        with np.load(path) as z:
            bw = z["bw"].copy()
        bw[7] = value
        _replace(path, bw=bw)

    return put


UNITS_DAMAGE = {
    "cut in half": (_cut, "unreadable (BadZipFile"),
    "garbage": (lambda p: p.write_bytes(os.urandom(3000)), "unreadable"),
    "empty": (lambda p: p.write_bytes(b""), "unreadable"),
    "nan": (_with_value(float("nan")), "holds nan as reading 8 of 'bw'"),
    "negative rate": (_with_value(-3.0), "holds -3 as reading 8 of 'bw'"),
    "zero rate": (_with_value(0.0), "holds 0 as reading 8 of 'bw'"),
    "1e300": (_with_value(1e300), "holds 1e+300 as reading 8 of 'bw'"),
    "2-D": (lambda p: _replace(p, bw=np.ones((3, 3))), "not numbers"),
    "text": (lambda p: _replace(p, bw=np.array(["a", "b"])), "not numbers"),
    "objects": (
        lambda p: np.savez(open(p, "wb"), bw=np.array([{"a": 1}], dtype=object)),  # noqa: SIM115
        "unreadable",
    ),
}


@pytest.mark.parametrize("damage", list(UNITS_DAMAGE))
def test_a_damaged_units_file_costs_its_round_only(session: Path, damage: str) -> None:
    whole, _ = rebuild_noting(session, plots=False)
    spoil, said = UNITS_DAMAGE[damage]
    spoil(session / "rounds" / "0004" / "units.npz")  # type: ignore[operator]
    result, notes = rebuild_noting(session, plots=False)
    note = [n for n in notes if n.startswith("rounds/0004/units.npz")]
    assert note and said in note[0] and "round 4's unit readings are not used" in note[0], notes
    assert result.workloads[0].rounds.total == whole.workloads[0].rounds.total
    assert result.workloads[0].pis["bw"].sample_size < whole.workloads[0].pis["bw"].sample_size
    j = _repair(session)  # a resume reads it the same way, and goes on
    assert len(j.records) == ROUNDS


# -- item 8: the files' sizes are bounded while they are read ---------------------------------
@pytest.mark.parametrize(
    ("name", "variable"),
    [
        ("rounds.jsonl", "PILOT_SYS_LIMIT_JOURNAL_BYTES"),
        ("session.json", "PILOT_SYS_LIMIT_JSON_BYTES"),
    ],
)
def test_a_session_file_over_its_limit_is_refused_naming_the_limit(
    session: Path, monkeypatch: pytest.MonkeyPatch, name: str, variable: str
) -> None:
    size = (session / name).stat().st_size
    monkeypatch.setenv(variable, str(size - 1))
    with pytest.raises(BadInput) as err:
        rebuild_noting(session, plots=False)
    assert err.value.where.endswith(name) and variable in err.value.problem
    monkeypatch.setenv(variable, str(size))
    rebuild_noting(session, plots=False)


def test_a_units_file_over_its_limit_costs_its_round(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PILOT_SYS_LIMIT_UNITS_BYTES", "100")
    _, notes = rebuild_noting(session, plots=False)
    assert any("PILOT_SYS_LIMIT_UNITS_BYTES" in n for n in notes), notes


def test_a_monitor_trace_over_its_limit_is_left_out(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = Journal.open(session, repair=False)
    assert j.load_monitor(j.records[0]) is not None
    monkeypatch.setenv("PILOT_SYS_LIMIT_TRACE_BYTES", "10")
    assert j.load_monitor(j.records[0]) is None
