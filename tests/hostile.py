"""Helpers of the hostile-input suites (tests/test_hostile_*.py): the CLI run in-process, so a
refusal that comes before anything is measured is checked without starting a process."""

from __future__ import annotations

import pytest

from pilot_sys.cli import main


def cli_in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """(exit code, stderr) of ``pilot-sys ARGV`` run in this process."""
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    err = capsys.readouterr().err
    return int(done.value.code or 0), err


def one_line_refusal(code: int, err: str) -> str:
    """The refusal's line, after checking the rule for bad input: exit 2, one line, no
    traceback, not an internal error."""
    lines = [line for line in err.splitlines() if line.startswith("pilot-sys: error:")]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]
