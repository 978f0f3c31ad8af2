"""The project's code at another git revision, unpacked where a benchmark can import it: the
"before" side of a before/after comparison run in the same session as the "after"."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extract(rev: str, into: Path) -> Path:
    """``pilot_sys`` and ``plugins`` of git revision ``rev``, unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "pilot_sys", "plugins"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into
