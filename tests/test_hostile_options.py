"""Hostile options (issue 24 item 11): every number an option takes is finite, for every command.

The class: click's ``float`` takes ``nan`` and ``inf``, and a non-finite bound or timeout then
silently means "none" (every comparison with nan is False) or crashes later. The fix is one
option type (``FiniteFloat``/``FiniteFloatRange``); the first test walks every command so a new
float option that forgets it fails here, and the table tries nan and inf on each of them."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from pilot_sys.cli import cli
from tests.hostile import cli_in_process, one_line_refusal


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    return [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]  # type: ignore[misc]


def _float_options() -> list[tuple[str, str]]:
    out = []
    for name, command in _commands():
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(
                param.type, click.types.FloatParamType
            ):
                out.append((name, param.opts[0]))
    return out


def test_every_float_option_of_every_command_refuses_non_finite_numbers() -> None:
    from pilot_sys.cli.common import FiniteFloat, FiniteFloatRange

    floats = [
        (name, param.opts[0], type(param.type).__name__)
        for name, command in _commands()
        for param in command.params
        if isinstance(param.type, click.types.FloatParamType)
        and not isinstance(param.type, FiniteFloat | FiniteFloatRange)
    ]
    assert floats == []
    assert len(_float_options()) >= 20  # the walk found the commands' options


# positional arguments that let each command reach its options (parsed before anything runs)
TAIL = {"run": ["--", "true"], "tune": ["--", "true"], "monitor": ["--", "true"]}


@pytest.mark.parametrize(("command", "option"), _float_options())
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e999"])
def test_a_non_finite_number_is_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, option: str, value: str
) -> None:
    data = tmp_path / "d.txt"
    data.write_text("1\n2\n3\n")
    tail = TAIL.get(command, [str(data), str(data)] if command == "compare" else [str(data)])
    code, err = cli_in_process(capsys, command, f"{option}={value}", *tail)
    line = one_line_refusal(code, err)
    assert option in line and "finite" in line, line


def test_tune_keep_that_cannot_hold_rounds_is_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine").write_text("keep me")
    for keep in (a_file, a_file / "below", tmp_path / "full"):
        code, err = cli_in_process(capsys, "tune", "--keep", str(keep), "--", "true")
        assert "--keep" in one_line_refusal(code, err)
    assert (tmp_path / "full" / "mine").read_text() == "keep me"
