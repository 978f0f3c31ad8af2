"""dd summary lines, as GNU coreutils 9.1 printed them on this machine (LC_ALL=C)."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from pilot_sys.workload.parsers.dd import parse
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput

HERE = FIXTURES / "workload"


def runs(name: str) -> list[str]:
    """Split a file of several dd runs after each summary line."""
    return [chunk for chunk in re.split(r"(?<=/s\n)", (HERE / name).read_text()) if chunk.strip()]


def bw(stderr: str) -> float:
    return parse(CapturedOutput(stderr=stderr)).readings["bw"]


def test_every_captured_form() -> None:
    forms = runs("dd_forms.txt")
    # "67108864 bytes (67 MB, 64 MiB) copied, 0.0598498 s, 1.1 GB/s"
    assert bw(forms[0]) == pytest.approx(67108864 / 0.0598498)
    # "500 bytes copied, 0.000136273 s, 3.7 MB/s"
    assert bw(forms[1]) == pytest.approx(500 / 0.000136273)
    # "700 bytes copied, 4.2553e-05 s, 16.5 MB/s" (0+1 records)
    out = parse(CapturedOutput(stderr=forms[3]))
    assert out.readings["bw"] == pytest.approx(700 / 4.2553e-05) and out.work_done == 700
    assert out.warnings == []  # one short last record is normal
    # "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 0.0526014 s, 40.8 GB/s"
    assert bw(forms[4]) == pytest.approx(2147483648 / 0.0526014)
    # The recomputed rate agrees with the rounded one dd printed.
    assert bw(forms[4]) == pytest.approx(40.8e9, rel=0.01)


def test_slow_forms_one_byte_and_partial_records() -> None:
    slow = runs("dd_slow_forms.txt")
    assert bw(slow[0]) == pytest.approx(1 / 1.20067)  # "1 byte copied, 1.20067 s, 0.0 kB/s"
    out = parse(CapturedOutput(stderr=slow[1]))  # "2+1 records in", "(3.0 kB, 2.9 KiB)"
    assert out.readings["bw"] == pytest.approx(3000 / 1.10143)
    assert out.warnings == []


def test_progress_lines_are_skipped_for_the_final_summary() -> None:
    text = (HERE / "dd_progress_stderr.txt").read_bytes().decode()
    assert "\r" in text
    assert bw(text) == pytest.approx(5242880 / 1.30642)


def test_zero_bytes_is_a_failed_round() -> None:
    with pytest.raises(MalformedOutput, match="copied 0 bytes"):
        parse(CapturedOutput(stderr=runs("dd_forms.txt")[2], stderr_name="r2/stderr.txt"))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # coreutils before 8.24 printed one unit in the parentheses
        ("1048576 bytes (1.0 MB) copied, 0.5 s, 2.1 MB/s", 1048576 / 0.5),
        # decimal commas (a locale the runner overrides, still read correctly)
        ("1048576 bytes (1,0 MB, 1,0 MiB) copied, 0,25 s, 4,2 MB/s", 1048576 / 0.25),
        # zero elapsed time: dd prints the rate only
        ("4096 bytes (4.1 kB, 4.0 KiB) copied, 0 s, 3.5 GB/s", 3.5e9),
    ],
)
def test_other_forms(line: str, expected: float) -> None:
    assert bw(f"1+0 records in\n1+0 records out\n{line}\n") == pytest.approx(expected)


def test_many_partial_records_warn_about_fullblock() -> None:
    out = parse(
        CapturedOutput(
            stderr="0+40 records in\n0+40 records out\n"
            "2621440 bytes (2.6 MB, 2.5 MiB) copied, 0.01 s, 262 MB/s\n"
        )
    )
    assert any("iflag=fullblock" in w for w in out.warnings)


def test_missing_summary_names_stderr() -> None:
    with pytest.raises(MalformedOutput, match=r"^r4/stderr.txt: expected dd's summary line"):
        parse(
            CapturedOutput(
                stderr="dd: failed to open 'x': Permission denied\n", stderr_name="r4/stderr.txt"
            )
        )
    with pytest.raises(MalformedOutput, match="Infinity"):
        parse(
            CapturedOutput(
                stderr="0 bytes copied, 0 s, Infinity B/s\n".replace("0 bytes", "5 bytes")
            )
        )
