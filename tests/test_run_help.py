"""`pilot-sys run --help` states the presets as the code has them, and every term of the output."""

from __future__ import annotations

from click.testing import CliRunner

from pilot_sys.cli.run import run
from pilot_sys.session.config import PRESETS, Preset
from pilot_sys.session.glossary import GLOSSARY


def _help() -> str:
    result = CliRunner().invoke(run, ["--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_preset_table_is_the_code_s() -> None:
    text = _help()
    table = text[text.index("Presets (--preset") : text.index("Terms in the output")]
    rows = {
        line.strip().split("  ")[0]: line.split() for line in table.splitlines() if line.strip()
    }
    assert rows["min rounds"][-3:] == [str(PRESETS[p]["min_rounds"]) for p in Preset]  # 8 8 10
    assert rows["min rounds"][-3:] != ["3", "5", "10"]
    limits = [f"{PRESETS[p]['session_limit']:g}" for p in Preset]
    assert [v for v in rows["session limit (-s)"] if v[0].isdigit()] == limits
    lengths = [
        f"{PRESETS[p]['min_round_seconds']:g}-{PRESETS[p]['max_round_seconds']:g}" for p in Preset
    ]
    assert [v for v in rows["round length"] if "-" in v and v[0].isdigit()] == lengths
    assert "Preset: 3/5/10" not in text and "Preset: 30/600/3600" not in text


def test_every_term_is_explained_in_the_help() -> None:
    text = " ".join(_help().split())
    for term, explanation in GLOSSARY:
        assert f"{term} {' '.join(explanation.split())[:40]}" in text, term
    for word in (
        "wps",
        "reported only",
        "over round means",
        "unit readings",
        "alpha",
        "excluded",
        "CUT",
    ):
        assert any(term == word for term, _ in GLOSSARY), word
