"""The source passes ruff's lint and format checks (configuration in pyproject.toml).

Part of the test suite, so that the README's one test command is the whole of CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHECKED = ["pilot_sys", "plugins", "tests", "benchmarks"]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        import ruff  # noqa: F401  (installed by the test extra)
    except ImportError:
        pytest.skip("ruff is not installed: pip install '.[test]'")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *CHECKED],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.live
def test_ruff_finds_nothing() -> None:
    done = _ruff("check", "--output-format", "concise", "--no-cache")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.live
def test_the_code_is_formatted() -> None:
    done = _ruff("format", "--check", "--no-cache")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
