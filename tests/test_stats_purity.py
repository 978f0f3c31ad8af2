"""``pilot_sys.stats`` is a pure layer: numpy, scipy, pydantic and ``pilot_sys.errors`` only.

A fresh interpreter, in which psutil, matplotlib, networkx and click cannot be imported, imports
``pilot_sys.stats``, each of its lazy exports and every module under it; then the loaded
``pilot_sys`` modules must all be ``pilot_sys``, ``pilot_sys.errors`` or ``pilot_sys.stats.*``.
A fresh interpreter because this test process has long imported the rest of the package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pilot_sys

#: Runs in the child: hide the libraries, import everything under pilot_sys.stats, report.
CHILD = r"""
import importlib, json, pkgutil, sys

HIDDEN = {"psutil", "matplotlib", "networkx", "click"}


class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ImportError(f"{name} is hidden from pilot_sys.stats by the purity test")
        return None


sys.meta_path.insert(0, Hide())
import pilot_sys.stats

failures, imported = [], []
for name in pilot_sys.stats.__all__:
    try:
        getattr(pilot_sys.stats, name)
    except Exception as exc:
        failures.append(f"pilot_sys.stats.{name}: {type(exc).__name__}: {exc}")
for info in pkgutil.walk_packages(pilot_sys.stats.__path__, "pilot_sys.stats."):
    imported.append(info.name)
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failures.append(f"{info.name}: {type(exc).__name__}: {exc}")
print(json.dumps({
    "imported": imported,
    "failures": failures,
    "loaded": sorted(m for m in sys.modules if m == "pilot_sys" or m.startswith("pilot_sys.")),
    "hidden_loaded": sorted(m for m in sys.modules if m.partition(".")[0] in HIDDEN),
}))
"""


def _allowed(module: str) -> bool:
    # pilot_sys.plugins: in a source checkout ``pilot_sys/__init__`` attaches the repository's
    # top-level plugins/ package under that name (an __init__ without imports); any module
    # under it would be an offender.
    return module in ("pilot_sys", "pilot_sys.errors", "pilot_sys.plugins", "pilot_sys.stats") or (
        module.startswith("pilot_sys.stats.")
    )


@pytest.mark.live  # a fresh interpreter: the only way to hide psutil from every import
def test_stats_imports_nothing_above_its_layer_and_runs_without_psutil() -> None:
    root = Path(pilot_sys.__file__).resolve().parent.parent  # the checkout under test
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        check=False,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # the walk saw every module file of the package, so the check below is not vacuous
    on_disk = {f"pilot_sys.stats.{p.stem}" for p in (root / "pilot_sys" / "stats").glob("*.py")}
    assert on_disk - {"pilot_sys.stats.__init__"} == set(report["imported"])
    offenders = [m for m in report["loaded"] if not _allowed(m)]
    problems = [f"cannot import {f}" for f in report["failures"]] + [
        f"loads {m}, outside pilot_sys.stats' layer" for m in offenders
    ]
    assert problems == [], "\n".join(problems)
    assert report["hidden_loaded"] == []
    assert {"pilot_sys.stats.changepoint", "pilot_sys.stats.ci"} <= set(report["loaded"])
