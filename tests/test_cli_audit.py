"""Regression tests of the user-facing audit of analyze, graph, monitor and phases.

Each case is input a hostile but realistic user gives; each must end in one line naming the
input and the problem, exit 2, and no traceback (or, where the input is fine, the right result).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, REPO, run_cli

pytestmark = pytest.mark.live  # every test here starts the CLI or a workload

TRACES = FIXTURES / "traces" / "fio_mix"
RATED = str(REPO / "graphs" / "rated-virtual-disk.json")


def one_error(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The single stderr line of a failed command, after checking the exit code and no traceback."""
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("pilot-sys: error: ")
    return lines[0].removeprefix("pilot-sys: error: ")


def series(n: int = 200, mean: float = 100.0, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, 5.0, n)


# -- analyze: reading ---------------------------------------------------------------------------


def test_bom_at_the_start_of_a_csv_is_not_part_of_the_first_name(tmp_path: Path) -> None:
    values = series()
    path = tmp_path / "bom.csv"
    path.write_text("tput,lat\r\n" + "".join(f"{v},1\r\n" for v in values), encoding="utf-8-sig")
    result = run_cli("analyze", str(path), "-c", "tput", "--warmup", "none", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["mean"] == pytest.approx(values.mean(), rel=1e-3)


def test_binary_stdin_is_named_not_read_as_garbage() -> None:
    # before: the text layer decoded NULs and bad bytes, and the error quoted surrogate garbage
    assert one_error(run_cli("analyze", "-", input="\x00\x01garbage\n")) == (
        "<stdin>: binary data (a NUL byte at byte 0), expected text"
    )


def test_tab_separated_header_with_spaces_keeps_names_on_their_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("tput MiB/s\tlat ms\n" + "".join(f"{v}\t{v / 10}\n" for v in series()))
    result = run_cli("analyze", str(path), "-c", "1", "--warmup", "none", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert (
        out["column"] == "lat ms"
    )  # before: the header split at every space and column 1 was "MiB/s"
    assert out["mean"] == pytest.approx(series().mean() / 10, rel=1e-3)


@pytest.mark.parametrize(
    ("row", "where", "problem"),
    [
        (
            "5",
            ":4:1",
            "1 cell(s) on this line, but the header has 2: a cell is missing, "
            "so column 'tput' may be shifted",
        ),
        (
            "5,6,7",
            ":4:5",
            "3 cell(s) on this line, but the header has 2: a cell is extra, "
            "so column 'tput' may be shifted",
        ),
    ],
)
def test_ragged_csv_row_is_named_not_read_shifted(
    tmp_path: Path, row: str, where: str, problem: str
) -> None:
    path = tmp_path / "r.csv"
    path.write_text("tput,lat\n1,2\n3,4\n" + row + "\n" + "".join(f"{v},1\n" for v in series(20)))
    assert one_error(run_cli("analyze", str(path), "-c", "tput")) == f"{path}{where}: {problem}"


def test_duplicate_header_name_is_ambiguous(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("a,a\n" + "".join(f"{v},{v}\n" for v in series(20)))
    assert one_error(run_cli("analyze", str(path), "-c", "a")) == (
        f"{path}: column name 'a' appears 2 times in the header (columns 0, 1); "
        "choose one by its index"
    )


def test_values_beyond_double_precision_statistics(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    path.write_text("size (B)\n" + "1.7e308\n" * 20)
    result = run_cli("analyze", str(path))
    assert "RuntimeWarning" not in result.stderr  # before: numpy warnings, then a mean of inf
    assert one_error(result) == (
        f"{path}:2: sample 1 is 1.7e+308, too large for double-precision statistics "
        "(its square leaves the float range); rescale the data, e.g. GiB instead of bytes"
    )


def test_negative_rate_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rates.csv"
    path.write_text("# comment\nrate (MiB/s)\n" + "".join(f"{v}\n" for v in series(20)) + "-3\n")
    assert one_error(run_cli("analyze", str(path), "--pi-type", "harmonic")) == (
        f"{path}:23: sample 21 is -3; a harmonic mean of rates needs values > 0"
    )


# -- analyze: options ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--ci-perc", "nan"],
            "--ci-perc: nan must be > 0 and finite, e.g. 10 for 10% of the mean",
        ),
        (
            ["--ci-abs", "inf"],
            "--ci-abs: 'inf' is not a finite number (see pilot-sys analyze --help)",
        ),
        (
            ["--confidence", "abc"],
            "--confidence: 'abc' is not a valid finite float (see pilot-sys analyze --help)",
        ),
        (["--bogus"], "--bogus: No such option '--bogus' (see pilot-sys analyze --help)"),
    ],
)
def test_analyze_bad_options_one_line(tmp_path: Path, args: list[str], line: str) -> None:
    assert one_error(run_cli("analyze", "-", *args, input="1\n2\n")) == line


def test_analyze_missing_plot_directory_fails_before_printing(tmp_path: Path) -> None:
    result = run_cli(
        "analyze",
        "-",
        "--json",
        "--plot",
        "/nonexistent-dir/x.png",
        input="".join(f"{v}\n" for v in series()),
    )
    assert result.stdout == ""  # before: the JSON was printed, then the error
    assert (
        one_error(result)
        == "--plot: '/nonexistent-dir/x.png': directory /nonexistent-dir does not exist"
    )


def test_analyze_shows_units_on_the_interval_and_the_target(tmp_path: Path) -> None:
    result = run_cli(
        "analyze",
        "-",
        "--warmup",
        "none",
        input="lat (ms)\n" + "".join(f"{v}\n" for v in series(400)),
    )
    assert result.returncode == 0, result.stderr
    assert "] ms  n=400" in result.stdout
    assert "target  width" in result.stdout and " ms vs " in result.stdout


def test_analyze_does_not_print_a_symmetric_spread_for_a_wilson_interval() -> None:
    result = run_cli(
        "analyze", "-", "--pi-type", "proportion", "--warmup", "none", input="1\n" * 100
    )
    assert result.returncode == 0, result.stderr
    line = result.stdout.splitlines()[1]
    assert (
        "±" not in line and "CI [0.95" in line and ", 1]" in line
    )  # before: "1 ± 0.0201", as if up to 1.02


# -- graph --------------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--png", "--dot", "--graphml"])
def test_graph_unwritable_output_is_bad_input(option: str) -> None:
    suffix = {"--png": "png", "--dot": "dot", "--graphml": "graphml"}[option]
    result = run_cli("graph", "--no-discover", "--load", RATED, option, f"/proc/x.{suffix}")
    assert (
        one_error(result) == f"{option}: /proc/x.{suffix}: cannot write (No such file or directory)"
    )


def test_graph_picture_suffix_is_checked_first() -> None:
    assert one_error(run_cli("graph", "--no-discover", "--load", RATED, "--svg", "x.txt")) == (
        "--svg: x.txt: the picture format comes from the suffix; use .png, .svg or .pdf"
    )


def test_graph_nonexistent_device_and_empty_argument() -> None:
    assert one_error(run_cli("graph", "/dev/pilot-sys-no-such-disk")) == (
        "/dev/pilot-sys-no-such-disk: no such device; `lsblk` lists the block devices of this host"
    )
    assert one_error(run_cli("graph", "")) == "'': empty argument: name a path, device or host"


def test_graph_bare_host_name_is_a_host_not_a_new_file() -> None:
    result = run_cli("graph", "localhost", "--json")
    assert result.returncode == 0, result.stderr
    argument = json.loads(result.stdout)["data_path"]["arguments"][0]
    assert (argument["kind"], argument["component"]) == (
        "host",
        "nic:lo",
    )  # before: new-file ./localhost
    assert one_error(run_cli("graph", "host:")) == "'host:': empty host name after host:"


def test_graph_load_directory_is_one_line(tmp_path: Path) -> None:
    assert one_error(run_cli("graph", "--no-discover", "--load", str(tmp_path))) == (
        f"--load: File '{tmp_path}' is a directory (see pilot-sys graph --help)"
    )


@pytest.mark.parametrize(
    ("limit", "shown"),
    [("-5", "-5"), ("1e400", "inf"), ("NaN", "nan"), ("0", "0")],
)
def test_user_graph_limit_must_be_finite_and_positive(
    tmp_path: Path, limit: str, shown: str
) -> None:
    path = tmp_path / "g.json"
    path.write_text(
        '{"nodes": [{"id": "block:vda", "limits": {"read": {"value": '
        + limit
        + '}}}], "links": []}'
    )
    result = run_cli("graph", "--no-discover", "--load", str(path), "--json")
    assert result.stdout == ""  # before: "Infinity" in --json output, which is not JSON
    assert one_error(result) == (
        f"{path}: node 1 (block:vda): limit 'read' must be finite and > 0 (or null when unknown), "
        f"not {shown}"
    )


# -- monitor ------------------------------------------------------------------------------------


def test_monitor_unwritable_json_fails_before_the_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = run_cli("monitor", "--json", "/proc/x.json", "--", "touch", str(marker))
    assert one_error(result) == "--json: /proc/x.json: cannot write (No such file or directory)"
    assert not marker.exists()  # the workload did not run only to lose its trace


def test_monitor_trace_survives_its_directory_vanishing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli(
        "monitor", "--no-live", "--json", str(out / "t.json"), "--", "rm", "-rf", str(out)
    )
    assert "Traceback" not in result.stderr and result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    prefix = (
        f"pilot-sys: error: --json: {out / 't.json'}: cannot write (No such file or directory); "
        "the trace was saved to "
    )
    assert last.startswith(prefix) and last.endswith(" instead")
    rescue = Path(last.removeprefix(prefix).removesuffix(" instead"))
    try:
        assert json.loads(rescue.read_text())["command"] == ["rm", "-rf", str(out)]
    finally:
        rescue.unlink()


def test_monitor_plot_suffix_and_spill_dir_checked_first(tmp_path: Path) -> None:
    assert one_error(run_cli("monitor", "--plot", str(tmp_path / "x.txt"), "--", "true")) == (
        f"--plot: {tmp_path / 'x.txt'}: the picture format comes from the suffix; "
        "use .png, .svg or .pdf"
    )
    assert one_error(run_cli("monitor", "--spill-dir", "/proc/pilot-sys-spill", "--", "true")) == (
        "--spill-dir: /proc/pilot-sys-spill: cannot create (No such file or directory)"
    )


def test_monitor_command_that_cannot_start(tmp_path: Path) -> None:
    garbage = tmp_path / "notprog"
    garbage.write_bytes(b"\x00\x01\x02 not a program")
    garbage.chmod(0o755)
    assert (
        one_error(run_cli("monitor", "--", str(garbage)))
        == f"CMD: cannot start (Exec format error): {garbage}"
    )
    assert (
        one_error(run_cli("monitor", "--", ""))
        == "CMD: the command name is empty (an unset shell variable?)"
    )


def test_monitor_names_the_signal_that_killed_cmd() -> None:
    result = run_cli("monitor", "--no-live", "--", "sh", "-c", "kill -9 $$")
    assert "Traceback" not in result.stderr
    assert result.returncode == 128 + 9
    assert "CMD was killed by SIGKILL (signal 9)" in result.stderr.splitlines()[0]


# -- phases -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--threshold", "nan"],
            "--threshold: 'nan' is not a finite number (see pilot-sys phases --help)",
        ),
        (
            ["--plot", "x.txt"],
            "--plot: x.txt: the picture format comes from the suffix; use .png, .svg or .pdf",
        ),
        (
            ["--rate", "1e9"],
            f"--rate: 1e+09 Hz puts 7.5 s of {TRACES / 'run1.json'} on 7.5e+09 samples; "
            "at most 1e+07 are analysed, use a lower rate",
        ),
    ],
)
def test_phases_bad_options(args: list[str], line: str) -> None:
    assert (
        one_error(run_cli("phases", str(TRACES / "run1.json"), str(TRACES / "run2.json"), *args))
        == line
    )


def test_phases_binary_file_and_missing_argument(tmp_path: Path) -> None:
    path = tmp_path / "bin.json"
    path.write_bytes(b"\x00\xff\xfe garbage")
    assert (
        one_error(run_cli("phases", str(path)))
        == f"{path}: binary data (a NUL byte at byte 0), expected text"
    )
    assert one_error(run_cli("phases")) == (
        "DIR_OR_TRACE...: Missing argument 'DIR_OR_TRACE...' (see pilot-sys phases --help)"
    )
