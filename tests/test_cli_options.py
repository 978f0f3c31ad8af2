"""Options every command reads the same way, refused before anything is made (issue 15 items 2,
6, 14, 17, 21): --ci-perc is one percentage everywhere, bad -w/-o/--sample-rate/--cut values are
one line and exit 2 with no directory left behind, and --decimal reaches the readers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli

# the parser's unit tests run in-process; the CLI tests start pilot-sys
VALUE = ["shuf", "-i", "990-1010", "-n", "1"]


@pytest.mark.parametrize(
    ("text", "percent"),
    [
        ("5", 5.0),
        ("5%", 5.0),
        ("5 %", 5.0),
        (" 10% ", 10.0),
        ("0.5", 0.5),
        ("0.5%", 0.5),
        ("1e-1", 0.1),
    ],
)
def test_ci_perc_is_always_a_percentage(text: str, percent: float) -> None:
    from pilot_sys.cli.common import parse_percent
    from pilot_sys.cli.run import parse_ci_perc

    assert parse_percent(text) == pytest.approx(percent)
    assert parse_ci_perc(text) == pytest.approx(percent / 100)  # run's config holds the fraction


@pytest.mark.parametrize("text", ["0", "-1", "inf", "nan", "1000", "lots", "%", "5%%", ""])
def test_ci_perc_refuses_what_is_not_a_percentage(text: str) -> None:
    from pilot_sys.cli.common import parse_percent
    from pilot_sys.errors import BadInput

    with pytest.raises(BadInput) as err:
        parse_percent(text)
    assert err.value.where == "--ci-perc"


@pytest.mark.live
def test_run_and_analyze_read_ci_perc_alike(tmp_path: Path) -> None:
    """0.5 is 0.5 % in `run` (it was 50 %) and in `analyze`; 5% is accepted by both."""
    out = tmp_path / "res"
    r = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "--parser",
        "lines",
        "--max-rounds",
        "1",
        "--ci-perc",
        "0.5",
        "--json",
        "--",
        *VALUE,
    )
    assert r.returncode in (0, 4), r.stderr
    assert json.loads(r.stdout)["config"]["ci_perc"] == pytest.approx(0.005)

    data = tmp_path / "x.txt"
    data.write_text("\n".join(f"{v:.4f}" for v in np.random.default_rng(1).normal(100, 1, 400)))
    targets = []
    for text in ("0.5", "0.5%", "5%"):
        a = run_cli("analyze", str(data), "--warmup", "none", "--ci-perc", text, "--json")
        assert a.returncode == 0, a.stderr
        out_json = json.loads(a.stdout)
        targets.append(out_json["target_width"] / out_json["mean"])
    assert targets == pytest.approx([0.005, 0.005, 0.05])


@pytest.mark.live
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-w", "1,inf"], "-w/--work-amount: MIN and MAX must be finite numbers"),
        (["-w", "1,nan"], "-w/--work-amount: MIN and MAX must be finite numbers"),
        (["-w", "nan,5"], "-w/--work-amount: MIN and MAX must be finite numbers"),
        (["-w", "1,1e300"], "-w/--work-amount: MAX must be at most 2^53"),
        (["--sample-rate", "100000"], "--sample-rate: 100000 Hz is outside the allowed range"),
        (["--sample-rate", "0"], "--sample-rate: 0 Hz is outside the allowed range"),
        (["--sample-rate", "nan"], "--sample-rate: 'nan' is not a finite number"),
        (["-s", "nan"], "-s: 'nan' is not a finite number"),
        (["--cut", "bogus"], "--cut: no component 'bogus' on this host"),
    ],
)
def test_bad_values_leave_no_directory(tmp_path: Path, args: list[str], expected: str) -> None:
    out = tmp_path / "res"
    command = ["sh", "-c", "echo %WORK_AMOUNT% >/dev/null"] if "-w" in args else ["true"]
    r = run_cli("run", "-o", str(out), "--parser", "none", *args, "--", *command, timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("pilot-sys: error: ") and expected in last, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert not out.exists()
    # and -o can be used at once for a good session
    ok = run_cli(
        "run",
        "-o",
        str(out),
        "--no-monitor",
        "--no-plots",
        "--parser",
        "none",
        "--max-rounds",
        "1",
        "--",
        "true",
    )
    assert ok.returncode in (0, 4), ok.stderr
    assert (out / "result.json").is_file()


def test_the_sample_rate_range_is_up_to_user_hz() -> None:
    from pilot_sys.errors import BadInput
    from pilot_sys.monitor.tuner import counter_resolution_hz
    from pilot_sys.session.launch import check_sample_rate

    top = counter_resolution_hz()
    check_sample_rate(top)  # the top of the range is allowed
    check_sample_rate(0.5)
    with pytest.raises(BadInput) as err:
        check_sample_rate(top * 1.01)
    assert f"at most {top:g} Hz (USER_HZ" in err.value.problem


def test_library_warnings_become_one_note_each(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 15 item 22: what numpy or matplotlib warn about never reaches stderr raw."""
    import warnings

    from pilot_sys.cli.common import library_warnings_as_notes

    @library_warnings_as_notes
    def command() -> int:
        for _ in range(3):
            np.array([1e300]) ** 2  # numpy: overflow encountered in square, three times
        warnings.warn("tight_layout not applied", UserWarning, stacklevel=1)  # cosmetic
        return 5

    assert command() == 5
    err = capsys.readouterr().err
    assert err.count("pilot-sys: note: overflow encountered in square (a RuntimeWarning") == 1
    assert "tight_layout" not in err and "Warning:" not in err and err.count("\n") == 1


@pytest.mark.live
def test_a_command_that_does_not_exist_leaves_no_directory(tmp_path: Path) -> None:
    out = tmp_path / "res"
    for command in (["no-such-program-xyz", "1"], [str(tmp_path / "missing.sh")]):
        r = run_cli("run", "-o", str(out), "--no-monitor", "--", *command)
        assert r.returncode == 2, r.stderr
        assert f"{command[0]}: command not found or not executable" in r.stderr
        assert not out.exists()


@pytest.mark.live
def test_an_empty_output_dir_is_refused(tmp_path: Path) -> None:
    before = sorted(os.listdir(tmp_path))
    r = subprocess_in(tmp_path, "run", "-o", "", "--no-monitor", "--parser", "none", "--", "true")
    assert r.returncode == 2 and "-o/--output-dir: is empty" in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == before  # nothing written into the current directory


def subprocess_in(cwd: Path, *args: str):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "pilot_sys", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ},
    )


@pytest.mark.live
@pytest.mark.parametrize("command", ["analyze", "changepoints", "steady"])
def test_decimal_commas_are_read_with_decimal_comma(tmp_path: Path, command: str) -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(5.0, 0.2, 600)
    path = tmp_path / "comma.txt"
    path.write_text("".join(f"{v:.3f}".replace(".", ",") + "\n" for v in values))
    refused = run_cli(command, str(path))
    assert refused.returncode == 2 and "--decimal" in refused.stderr, refused.stderr
    r = run_cli(command, str(path), "--decimal", ",", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    if command == "analyze":
        assert out["mean"] == pytest.approx(values.mean(), abs=0.01)
    elif command == "changepoints":
        assert out["n"] == 600 and abs(out["segments"][0]["median"] - 5.0) < 0.1
    else:
        assert out["n"] == 600 and abs(out["raw"]["median"] - 5.0) < 0.1
