"""Series at the edges of the float range, too few numbers, and units never given (issue 24
items 12 and 13, issue 22 item 2): in-process runs of the three commands on files in tmp_path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.cli import main


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``pilot-sys ARGS`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("count", range(1, 8))
def test_analyze_of_one_to_seven_numbers_is_exit_0_without_an_interval(
    count: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "few.txt"
    path.write_text("".join(f"{10 + i}\n" for i in range(count)))
    code, out, err = _cli(capsys, "analyze", str(path), "--json")
    assert code == 0, err
    body = json.loads(out)
    assert body["ci_low"] is None and body["sample_size"] == count
    assert body["mean"] == pytest.approx(10 + (count - 1) / 2)
    assert any(f"{count} sample(s); at least 8 are needed" in w for w in body["warnings"])
    code, out, _ = _cli(capsys, "analyze", str(path))
    assert code == 0 and "no CI" in out


def _two_levels() -> np.ndarray:
    rng = np.random.default_rng(1)
    return np.concatenate([100 + rng.normal(0, 2, 200), 125 + rng.normal(0, 2, 400)])


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e300])
def test_huge_and_tiny_readings_get_the_answer_of_their_scaled_copy(
    scale: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    x = _two_levels()
    plain, scaled = tmp_path / "plain.txt", tmp_path / "scaled.txt"
    np.savetxt(plain, x)
    np.savetxt(scaled, x * scale)
    for command in ("changepoints", "steady"):
        answers = []
        for path in (plain, scaled):
            code, out, err = _cli(capsys, command, str(path), "--json")
            assert code == 0, err
            answers.append(json.loads(out))
        a, b = answers
        assert a["changepoints"] == b["changepoints"] == [200]
        if command == "changepoints":
            assert [k["kind"] for k in a["kinds"]] == [k["kind"] for k in b["kinds"]] == ["level"]
            assert b["kinds"][0]["jump"] == pytest.approx(a["kinds"][0]["jump"] * scale)
        else:
            assert a["steady_state_start"] == b["steady_state_start"] == 200
            assert b["steady"]["mean"] == pytest.approx(a["steady"]["mean"] * scale)


def test_steady_json_never_emits_infinity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Readings near 1e308: each one is a float, their sums are not; refuse with one line."""
    path = tmp_path / "huge.txt"
    np.savetxt(path, _two_levels() * 1e306)
    code, out, err = _cli(capsys, "steady", str(path), "--json")
    assert "Infinity" not in out and "NaN" not in out
    if code == 0:
        json.loads(out)
    else:
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert lines[-1].startswith(f"pilot-sys: error: {path}: ") and "larger unit" in lines[-1]
        assert not any("Traceback" in line for line in lines)


def _warm_then_steady() -> str:
    rng = np.random.default_rng(4)
    x = np.concatenate([np.linspace(300, 100, 100), 100 + rng.normal(0, 2, 900)])
    return "".join(f"{v:.4f}\n" for v in x)


def test_steady_without_a_unit_invents_no_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lat.txt"
    path.write_text(_warm_then_steady())
    code, out, err = _cli(capsys, "steady", str(path))
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("time to steady"))
    assert not re.search(r"\d s\b", line)  # no seconds anywhere
    assert "unit unknown" in line
    body = json.loads(_cli(capsys, "steady", str(path), "--json")[1])
    assert body["unit"] is None and body["time_to_steady_state"] is None


def test_steady_in_milliseconds_gives_seconds_from_the_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lat.csv"
    path.write_text("latency_ms\n" + _warm_then_steady())
    code, out, err = _cli(capsys, "steady", str(path), "--json")
    assert code == 0, err
    body = json.loads(out)
    start = body["steady_state_start"]
    values = np.loadtxt(path, skiprows=1)
    assert body["unit"] == "ms"
    assert body["time_to_steady_state"] == pytest.approx(values[:start].sum() * 1e-3)
    text = _cli(capsys, "steady", str(path))[1]
    assert f"{values[:start].sum() * 1e-3:.6g} s" in text


def test_a_warm_up_faster_than_steady_state_is_worded_as_less(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(5)
    x = np.concatenate([50 + rng.normal(0, 1, 200), 100 + rng.normal(0, 2, 800)])
    path = tmp_path / "lat_ms.csv"
    path.write_text("lat_ms\n" + "".join(f"{v:.4f}\n" for v in x))
    code, out, err = _cli(capsys, "steady", str(path))
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("cold-start cost"))
    assert "less than at the steady median" in line and ", -" not in line
