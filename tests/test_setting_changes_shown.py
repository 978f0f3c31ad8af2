"""A changed setting is shown as a person reads it, not as its binary float's repr.

``--ci-perc 0.236%`` parses to 0.236 / 100 = 0.0023599999999999997; the note that a resumed
session changed its targets printed that (a live test caught it on one measured value)."""

from __future__ import annotations

import pytest

from pilot_sys.session.session import _shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.236 / 100, "0.00236"), (0.1 + 0.2, "0.3"), (60.0, "60"), (1e-7, "1e-07"), (3, "3")],
)
def test_a_setting_is_shown_as_written(value: object, shown: str) -> None:
    assert _shown(value) == shown


def test_what_is_not_a_float_is_shown_as_is() -> None:
    assert _shown(None) == "None" and _shown("fio") == "fio"
