"""Run a snippet in a fresh interpreter on the checkout under test and read its JSON answer.

What a command imports, or how it loads numpy, can only be seen in a process that has imported
nothing yet; the snippet prints one JSON object as its last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pilot_sys


def run_fresh(
    code: str, *args: str, drop: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> dict[str, object]:
    """Run ``code`` with ``args`` in a new ``python -c``, without the variables in ``drop`` and
    with ``env`` added; the last line of its output, parsed."""
    root = Path(pilot_sys.__file__).resolve().parent.parent  # the checkout under test
    base = {k: v for k, v in os.environ.items() if k not in drop}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        cwd=root,
        env={**base, "PYTHONPATH": str(root), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])
