"""Styled lines written without rich are the bytes rich writes (pilot_sys.cli.styled_lines).

The reference is rich itself: the same spans assembled into ``rich.text.Text`` and printed by a
``Console`` as ``analyze`` made it (no highlighting, soft wrap) to a stream that is no terminal.
"""

from __future__ import annotations

import io
import sys

import pytest
from rich.console import Console
from rich.text import Text

from pilot_sys.cli.styled_lines import Line, print_lines, rich_would_style

LINES: list[Line] = [
    [("data [x] \\[bold] :fire: é.csv", "bold"), " column latency_ms: arithmetic mean, 95% CI"],
    ["  all     10.0799  ", ("no CI", "red"), " (too few effective samples)  n=10"],
    ["  ", ("warning:", "yellow"), " " + "a long warning, " * 20 + " trailing spaces  "],
    ["", ("", "bold")],
    ["  target  width 0.1 vs 1 (10% of the mean): ", ("reached", "green"), "; needs 8 samples"],
]


def _rich_bytes(lines: list[Line], *, terminal: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, highlight=False, soft_wrap=True)
    for line in lines:
        console.print(Text.assemble(*line))
    return out.getvalue()


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


def test_plain_output_is_what_rich_writes_to_no_terminal(
    no_terminal: None, capsys: pytest.CaptureFixture[str]
) -> None:
    print_lines(LINES)
    written = capsys.readouterr().out
    assert written == _rich_bytes(LINES, terminal=False)
    assert "data [x] \\[bold] :fire: é.csv column" in written  # brackets and colons kept as given
    assert "rich.console" in sys.modules  # this test imported it; the child test shows none


def test_control_characters_go_through_rich(
    no_terminal: None, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[Line] = [["a\tb\x07c ", ("d\re", "bold")]]
    print_lines(lines)
    written = capsys.readouterr().out
    assert written == _rich_bytes(lines, terminal=False)
    assert "\x07" not in written and "\t" not in written  # rich dropped and expanded them


@pytest.mark.parametrize(
    ("environment", "styled"),
    [
        ({"FORCE_COLOR": "1"}, True),
        ({"FORCE_COLOR": ""}, False),
        ({"TTY_COMPATIBLE": "1"}, True),
        ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, False),
        ({}, False),
    ],
)
def test_rich_switches_decide_as_rich_does(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    environment: dict[str, str],
    styled: bool,
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    stream = io.StringIO()
    assert rich_would_style(stream) is styled
    assert Console(file=stream).is_terminal is styled  # rich's own answer
    print_lines(LINES)
    written = capsys.readouterr().out
    assert written == _rich_bytes(LINES, terminal=styled)
    assert ("\x1b[" in written) is styled
